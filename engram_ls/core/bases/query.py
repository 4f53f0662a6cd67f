"""``engram query``, ``engram/query`` and ``query_notes``: a base, from a vault file or text,
answered by the index.

The base is a ``.base`` file of the vault, a note's ```` ```base ```` block (the first, or
``block`` N counting from 1), or the text of one. A path is read through the vault's
containment like any note; the answer comes from the index only (``IndexUnavailable`` when it
cannot serve: a base is never answered by reading every file). Errors in the base are
``InvalidRequest`` naming the part, its line and column, and the construct not supported.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
import time
from typing import TYPE_CHECKING, Any

from engram_ls.core.bases.expr import BaseError
from engram_ls.core.bases.run import pick_view, run_view
from engram_ls.core.bases.spec import MAX_BASE_BYTES, Base, base_blocks, load_base
from engram_ls.core.errors import InvalidRequest, NotFound, SearchTimeout
from engram_ls.core.index import db

if TYPE_CHECKING:
    from engram_ls.core.service import Engram

QUERY_SECONDS = 10.0
"""How long one view may take before it is ended (``ENGRAM_TIMEOUT``)."""


def read_base(
    engram: Engram,
    *,
    path: str | None = None,
    text: str | None = None,
    block: int | None = None,
    line: int | None = None,
) -> tuple[Base, str | None]:
    """The base of a vault path or of text (``.base`` content, or a note with a ```` ```base ````
    block), and the vault path it came from. With both, ``text`` is the content of ``path``
    (an editor's buffer of it): the path names the base and says whether it is a note. A
    note's block is ``block`` (from 1), else the one at ``line`` (``block_at``), else the
    first."""
    if path is None and text is None:
        raise InvalidRequest("give a base as a path in the vault or as text")
    rel = engram.vault.rel(path) if path is not None else None
    if rel is not None and text is None:
        try:
            data, _ = engram.vault.read(rel, MAX_BASE_BYTES + 1)
        except FileNotFoundError:
            raise NotFound(f"no such file in the vault: {rel}", data={"path": rel}) from None
        except OSError as exc:
            raise NotFound(
                f"cannot read {rel}: {exc.strerror or exc}", data={"path": rel}
            ) from None
        if len(data) > MAX_BASE_BYTES:
            raise InvalidRequest(f"{rel} is larger than {MAX_BASE_BYTES} bytes", data={"path": rel})
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidRequest(f"{rel} is not UTF-8 text", data={"path": rel}) from None
    assert text is not None
    markdown = rel.endswith(".md") if rel is not None else block is not None or "```base" in text
    try:
        if markdown:
            blocks = base_blocks(text)
            n = block or (block_at(blocks, line) if line is not None else 1)
            if not 1 <= n <= len(blocks):
                found = f"it has {len(blocks)}" if blocks else "it has none"
                raise BaseError(f"no base block number {n} (a ```base block; {found})")
            body, first_line = blocks[n - 1]
            return load_base(body, first_line), rel
        if block is not None:
            raise BaseError("block applies to a note with ```base blocks, not to a .base file")
        return load_base(text), rel
    except BaseError as err:
        raise invalid(err, rel) from None


def block_at(blocks: list[tuple[str, int]], line: int) -> int:
    """The number (from 1) of the block at the 0-based ``line`` of a note (an editor's cursor):
    the last block whose opening fence is at or above it, else the first."""
    found = 1
    for n, (_body, first) in enumerate(blocks, 1):
        if first - 1 <= line:  # ``first``: the line after the fence, from 0
            found = n
    return found


def invalid(err: BaseError, rel: str | None = None) -> InvalidRequest:
    """A base's error as the request error every front end reports."""
    data: dict[str, Any] = {"at": err.at or None}
    if err.line is not None:
        data["line"] = err.line
        data["column"] = err.column
    if err.construct:
        data["unsupported"] = err.construct
    if rel is not None:
        data["path"] = rel
    return InvalidRequest(f"{rel + ': ' if rel else ''}{err}", data=data)


def query(
    engram: Engram,
    *,
    path: str | None = None,
    text: str | None = None,
    view: str | None = None,
    block: int | None = None,
    line: int | None = None,
    cancel: threading.Event | None = None,
) -> dict[str, Any]:
    """One view of a base (the first without ``view``) as JSON: its columns, its rows, the
    number of notes passing, groups and summaries, and what answered it."""
    t0 = time.perf_counter()
    base, rel = read_base(engram, path=path, text=text, block=block, line=line)
    try:
        chosen = pick_view(base, view)
    except BaseError as err:
        raise invalid(err, rel) from None
    engram._vault_present()
    now = dt.datetime.now().replace(microsecond=0)
    deadline = time.monotonic() + QUERY_SECONDS
    result = None
    try:
        with engram.health.reading(fresh=True, cancel=cancel, deadline=deadline) as r:
            if r.servable:
                result = run_view(r.conn, base, chosen, memo=engram.index.where_sets, now=now)
                served = r.served("index")
    except db.Interrupted:
        raise SearchTimeout("the query ran past its deadline") from None
    except BaseError as err:
        raise invalid(err, rel) from None
    if result is None:
        raise r.unavailable("a base is answered from the index")
    out = result.as_dict()
    if rel is not None:
        out["base"] = rel
    out["index"] = dataclasses.asdict(
        dataclasses.replace(served, source_revision=engram.revision.current())
    )
    out["elapsed_ms"] = (time.perf_counter() - t0) * 1000
    return out


__all__ = ["QUERY_SECONDS", "block_at", "invalid", "query", "read_base"]
