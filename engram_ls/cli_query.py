"""``engram query``: one view of an Obsidian base, as a table, CSV or JSON.

``FILE`` is a ``.base`` file of the vault, a note with ```` ```base ```` blocks (``--block N``)
or ``-`` for a base on standard input. The vault is ``--vault``, else ``$ENGRAM_VAULT``, else
the nearest vault at or above the file (or the current folder).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from pathlib import Path
from typing import Any

from engram_ls.core.vault import find_vault_root


def cmd_query(args: argparse.Namespace) -> int:
    from engram_ls.cli import EXIT_OK, _open, _print_json, _sync

    if not args.vault and not os.environ.get("ENGRAM_VAULT") and args.file != "-":
        # the vault the file is in
        found = find_vault_root(Path(args.file).absolute().parent)
        args.vault = str(found) if found is not None else None
    engram = _open(args, read_only=args.no_sync, scans=False)
    try:
        if not args.no_sync:
            _sync(engram)
        if args.file == "-":
            source: dict[str, Any] = {"text": sys.stdin.read()}
        else:
            source = {"path": engram.vault.rel(Path(args.file).absolute())}
        result = engram.query(**source, view=args.view, block=args.block)
    finally:
        engram.close()
    if args.json:
        _print_json(result)
    elif args.csv:
        write_csv(result)
    else:
        sys.stdout.write(markdown_table(result))
    return EXIT_OK


def cell(value: Any) -> str:
    """A value as a cell's text."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return ", ".join(cell(v) for v in value)
    return str(value)


def markdown_table(result: dict[str, Any]) -> str:
    """The view as a Markdown table (groups as rows of their own, summaries last), with a
    line saying how many notes passed."""
    columns = result["columns"]
    head = [c["name"] for c in columns]
    lines = [_row(head), _row(["---"] * len(head))]
    grouped = "groups" in result
    last: Any = object()
    for row in result["rows"]:
        if grouped and row["group"] != last:
            last = row["group"]
            lines.append(_row([f"**{cell(last) or '(none)'}**", *[""] * (len(head) - 1)]))
        lines.append(_row([cell(row["values"].get(c["property"])) for c in columns]))
    summaries = result.get("summaries") or {}
    if summaries:
        lines.append(
            _row(
                [
                    f"{summaries[c['property']]['summary']}: "
                    f"{cell(summaries[c['property']]['value'])}"
                    if c["property"] in summaries
                    else ""
                    for c in columns
                ]
            )
        )
    shown, total = len(result["rows"]), result["total"]
    lines.append("")
    lines.append(
        f"{result['view'] or 'view'}: {shown} of {total} notes; "
        f"served by {result['index']['served_by']}, {result['elapsed_ms']:.1f} ms"
    )
    return "\n".join(lines) + "\n"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"


def write_csv(result: dict[str, Any]) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    columns = result["columns"]
    writer.writerow(["path", *[c["name"] for c in columns]])
    for row in result["rows"]:
        writer.writerow([row["path"], *[cell(row["values"].get(c["property"])) for c in columns]])


def add_query_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "query",
        help="run a view of an Obsidian base (.base file or ```base block) from the index",
        description="Run one view of an Obsidian base: the notes passing its filters, in its "
        "sort order and limit, with its columns (properties and formulas), groups and "
        "summaries, answered from the index (docs/queries.md, 'Obsidian Bases'). An "
        "unsupported construct is an error naming it and its line, never ignored.",
    )
    p.add_argument("file", metavar="FILE", help="a .base file, a note with ```base blocks, or -")
    p.add_argument("--view", metavar="NAME", help="the view to run (default: the first)")
    p.add_argument("--block", type=int, metavar="N", help="the Nth ```base block of a note")
    p.add_argument("--vault", metavar="VAULT", help="vault folder")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print JSON (stable, documented)")
    form.add_argument("--csv", action="store_true", help="print CSV: path, then the columns")
    form.add_argument("--table", action="store_true", help="print a Markdown table (default)")
    p.add_argument(
        "--no-sync", action="store_true", help="query the index as it is (never written)"
    )
    p.add_argument(
        "--index", metavar="FILE", help="index file (default VAULT/.engram/index.sqlite)"
    )
    p.set_defaults(func=cmd_query)


__all__ = ["add_query_command", "cell", "markdown_table"]
