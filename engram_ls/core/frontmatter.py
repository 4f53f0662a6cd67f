"""The leading YAML block of a note: find it, load it safely, locate its keys.

``split_frontmatter`` finds the block by its fence lines and keeps exact line numbers and
character offsets, so that diagnostics point at the right line and a later edit can replace
the block (or one line of it) by text surgery while keeping the rest of the file verbatim.

``parse_frontmatter`` loads the YAML with a safe loader (the C one when PyYAML has it) and
never raises. Hostile or broken YAML becomes a :class:`~engram_ls.core.model.Problem`:

* malformed YAML → ``yaml``, with YAML's own line converted to the line in the file;
* a list or a scalar instead of a mapping → ``frontmatter-type``;
* an opening ``---`` without a closing fence → ``unclosed-frontmatter``;
* a block over ``MAX_FRONTMATTER_CHARS`` → ``too-large`` (not loaded: YAML costs per value);
* aliases that would expand to a huge structure (billion laughs, merge-key bombs) and
  collections nested absurdly deep (which make libyaml slow and can overflow the C stack)
  are refused before anything is built, also as ``yaml``.

Most frontmatter is a handful of ``key: value`` lines, so a small line-based reader handles
that subset (plain, simply quoted and flow-list scalars, block lists under a key), finding the
keys and items with the frontmatter scanner (:mod:`engram_ls.core.fmscan`) and resolving the
scalars with YAML's own resolvers and constructors. It answers only where the YAML loader gives
the same result and hands everything else to the loader
(tests/core/test_frontmatter_differential.py checks this against the loader).

One leniency keeps one bad value from costing the whole block: a timestamp-looking value that
is not a real date (``2024-13-45``) or an integer too long to convert stays a string. A mapping
used as a key (an unquoted template placeholder: ``date: {{date}}``) is a ``yaml`` problem, as
PyYAML says.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from engram_ls.core import fmscan
from engram_ls.core.model import Problem

try:  # the libyaml-backed loader is several times faster; same (safe) semantics
    from yaml import CSafeLoader as SafeYamlLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as SafeYamlLoader  # type: ignore[assignment]

__all__ = [
    "MAX_ALIAS_EXPANSION",
    "MAX_FRONTMATTER_CHARS",
    "MAX_NESTING",
    "Frontmatter",
    "FrontmatterBlock",
    "SafeYamlLoader",
    "parse_frontmatter",
    "read_frontmatter",
    "scalar_value",
    "split_frontmatter",
]

MAX_FRONTMATTER_CHARS = 64 * 1024
"""Largest YAML block that is loaded; loading costs per value, and real blocks are a few KB."""
MAX_NESTING = 64
"""Deepest collection nesting accepted in frontmatter."""
MAX_ALIAS_EXPANSION = 10_000
"""Most YAML nodes the document may have once every alias is expanded."""

_OPEN_RE = re.compile(r"---[ \t]*(\r?\n|\r?\Z)")
_CLOSE_RE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)
_BLOCK_INDICATOR_RE = re.compile(r"[-?](?=\s|\Z)")


@dataclass(frozen=True, slots=True)
class FrontmatterBlock:
    """Where the leading YAML block of a text is. Offsets index the text given to the split.

    For a closed block, ``text[start:end]`` is the whole block including both fence lines and
    the line break after the closing fence, ``text[yaml_start:yaml_end] == yaml_text`` and
    ``text[end:] == body``. For an unclosed block (``closed`` is False) there is no YAML:
    ``yaml_text`` is empty, ``close_line`` is None, ``end == 0`` and the body is the whole text.
    """

    closed: bool
    yaml_text: str
    """The lines between the fences, with their line breaks."""
    body: str
    """The text after the closing fence line."""
    body_line: int
    """1-based line of the file on which ``body`` starts."""
    close_line: int | None
    """1-based line of the closing ``---`` / ``...`` fence."""
    start: int
    """Character offset of the opening fence (always 0: the block must open the text)."""
    end: int
    """Character offset just past the closing fence line and its line break."""
    yaml_start: int
    yaml_end: int
    newline: str
    """The line break that ends the opening fence (``\\n``, ``\\r\\n``, or ``""`` at EOF)."""
    open_line: int = 1
    """1-based line of the opening fence."""


def split_frontmatter(text: str) -> FrontmatterBlock | None:
    """Find the YAML block at the very start of ``text``, or None when there is none.

    The first line must be ``---`` (trailing spaces and tabs allowed); the block ends at the
    first later line that is ``---`` or ``...`` (same allowance). ``\\n`` and ``\\r\\n`` line
    breaks both work; a UTF-8 BOM must already be stripped. Never raises.
    """
    opening = _OPEN_RE.match(text)
    if opening is None:
        return None
    yaml_start = opening.end()
    newline = opening.group(1) if opening.group(1).endswith("\n") else ""
    closing = _CLOSE_RE.search(text, yaml_start) if opening.group(1) else None
    if closing is None:
        return FrontmatterBlock(
            closed=False,
            yaml_text="",
            body=text,
            body_line=1,
            close_line=None,
            start=0,
            end=0,
            yaml_start=yaml_start,
            yaml_end=yaml_start,
            newline=newline,
        )
    yaml_end = closing.start()
    close_line = text.count("\n", 0, yaml_end) + 1
    end = closing.end()
    if end < len(text):  # step over the line break that ends the closing fence
        end += 1
    return FrontmatterBlock(
        closed=True,
        yaml_text=text[yaml_start:yaml_end],
        body=text[end:],
        body_line=close_line + 1,
        close_line=close_line,
        start=0,
        end=end,
        yaml_start=yaml_start,
        yaml_end=yaml_end,
        newline=newline,
    )


@dataclass(frozen=True, slots=True)
class Frontmatter:
    """A loaded frontmatter block: its mapping (empty when it had problems) and the problems."""

    block: FrontmatterBlock
    data: dict[Any, Any] = field(default_factory=dict)
    problems: tuple[Problem, ...] = ()

    def key_line(self, key: str) -> int | None:
        """1-based file line of the top-level ``key:`` whose value YAML loaded, or None.

        When the key is written more than once, YAML keeps the last value, so that is the
        line. A key that is not written exactly so is looked up ignoring case.
        """
        found = self._key(key)
        return None if found is None else self.block.open_line + 1 + found[0]

    def raw_value(self, key: str) -> str | None:
        """The source text after the top-level ``key:`` on its line (comments included)."""
        found = self._key(key)
        return None if found is None else found[1]

    def _key(self, key: str) -> tuple[int, str] | None:
        text = self.block.yaml_text
        # The common case without splitting the block: the key written as is, at a line's
        # start (the last such line, as YAML keeps the last value).
        at = text.rfind(key)
        while at >= 0:
            start = text.rfind("\n", 0, at) + 1
            if start == at:
                end = text.find("\n", at)
                line = text[at : end if end >= 0 else len(text)].removesuffix("\r")
                hit = fmscan.key_at(line)
                if hit is not None and hit.name == key:
                    return text.count("\n", 0, at), line[hit.end :].strip()
            at = text.rfind(key, 0, at)
        lines = [line.removesuffix("\r") for line in text.split("\n")]
        found = fmscan.key_lines(lines, key)
        if not found:
            folded = key.casefold()
            found = [
                (index, hit)
                for index, line in enumerate(lines)
                if (hit := fmscan.key_at(line)) is not None
                and hit.name is not None
                and hit.name.casefold() == folded
            ]
        if not found:
            return None
        index, hit = found[-1]
        return index, lines[index][hit.end :].strip()


def parse_frontmatter(block: FrontmatterBlock) -> Frontmatter:
    """Load the block's YAML safely. Never raises; see the module docstring for the problems."""
    if not block.closed:
        unclosed = Problem(
            "unclosed-frontmatter",
            "the opening '---' has no closing '---' line; the whole file is read as body",
            line=block.open_line,
        )
        return Frontmatter(block, {}, (unclosed,))
    if len(block.yaml_text) > MAX_FRONTMATTER_CHARS:
        oversized = Problem(
            "too-large",
            f"the frontmatter is {len(block.yaml_text)} characters; blocks over "
            f"{MAX_FRONTMATTER_CHARS} are not loaded (the body is still indexed)",
            line=block.open_line,
        )
        return Frontmatter(block, {}, (oversized,))
    value, load_problem = _load_yaml(block.yaml_text, block.open_line + 1, block.close_line)
    if load_problem is not None:
        return Frontmatter(block, {}, (load_problem,))
    if value is None:  # empty block, or only comments
        return Frontmatter(block)
    if not isinstance(value, dict):
        kind = "a list" if isinstance(value, list) else f"a {type(value).__name__}"
        wrong_type = Problem(
            "frontmatter-type",
            f"frontmatter must be a mapping of 'key: value' lines, but it is {kind}",
            line=block.open_line,
        )
        return Frontmatter(block, {}, (wrong_type,))
    return Frontmatter(block, value)


def read_frontmatter(text: str) -> Frontmatter | None:
    """``split_frontmatter`` then ``parse_frontmatter``; None when the text has no block."""
    block = split_frontmatter(text)
    return None if block is None else parse_frontmatter(block)


class _Loader(SafeYamlLoader):
    """Safe loader that keeps going past a bad timestamp or a huge int (they stay strings)."""


def _lenient_scalar(tag: str) -> Any:
    strict = SafeYamlLoader.yaml_constructors[tag]

    def construct(loader: _Loader, node: Node) -> Any:
        try:
            return strict(loader, node)
        except (ValueError, OverflowError):
            return loader.construct_scalar(node)  # type: ignore[arg-type]

    return construct


for _tag in ("tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"):
    _Loader.add_constructor(_tag, _lenient_scalar(_tag))


def _load_yaml(text: str, first_line: int, close_line: int | None) -> tuple[Any, Problem | None]:
    """Load ``text`` (whose first line is file line ``first_line``) or describe why not."""
    simple = _load_simple(text)
    if simple is not _NOT_SIMPLE:
        return simple, None
    try:
        if _may_nest_deeply(text) and _nesting_depth_exceeds(text, MAX_NESTING):
            return None, Problem(
                "yaml",
                f"frontmatter is nested more than {MAX_NESTING} levels deep; it was not loaded",
                line=first_line,
            )
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None, None
            if "*" in text and _expanded_size(node, MAX_ALIAS_EXPANSION) > MAX_ALIAS_EXPANSION:
                return None, Problem(
                    "yaml",
                    "frontmatter aliases expand to more than "
                    f"{MAX_ALIAS_EXPANSION} values (or refer to themselves); it was not loaded",
                    line=first_line,
                )
            return loader.construct_document(node), None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        return None, _yaml_problem(exc, text, first_line, close_line)
    except yaml.YAMLError as exc:
        return None, Problem("yaml", f"frontmatter is not valid YAML: {exc}", line=first_line)
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError) as exc:
        return None, Problem(
            "yaml", f"frontmatter could not be loaded: {type(exc).__name__}", line=first_line
        )


def _yaml_problem(
    exc: yaml.MarkedYAMLError, text: str, first_line: int, close_line: int | None
) -> Problem:
    """Turn a YAML error into a problem on the file line YAML complained about.

    When YAML only noticed the problem at the end of the block (an unclosed ``[``), the line
    where the unfinished construct started is more useful, so that line is reported instead.
    """
    mark = exc.problem_mark or exc.context_mark
    yaml_lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if mark is not None and mark.line >= yaml_lines and exc.context_mark is not None:
        mark = exc.context_mark
    line = first_line + mark.line if mark is not None else first_line
    if close_line is not None:
        line = min(line, close_line)
    what = exc.problem or "invalid YAML"
    if what == "found unhashable key":  # ``date: {{date}}`` is a mapping used as a key
        what += ' (a template placeholder such as {{date}} must be quoted: "{{date}}")'
    if mark is not None:
        source_lines = text.split("\n")
        if mark.line < len(source_lines) and "\t" in source_lines[mark.line]:
            what += " (YAML does not allow tabs for indentation)"
    if exc.context:
        where = ""
        if exc.context_mark is not None:
            where = f" started on line {first_line + exc.context_mark.line}"
        what = f"{what} ({exc.context}{where})"
    return Problem("yaml", f"frontmatter is not valid YAML: {what}", line=line)


def _may_nest_deeply(text: str) -> bool:
    """Cheap upper bound on the nesting depth, so the common small block skips the event scan.

    Every level needs a ``[``, a ``{``, a ``:`` (in flow context any colon can open a pair) or
    a ``-`` / ``?`` indicator followed by whitespace.
    """
    bound = text.count("[") + text.count("{") + text.count(":")
    if bound + text.count("-") + text.count("?") <= MAX_NESTING:
        return False
    return bound + len(_BLOCK_INDICATOR_RE.findall(text)) > MAX_NESTING


def _nesting_depth_exceeds(text: str, limit: int) -> bool:
    """Stream parser events (libyaml's parser does not recurse) and stop past ``limit``."""
    depth = 0
    for event in yaml.parse(text, Loader=SafeYamlLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > limit:
                return True
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return False


def _expanded_size(root: Node, limit: int) -> int:
    """Number of nodes once aliases are expanded, saturating just above ``limit``.

    Composed nodes share alias targets, so this is computed with memoisation over the graph
    (linear in its size) without expanding anything. A cycle counts as over the limit.
    """
    over = limit + 1
    sizes: dict[int, int] = {}
    visiting: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            total = 1
            for child in _children(node):
                total += sizes[id(child)]
                if total > limit:
                    total = over
                    break
            sizes[key] = total
            visiting.discard(key)
            continue
        if key in sizes:
            continue
        if key in visiting:
            return over
        visiting.add(key)
        stack.append((node, True))
        for child in _children(node):
            child_key = id(child)
            if child_key in visiting:
                return over
            if child_key not in sizes:
                stack.append((child, False))
    return sizes.get(id(root), over)


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, ScalarNode):
        return []
    return []  # pragma: no cover - no other node kinds exist


# --- fast path: the common "key: value" subset ---------------------------------------------------

_NOT_SIMPLE: Any = object()
"""Marker: the text is outside the subset ``_load_simple`` reads; use the YAML loader."""

# Anything YAML treats specially that the simple reader does not: tabs, CR and the other
# line breaks (NEL, LS, PS), BOMs, control characters and the characters YAML rejects.
_SIMPLE_UNSAFE_RE = re.compile(
    "[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
)
_SIMPLE_KEY_RE = re.compile(r"[A-Za-z_][\w .-]*")
_DOUBLE_QUOTED_RE = re.compile(r'"[^"\\]*"')
_SINGLE_QUOTED_RE = re.compile(r"'[^']*'")
_PLAIN_BAD_START = frozenset("-?:,[]{}#&*!|>'\"%@`")
_MAX_KEY_COLON = 1024
"""YAML reads a key only when its ``:`` is at most 1024 characters from where the key starts."""
_FLOW_ITEM_BAD = re.compile(r"[\[\]{}#:'\",]")
_SCALARS = yaml.constructor.SafeConstructor()
_IMPLICIT = _Loader.yaml_implicit_resolvers
_WILDCARD = tuple(_IMPLICIT.get(None, ()))
_STR_TAG = "tag:yaml.org,2002:str"
_NULL_TAG = "tag:yaml.org,2002:null"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
_CONSTRUCTED_TAGS = frozenset(
    ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:timestamp")
)


def _load_simple(text: str) -> Any:
    """Read a block of top-level ``key: value`` lines, or return ``_NOT_SIMPLE``.

    Values: plain scalars (resolved exactly as YAML resolves them), quoted strings without
    escapes, one-line flow lists of those, and block lists (``- item`` lines) under an
    empty ``key:``. Blank and comment lines are skipped. Anything else is not simple.
    """
    if _SIMPLE_UNSAFE_RE.search(text):
        return _NOT_SIMPLE
    lines = text.split("\n")
    data: dict[Any, Any] = {}
    index, count = 0, len(lines)
    while index < count:
        line = lines[index]
        index += 1
        stripped = line.lstrip(" ")
        if not stripped or stripped[0] == "#":
            continue
        colon = fmscan.plain_key_colon(line)
        name = line[:colon].rstrip(" ")
        if not 0 < colon <= _MAX_KEY_COLON or _SIMPLE_KEY_RE.fullmatch(name) is None:
            return _NOT_SIMPLE
        key = _plain(name)
        if not isinstance(key, str):
            return _NOT_SIMPLE
        raw = line[colon + 1 :].strip(" ")
        if raw:
            value = _simple_value(raw)
            if value is _NOT_SIMPLE:
                return _NOT_SIMPLE
            data[key] = value
            continue
        items: list[Any] = []
        indent: str | None = None
        while index < count:
            line = lines[index]
            stripped = line.lstrip(" ")
            if not stripped or stripped[0] == "#":
                index += 1
                continue
            item = fmscan.ITEM_RE.match(line)
            if item is None:
                if stripped is not line:
                    return _NOT_SIMPLE  # an indented line that is no list item
                break
            if indent is None:
                indent = item.group(1)
            elif item.group(1) != indent:
                return _NOT_SIMPLE
            index += 1
            source = line[item.end() :].rstrip(" ")
            value = _simple_value(source) if source else None
            if value is _NOT_SIMPLE:
                return _NOT_SIMPLE
            items.append(value)
        data[key] = items if indent is not None else None
    return data or None


def scalar_value(raw: str) -> Any:
    """``raw`` read as YAML reads one scalar value after ``key:`` (``2`` a number, ``true`` a
    bool, ``2024-03-05`` a date, ``"2"`` and ``done`` text, nothing null); text that is not one
    simple scalar (a flow list, a mapping) is itself, as written."""
    raw = raw.strip()
    if not raw:
        return None
    value = _simple_value(raw)
    return raw if value is _NOT_SIMPLE or isinstance(value, list) else value


def _simple_value(raw: str) -> Any:
    first = raw[0]
    if first == '"':
        return raw[1:-1] if _DOUBLE_QUOTED_RE.fullmatch(raw) else _NOT_SIMPLE
    if first == "'":
        return raw[1:-1] if _SINGLE_QUOTED_RE.fullmatch(raw) else _NOT_SIMPLE
    if first == "[":
        if raw[-1] != "]":
            return _NOT_SIMPLE
        if not raw[1:-1].strip(" "):
            return []
        items: list[Any] = []
        for start, end in fmscan.split_items(raw, 1, len(raw) - 1):
            item = raw[start:end].strip(" ")
            if not item:
                return _NOT_SIMPLE
            if item[0] == '"' or item[0] == "'":
                value = _simple_value(item)
            elif item[0] in _PLAIN_BAD_START or _FLOW_ITEM_BAD.search(item):
                return _NOT_SIMPLE
            else:
                value = _plain(item)
            if value is _NOT_SIMPLE:
                return _NOT_SIMPLE
            items.append(value)
        return items
    if first in _PLAIN_BAD_START or ": " in raw or " #" in raw or raw[-1] == ":":
        return _NOT_SIMPLE
    return _plain(raw)


def _plain(value: str) -> Any:
    """A plain scalar resolved and constructed as the YAML loader would."""
    tag = _STR_TAG
    resolvers = _IMPLICIT.get(value[0], ())
    if _WILDCARD:  # pragma: no cover - PyYAML registers none by default
        resolvers = [*resolvers, *_WILDCARD]
    for candidate, regexp in resolvers:
        if regexp.match(value):
            tag = candidate
            break
    if tag == _STR_TAG:
        return value
    if tag == _NULL_TAG:
        return None
    if tag == _BOOL_TAG:
        return _SCALARS.bool_values[value.lower()]
    if tag == _TIMESTAMP_TAG and len(value) == 10:  # YYYY-MM-DD, the common case, directly
        try:
            return dt.date(int(value[:4]), int(value[5:7]), int(value[8:]))
        except ValueError:
            return value  # as the lenient timestamp constructor does
    if tag in _CONSTRUCTED_TAGS:
        return _Loader.yaml_constructors[tag](_SCALARS, ScalarNode(tag, value))
    return _NOT_SIMPLE
