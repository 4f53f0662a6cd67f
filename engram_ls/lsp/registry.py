"""How one LSP method fans out to its contributors (``features/__init__.py`` lists them).

A contributor is an async function of one feature module, called with the server and what
the method gives it (``(ls, document, params)``; for diagnostics ``(ls, check)``). A method
with several asks them in the listed order: ``first_answer`` returns the first answer that is
not None (hover, completion: the cursor is in one place), ``every_answer`` joins their lists
(code actions, diagnostics). A contributor that raises is logged (stderr or the client's log,
never stdout) with the method and its name, and skipped: the others still answer. A
cancelled request (``asyncio.CancelledError``) is not a failure and still cancels.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from engram_ls.core.errors import EngramError

if TYPE_CHECKING:
    from engram_ls.lsp.server import EngramLanguageServer

log = logging.getLogger(__name__)

T = TypeVar("T")
Contributor = Callable[..., Awaitable[T]]
"""``(ls, ...)`` → its part of the answer."""


def name_of(contributor: Callable[..., Any]) -> str:
    module = getattr(contributor, "__module__", "") or ""
    return f"{module.rpartition('.')[2]}.{getattr(contributor, '__qualname__', contributor)}"


def failed(method: str, contributor: Callable[..., Any], exc: Exception) -> None:
    """Log a contributor's failure: one line for a typed core error, a traceback for a bug."""
    if isinstance(exc, EngramError):
        log.warning("%s: %s failed: %s", method, name_of(contributor), exc)
    else:
        log.error("%s: %s failed", method, name_of(contributor), exc_info=exc)


async def first_answer(
    method: str,
    contributors: Sequence[Contributor[T | None]],
    ls: EngramLanguageServer,
    *args: Any,
) -> T | None:
    """The first contributor's answer that is not None; a failing one is logged and skipped."""
    for contributor in contributors:
        try:
            found = await contributor(ls, *args)
        except Exception as exc:  # isolated: logged with its traceback, the others answer
            failed(method, contributor, exc)
            continue
        if found is not None:
            return found
    return None


async def every_answer(
    method: str,
    contributors: Sequence[Contributor[Sequence[T]]],
    ls: EngramLanguageServer,
    *args: Any,
) -> list[T]:
    """Every contributor's items, in the listed order; a failing one is logged and skipped."""
    out: list[T] = []
    for contributor in contributors:
        try:
            out.extend(await contributor(ls, *args))
        except Exception as exc:  # isolated: logged with its traceback, the others answer
            failed(method, contributor, exc)
    return out
