"""The one search service behind every front end, in five parts.

- ``request``: the request model (DESIGN §4) and the description of its fields that the MCP
  tool and the CLI derive their parameters from;
- ``plan``: a validated request reduced to what the two paths need, with the caps checked;
- ``index_path``: answering a plan from the index (the SQL);
- ``scan_path``: answering a plan by reading the files (while the index cannot serve);
- ``hits``: the result types and the helpers both paths use to build a hit.

A request is answered from the index when it can serve (state ``ready`` or ``stale``); otherwise
(missing, damaged, being built) by scanning the files with the same meaning: the same filters,
the same notion of a word, ripgrep for literal and regex. The answer says which (``served_by``).
Filters are never dropped.
"""

from engram_ls.core.search.hits import (
    Found,
    IndexInfo,
    SearchHit,
    SearchResponse,
    ServedBy,
    make_snippet,
    newest_first,
    page_hits,
    snippet_line,
)
from engram_ls.core.search.plan import Plan, make_plan
from engram_ls.core.search.request import (
    Mode,
    RequestField,
    SearchRequest,
    parse_request,
    request_fields,
    require_text,
)

__all__ = [
    "Found",
    "IndexInfo",
    "Mode",
    "Plan",
    "RequestField",
    "SearchHit",
    "SearchRequest",
    "SearchResponse",
    "ServedBy",
    "make_plan",
    "make_snippet",
    "newest_first",
    "page_hits",
    "parse_request",
    "request_fields",
    "require_text",
    "snippet_line",
]
