"""The output schemas of the MCP tools: what each returns as structured content, so that a
client (or the MCP Inspector, which checks answers against them) sees the real fields rather
than an empty object. The tools return plain dicts (the core's JSON), so the schemas are
written here, next to the tool list, and a test checks every tool's answer against its
schema. Fields a result may leave out are not ``required``; objects stay open to fields
added later."""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]


def _t(kind: str, description: str = "", *, null: bool = False) -> Schema:
    out: Schema = {"type": [kind, "null"] if null else kind}
    if description:
        out["description"] = description
    return out


def _obj(props: dict[str, Schema], required: tuple[str, ...] = (), description: str = "") -> Schema:
    out: Schema = {"type": "object", "properties": props}
    if required:
        out["required"] = list(required)
    if description:
        out["description"] = description
    return out


def _list(item: Schema, description: str = "") -> Schema:
    out: Schema = {"type": "array", "items": item}
    if description:
        out["description"] = description
    return out


STR = _t("string")
INT = _t("integer")
NUM = _t("number")
BOOL = _t("boolean")
NSTR = _t("string", null=True)
NINT = _t("integer", null=True)
NBOOL = _t("boolean", null=True)
STRS = _list(STR)
OPEN: Schema = {"type": "object"}

REVISION: Schema = {
    "type": ["object", "null"],
    "properties": {"commit": STR, "dirty": BOOL},
    "description": "the vault's git HEAD and whether files differ from it (null: not under git)",
}
INDEX = _obj(
    {
        "state": _t("string", "ready, building, stale, empty or failed"),
        "served_by": _t("string", "index or scan"),
        "generation": _t("integer", "the index generation the answer was read at", null=True),
        "updated_at": NSTR,
        "source_revision": REVISION,
    },
    description="How the answer was served",
)
STATUS = _obj(
    {
        "state": STR,
        "generation": NINT,
        "updated_at": NSTR,
        "notes": NINT,
        "problems": NINT,
        "topics": NINT,
        "path": NSTR,
        "moved_aside": {"type": ["object", "null"]},
        "source_revision": REVISION,
        "trigram_index": NBOOL,
        "trigram_bytes": NINT,
        "semantic": {"type": ["object", "null"]},
        "capabilities": {"type": ["object", "null"]},
    },
    description="The index's state (counts are null while it cannot be read)",
)
NEXT = _t("string", "pass as `cursor` (same other arguments) for the next page", null=True)
HIT = _obj(
    {
        "path": STR,
        "uri": STR,
        "title": STR,
        "created_at": NSTR,
        "topics": STRS,
        "score": _t("number", null=True),
        "snippet": NSTR,
        "line": _t("integer", null=True),
    },
    ("path", "title"),
)
TASK = _obj(
    {
        "path": STR,
        "line": INT,
        "status": STR,
        "state": STR,
        "text": STR,
        "description": STR,
        "priority": STR,
        **{d: NSTR for d in ("due", "scheduled", "start", "created", "done", "cancelled")},
        "recurrence": NSTR,
        "id": NSTR,
        "depends_on": STRS,
        "tags": STRS,
        "fields": OPEN,
        "heading": NSTR,
        "parent": _t("integer", null=True),
        "overdue": BOOL,
        "note": OPEN,
    },
    ("path", "line", "status", "text"),
)
NOTE_REF = _obj({"path": STR, "title": STR, "line": _t("integer", null=True)}, ("path",))
INDEXED = {"indexed": BOOL, "generation": NINT, "warning": NSTR}

OUTPUTS: dict[str, Schema] = {
    "search_notes": _obj(
        {
            "results": _list(HIT),
            "total": INT,
            "truncated": BOOL,
            "index": INDEX,
            "elapsed_ms": NUM,
            "next_cursor": NEXT,
        },
        ("results", "total"),
    ),
    "list_topics": _obj(
        {
            "topics": _list(
                _obj({"name": STR, "notes": INT, "nested": INT}, ("name", "notes")),
            ),
            "next_cursor": NEXT,
            "index": STATUS,
        },
        ("topics",),
    ),
    "related_notes": _obj(
        {
            "path": STR,
            "title": STR,
            "topics": STRS,
            "outgoing": _list(
                _obj(
                    {
                        "target": STR,
                        "anchor": NSTR,
                        "line": INT,
                        "path": NSTR,
                        "title": NSTR,
                        "status": _t("string", "ok, broken or ambiguous"),
                    },
                    ("target", "status"),
                )
            ),
            "backlinks": _list(NOTE_REF),
            "sharing_topics": _list(
                _obj({"path": STR, "title": STR, "shared_topics": STRS}, ("path",))
            ),
            "similar": _list(
                _obj({"path": STR, "title": STR, "score": NUM, "line": NINT, "snippet": NSTR})
            ),
            "related": _list(
                _obj(
                    {
                        "path": STR,
                        "title": STR,
                        "score": NUM,
                        "line": _t("integer", null=True),
                        "snippet": NSTR,
                        "reasons": STRS,
                    },
                    ("path",),
                )
            ),
        },
        ("path", "outgoing", "backlinks"),
    ),
    "query_notes": _obj(
        {
            "view": STR,
            "views": STRS,
            "columns": _list(_obj({"property": STR, "name": STR})),
            "rows": _list(_obj({"path": STR, "values": OPEN, "group": {}}, ("path",))),
            "total": INT,
            "truncated": BOOL,
            "groups": {"type": "array"},
            "summaries": {},
            "base": NSTR,
            "index": INDEX,
            "elapsed_ms": NUM,
            "next_cursor": NEXT,
        },
        ("view", "rows", "total"),
    ),
    "list_tasks": _obj(
        {
            "tasks": _list(TASK),
            "total": INT,
            "truncated": BOOL,
            "today": STR,
            "index": INDEX,
            "elapsed_ms": NUM,
            "next_cursor": NEXT,
        },
        ("tasks", "total"),
    ),
    "index_status": _obj({"vault": STR, "name": STR, **STATUS["properties"]}, ("state",)),
    "list_vaults": _obj(
        {
            "vaults": _list(
                _obj(
                    {
                        "name": STR,
                        "root": STR,
                        "notes": NINT,
                        "state": STR,
                        "generation": NINT,
                        "capabilities": OPEN,
                    },
                    ("name", "notes", "state"),
                )
            )
        },
        ("vaults",),
    ),
    "write_note": _obj({"path": STR, **INDEXED}, ("path",)),
    "add_topics": _obj(
        {
            "path": STR,
            "changed": BOOL,
            "topics": {"type": ["array", "null"], "items": STR},
            **INDEXED,
        },
        ("path", "changed"),
    ),
    "complete_task": _obj(
        {
            "path": STR,
            "line": INT,
            "before": STR,
            "after": STR,
            "done": BOOL,
            "inserted": NSTR,
            "inserted_line": _t("integer", null=True),
            "recurrence": NSTR,
            "generation": INT,
            **INDEXED,
        },
        ("path", "line"),
    ),
}
"""Each structured tool's output schema (the text tools, ``read_note`` and
``get_session_context``, answer text)."""
