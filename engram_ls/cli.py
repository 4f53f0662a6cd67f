"""The ``engram`` command: index, search and inspect a vault.

A thin layer over ``engram_ls.core``: parse arguments, call the service, print. Errors are
printed to stderr as ``engram: error: ...`` with exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from engram_ls import __version__
from engram_ls.cli_options import (
    add_request_options,
    flags,
    in_flag_words,
    request_from,
    whole_number,
)
from engram_ls.cli_query import add_query_command
from engram_ls.cli_render import COLOR_CHOICES, render_hits, snippet_width, use_color
from engram_ls.cli_tasks import add_tasks_commands
from engram_ls.core.config import CONFIG_DIR
from engram_ls.core.errors import EngramError, IndexUnavailable
from engram_ls.core.hints import why_empty
from engram_ls.core.index.store import IndexStatus
from engram_ls.core.librarian import Librarian, LibrarianReport
from engram_ls.core.search import SearchRequest, SearchResponse, request_fields
from engram_ls.core.search.request import SEMANTIC_MODES
from engram_ls.core.semantic.engine import EmbedReport
from engram_ls.core.serialize import json_value
from engram_ls.core.service import Engram, default_index_path
from engram_ls.core.sync import Change, SyncReport
from engram_ls.core.vault import choose_vault_root

EXIT_OK = 0
EXIT_INCOMPLETE = 1
"""``engram librarian``: the run finished, but some notes were skipped or failed."""
EXIT_ERROR = 2


# -- helpers ---------------------------------------------------------------------------------


def _open(args: argparse.Namespace, *, read_only: bool = False, scans: bool = True) -> Engram:
    """The vault's service. ``read_only``: use the index as it is, never create or write it
    (``status``, ``topics``, ``search --no-sync``)."""
    root = choose_vault_root(getattr(args, "vault", None))
    index_path = Path(args.index).expanduser() if getattr(args, "index", None) else None
    engram = Engram(root, index_path=index_path, read_only=read_only)
    for warning in engram.config_warnings:
        _err(f"warning: {warning}")
    engram.open()
    if engram.unavailable:
        hint = " (`engram index` builds it)" if read_only else ""
        scanning = "; answering by scanning the files" if scans else ""
        _err(f"warning: {engram.unavailable}{hint}{scanning}")
    return engram


def _err(message: str) -> None:
    sys.stderr.write(f"engram: {message}\n")


class Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, stream: TextIO, label: str) -> None:
        self.stream = stream
        self.label = label
        self.enabled = stream.isatty()
        self._last = 0.0
        self._shown = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < 200:
            return
        now = time.monotonic()
        if done < total and now - self._last < 0.1:
            return
        self._last = now
        width = 30
        filled = int(width * done / max(total, 1))
        pct = 100 * done / max(total, 1)
        self.stream.write(
            f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {pct:5.1f}% {done}/{total}"
        )
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()


def _sync(engram: Engram, *, full: bool = False, quiet: bool = False) -> SyncReport | None:
    if engram.unavailable:
        return None
    bar = Progress(sys.stderr, "indexing")
    try:
        return engram.sync(full=full, progress=None if quiet else bar)
    finally:
        bar.close()


def _embed(engram: Engram) -> EmbedReport | None:
    """Embed the notes not embedded yet (search by meaning), when the extra is installed and
    the config does not turn it off; None when it is not available (said on stderr when it
    failed)."""
    if engram.unavailable or not engram.semantic.available:
        return None
    bar = Progress(sys.stderr, "embedding")
    try:
        return engram.embed(progress=bar)
    except EngramError as exc:
        _err(f"warning: search by meaning is not available: {exc.message}")
        return None
    finally:
        bar.close()


def _print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")


def _tag_values(argv: Sequence[str]) -> list[str]:
    """Let ``--tag -topic`` mean "exclude topic" (argparse would read ``-topic`` as a flag);
    the same for every repeatable option of the search request."""
    repeatable = {
        flag: flags(f)[0] for f in request_fields("cli") if f.kind is list for flag in flags(f)
    }
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            out.extend(argv[i:])
            break
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if a in repeatable and nxt is not None and nxt.startswith("-") and nxt != "--":
            out.append(f"{repeatable[a]}={nxt}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


# -- commands --------------------------------------------------------------------------------


def cmd_index(args: argparse.Namespace) -> int:
    engram = _open(args)
    try:
        if engram.unavailable:
            raise IndexUnavailable(engram.unavailable)
        # The folder becomes a vault: later commands find it from any folder below it.
        marker = engram.vault.root / CONFIG_DIR
        try:
            marker.mkdir(exist_ok=True)
        except OSError as exc:  # a read-only vault with --index elsewhere: name it next time
            _err(f"warning: cannot create {marker} ({exc.strerror}); name this vault explicitly")
        engram.verify()  # damage found is moved aside (and said on stderr): rebuilt below
        report = _sync(engram, full=args.full)
        assert report is not None
        embedded = None if args.no_semantic else _embed(engram)
        status = engram.status()
    finally:
        engram.close()
    if args.json:
        _print_json(
            {
                "vault": str(engram.vault.root),
                "sync": json_value(report),
                "semantic": json_value(embedded),
                "status": json_value(status),
            }
        )
        return EXIT_OK
    rate = report.parsed / report.elapsed_s if report.elapsed_s > 0 and report.parsed else 0
    what = "rebuilt" if report.full else ("resumed" if report.resumed else "indexed")
    sys.stdout.write(
        f"{what} {engram.vault.root}: {counted(status.notes, 'note')},"
        f" {counted(status.topics, 'topic')}"
        f" ({report.parsed} parsed, {report.touched} touched, {report.removed} removed,"
        f" {report.unchanged} unchanged) in {report.elapsed_s:.2f} s"
        + (f" ({rate:,.0f} notes/s)" if rate else "")
        + "\n"
    )
    if embedded is not None and embedded.notes:
        sys.stdout.write(
            f"embedded {counted(embedded.notes, 'note')} ({embedded.embedded} new texts,"
            f" {embedded.reused} already known) in {embedded.elapsed_s:.2f} s\n"
        )
    if status.problems:
        sys.stdout.write(
            f"{counted(status.problems, 'note')} {'has' if status.problems == 1 else 'have'}"
            " problems (malformed frontmatter, bad dates, …):"
            " see `engram status --problems`\n"
        )
    return EXIT_OK


def cmd_search(args: argparse.Namespace) -> int:
    fields = request_fields("cli")
    request = request_from(SearchRequest, {f.name: getattr(args, f.name) for f in fields})
    engram = _open(args, read_only=args.no_sync, scans=not args.require_index)
    try:
        if not args.no_sync:
            try:
                _sync(engram)
            except IndexUnavailable as exc:  # locked, full disk: the answer comes from a scan
                scanning = "" if args.require_index else "; answering by scanning the files"
                _err(f"warning: {exc.message}{scanning}")
        if not args.no_sync and args.mode in SEMANTIC_MODES:
            _embed(engram)  # nothing runs in the background here: embed what is pending now
        try:
            response = engram.search(request)
        except EngramError as exc:
            raise in_flag_words(exc) from None
        hints = why_empty(engram, request) if not response.total and not args.json else []
    finally:
        engram.close()
    if args.json:
        _print_json(json_value(response))
        return EXIT_OK
    color = use_color(args.color, sys.stdout)
    sys.stdout.write(render_hits(response, request, color=color, width=snippet_width()))
    sys.stdout.write(_summary(response) + "\n")
    for hint in hints:
        _err(hint)
    return EXIT_OK


def _summary(response: SearchResponse) -> str:
    """The last line of a search: how many hits, which path served them, the time taken."""
    shown = len(response.results)
    more = " (more: use --offset)" if response.truncated else ""
    pending = (
        "; some notes are not embedded yet (`engram index` embeds them)"
        if response.index.semantic == "pending"
        else ""
    )
    return (
        f"{shown} of {response.total} notes{more}; served by {response.index.served_by}"
        f" (index {response.index.state}), {response.elapsed_ms:.1f} ms{pending}"
    )


def _semantic_line(status: IndexStatus) -> str:
    """Search by meaning in one line: its state, how much is embedded, the model."""
    sem = status.semantic
    if sem is None or sem.state == "off":
        return "off (config semantic.enabled)"
    if sem.state in ("unavailable", "failed"):
        return f"{sem.state}: {sem.error}"
    dims = f", {sem.dims} dims" if sem.dims else ""
    return (
        f"{sem.state}, {sem.embedded} of {sem.notes} notes embedded, {sem.chunks} chunks"
        f" ({sem.model}{dims})"
    )


def cmd_status(args: argparse.Namespace) -> int:
    engram = _open(args, read_only=True, scans=False)
    try:
        status = engram.status()
        problems = engram.problems() if args.problems else []
    finally:
        engram.close()
    if args.json:
        data = {"vault": str(engram.vault.root), **json_value(status)}
        if args.problems:
            data["problem_notes"] = problems
        _print_json(data)
        return EXIT_OK
    out = sys.stdout
    out.write(f"vault:      {engram.vault.root}\n")
    out.write(f"index:      {status.path}\n")
    out.write(f"state:      {status.state}\n")
    out.write(f"notes:      {status.notes}\n")
    out.write(f"topics:     {status.topics}\n")
    out.write(f"problems:   {status.problems}\n")
    out.write(f"generation: {status.generation}\n")
    out.write(f"updated:    {status.updated_at or 'never'}\n")
    out.write(f"trigram:    {_trigram_line(status)}\n")
    out.write(f"semantic:   {_semantic_line(status)}\n")
    rev = status.source_revision
    if rev is not None:
        state = {True: "uncommitted changes", False: "clean", None: "changes unknown"}[rev.dirty]
        out.write(f"revision:   {rev.commit} ({state})\n")
    if status.moved_aside:
        moved = status.moved_aside
        why = moved["reason"] + (f": {moved['detail']}" if moved.get("detail") else "")
        out.write(f"moved aside: {moved['path']} ({why})\n")
    for p in problems:
        where = f"{p['path']}:{p['line']}" if p.get("line") else p["path"]
        out.write(f"{where}: {p['code']}: {p['message']}\n")
    return EXIT_OK


def _trigram_line(status: IndexStatus) -> str:
    if status.trigram_index is None:
        return "unknown (not built yet)"
    if not status.trigram_index:
        return "off (literal searches scan the files)"
    if status.trigram_bytes is None:
        return "on"
    return f"on, {status.trigram_bytes / 1e6:.1f} MB at the last full build"


def cmd_topics(args: argparse.Namespace) -> int:
    engram = _open(args, read_only=True)
    try:
        topics = engram.topics(args.prefix or "", args.limit)
    finally:
        engram.close()
    if args.json:
        _print_json(json_value(topics))
        return EXIT_OK
    width = max((len(str(t.notes)) for t in topics), default=1)
    for t in topics:
        nested = f"  ({t.nested} with nested topics)" if t.nested != t.notes else ""
        sys.stdout.write(f"{t.notes:>{width}}  {t.name}{nested}\n")
    return EXIT_OK


def cmd_mv(args: argparse.Namespace) -> int:
    engram = _open(args)
    try:
        if engram.unavailable:
            raise IndexUnavailable(engram.unavailable)
        _sync(engram)
        vault = engram.vault
        old = vault.rel(Path(args.old).absolute()) if not args.relative else vault.rel(args.old)
        new = vault.rel(Path(args.new).absolute()) if not args.relative else vault.rel(args.new)
        plan = engram.move(old, new, dry_run=args.dry_run)
    finally:
        engram.close()
    if args.json:
        _print_json(
            {
                "from": old,
                "to": new,
                "dry_run": args.dry_run,
                "moved": plan.moves,
                "files": [
                    {
                        "path": f.path,
                        "edits": [
                            {
                                "line": e.line + 1,
                                "old": f.text.split("\n")[e.line][e.start : e.end],
                                "new": e.new_text,
                            }
                            for e in f.edits
                        ],
                    }
                    for f in plan.files
                ],
            }
        )
        return EXIT_OK
    out = sys.stdout
    for f in plan.files:
        lines = f.text.split("\n")
        for e in f.edits:
            out.write(f"{f.path}:{e.line + 1}: {lines[e.line][e.start : e.end]} -> {e.new_text}\n")
    verb = "would move" if args.dry_run else "moved"
    notes = len(plan.moves)
    out.write(
        f"{verb} {old} to {new} ({notes} note{'s' if notes != 1 else ''});"
        f" {'would update' if args.dry_run else 'updated'} {plan.links} links"
        f" in {len(plan.files)} files\n"
    )
    return EXIT_OK


def cmd_librarian(args: argparse.Namespace) -> int:
    root = choose_vault_root(args.vault)
    librarian = Librarian(root)
    for warning in librarian.warnings:
        _err(f"warning: {warning}")
    if not librarian.rules:
        _err("warning: no keyword_topics in .engram/config.yaml; no topics to suggest")
    report = librarian.run(apply=args.apply, quarantine=args.quarantine)
    reindexed = _reindex_after(librarian, report, args.index) if args.apply else False
    if args.json:
        _print_json(
            {"vault": str(librarian.vault.root), **json_value(report), "reindexed": reindexed}
        )
    else:
        _print_librarian(report)
    incomplete = report.counts["skipped-changed"] + report.counts["failed"]
    return EXIT_INCOMPLETE if incomplete else EXIT_OK


def _reindex_after(librarian: Librarian, report: LibrarianReport, index: str | None) -> bool:
    """Bring an existing index up to date with the notes just written or moved."""
    changes = [Change("changed", p) for p in report.paths("applied")]
    changes += [Change("deleted", p) for p in report.paths("quarantined")]
    if not changes:
        return False
    root = librarian.vault.root
    index_path = Path(index).expanduser() if index else default_index_path(root, librarian.config)
    if not index_path.exists():
        return False
    engram = Engram(root, config=librarian.config, index_path=index_path)
    try:
        engram.open()
        if engram.unavailable:
            _err(f"warning: the index was not updated: {engram.unavailable}")
            return False
        engram.apply_changes(changes)
        return True
    except EngramError as exc:
        _err(f"warning: the index was not updated: {exc.message}")
        return False
    finally:
        engram.close()


def _print_librarian(report: LibrarianReport) -> None:
    out = sys.stdout
    for note in report.notes:
        if note.status in ("planned", "applied"):
            out.write(f"{note.path}: {', '.join('+' + t for t in note.topics)}\n")
        elif note.status == "quarantine-planned":
            out.write(f"{note.path}: would move to {note.moved_to} ({note.message})\n")
        elif note.status == "quarantined":
            out.write(f"{note.path}: moved to {note.moved_to} ({note.message})\n")
        elif note.status == "skipped-changed":
            _err(f"skipped {note.path}: {note.message}")
        else:
            _err(f"failed {note.path}: {note.message}")
    counts = report.counts
    notes = counts["applied"] if report.apply else counts["planned"]
    verb = "added" if report.apply else "would add"
    summary = (
        f"{verb} {report.topics_added} topics to {notes} notes"
        f" ({report.scanned} notes scanned, {report.unchanged} unchanged)"
    )
    moved = counts["quarantined"] if report.apply else counts["quarantine-planned"]
    if report.quarantine is not None:
        summary += f"; {'moved' if report.apply else 'would move'} {moved} to {report.quarantine}"
    if counts["skipped-changed"]:
        summary += f"; {counts['skipped-changed']} skipped (changed on disk since read)"
    if counts["failed"]:
        summary += f"; {counts['failed']} failed"
    if not report.apply and (notes or moved):
        summary += "; run with --apply to write"
    out.write(summary + "\n")


# -- parser ----------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="engram",
        description="Index, search and inspect a vault of Markdown notes.",
        epilog="The vault is VAULT / --vault, else $ENGRAM_VAULT, else the nearest folder "
        "(from the current one up) that has .engram/ or .obsidian/; with none of these the "
        "command stops (`engram index DIR` makes DIR a vault).",
    )
    parser.add_argument("--version", action="version", version=f"engram {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    _index_command(sub)
    _search_command(sub)
    _status_command(sub)
    _topics_command(sub)
    add_query_command(sub)
    add_tasks_commands(sub)
    _librarian_command(sub)
    _mv_command(sub)
    # `engram lsp ...` and `engram mcp ...` hand their arguments to the servers' own parsers.
    sub.add_parser("lsp", help="run the language server (engram-ls); see engram lsp --help")
    sub.add_parser("mcp", help="run the MCP server (engram-mcp); see engram mcp --help")
    return parser


def _common(p: argparse.ArgumentParser, command: Callable[[argparse.Namespace], int]) -> None:
    """The options every command has, and the function that runs it."""
    p.add_argument(
        "--index",
        metavar="FILE",
        help="index file (default VAULT/.engram/index.sqlite, or $ENGRAM_INDEX)",
    )
    p.add_argument("--json", action="store_true", help="print JSON (stable, documented)")
    p.set_defaults(func=command)


def _vault(p: argparse.ArgumentParser, *, option: bool = False) -> None:
    """The vault folder: the positional VAULT, or with ``option`` the option ``--vault``."""
    if option:
        p.add_argument("--vault", metavar="VAULT", help="vault folder")
    else:
        p.add_argument("vault", nargs="?", metavar="VAULT", help="vault folder")


def _index_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "index",
        help="build or update the index",
        description="Build the index, or bring it up to date (only changed files are re-parsed).",
    )
    _vault(p)
    p.add_argument("--full", action="store_true", help="re-parse every note")
    p.add_argument(
        "--no-semantic",
        action="store_true",
        help="do not embed the notes for search by meaning (the semantic extra) after indexing",
    )
    _common(p, cmd_index)


def _search_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "search",
        help="search notes by text, topics, dates and folder",
        description='Search notes. QUERY is words, "phrases" and prefix* (mode text), '
        "a substring (literal) or a regular expression (regex). With no QUERY, lists the notes "
        "that match the filters, newest first. A QUERY that starts with - goes after --.",
    )
    add_request_options(p)
    _vault(p, option=True)
    p.add_argument(
        "--no-sync",
        action="store_true",
        help="search the index as it is (never created or written; without one, scan)",
    )
    p.add_argument(
        "--color",
        choices=COLOR_CHOICES,
        default="auto",
        help="highlight the matches: auto (on a terminal, unless NO_COLOR is set), always or "
        "never (default auto; --json never has colour)",
    )
    _common(p, cmd_search)


def _status_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "status",
        help="show the index state",
        description="Show the index state, counts and problems. Reads the index as it is: "
        "never creates or updates it.",
    )
    _vault(p)
    p.add_argument("--problems", action="store_true", help="list notes with problems")
    _common(p, cmd_status)


def _topics_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "topics",
        help="list topics, most used first",
        description="List topics with their note counts, most used first, from the index as "
        "it is (never created or updated here; without one, counted from the files).",
    )
    _vault(p)
    p.add_argument("--prefix", metavar="TEXT", help="only topics starting with TEXT")
    p.add_argument(
        "--limit",
        type=whole_number,
        default=100,
        metavar="N",
        help="at most N topics (default 100)",
    )
    p.add_argument(
        "--no-sync",
        action="store_true",
        help="accepted for older scripts: topics never updates the index",
    )
    _common(p, cmd_topics)


def _librarian_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "librarian",
        help="add topics to notes from the keyword_topics map (dry run unless --apply)",
        description="Suggest topics for every note from keyword_topics in .engram/config.yaml "
        "and show what each note would gain. With --apply, write them: only the topic entry of "
        "the frontmatter changes, each file is replaced atomically, and a note changed on disk "
        "since it was read is skipped. Exit status 1 when notes were skipped or failed.",
    )
    _vault(p)
    p.add_argument("--apply", action="store_true", help="write the topics (default: dry run)")
    p.add_argument(
        "--quarantine",
        metavar="DIR",
        help="move notes that are not UTF-8 text to DIR (vault-relative, must not be indexed, "
        "e.g. .engram/quarantine), logging each move there",
    )
    _common(p, cmd_librarian)


def _mv_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "mv",
        help="move or rename a note or folder, updating every link to it",
        description="Move a note or folder inside the vault and rewrite the links that point "
        "to what moved (wiki-links and relative Markdown links, aliases and anchors kept), and "
        "the relative links inside it. Each edited note is replaced atomically; a note that "
        "changed meanwhile stops the move before anything is moved. The index is updated.",
    )
    p.add_argument("old", metavar="OLD", help="the note or folder (a path)")
    p.add_argument("new", metavar="NEW", help="its new path (must not exist)")
    _vault(p, option=True)
    p.add_argument(
        "--dry-run", action="store_true", help="print the link changes; move and write nothing"
    )
    p.add_argument(
        "--relative",
        action="store_true",
        help="OLD and NEW are vault-relative (default: relative to the current folder)",
    )
    _common(p, cmd_mv)


def counted(n: int, word: str) -> str:
    """``1 note``, ``2 notes``: a count and its noun (plural with ``s``)."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def main(argv: Sequence[str] | None = None) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    if raw and raw[0] == "lsp":
        from engram_ls.lsp.server import main as lsp_main

        return lsp_main(raw[1:])
    if raw and raw[0] == "mcp":
        from engram_ls.mcp_server.server import main as mcp_main

        return mcp_main(raw[1:])
    parser = build_parser()
    if not raw:  # bare `engram`: what it can do, not an error
        parser.print_help()
        return EXIT_OK
    args = parser.parse_args(_tag_values(raw))
    try:
        code: int = args.func(args)
        return code
    except EngramError as exc:
        _err(f"error: {exc.message} [{exc.code}]")
        return EXIT_ERROR
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except BrokenPipeError:
        return EXIT_OK
