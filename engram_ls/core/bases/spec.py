"""A ``.base`` file (or a ```` ```base ```` block in a note) read into what a query runs.

The file is YAML: ``filters`` (for every view), ``formulas`` (name: expression),
``properties`` (display names), ``summaries`` and ``views`` (each with ``type``, ``name``,
``filters``, ``order``, ``sort``, ``groupBy``, ``limit``, ``summaries``). A filter is an
expression (text) or an object with one key, ``and``, ``or`` or ``not`` (none of its items
true), holding a list of filters.

Everything is checked here, before a note is read: a key outside the supported subset, an
expression that does not parse or uses an unsupported construct, a formula or summary that
does not exist. Each error (``BaseError``) names the part (``views[0].filters.and[1]``) and
its line and column in the file.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import yaml

from engram_ls.core.bases.expr import BaseError, Expr, parse, references
from engram_ls.core.bases.values import check
from engram_ls.core.frontmatter import SafeYamlLoader
from engram_ls.core.search.where import FILE_PROPS

MAX_BASE_BYTES = 1024 * 1024
MAX_NODES = 20_000
MAX_VIEWS = 100
VIEW_TYPES = frozenset({"table", "cards", "list", "map"})
DISPLAY_KEYS = frozenset(
    {
        "columnSize", "rowHeight", "image", "imageFit", "imageAspectRatio", "cardSize",
        "coordinates", "markers", "markerIcon", "markerColor", "defaultZoom", "center",
        "indentProperties", "separator", "showPropertyNames",
    }
)  # fmt: skip
"""View settings that change how a view looks, never which notes or values it shows."""
SUMMARIES = (
    "Average", "Min", "Max", "Sum", "Range", "Median", "Stddev", "Earliest", "Latest",
    "Checked", "Unchecked", "Empty", "Filled", "Unique",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Where:
    """One filter expression, with where it is written."""

    expr: Expr
    at: str


@dataclass(frozen=True, slots=True)
class Group:
    op: str
    """``and``, ``or`` or ``not`` (none of the items)."""
    items: tuple[Filter, ...]


Filter = Where | Group


@dataclass(frozen=True, slots=True)
class View:
    name: str
    type: str
    filters: Filter | None
    order: tuple[str, ...]
    sort: tuple[tuple[str, bool], ...]
    """(property, descending), first key first."""
    group_by: tuple[str, bool] | None
    limit: int | None
    summaries: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Ref:
    """A property a base names, where: what an editor checks, completes and hovers."""

    name: str
    """As a column names it: ``status``, ``file.name``, ``formula.x``."""
    line: int
    """0-based, in the file (a block's note included)."""
    column: int
    length: int
    """In characters; 0 when the place is only known roughly (in a folded multi-line value)."""


@dataclass(frozen=True, slots=True)
class Base:
    filters: Filter | None
    formulas: dict[str, Expr]
    display: dict[str, str]
    views: tuple[View, ...]
    refs: tuple[Ref, ...] = ()
    """Every property named in it, in the order written."""


_EVERY_NOTE = View("", "table", None, (), (), None, None)
"""The view of a base that has none: every note, by path, its name as the one column."""


class _Source:
    """The composed YAML, read node by node so that every error has a line and column."""

    def __init__(self, text: str, first_line: int) -> None:
        self.first_line = first_line
        self.nodes = 0
        self.formulas: set[str] = set()
        """The names of the base's formulas (an expression may name only these)."""
        self.refs: list[Ref] = []
        self.lines = text.splitlines()
        try:
            self.root = yaml.compose(text, Loader=SafeYamlLoader)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            err = BaseError(f"not valid YAML: {getattr(exc, 'problem', None) or exc}")
            if mark is not None:
                err.line, err.column = mark.line + first_line, mark.column
            raise err from None

    def fail(self, node: yaml.Node | None, at: str, message: str, **kw: object) -> BaseError:
        err = BaseError(message, **kw)  # type: ignore[arg-type]
        return self.place(err, node, at)

    def place(self, err: BaseError, node: yaml.Node | None, at: str) -> BaseError:
        err.at = err.at or at
        if node is not None and err.line is None:
            err.line = node.start_mark.line + self.first_line
            quoted = 1 if isinstance(node, yaml.ScalarNode) and node.style in ("'", '"') else 0
            err.column = node.start_mark.column + quoted + (err.offset or 0)
        return err

    def mapping(self, node: yaml.Node, at: str) -> list[tuple[str, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, at, "an object (key: value) is needed here")
        out = []
        for key, value in node.value:
            self._count(value, at)
            out.append((self.text(key, at), value))
        return out

    def sequence(self, node: yaml.Node, at: str) -> list[yaml.Node]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, at, "a list is needed here")
        for item in node.value:
            self._count(item, at)
        return list(node.value)

    def text(self, node: yaml.Node, at: str) -> str:
        if not isinstance(node, yaml.ScalarNode) or node.tag == "tag:yaml.org,2002:null":
            raise self.fail(node, at, "text is needed here")
        return str(node.value)

    def number(self, node: yaml.Node, at: str) -> int:
        value = self.text(node, at)
        if not re.fullmatch(r"[0-9]{1,9}", value.strip()):
            raise self.fail(node, at, f"a whole number is needed, not {value!r}")
        return int(value)

    def expression(self, node: yaml.Node, at: str) -> Expr:
        text = self.text(node, at)
        try:
            expr = parse(text)
            check(expr)
            for ref in references(expr):
                if ref.name.startswith("formula.") and ref.name[8:] not in self.formulas:
                    raise BaseError(f"unknown formula {ref.name[8:]!r}", offset=ref.at,
                                    construct=ref.name)  # fmt: skip
                self.refs.append(self.ref(node, ref.name, text, ref.at))
        except BaseError as err:
            raise self.place(err, node, at) from None
        return expr

    def ref(self, node: yaml.Node, name: str, text: str, offset: int) -> Ref:
        """Where ``text[offset:]`` (a name in the scalar ``node``) is in the file."""
        found = _NAME_AT_RE.match(text, offset)
        length = len(found.group()) if found else 0
        start, end = node.start_mark, node.end_mark
        line = start.line + self.first_line
        if start.line == end.line:
            quoted = 1 if isinstance(node, yaml.ScalarNode) and node.style in ("'", '"') else 0
            return Ref(name, line, start.column + quoted + offset, length)
        if (
            isinstance(node, yaml.ScalarNode)
            and node.style == "|"
            and start.line + 1 < len(self.lines)
        ):
            before = text[:offset]  # a literal block keeps its lines, less their indentation
            first = self.lines[start.line + 1]
            indent = len(first) - len(first.lstrip(" "))
            column = indent + offset - (before.rfind("\n") + 1)
            return Ref(name, line + 1 + before.count("\n"), column, length)
        return Ref(name, line, start.column, 0)

    def _count(self, node: yaml.Node, at: str) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.fail(node, at, f"more than {MAX_NODES} YAML values")


_LOADED: OrderedDict[tuple[str, int], Base] = OrderedDict()
_LOADED_LOCK = threading.Lock()
_LOADED_MOST = 32
_LOADED_CHARS = 64 * 1024
"""The last bases read (of at most this many characters), kept: an editor or an agent asks for
the same base again and again, and reading one (YAML, then each expression) is most of a
small view's time."""


def load_base(text: str, first_line: int = 0) -> Base:
    """The base written in ``text`` (a ``.base`` file's content, or a code block's, whose first
    line is ``first_line`` of its note); BaseError for anything outside the subset."""
    key = (text, first_line)
    with _LOADED_LOCK:
        found = _LOADED.get(key)
        if found is not None:
            _LOADED.move_to_end(key)
            return found
    base = _load(text, first_line)
    if len(text) <= _LOADED_CHARS:
        with _LOADED_LOCK:
            _LOADED[key] = base
            while len(_LOADED) > _LOADED_MOST:
                _LOADED.popitem(last=False)
    return base


def _load(text: str, first_line: int) -> Base:
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BASE_BYTES:
        raise BaseError(f"a base is larger than {MAX_BASE_BYTES} bytes")
    src = _Source(text, first_line)
    if src.root is None:
        return Base(None, {}, {}, (_EVERY_NOTE,))
    filters: Filter | None = None
    formulas: dict[str, Expr] = {}
    display: dict[str, str] = {}
    custom: set[str] = set()
    views_node: yaml.Node | None = None
    top = src.mapping(src.root, "base")
    for key, value in top:
        if key == "formulas":
            src.formulas = {name for name, _ in src.mapping(value, "formulas")}
    for key, value in top:
        if key == "filters":
            filters = _filter(src, value, "filters", 0)
        elif key == "formulas":
            for name, body in src.mapping(value, "formulas"):
                formulas[name] = src.expression(body, f"formulas.{name}")
        elif key == "properties":
            for name, settings in src.mapping(value, "properties"):
                for k, v in src.mapping(settings, f"properties.{name}"):
                    if k == "displayName":
                        display[_column(name)] = src.text(v, f"properties.{name}.displayName")
        elif key == "summaries":
            custom = {name for name, _ in src.mapping(value, "summaries")}
        elif key == "views":
            views_node = value
        else:
            raise src.fail(value, key, f"unknown key {key!r} (a base has filters, formulas, "
                           "properties, summaries, views)", construct=key)  # fmt: skip
    views = _views(src, views_node, formulas, custom) if views_node is not None else ()
    if not views:
        views = (_EVERY_NOTE,)
    return Base(filters, formulas, display, views, tuple(src.refs))


def _column(name: str) -> str:
    """A property as a column: ``note.Status`` and ``status`` are ``status``."""
    name = name.strip()
    if name.startswith(("file.", "formula.")):
        return name
    return name.removeprefix("note.").casefold()


def _filter(src: _Source, node: yaml.Node, at: str, depth: int) -> Filter:
    if depth > 32:
        raise src.fail(node, at, "filters nested deeper than 32 levels")
    if isinstance(node, yaml.ScalarNode):
        return Where(src.expression(node, at), at)
    pairs = src.mapping(node, at)
    if len(pairs) != 1 or pairs[0][0] not in ("and", "or", "not"):
        keys = ", ".join(k for k, _ in pairs) or "none"
        raise src.fail(node, at, f"a filter group has one key, and, or or not (found {keys})")
    op, body = pairs[0]
    items = src.sequence(body, f"{at}.{op}")
    return Group(
        op, tuple(_filter(src, n, f"{at}.{op}[{i}]", depth + 1) for i, n in enumerate(items))
    )


def _views(
    src: _Source, node: yaml.Node, formulas: dict[str, Expr], custom: set[str]
) -> tuple[View, ...]:
    out = []
    items = src.sequence(node, "views")
    if len(items) > MAX_VIEWS:
        raise src.fail(node, "views", f"more than {MAX_VIEWS} views")
    for i, item in enumerate(items):
        at = f"views[{i}]"
        settings = dict(src.mapping(item, at))
        name = src.text(settings["name"], f"{at}.name") if "name" in settings else f"view {i + 1}"
        kind = src.text(settings["type"], f"{at}.type") if "type" in settings else "table"
        if kind not in VIEW_TYPES:
            raise src.fail(settings.get("type"), f"{at}.type", f"unknown view type {kind!r}",
                           construct=kind)  # fmt: skip
        for key, value in settings.items():
            known = {"name", "type", "filters", "order", "sort", "groupBy", "limit", "summaries"}
            if key not in known and key not in DISPLAY_KEYS:
                raise src.fail(value, f"{at}.{key}", f"unsupported view setting {key!r}",
                               construct=key)  # fmt: skip
        filters = (
            _filter(src, settings["filters"], f"{at}.filters", 0) if "filters" in settings else None
        )
        order = tuple(
            _property(src, n, f"{at}.order[{j}]", formulas)
            for j, n in enumerate(src.sequence(settings["order"], f"{at}.order"))
        ) if "order" in settings else ()  # fmt: skip
        sort = tuple(
            _sort_key(src, n, f"{at}.sort[{j}]", formulas)
            for j, n in enumerate(src.sequence(settings["sort"], f"{at}.sort"))
        ) if "sort" in settings else ()  # fmt: skip
        group = (
            _sort_key(src, settings["groupBy"], f"{at}.groupBy", formulas)
            if "groupBy" in settings
            else None
        )
        limit = src.number(settings["limit"], f"{at}.limit") if "limit" in settings else None
        summaries: dict[str, str] = {}
        for col, fn_node in (
            src.mapping(settings["summaries"], f"{at}.summaries") if "summaries" in settings else ()
        ):
            fn = src.text(fn_node, f"{at}.summaries.{col}")
            if fn not in SUMMARIES:
                what = "custom summary formulas are" if fn in custom else f"the summary {fn!r} is"
                raise src.fail(fn_node, f"{at}.summaries.{col}", f"{what} not supported",
                               construct=fn)  # fmt: skip
            summaries[_column(col)] = fn
        out.append(View(name, kind, filters, order, sort, group, limit, summaries))
    return tuple(out)


def _property(src: _Source, node: yaml.Node, at: str, formulas: dict[str, Expr]) -> str:
    written = src.text(node, at)
    name = _column(written)
    src.refs.append(src.ref(node, name, written, len(written) - len(written.lstrip())))
    if name.startswith("formula.") and name[8:] not in formulas:
        raise src.fail(node, at, f"unknown formula {name[8:]!r}", construct=name)
    if name.startswith("file.") and name not in FILE_PROPS:
        raise src.fail(node, at, f"the file property {name} is not supported", construct=name)
    return name


def _sort_key(
    src: _Source, node: yaml.Node, at: str, formulas: dict[str, Expr]
) -> tuple[str, bool]:
    settings = dict(src.mapping(node, at))
    if "property" not in settings:
        raise src.fail(node, at, "a sort key needs a property")
    extra = sorted(set(settings) - {"property", "direction"})
    if extra:
        raise src.fail(settings[extra[0]], f"{at}.{extra[0]}", f"unknown key {extra[0]!r}")
    prop = _property(src, settings["property"], f"{at}.property", formulas)
    direction = "ASC"
    if "direction" in settings:
        direction = src.text(settings["direction"], f"{at}.direction").upper()
        if direction not in ("ASC", "DESC"):
            raise src.fail(settings["direction"], f"{at}.direction", "direction is ASC or DESC")
    return prop, direction == "DESC"


_NAME_AT_RE = re.compile(
    r"\"[^\"]*\"|'[^']*'|(?:(?:note|file|formula)\.)?\w+(?:\[(?:\"[^\"]*\"|'[^']*')\])?"
)


_FENCE_RE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[ \t]*base[ \t]*$")


def base_blocks(text: str) -> list[tuple[str, int]]:
    """The ```` ```base ```` blocks of a note: (their text, the line of their first line)."""
    out: list[tuple[str, int]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE_RE.match(lines[i])
        if m is None:
            i += 1
            continue
        fence = m[1]
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        out.append(("\n".join(lines[i + 1 : end]), i + 1))
        i = end + 1
    return out


__all__ = ["SUMMARIES", "Base", "Filter", "Group", "View", "Where", "base_blocks", "load_base"]
