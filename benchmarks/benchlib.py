"""Helpers shared by the benchmarks: percentiles, timing loops, process memory, the query mix
and the ripgrep baseline. Not a benchmark itself."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


import generate_vault as g

from engram_ls.core.ripgrep import rg_binary


def emit(out: dict[str, Any], path: Path | None) -> None:
    """Print the results as JSON, and write them to ``path`` when given."""
    text = json.dumps(out, indent=2)
    print(text)
    if path is not None:
        path.write_text(text + "\n")


def pct(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))]


def summary(times_ms: list[float]) -> dict[str, Any]:
    """p50/p95/p99 in milliseconds and the number of runs they come from."""
    return {
        "p50_ms": round(pct(times_ms, 50), 2),
        "p95_ms": round(pct(times_ms, 95), 2),
        "p99_ms": round(pct(times_ms, 99), 2),
        "runs": len(times_ms),
    }


async def timed(
    fn: Callable[[], Awaitable[Any]],
    runs: int,
    budget_s: float = 8.0,
    min_runs: int = 5,
    settle_s: float = 0.0,
) -> tuple[dict[str, Any], Any]:
    """Await ``fn`` ``runs`` times (fewer when it would exceed ``budget_s``, never fewer than
    ``min_runs``); one untimed warm-up call first. With ``settle_s``, a second untimed call
    and that many seconds of rest before timing: the steady state of a server that reads
    something in the background after a request is repeated. Returns the summary and the
    last result."""
    result = await fn()
    if settle_s > 0:
        result = await fn()
        await asyncio.sleep(settle_s)
    times: list[float] = []
    start = time.perf_counter()
    for i in range(runs):
        t0 = time.perf_counter()
        result = await fn()
        times.append((time.perf_counter() - t0) * 1000)
        if i + 1 >= min_runs and time.perf_counter() - start > budget_s:
            break
    return summary(times), result


# -- memory ------------------------------------------------------------------------------------


def _status_mib(pid: int, field: str) -> float | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as fh:
                out.extend(int(c) for c in fh.read().split())
    except OSError:
        pass
    return out


def tree_pids(pid: int) -> list[int]:
    """``pid`` and all its descendants (Linux /proc)."""
    seen, todo = [], [pid]
    while todo:
        p = todo.pop()
        seen.append(p)
        todo.extend(_children(p))
    return seen


def rss_mib(pid: int) -> float | None:
    value = _status_mib(pid, "VmRSS")
    return None if value is None else round(value, 1)


def peak_rss_mib(pid: int) -> float | None:
    """The kernel's high-water mark (VmHWM) of one process."""
    value = _status_mib(pid, "VmHWM")
    return None if value is None else round(value, 1)


def tree_rss_mib(pid: int) -> float | None:
    """RSS of ``pid`` and its descendants (e.g. a server and its parse workers), summed."""
    values = [_status_mib(p, "VmRSS") for p in tree_pids(pid)]
    known = [v for v in values if v is not None]
    return round(sum(known), 1) if known else None


def tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds used so far by ``pid`` and its descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for p in tree_pids(pid):
        try:
            with open(f"/proc/{p}/stat", encoding="ascii") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / tick


def kill_all(pids: list[int]) -> None:
    """SIGKILL the given processes (ones this benchmark started)."""
    import signal

    for p in pids:
        with contextlib.suppress(OSError):
            os.kill(p, signal.SIGKILL)


class RssSampler:
    """Samples the summed RSS of a process tree every ``interval`` seconds; keeps the peak."""

    def __init__(self, pid: int, interval: float = 0.1) -> None:
        self.pid = pid
        self.interval = interval
        self.peak = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _loop(self) -> None:
        while True:
            value = tree_rss_mib(self.pid)
            if value is not None:
                self.peak = max(self.peak, value)
            await asyncio.sleep(self.interval)

    def __enter__(self) -> RssSampler:
        self._task = asyncio.ensure_future(self._loop())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
        value = tree_rss_mib(self.pid)
        if value is not None:
            self.peak = max(self.peak, value)


def child_pids(name_part: str) -> list[int]:
    """Direct children of this process whose command line contains ``name_part``."""
    found = []
    for pid in _children(os.getpid()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if name_part in cmd:
            found.append(pid)
    return found


# -- the query mix and its ripgrep baseline ------------------------------------------------------


def query_mix() -> list[tuple[str, dict[str, Any], dict[str, Any] | None]]:
    """(name, engram/search params, ripgrep baseline or None).

    The baseline is what a user without an index would run: ``rg`` over the whole vault for the
    same words (``{"pattern": ..., "regex": bool}``); for text + filters it is the scan for the
    words alone (rg cannot read frontmatter filters), so its ratio is a lower bound.
    """
    topic, rare_topic = g.COMMON_TOPICS[0], g.RARE_TOPICS[0]
    word, word2, rare = g.COMMON_WORDS[0], g.COMMON_WORDS[1], g.RARE_WORDS[0]
    year = {"date_from": "2021-01-01", "date_to": "2021-12-31"}
    regex = rare[:5] + "[a-z]+"
    return [
        ("tag", {"tags": [topic]}, None),
        ("tag+date", {"tags": [topic], **year}, None),
        ("rare tag+date", {"tags": [rare_topic], "date_from": "2018-01-01"}, None),
        ("2 tags all", {"tags": [topic, "memory"], "tags_mode": "all"}, None),
        ("metadata-only date", {"date_from": "2021-03-01", "date_to": "2021-03-31"}, None),
        ("text rare", {"query": rare}, {"pattern": rare}),
        ("text common", {"query": word}, {"pattern": word}),
        ("phrase", {"query": f'"{word} {word2}"'}, {"pattern": f"{word} {word2}"}),
        ("text+tag+date", {"query": word, "tags": [topic], **year}, {"pattern": word}),
        ("text rare+tag", {"query": rare, "tags": [topic]}, {"pattern": rare}),
        ("literal rare", {"query": rare, "mode": "literal"}, {"pattern": rare}),
        ("literal common", {"query": word, "mode": "literal"}, {"pattern": word}),
        ("regex", {"query": regex, "mode": "regex"}, {"pattern": regex, "regex": True}),
        ("regex+tag", {"query": regex, "mode": "regex", "tags": [topic]}, None),
        ("where 1", {"where": ["status = done"]}, None),
        ("where 2", {"where": ["status = doing", "priority >= 4"]}, None),
        ("where or", {"where": {"or": ["rating >= 4.5", {"not": "status exists"}]}}, None),
        ("where+tag+date", {"where": ["due exists"], "tags": [topic], **year}, None),
        ("where+text", {"query": word, "where": ["priority >= 4"]}, None),
        ("nested tag", {"tags": ["area"]}, None),
        ("nested tag exact", {"tags": ["=area/engineering"]}, None),
        ("nested tag+where", {"tags": ["area/engineering"], "where": ["status = doing"]}, None),
    ]


def base_mix() -> list[tuple[str, str]]:
    """(name, the text of a base) of the ``engram/query`` kinds: a view with three conditions
    and a sort (answered by the conditions' bitmaps, read in the sort key's index order), one
    whose filter is a formula over a property (evaluated over the index's values of the notes
    the others pass), and one grouped with a summary."""
    topic = g.COMMON_TOPICS[0]
    view = "views:\n  - name: v\n    order: [file.name, status, priority, due]\n    limit: 50\n"
    return [
        (
            "base 3 conditions+sort",
            f"filters:\n  and:\n    - 'status == \"doing\"'\n    - 'priority >= 3'\n"
            f"    - 'file.hasTag(\"{topic}\")'\n{view}"
            "    sort: [{property: due, direction: ASC}]\n",
        ),
        (
            "base formula filter",
            f"filters: 'file.hasTag(\"{g.COMMON_TOPICS[2]}\") && rating * 2 > 8'\n{view}",
        ),
        (
            "base groupBy+summary",
            f'filters: \'file.hasTag("{g.RARE_TOPICS[0]}") || priority == "high"\'\n{view}'
            "    groupBy: {property: status, direction: ASC}\n    summaries: {priority: Average}\n",
        ),
    ]


def task_mix() -> list[tuple[str, dict[str, Any]]]:
    """(name, ``engram/tasks`` params) of the task kinds (issue 18): the open tasks due in one
    week (a fixed one: the generator's days are 2018-2025), the open tasks with a tag by
    priority, the tasks of one folder, and every open task soonest first (a page of 50)."""
    return [
        (
            "tasks due this week",
            {
                "status": "open",
                "due_after": "2022-06-05",
                "due_before": "2022-06-13",
                "sort": "due",
            },
        ),
        ("tasks tag by priority", {"status": "open", "tags": ["waiting"], "sort": "priority"}),
        ("tasks in folder", {"path": "area-00/2022"}),
        ("tasks open by due", {"status": "open", "sort": "due"}),
    ]


SEMANTIC_QUERIES = (
    "why is the search index slow after a release",
    "memory leak in the watcher",
    "how to configure the editor keyboard",
    "database migration failed during deploy",
    "team retro about hiring",
    "plugin timeout when the cluster is busy",
    "backup the vault to disk",
    "buffer overflow in the parser",
    "release planning for the next quarter",
    "dashboard shows the wrong status",
    "cache invalidation problem",
    "python packaging and library",
    "sqlite write ahead log",
    "network outage on friday",
    "meeting notes with the design team",
    "performance regression in the renderer",
    "security review of the login flow",
    "customer complaint about latency",
    "incident postmortem",
    "open questions about pricing",
)
"""Queries by meaning taken in turn by the kind ``semantic, 20 queries``."""


def semantic_mix() -> list[tuple[str, dict[str, Any]]]:
    """(name, engram/search params) of the search-by-meaning kinds: ``semantic`` and ``hybrid``
    alone (``semantic`` also over ``SEMANTIC_QUERIES`` in turn, a tuple as its ``query``: one
    query repeated reads the same vectors each time, different ones others) and with
    each kind of filter (a common tag, a rare tag: a narrow filter, a year, conditions on a
    property, a folder (``area-01/``, one of the generated vault's) with a common tag, a glob
    of every area's 2021 folder), then two kinds of the main mix as the baseline measured in
    the same run (last, so that the server's memory after the semantic kinds is theirs
    alone)."""
    topic, rare_topic = g.COMMON_TOPICS[0], g.RARE_TOPICS[0]
    year = {"date_from": "2021-01-01", "date_to": "2021-12-31"}
    query = SEMANTIC_QUERIES[0]
    return [
        ("semantic", {"query": query, "mode": "semantic"}),
        ("semantic, 20 queries", {"query": SEMANTIC_QUERIES, "mode": "semantic"}),
        ("semantic+tag", {"query": query, "mode": "semantic", "tags": [topic]}),
        ("semantic+rare tag", {"query": query, "mode": "semantic", "tags": [rare_topic]}),
        ("semantic+date", {"query": query, "mode": "semantic", **year}),
        ("semantic+tag+date", {"query": query, "mode": "semantic", "tags": [topic], **year}),
        ("semantic+where", {"query": query, "mode": "semantic", "where": ["status = doing"]}),
        (
            "semantic+folder+tag",
            {"query": query, "mode": "semantic", "path": "area-01", "tags": [topic]},
        ),
        ("semantic+glob", {"query": query, "mode": "semantic", "path": "*/2021/**"}),
        ("hybrid", {"query": query, "mode": "hybrid"}),
        ("hybrid+tag", {"query": query, "mode": "hybrid", "tags": [topic]}),
        ("hybrid+date", {"query": query, "mode": "hybrid", **year}),
        ("hybrid words", {"query": f"{g.COMMON_WORDS[0]} {g.COMMON_WORDS[1]}", "mode": "hybrid"}),
        ("text common (baseline)", {"query": g.COMMON_WORDS[0]}),
        ("tag (baseline)", {"tags": [topic]}),
    ]


def symbol_queries(shape: str = "standard") -> tuple[str, ...]:
    """The ``workspace/symbol`` queries of a vault shape (``generate_vault.SHAPES``): two
    characters, a word's start, a whole word, and a loose subsequence. The standard shape's are
    ``qu``, ``zephyr`` (a rare word's start), ``idxq`` and ``memory leak``; the low-alphabet
    shape's are made of its eight letters: ``ta``, the start and the whole of its most frequent
    name word (``tot``, ``toton``: exact and prefix matches all over the vault), ``kmlt``."""
    if shape == "low-alphabet":
        top = g.LOW_ALPHABET_WORDS[0]
        return ("ta", top[:3], top, "kmlt")
    return ("qu", g.RARE_WORDS[1][:6], "idxq", "memory leak")


def rg_ms(root: Path, pattern: str, *, regex: bool = False, runs: int = 3) -> float:
    """Median wall time of ``rg`` listing the vault's notes that contain ``pattern``."""
    cmd = [rg_binary(), "--no-config", "--no-ignore", "-i", "-l", "--glob=*.md"]
    cmd += ["-e", pattern] if regex else ["-F", "-e", pattern]
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([*cmd, "--", "."], cwd=root, stdout=subprocess.DEVNULL, check=False)
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 1)


def finite_positive(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0
