"""Deterministic synthetic vault generator for benchmarks and slow tests.

Usage::

    python benchmarks/generate_vault.py OUT_DIR --notes 100000 [--seed 1] [--shape low-alphabet]

Writes ``N`` Markdown notes under ``OUT_DIR`` in folders ``area-XX/YYYY/`` (at most about 500
notes per folder) and nothing else; a one-line summary goes to stderr. The same ``--notes`` and
``--seed`` always produce byte-identical files (the word and topic vocabularies do not depend on
the seed, so the module constants below are valid for every seed).

Each note has ~1.5 KB of English-looking text whose words follow a Zipf-like distribution over a
vocabulary of a few thousand words, 2–6 headings, a few wiki-links and Markdown links to other
generated notes, and sometimes inline ``#tags``. Frontmatter holds ``title``, ``tags`` (1–5 topics,
Zipf-distributed over ~2,000 topic names, some of them multi-word such as ``memory leak``), a
date between 2018 and 2025 (``date:``, sometimes a ``created_at:`` timestamp), a ``summary``,
then typed properties (``status``, ``priority``, ``rating``, ``due``, ``draft``: see
``_properties``); 4 % of topic picks are title-cased (``Python``), as in real vaults. About 2 % of
notes are messy, split evenly over: malformed YAML, tags as a comma string, a ``{{date}}``
placeholder, no date, no frontmatter.

Shapes (``--shape``, :data:`SHAPES`): ``standard`` (the default) as above; ``low-alphabet`` is
the same vault (the same bodies, topics, dates, links and messy notes, the random draws being
the same) except that every title and heading word is taken from :data:`LOW_ALPHABET_WORDS`,
words of two to four syllables over the eight letters of :data:`LOW_ALPHABET` (``kalomi``,
``tinan`` ...): names whose characters are nearly all the same, as in vaults written in another
script or named by a pattern, where a filter by a name's set of characters passes almost every
name. File names follow the titles.

Query-mix constants (for benchmarks; stable across seeds):

- ``COMMON_WORDS``: body words that each occur in roughly 45–50 % of notes.
- ``RARE_WORDS``: body words that occur in exactly one note in 1,000 (an index rule, see
  ``_carries``: ``notes // 1000`` notes, give or take one) and nowhere else.
- ``COMMON_TOPICS``: the most frequent topics (about 23 %, 15 % and 11 % of notes).
  ``memory``, ``memory leak`` and ``memory-leak`` are three distinct topics (about 7 %, 3.5 % and
  1 % of notes), for tests that a tag filter never matches inside a longer topic.
- ``RARE_TOPICS``: topics on exactly one note in 1,000, never elsewhere. Notes carrying a rare
  topic always have well-formed frontmatter and a date.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import sys
import time
from collections.abc import Collection, Sequence
from pathlib import Path
from random import Random

__all__ = [
    "COMMON_TOPICS",
    "COMMON_WORDS",
    "LOW_ALPHABET",
    "LOW_ALPHABET_WORDS",
    "RARE_TOPICS",
    "RARE_WORDS",
    "SHAPES",
    "STATUSES",
    "generate",
    "main",
]

# --------------------------------------------------------------------------------------------
# Vocabulary (fixed: independent of the seed)
# --------------------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    """Split a long whitespace-separated literal (easier to read and edit than a list)."""
    return text.split()


_FUNCTION_WORDS = _words(
    "the of and to a in is that for it with as on be this by are we from at or not an but "
    "was can have which will if all one has more when they so there their also into than "
    "then only about after before our some what how each other these would should could "
    "while over under between most very"
)

_CONTENT_WORDS = _words(
    "index query system data release service file note search cache latency memory build "
    "server client request result change error test user version config update schema "
    "table topic record vault editor review plan team design issue feature window thread "
    "process buffer network storage metric report deploy branch commit merge patch module "
    "package library function method object value field column page session token parser "
    "stream batch queue worker task event signal handler timeout retry limit budget cost "
    "speed size count rate ratio range filter sort order group level layer scope state "
    "status phase stage step path route link graph tree node edge list map set key hash "
    "lock transaction snapshot checkpoint journal log trace profile benchmark sample "
    "baseline target goal risk decision question answer idea draft summary outline "
    "meeting agenda action owner deadline milestone roadmap sprint backlog ticket bug fix "
    "regression crash leak spike drop peak load traffic capacity quota disk volume block "
    "segment chunk frame packet socket port host cluster region zone replica shard "
    "partition primary secondary backup restore migration upgrade rollout rollback "
    "incident outage alert monitor dashboard chart trend week month quarter year morning "
    "evening today yesterday tomorrow people customer partner vendor contract price "
    "invoice account project product market launch strategy vision mission culture "
    "hiring onboarding training mentor feedback growth learning reading writing notes "
    "document archive folder template format heading paragraph sentence word phrase "
    "prefix suffix pattern regex literal syntax grammar language compiler runtime "
    "interpreter kernel driver device sensor camera screen keyboard mouse laptop phone "
    "tablet browser extension plugin theme color font layout style widget button menu "
    "dialog panel sidebar terminal shell script command option argument flag default "
    "setting preference profile account password secret certificate permission role "
    "policy audit compliance privacy security threat attack defense firewall proxy "
    "gateway endpoint interface protocol format encoding unicode ascii byte bit integer "
    "float string array vector matrix tensor model training inference dataset label "
    "feature accuracy precision recall score ranking relevance snippet highlight"
)

_ONSETS = _words(
    "b bl br c ch cl cr d dr f fl fr g gl gr h j k l m n p pl pr qu r s sh sk sl sm sn sp "
    "st str t th tr v w z"
)
_VOWELS = _words("a e i o u a e i o u a e i o ai ea ee ou io")
_CODAS = ["", "", "", "", "", "n", "r", "l", "s", "t", "nd", "st", "rk", "m", "ng", "x", "ck"]

# Words a YAML loader would turn into booleans or null, and other words to keep out.
_RESERVED = {
    "yes",
    "no",
    "on",
    "off",
    "true",
    "false",
    "null",
    "nan",
    "inf",
    "y",
    "n",
    "not",
    "and",
    "or",
    "near",
}

RARE_WORDS: tuple[str, ...] = ("quokkafjord", "zephyrvault", "marmolithic", "xylobrine")
"""Body words in exactly one note in 1,000 (about ``notes // 1000`` notes each)."""

COMMON_WORDS: tuple[str, ...] = ("index", "query", "system", "data", "release")
"""Content words at the top of the Zipf ranking: each is in a large share of notes."""

_N_PSEUDO_WORDS = 3800


def _syllable_words(
    count: int,
    seed: int,
    parts: tuple[Sequence[str], Sequence[str], Sequence[str]],
    syllables: tuple[int, ...],
    weights: tuple[int, ...],
    *,
    taken: Collection[str] = (),
    min_len: int = 0,
) -> list[str]:
    """``count`` distinct words of ``syllables`` syllables (drawn with ``weights``), each an
    onset, a vowel and a coda of ``parts``; none in ``taken`` or ``_RESERVED``."""
    rng = Random(seed)
    onsets, vowels, codas = parts
    words: list[str] = []
    seen = set(taken)
    while len(words) < count:
        n = rng.choices(syllables, weights=weights)[0]
        word = "".join(
            rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas) for _ in range(n)
        )
        if len(word) < min_len or word in seen or word in _RESERVED:
            continue
        seen.add(word)
        words.append(word)
    return words


def _pseudo_words(count: int, taken: set[str]) -> list[str]:
    parts = (_ONSETS, _VOWELS, _CODAS)
    return _syllable_words(count, 20240611, parts, (1, 2, 3), (3, 6, 1), taken=taken, min_len=3)


def _zipf_cum(count: int, s: float = 1.0, q: float = 2.7) -> list[float]:
    return list(itertools.accumulate(1.0 / (rank + q) ** s for rank in range(count)))


# Function words come first (the top of the Zipf ranking), then real content words, then
# generated words. "and", "or", "not" stay lower case in text, where FTS5 reads them as words.
_BASE = list(dict.fromkeys(_FUNCTION_WORDS))
_CONTENT = list(dict.fromkeys(w for w in _CONTENT_WORDS if w not in _BASE))
_VOCAB: list[str] = (
    _BASE + _CONTENT + _pseudo_words(_N_PSEUDO_WORDS, set(_BASE) | set(_CONTENT) | set(RARE_WORDS))
)
_VOCAB_CUM = _zipf_cum(len(_VOCAB))
# Titles, summaries and aliases use content words only (no function words).
_TITLE_WORDS = _VOCAB[len(_BASE) :]
_TITLE_CUM = _zipf_cum(len(_TITLE_WORDS), s=0.9, q=10.0)

SHAPES: tuple[str, ...] = ("standard", "low-alphabet")
"""The vault shapes :func:`generate` writes (see the module docstring)."""

LOW_ALPHABET = "klmntaio"
"""The letters of every title and heading word of the ``low-alphabet`` shape."""


def _low_alphabet_words(count: int) -> list[str]:
    """``count`` distinct words of 2-4 syllables (consonant, vowel, sometimes ``n``) over
    :data:`LOW_ALPHABET`, the most frequent (the Zipf ranking's top) first."""
    return _syllable_words(count, 80808, ("klmnt", "aio", ["", "", "n"]), (2, 3, 4), (5, 4, 1))


LOW_ALPHABET_WORDS: tuple[str, ...] = tuple(_low_alphabet_words(len(_TITLE_WORDS)))
"""Title and heading words of the ``low-alphabet`` shape, in the Zipf order of the standard
title words they replace (``LOW_ALPHABET_WORDS[0]`` is the most frequent)."""

# --------------------------------------------------------------------------------------------
# Topics (fixed: independent of the seed)
# --------------------------------------------------------------------------------------------

COMMON_TOPICS: tuple[str, ...] = ("python", "sqlite", "search")
"""The three most frequent topics (Zipf ranks 1–3)."""

RARE_TOPICS: tuple[str, ...] = ("tape backup", "cobol-migration", "quantum annealing")
"""Topics on exactly one note in 1,000 and nowhere else."""

_REAL_TOPICS = (
    "python",
    "sqlite",
    "search",
    "performance",
    "memory",
    "testing",
    "rust",
    "lsp",
    "editor",
    "meeting",
    "memory leak",
    "database",
    "planning",
    "security",
    "release",
    "machine learning",
    "code review",
    "documentation",
    "networking",
    "design",
    "incident",
    "hiring",
    "javascript",
    "go",
    "linux",
    "kubernetes",
    "observability",
    "caching",
    "concurrency",
    "api",
    "frontend",
    "backend",
    "devops",
    "ci",
    "refactoring",
    "architecture",
    "memory-leak",
    "profiling",
    "full-text search",
    "indexing",
    "postgres",
    "git",
    "vim",
    "emacs",
    "journal",
    "reading",
    "ideas",
    "retro",
    "roadmap",
    "onboarding",
    "accessibility",
    "typescript",
    "data engineering",
    "compilers",
    "distributed systems",
    "storage",
    "backups",
    "monitoring",
    "on-call",
    "product",
)

_N_TOPICS = 2000


def _build_topics() -> list[str]:
    rng = Random(19)
    topics = list(_REAL_TOPICS)
    seen = set(topics) | set(RARE_TOPICS)
    pool = _TITLE_WORDS[:1500]
    while len(topics) < _N_TOPICS:
        shape = rng.random()
        if shape < 0.55:
            topic = rng.choice(pool)
        elif shape < 0.85:
            topic = f"{rng.choice(pool)} {rng.choice(pool)}"
        else:
            topic = f"{rng.choice(pool)}-{rng.choice(pool)}"
        if topic in seen:
            continue
        seen.add(topic)
        topics.append(topic)
    return topics


_TOPICS = _build_topics()
_TOPIC_CUM = _zipf_cum(len(_TOPICS), s=1.0, q=1.5)
# Inline #tags must be one token: only topics without spaces.
_INLINE_TOPICS = [t for t in _TOPICS[:300] if " " not in t]

# --------------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------------

_NOTES_PER_FOLDER = 400  # average; the maximum stays below ~500
_YEARS = tuple(range(2018, 2026))
_DAY0 = dt.date(2018, 1, 1).toordinal()
_NDAYS = dt.date(2025, 12, 31).toordinal() - _DAY0 + 1
_MESSY_SHARE = 0.02
_MESSY_KINDS = ("malformed", "comma-tags", "placeholder-date", "no-date", "no-frontmatter")


def _carries(i: int, k: int, salt: int) -> bool:
    """True for exactly one note index in 1,000 per (k, salt): the rare word/topic rule."""
    return (i + 1 + k * 251 + salt) % 1000 == 0


def _title(rng: Random, words: Sequence[str]) -> list[str]:
    return rng.choices(words, cum_weights=_TITLE_CUM, k=rng.randint(2, 5))


def _sentences(words: list[str], rng: Random) -> list[str]:
    out: list[str] = []
    pos, n = 0, len(words)
    while pos < n:
        length = rng.randint(6, 16)
        chunk = words[pos : pos + length]
        pos += length
        chunk[0] = chunk[0].capitalize()
        out.append(" ".join(chunk) + ("?" if rng.random() < 0.04 else "."))
    return out


def _pick_topics(rng: Random) -> list[str]:
    picked: list[str] = []
    seen: set[str] = set()
    for topic in rng.choices(_TOPICS, cum_weights=_TOPIC_CUM, k=rng.randint(1, 5)):
        if topic in seen:
            continue
        seen.add(topic)
        if rng.random() < 0.04:  # real vaults mix spellings: Python / python
            topic = topic.title()
        picked.append(topic)
    return picked


def _frontmatter(
    title: str,
    topics: list[str],
    date: dt.date,
    summary: str,
    kind: str | None,
    rng: Random,
    properties: Sequence[str] = (),
) -> str:
    lines = ["---", f"title: {title}"]
    if kind == "malformed":
        lines.append("tags: [" + ", ".join(topics))  # unclosed flow list
    elif kind == "comma-tags":
        lines.append('tags: "' + ", ".join(topics) + '"')
    elif rng.random() < 0.5:
        lines.append("tags: [" + ", ".join(topics) + "]")
    else:
        lines.append("tags:")
        lines.extend(f"  - {t}" for t in topics)
    if kind == "placeholder-date":
        lines.append('date: "{{date}}"')
    elif kind != "no-date":
        if rng.random() < 0.06:
            hh, mm = rng.randrange(7, 20), rng.randrange(60)
            lines.append(f"created_at: {date.isoformat()}T{hh:02d}:{mm:02d}:00Z")
        else:
            lines.append(f"date: {date.isoformat()}")
    lines.append(f"summary: {summary}")
    lines.extend(properties)
    lines.append("---")
    return "\n".join(lines) + "\n\n"


NESTED_TOPICS = ("area/engineering", "area/engineering/frontend", "area/ops", "area/research")
"""Nested topics, one of them on about 20 % of notes (drawn from their own random stream);
``area`` itself is on no note: a parent only through the topics nested under it."""

STATUSES = ("todo", "doing", "done", "blocked", "someday")
"""Values of the ``status`` property, most used first (about 40, 25, 20, 10, 5 %)."""
_STATUS_CUM = (40, 65, 85, 95, 100)


def _properties(rng: Random, date: dt.date) -> list[str]:
    """Typed frontmatter lines: ``status`` (text, on 90 % of notes), ``priority`` (a number
    1–5, but text ``high``/``low`` on 3 % of them: a property whose type differs between
    notes), ``rating`` (a float on 60 %), ``due`` (a date 0–120 days after the note's, on
    40 %) and ``draft`` (a bool on 30 %). Drawn from their own random stream, so that the
    rest of a note is the same as before they existed."""
    lines = []
    if rng.random() < 0.9:
        lines.append(f"status: {rng.choices(STATUSES, cum_weights=_STATUS_CUM)[0]}")
    if rng.random() < 0.03:
        lines.append(f"priority: {rng.choice(('high', 'low'))}")
    else:
        lines.append(f"priority: {rng.randint(1, 5)}")
    if rng.random() < 0.6:
        lines.append(f"rating: {rng.randint(10, 50) / 10}")
    if rng.random() < 0.4:
        lines.append(f"due: {(date + dt.timedelta(days=rng.randrange(121))).isoformat()}")
    if rng.random() < 0.3:
        lines.append(f"draft: {'true' if rng.random() < 0.5 else 'false'}")
    return lines


TASK_TAGS = ("waiting", "urgent", "review", "errand", "call")
"""Tags written in tasks, most used first."""
_TASK_TAG_CUM = (40, 65, 82, 93, 100)
_TASK_STATUS = ((" ", 70), ("x", 20), ("/", 6), ("-", 4))
_PRIORITY_MARKS = (
    ("", 50),
    ("\u23eb", 15),
    ("\U0001f53c", 15),
    ("\U0001f53d", 10),
    ("\U0001f53a", 5),
    ("\u23ec", 5),
)


def _tasks(rng: Random, date: dt.date, words: Sequence[str]) -> list[str]:
    """Task lines for about 30 % of notes (1–6 of them, a third of the later ones nested under
    the one before): a status (70 % open), a due day from 30 days before the note's date to 120
    after it on 60 %, an Obsidian Tasks priority on half, a tag on 30 %, a ✅ day on the done
    ones. Drawn from their own random stream, so that the rest of a note is the same as before
    they existed."""
    if rng.random() >= 0.3:
        return []
    lines = []
    for k in range(rng.randint(1, 6)):
        status = rng.choices([s for s, _ in _TASK_STATUS], [w for _, w in _TASK_STATUS])[0]
        text = " ".join(rng.choices(words, k=rng.randint(2, 6)))
        parts = [text]
        if rng.random() < 0.3:
            parts.append("#" + rng.choices(TASK_TAGS, cum_weights=_TASK_TAG_CUM)[0])
        mark = rng.choices([m for m, _ in _PRIORITY_MARKS], [w for _, w in _PRIORITY_MARKS])[0]
        if mark:
            parts.append(mark)
        if rng.random() < 0.6:
            due = date + dt.timedelta(days=rng.randrange(-30, 121))
            parts.append(f"\U0001f4c5 {due.isoformat()}")
        if status == "x":
            parts.append(f"\u2705 {(date + dt.timedelta(days=rng.randrange(60))).isoformat()}")
        indent = "  " if k and rng.random() < 0.33 else ""
        lines.append(f"{indent}- [{status}] {' '.join(parts)}")
    return lines


def generate(
    out_dir: Path, notes: int, seed: int = 1, *, overwrite: bool = False, shape: str = "standard"
) -> None:
    """Write ``notes`` synthetic notes of a shape (one of :data:`SHAPES`) under ``out_dir``
    (created if missing).

    Raises ``FileExistsError`` when ``out_dir`` is not empty, unless ``overwrite`` is true (then
    files with the same names are replaced; other files are left alone).
    """
    _generate(Path(out_dir), notes, seed, overwrite=overwrite, shape=shape)


def _generate(
    out_dir: Path, notes: int, seed: int, *, overwrite: bool, shape: str = "standard"
) -> dict[str, int]:
    if notes < 0:
        raise ValueError("notes must be >= 0")
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}: one of {', '.join(SHAPES)}")
    name_words: Sequence[str] = LOW_ALPHABET_WORDS if shape == "low-alphabet" else _TITLE_WORDS
    if out_dir.exists() and not overwrite and any(out_dir.iterdir()):
        raise FileExistsError(f"{out_dir} is not empty; use an empty or new directory")
    rng = Random(seed)
    props_rng = Random(f"properties-{seed}")
    n_areas = max(1, -(-notes // (_NOTES_PER_FOLDER * len(_YEARS))))

    # Pass 1: metadata of every note, so that links can point anywhere.
    dates: list[dt.date] = []
    titles: list[list[str]] = []
    stems: list[str] = []
    folders: list[str] = []
    for i in range(notes):
        date = dt.date.fromordinal(_DAY0 + rng.randrange(_NDAYS))
        words = _title(rng, name_words)
        dates.append(date)
        titles.append(words)
        stems.append("-".join(words) + f"-{i:06d}")
        folders.append(f"area-{i % n_areas:02d}/{date.year}")

    for folder in dict.fromkeys(folders):
        (out_dir / folder).mkdir(parents=True, exist_ok=True)

    stats = dict.fromkeys(_MESSY_KINDS, 0)
    nested = Random(f"nested-{seed}")
    tasks_rng = Random(f"tasks-{seed}")
    total_bytes = 0
    for i in range(notes):
        carrier = any(_carries(i, k, 500) for k in range(len(RARE_TOPICS)))
        kind = None
        if rng.random() < _MESSY_SHARE and not carrier:
            kind = _MESSY_KINDS[rng.randrange(len(_MESSY_KINDS))]
            stats[kind] += 1

        title = " ".join(w.capitalize() for w in titles[i])
        topics = _pick_topics(rng)
        while kind == "comma-tags" and len(topics) < 2:  # one topic would have no comma to split
            extra = rng.choices(_TOPICS, cum_weights=_TOPIC_CUM)[0]
            if extra.casefold() not in {t.casefold() for t in topics}:
                topics.append(extra)
        for k, rare in enumerate(RARE_TOPICS):
            if _carries(i, k, 500):
                topics.append(rare)
        if nested.random() < 0.2:
            topics.append(nested.choice(NESTED_TOPICS))

        # Body words: one Zipf draw per note, then cut into sentences and paragraphs.
        words = rng.choices(_VOCAB, cum_weights=_VOCAB_CUM, k=rng.randint(175, 220))
        for k, rare in enumerate(RARE_WORDS):
            if _carries(i, k, 0):
                words.insert(rng.randrange(1, len(words)), rare)
        sentences = _sentences(words, rng)
        summary_words = rng.choices(_TITLE_WORDS, cum_weights=_TITLE_CUM, k=rng.randint(6, 12))
        summary = " ".join(summary_words).capitalize() + "."

        # Links to other notes (wiki and Markdown), dropped into random sentences.
        if notes > 1:
            for _ in range(rng.randint(1, 3)):
                j = rng.randrange(notes)
                if rng.random() < 0.3:
                    alias = " ".join(titles[j][:2])
                    link = f"[[{stems[j]}|{alias}]]"
                else:
                    link = f"[[{stems[j]}]]"
                s = rng.randrange(len(sentences))
                sentences[s] = sentences[s][:-1] + f", see {link}."
            for _ in range(rng.randint(0, 2)):
                j = rng.randrange(notes)
                label = " ".join(titles[j])
                link = f"[{label}](../../{folders[j]}/{stems[j]}.md)"
                s = rng.randrange(len(sentences))
                sentences[s] = sentences[s][:-1] + f" (details in {link})."
        if rng.random() < 0.15:
            inline = rng.sample(_INLINE_TOPICS, rng.randint(1, 2))
            sentences.append(" ".join("#" + t for t in inline))

        # Headings (2–6) and paragraphs between them.
        n_head = rng.randint(2, 6)
        parts = [f"# {title}\n"]
        per = max(1, len(sentences) // n_head)
        for h in range(n_head):
            level = "##" if h == 0 or rng.random() < 0.7 else "###"
            heading = " ".join(
                rng.choices(name_words, cum_weights=_TITLE_CUM, k=rng.randint(1, 4))
            ).capitalize()
            chunk = sentences[h * per : (h + 1) * per if h < n_head - 1 else len(sentences)]
            parts.append(f"{level} {heading}\n")
            for p in range(0, len(chunk), 4):
                parts.append(" ".join(chunk[p : p + 4]) + "\n")
        if rng.random() < 0.08:
            parts.append("```bash\n# not a heading\necho '#not-a-tag'\n```\n")
        task_lines = _tasks(tasks_rng, dates[i], _VOCAB[:400])
        if task_lines:
            parts.append("\n".join(task_lines) + "\n")
        body = "\n".join(parts)

        if kind == "no-frontmatter":
            text = body
        else:
            props = _properties(props_rng, dates[i])
            text = _frontmatter(title, topics, dates[i], summary, kind, rng, props) + body
        data = text.encode("utf-8")
        total_bytes += len(data)
        with open(out_dir / folders[i] / f"{stems[i]}.md", "wb") as fh:
            fh.write(data)

    stats["notes"] = notes
    stats["bytes"] = total_bytes
    stats["folders"] = len(set(folders))
    return stats


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write a deterministic synthetic Markdown vault.")
    parser.add_argument("out_dir", type=Path, help="directory to write notes into (empty/new)")
    parser.add_argument("--notes", type=int, required=True, help="number of notes")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument(
        "--overwrite", action="store_true", help="allow a non-empty OUT_DIR (same names replaced)"
    )
    parser.add_argument(
        "--shape", choices=SHAPES, default="standard", help="names of the notes (default standard)"
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        stats = _generate(
            args.out_dir, args.notes, args.seed, overwrite=args.overwrite, shape=args.shape
        )
    except (FileExistsError, ValueError) as exc:
        print(f"generate_vault: {exc}", file=sys.stderr)
        return 2
    seconds = round(time.perf_counter() - start, 2)
    summary = {
        "out_dir": str(args.out_dir),
        "seed": args.seed,
        "shape": args.shape,
        "seconds": seconds,
        **stats,
    }
    print("generate_vault: " + json.dumps(summary, sort_keys=True), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
