"""Why a search found nothing, in plain words, for a front end to show after an empty answer
(the CLI prints them on stderr; ``--json`` answers never carry them).

- ``closest_topics``: the known topics spelled most like a name ("did you mean");
- ``date_span``: the first and last day the vault's notes are dated;
- ``why_empty``: a request's explanations: a topic of its tag filter that no note has, with
  the closest known ones; a date range that no note is dated in, with the vault's span.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engram_ls.core.search import SearchRequest, make_plan, parse_request, require_text

if TYPE_CHECKING:
    from engram_ls.core.service import Engram

TOPICS_COMPARED = 10_000
"""The most used topics a name is compared with (the ``topics`` listing's own cap)."""
CLOSE_RATIO = 0.6
"""How alike two names must be (``difflib``'s ratio) for one to be offered for the other:
``enginering`` and ``engineering`` are 0.95 alike, ``engine`` 0.75, ``sqlite`` 0.25."""


def closest_topics(engram: Engram, name: str, limit: int = 3) -> list[str]:
    """The known topics (each in its most common spelling) spelled most like ``name``, any
    case, closest first: at most ``limit``, none when none is close (``CLOSE_RATIO``), and
    no topic nested under one already offered."""
    key = require_text(name).strip().casefold()
    names = {t.name.casefold(): t.name for t in engram.topics("", TOPICS_COMPARED)}
    close = difflib.get_close_matches(key, list(names), n=3 * limit, cutoff=CLOSE_RATIO)
    chosen: list[str] = []
    for k in close:  # engineering, not engineering/frontend too
        if len(chosen) < limit and not any(k.startswith(c + "/") for c in chosen):
            chosen.append(k)
    return [names[k] for k in chosen]


def knows_topic(engram: Engram, name: str) -> bool:
    """Whether some note has the topic ``name`` (any case) or a topic nested under it."""
    key = require_text(name).strip().casefold()
    return bool(key) and any(t.name.casefold() == key for t in engram.topics(key, TOPICS_COMPARED))


def date_span(engram: Engram) -> tuple[str, str] | None:
    """(first, last) day of the vault's dated notes, None when no note has a date: from the
    index when it can serve (its ``notes_by_date`` index answers at once), else by reading
    every note."""
    engram._vault_present()
    with engram.health.reading(fresh=True) as r:
        if r.servable:
            row = r.conn.execute(
                "SELECT MIN(created_at), MAX(created_at) FROM notes WHERE created_at > ''"
            ).fetchone()
            return (str(row[0]), str(row[1])) if row and row[0] else None
    days = [
        note.created_at
        for f in engram.vault.walk()
        if (note := engram.read_note(f.path)) is not None and note.created_at
    ]
    return (min(days), max(days)) if days else None


def why_empty(engram: Engram, request: SearchRequest | Mapping[str, Any]) -> list[str]:
    """What explains an empty answer to ``request``, a sentence each: every topic of its tag
    filter that no note has, with the closest known ones (``no topic 'enginering'; did you
    mean engineering, engine?``), and a date range that no note is dated in, with the days the
    notes span (``no note dated 2030-01-01..2030-12-31; notes are dated
    2023-10-02..2026-02-14``). Empty when neither does (the filters together exclude every
    note, or the words are in none)."""
    req = parse_request(request)
    plan = make_plan(req, engram.vault, engram.config)
    hints = []
    for topic in plan.include:
        if knows_topic(engram, topic.key):
            continue
        close = closest_topics(engram, topic.key)
        guess = f"; did you mean {', '.join(close)}?" if close else ""
        hints.append(f"no topic '{topic.key}'{guess}")
    if req.date_from or req.date_to:
        dated = {"date_from": req.date_from, "date_to": req.date_to, "limit": 1}
        if engram.search(dated).total == 0:
            span = date_span(engram)
            notes = f"notes are dated {span[0]}..{span[1]}" if span else "no note has a date"
            hints.append(f"no note dated {_day_range(req.date_from, req.date_to)}; {notes}")
    return hints


def _day_range(first: str | None, last: str | None) -> str:
    """A date filter in words: ``A..B``, ``A or later``, ``B or earlier``."""
    if first and last:
        return f"{first}..{last}"
    return f"{first} or later" if first else f"{last} or earlier"


__all__ = ["closest_topics", "date_span", "knows_topic", "why_empty"]
