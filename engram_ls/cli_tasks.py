"""``engram tasks``: the vault's tasks, grouped by note; ``engram task done|undone|toggle
PATH:LINE``: complete one (docs/tasks.md).

The listing's options are the tasks request's fields (``core/tasks/request.py``), plus
``--open`` and ``--done`` for ``--status open|done``. The text output groups the tasks by note
(its path and title), one line a task: its line, its status box, its description, then its
due day, priority and tags, and ``OVERDUE`` for an open task due before today.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from engram_ls.cli_options import in_flag_words, request_from
from engram_ls.core.errors import EngramError, InvalidRequest
from engram_ls.core.tasks.request import TasksRequest
from engram_ls.core.vault import find_vault_root


def cmd_tasks(args: argparse.Namespace) -> int:
    from engram_ls.cli import EXIT_OK, _open, _print_json, _sync
    from engram_ls.core.search import request_fields

    values = {f.name: getattr(args, f.name) for f in request_fields("cli", TasksRequest)}
    if args.open or args.done:
        values["status"] = "open" if args.open else "done"
    request = request_from(TasksRequest, values)
    engram = _open(args, read_only=args.no_sync)
    try:
        if not args.no_sync:
            _sync(engram)
        try:
            result = engram.tasks(request)
        except EngramError as exc:
            raise in_flag_words(exc, TasksRequest) from None
    finally:
        engram.close()
    if args.json:
        _print_json(result)
    else:
        sys.stdout.write(task_listing(result))
    return EXIT_OK


def task_listing(result: dict[str, Any]) -> str:
    """The tasks grouped by note, as ``engram tasks`` prints them."""
    lines: list[str] = []
    last = None
    for task in result["tasks"]:
        if task["path"] != last:
            last = task["path"]
            if lines:
                lines.append("")
            lines.append(f"{task['path']}  ({task['note']['title']})")
        parts = [f"{task['line']:>5}  [{task['status']}] {task['description'] or task['text']}"]
        if task["due"]:
            parts.append(f"due {task['due']}")
        if task["scheduled"]:
            parts.append(f"scheduled {task['scheduled']}")
        if task["priority"] != "normal":
            parts.append(task["priority"])
        if task["recurrence"]:
            parts.append(f"repeats {task['recurrence']}")
        if task["overdue"]:
            parts.append("OVERDUE")
        lines.append("  ".join(parts))
    shown, total = len(result["tasks"]), result["total"]
    more = " (more: use --offset)" if result["truncated"] else ""
    if lines:
        lines.append("")
    lines.append(
        f"{shown} of {total} tasks{more}; served by {result['index']['served_by']}"
        f" (index {result['index']['state']}), {result['elapsed_ms']:.1f} ms"
    )
    return "\n".join(lines) + "\n"


def cmd_task(args: argparse.Namespace) -> int:
    from engram_ls.cli import EXIT_OK, _open, _print_json

    path, _, line = args.target.rpartition(":")
    if not path or not line.isdigit():
        raise InvalidRequest(f"give the task as PATH:LINE (line from 1), not {args.target!r}")
    if not args.vault:  # the vault the note is in
        found = find_vault_root(Path(path).absolute().parent)
        args.vault = str(found) if found is not None else None
    engram = _open(args)
    try:
        rel = engram.vault.rel(Path(path).absolute())
        done = {"done": True, "undone": False, "toggle": None}[args.action]
        out = engram.toggle_task(rel, int(line), expect=args.expect, done=done)
    finally:
        engram.close()
    if args.json:
        _print_json(out)
        return EXIT_OK
    sys.stdout.write(f"{out['path']}:{out['line']}\n- {out['before']}\n+ {out['after']}\n")
    if out["inserted"] is not None:
        sys.stdout.write(
            f"+ {out['inserted']}  (its next occurrence, line {out['inserted_line']})\n"
        )
    elif out["recurrence"] is not None:
        sys.stdout.write(f"recurrence: {out['recurrence']}\n")
    if out["warning"]:
        sys.stderr.write(f"engram: warning: {out['warning']}\n")
    return EXIT_OK


def add_tasks_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from engram_ls.cli import _common
    from engram_ls.cli_options import add_request_options

    p = sub.add_parser(
        "tasks",
        help="list the vault's tasks (- [ ] items) by status, dates, priority, tags, folder",
        description="List the tasks of every note (docs/tasks.md), from the index: grouped by "
        "note, with their line, status, due day and priority; OVERDUE marks an open task due "
        "before today. Days are YYYY-MM-DD, today, tomorrow, yesterday or +N/-N days or weeks "
        "(+7d, -2w).",
    )
    add_request_options(p, TasksRequest)
    which = p.add_mutually_exclusive_group()
    which.add_argument("--open", action="store_true", help="the open tasks (--status open)")
    which.add_argument("--done", action="store_true", help="the done tasks (--status done)")
    p.add_argument("--vault", metavar="VAULT", help="vault folder")
    p.add_argument("--no-sync", action="store_true", help="read the index as it is (never written)")
    _common(p, cmd_tasks)

    t = sub.add_parser(
        "task",
        help="mark a task done or not done (PATH:LINE), changing only its line",
        description="Mark the task at PATH:LINE done (status x and a ✅ day, as Obsidian Tasks "
        "writes it), not done, or the other of the two (toggle). Only that line changes; a "
        "recurring task gets its next occurrence on the line above. With --expect, the line "
        "must still read so, else nothing is written.",
    )
    t.add_argument("action", choices=["done", "undone", "toggle"], help="what to do")
    t.add_argument("target", metavar="PATH:LINE", help="the note and the task's line (from 1)")
    t.add_argument("--expect", metavar="TEXT", help="the whole line, as you last saw it")
    t.add_argument("--vault", metavar="VAULT", help="vault folder")
    _common(t, cmd_task)


__all__ = ["add_tasks_commands", "task_listing"]
