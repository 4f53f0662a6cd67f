"""The vaults one ``engram-mcp`` serves, by name, each with its own index, watcher, integrity
checker and embedding worker.

``engram-mcp VAULT`` serves one vault, named after its folder; ``--vault NAME=PATH`` (repeatable)
and ``--vaults-file FILE`` (one ``NAME=PATH`` a line) serve several. A tool's ``vault``
argument picks one: it may be left out when only one is served, and must be given (a name of
``list_vaults``) when several are.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram_ls.core.check import IntegrityChecker
from engram_ls.core.contained import read_regular
from engram_ls.core.errors import EngramError, InvalidRequest
from engram_ls.core.semantic.worker import EmbeddingWorker
from engram_ls.core.service import Engram
from engram_ls.core.sync import Change
from engram_ls.core.vault import choose_vault_root
from engram_ls.core.watch import VaultWatcher

log = logging.getLogger("engram_ls.mcp")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
"""A vault's name: what URIs (``engram://NAME/...``) and the ``vault`` argument carry."""
MAX_VAULTS = 64


@dataclass
class Served:
    """One vault as the server serves it."""

    name: str
    engram: Engram
    watcher: VaultWatcher | None = None
    checker: IntegrityChecker | None = None
    embedder: EmbeddingWorker | None = None
    on_changes: list[Callable[[Served, list[Change]], None]] = field(default_factory=list)
    """Called (on the watcher's thread) after each batch of changes on disk was applied."""

    def applied(self, changes: list[Change]) -> None:
        """The watcher applied ``changes`` (it also catches up by itself after a failed
        update, with back-off): tell the listeners."""
        for listener in list(self.on_changes):
            try:
                listener(self, changes)
            except Exception:  # a listener must never stop the watcher
                log.exception("%s: a change listener failed", self.name)


class Vaults:
    """The served vaults in the order given; ``get(name)`` is how every tool finds its vault."""

    def __init__(self, served: Sequence[Served]) -> None:
        if not served:
            raise InvalidRequest("no vault to serve")
        names = [s.name for s in served]
        if len(set(names)) != len(names):
            raise InvalidRequest(f"two vaults named alike: {', '.join(names)}")
        self._by_name = {s.name: s for s in served}

    @classmethod
    def of(cls, engrams: Engram | Mapping[str, Engram]) -> Vaults:
        """Vaults of open ``Engram`` services (tests, and ``create_server`` given one): a lone
        one is named after its folder."""
        if isinstance(engrams, Engram):
            engrams = {name_for(engrams.vault.root): engrams}
        return cls([Served(name, engram) for name, engram in engrams.items()])

    def __iter__(self) -> Iterator[Served]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    @property
    def names(self) -> list[str]:
        return list(self._by_name)

    def get(self, name: str | None) -> Served:
        """The vault named ``name``; None is the only vault, and an error when there are
        several (``ENGRAM_INVALID_REQUEST`` naming the argument and the choices)."""
        if name is None or name == "":
            if len(self._by_name) == 1:
                return next(iter(self._by_name.values()))
            raise InvalidRequest(
                f"vault: several vaults are served, name one ({', '.join(self.names)})",
                data={"argument": "vault", "vaults": self.names},
            )
        served = self._by_name.get(name)
        if served is None:
            raise InvalidRequest(
                f"vault: no vault named {name!r} (served: {', '.join(self.names)})",
                data={"argument": "vault", "vaults": self.names},
            )
        return served

    def start(self, *, watch: bool) -> None:
        """Open every index, watch (first, so nothing is missed), reconcile, then start the
        background checks and embedding: what ``engram-mcp`` does before serving."""
        for served in self:
            engram = served.engram
            engram.open()
            if watch:
                served.watcher = VaultWatcher(engram, on_applied=served.applied)
                served.watcher.start()
        for served in self:
            if served.watcher is not None:
                served.watcher.wait_established()
            try:
                served.engram.sync()
            except EngramError as exc:
                log.warning("%s: the index could not be brought up to date: %s", served.name, exc)
            served.checker = IntegrityChecker(served.engram)
            served.checker.start()
            served.embedder = EmbeddingWorker(served.engram)
            served.embedder.start()

    def stop(self) -> None:
        for served in self:
            for worker in (served.checker, served.embedder, served.watcher):
                if worker is not None:
                    worker.stop()
            served.engram.close()

    def describe(self, served: Served) -> dict[str, Any]:
        """``list_vaults``' entry of one vault: name, folder, note count, index state and
        what it can answer."""
        status = served.engram.status()
        return {
            "name": served.name,
            "root": str(served.engram.vault.root),
            "notes": status.notes,
            "state": status.state,
            "generation": status.generation,
            "capabilities": dict(status.capabilities or {}),
        }


def name_for(root: Path) -> str:
    """A vault's default name: its folder's name, with what a name may not hold made ``-``."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", root.resolve().name).strip("-.") or "vault"
    return name[:64] if NAME_RE.match(name) else "vault"


def parse_vault_spec(spec: str) -> tuple[str, Path]:
    """``NAME=PATH`` as ``--vault`` takes it (``PATH`` alone: named after its folder)."""
    name, sep, path = spec.partition("=")
    if not sep:
        root = choose_vault_root(spec)
        return name_for(root), root
    name = name.strip()
    if not NAME_RE.match(name):
        raise InvalidRequest(
            f"--vault {spec!r}: a vault name is 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    if not path.strip():
        raise InvalidRequest(f"--vault {spec!r}: no folder after '='")
    return name, choose_vault_root(path.strip())


def read_vaults_file(path: str) -> list[tuple[str, Path]]:
    """The ``NAME=PATH`` lines of a vaults file (blank lines and ``#`` comments skipped;
    a relative path is relative to the file's folder)."""
    try:
        text = read_regular(path, 1 << 20).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"cannot read the vaults file {path}: {exc}") from None
    base = Path(path).expanduser().resolve().parent
    out: list[tuple[str, Path]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, folder = line.partition("=")
        if not sep:
            raise InvalidRequest(f"{path}:{number}: expected NAME=PATH, got {line!r}")
        where = Path(folder.strip()).expanduser()
        out.append(parse_vault_spec(f"{name}={where if where.is_absolute() else base / where}"))
    return out


def vaults_from(
    positional: str | None, specs: Sequence[str], vaults_file: str | None
) -> list[tuple[str, Path]]:
    """The (name, folder) pairs to serve from ``engram-mcp``'s arguments: ``--vault`` and
    ``--vaults-file`` entries, else the one vault ``VAULT`` (or ``$ENGRAM_VAULT``, or the
    folder around) names."""
    pairs = [parse_vault_spec(s) for s in specs]
    if vaults_file:
        pairs += read_vaults_file(vaults_file)
    if positional is not None or not pairs:
        root = choose_vault_root(positional)
        pairs.insert(0, (name_for(root), root))
    if len(pairs) > MAX_VAULTS:
        raise InvalidRequest(f"at most {MAX_VAULTS} vaults can be served, {len(pairs)} given")
    names = [n for n, _ in pairs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InvalidRequest(f"two vaults named {dupes[0]!r}: give each --vault its own NAME=")
    return pairs
