"""One view's result (``core.bases.query.query``) as text: a Markdown table, or CSV rows.

The one renderer of a view for people: ``engram query`` prints it, and ``engram/query`` gives
it to editors (``format: "markdown"``), which show it as it is (VS Code in a read-only
document, Neovim in a scratch buffer).
"""

from __future__ import annotations

import csv
from typing import IO, Any


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


def markdown_table(result: dict[str, Any], *, links: bool = False) -> str:
    """The view as a Markdown table (groups as rows of their own, summaries last), with a
    line saying how many notes passed. ``links``: each row's first cell is a link to its note
    (its ``uri``, which ``engram/query`` adds), so that an editor opens the note from it."""
    columns = result["columns"]
    head = [c["name"] for c in columns]
    lines = [_row(head), _row(["---"] * len(head))]
    grouped = "groups" in result
    last: Any = object()
    for row in result["rows"]:
        if grouped and row["group"] != last:
            last = row["group"]
            lines.append(_row([f"**{cell(last) or '(none)'}**", *[""] * (len(head) - 1)]))
        cells = [_escape(cell(row["values"].get(c["property"]))) for c in columns]
        if links and cells and row.get("uri"):
            text = cells[0].replace("[", "\\[").replace("]", "\\]") or row["path"]
            cells[0] = f"[{text}](<{row['uri']}>)"
        lines.append("| " + " | ".join(cells) + " |")
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


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(_escape(c) for c in cells) + " |"


def write_csv(result: dict[str, Any], out: IO[str]) -> None:
    """The view as CSV: the note's path, then the columns."""
    writer = csv.writer(out, lineterminator="\n")
    columns = result["columns"]
    writer.writerow(["path", *[c["name"] for c in columns]])
    for row in result["rows"]:
        writer.writerow([row["path"], *[cell(row["values"].get(c["property"])) for c in columns]])


__all__ = ["cell", "markdown_table", "write_csv"]
