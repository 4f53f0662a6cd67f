"""``engram query``: one view of an Obsidian base, as a table, CSV or JSON.

``FILE`` is a ``.base`` file of the vault, a note with ```` ```base ```` blocks (``--block N``)
or ``-`` for a base on standard input. The vault is ``--vault``, else ``$ENGRAM_VAULT``, else
the nearest vault at or above the file (or the current folder).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from engram_ls.cli_options import whole_number
from engram_ls.core.bases.table import markdown_table, write_csv
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
        write_csv(result, sys.stdout)
    else:
        sys.stdout.write(markdown_table(result))
    return EXIT_OK


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
    p.add_argument(
        "--block", type=whole_number, metavar="N", help="the Nth ```base block of a note"
    )
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


__all__ = ["add_query_command"]
