"""The expression language of Obsidian Bases filters and formulas: text to a tree.

``status != "done" && (priority > 2 || file.hasTag("urgent"))``, ``due < today() + "7d"``,
``if(price, price.toFixed(2) + " dollars")``. ``parse`` reads one expression into ``Expr``
nodes, each holding its offset in the text, so that an error (``BaseError``) can name the
construct and where it is. Precedence, lowest first: ``||``, ``&&``, ``== !=``,
``< <= > >=``, ``+ -``, ``* / %``, unary ``! -``, then member access, calls and indexing.

Names: ``status`` and ``note.status`` (or ``note["my prop"]``) are the note's property,
``file.name`` a file property, ``formula.ppu`` a formula of the base; ``file.hasTag(...)`` a
file function and ``date(...)`` a global one. What is not supported (``this``, a regular
expression literal, an unknown function) is an error here, before anything runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from engram_ls.core.search.where import FILE_PROPS

MAX_EXPRESSION_CHARS = 4000
MAX_NESTING = 64


class BaseError(ValueError):
    """A ``.base`` file or expression that cannot be answered: malformed, or a construct
    outside the supported subset. ``at`` names the part (``views[0].filters.and[1]``),
    ``offset`` the character in the expression, ``construct`` what is not supported."""

    def __init__(
        self, message: str, *, offset: int | None = None, construct: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.construct = construct
        self.at = ""
        self.line: int | None = None
        self.column: int | None = None

    def __str__(self) -> str:
        where = f"{self.at}: " if self.at else ""
        spot = ""
        if self.line is not None:
            spot = f" (line {self.line + 1}, column {(self.column or 0) + 1})"
        elif self.offset is not None:
            spot = f" (at character {self.offset + 1})"
        return f"{where}{self.message}{spot}"


@dataclass(frozen=True, slots=True)
class Lit:
    value: Any
    at: int


@dataclass(frozen=True, slots=True)
class Prop:
    """A property: ``name`` is ``status`` (the note's), ``file.size`` or ``formula.ppu``."""

    name: str
    at: int


@dataclass(frozen=True, slots=True)
class Call:
    """A global function (``date``) or a file function (``file.hasTag``)."""

    name: str
    args: tuple[Expr, ...]
    at: int


@dataclass(frozen=True, slots=True)
class Method:
    """``target.name(args)``: a method of the value's type."""

    target: Expr
    name: str
    args: tuple[Expr, ...]
    at: int


@dataclass(frozen=True, slots=True)
class Field:
    """``target.name``: a field of a value (``due.year``, ``title.length``)."""

    target: Expr
    name: str
    at: int


@dataclass(frozen=True, slots=True)
class Index:
    target: Expr
    key: Expr
    at: int


@dataclass(frozen=True, slots=True)
class Unary:
    op: str
    operand: Expr
    at: int


@dataclass(frozen=True, slots=True)
class Binary:
    op: str
    left: Expr
    right: Expr
    at: int


Expr = Lit | Prop | Call | Method | Field | Index | Unary | Binary

GLOBALS = frozenset({"date", "duration", "now", "today", "if", "min", "max", "number", "list"})
FILE_FUNCTIONS = frozenset({"hasTag", "inFolder", "hasLink", "hasProperty"})
FILE_FIELDS = frozenset(name.removeprefix("file.") for name in FILE_PROPS)
UNSUPPORTED_GLOBALS = frozenset({"link", "file", "image", "icon", "html", "escapeHTML"})

_TOKEN_RE = re.compile(
    r"""(?P<ws>\s+)
      |(?P<num>[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
      |(?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
      |(?P<name>[A-Za-z_\u00c0-\uffff][A-Za-z0-9_\u00c0-\uffff]*)
      |(?P<op>==|!=|<=|>=|&&|\|\||[-+*/%<>!().,\[\]])""",
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'"}
_BINARY = {
    "||": 1,
    "&&": 2,
    "==": 3,
    "!=": 3,
    "<": 4,
    "<=": 4,
    ">": 4,
    ">=": 4,
    "+": 5,
    "-": 5,
    "*": 6,
    "/": 6,
    "%": 6,
}
_KEYWORDS = {"true": True, "false": False, "null": None}


def parse(text: str) -> Expr:
    """The tree of one expression; BaseError naming what is wrong and where."""
    if not isinstance(text, str):
        raise BaseError(f"an expression is text, not {type(text).__name__}")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise BaseError(f"an expression is longer than {MAX_EXPRESSION_CHARS} characters")
    if not text.strip():
        raise BaseError("an empty expression")
    parser = _Parser(_tokens(text))
    expr = parser.expression(0, 0)
    kind, value, at = parser.peek()
    if kind != "end":
        raise BaseError(f"unexpected {value!r} after the expression", offset=at)
    if _depth(expr) > MAX_NESTING:  # a long chain (a && b && ...) is as deep as it is long
        raise BaseError(f"an expression nested deeper than {MAX_NESTING} levels")
    return expr


def _depth(expr: Expr) -> int:
    """How deep the tree is (without recursing: evaluating it recurses once a level)."""
    deepest = 0
    todo: list[tuple[Expr, int]] = [(expr, 1)]
    while todo:
        node, depth = todo.pop()
        deepest = max(deepest, depth)
        todo.extend((child, depth + 1) for child in _children(node))
    return deepest


def _children(node: Expr) -> tuple[Expr, ...]:
    if isinstance(node, Call):
        return node.args
    if isinstance(node, Method):
        return (node.target, *node.args)
    if isinstance(node, Field):
        return (node.target,)
    if isinstance(node, Index):
        return (node.target, node.key)
    if isinstance(node, Unary):
        return (node.operand,)
    if isinstance(node, Binary):
        return (node.left, node.right)
    return ()


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            ch = text[pos]
            if ch in "\"'":
                raise BaseError("a string without its closing quote", offset=pos)
            construct = "regular expression" if ch == "/" else repr(ch)
            raise BaseError(f"{construct} is not supported here", offset=pos, construct=construct)
        kind = m.lastgroup or ""
        if kind != "ws":
            out.append((kind, m.group(), pos))
        pos = m.end()
    out.append(("end", "end of the expression", len(text)))
    return out


def _unquote(raw: str, at: int) -> str:
    out: list[str] = []
    i = 1
    while i < len(raw) - 1:
        ch = raw[i]
        if ch == "\\":
            nxt = raw[i + 1]
            if nxt not in _ESCAPES:
                raise BaseError(f"unknown escape \\{nxt} in a string", offset=at + i)
            out.append(_ESCAPES[nxt])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


class _Parser:
    def __init__(self, tokens: list[tuple[str, str, int]]) -> None:
        self.tokens = tokens
        self.i = 0

    def peek(self) -> tuple[str, str, int]:
        return self.tokens[self.i]

    def take(self) -> tuple[str, str, int]:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def expect(self, value: str) -> int:
        kind, got, at = self.take()
        if got != value or kind not in ("op",):
            raise BaseError(f"expected {value!r}, found {got!r}", offset=at)
        return at

    def expression(self, floor: int, depth: int) -> Expr:
        if depth > MAX_NESTING:
            raise BaseError(f"nested deeper than {MAX_NESTING} levels", offset=self.peek()[2])
        left = self.unary(depth)
        while True:
            kind, op, at = self.peek()
            power = _BINARY.get(op) if kind == "op" else None
            if power is None or power <= floor:
                return left
            self.take()
            right = self.expression(power, depth + 1)
            left = Binary(op, left, right, at)

    def unary(self, depth: int) -> Expr:
        kind, op, at = self.peek()
        if kind == "op" and op in ("!", "-"):
            if depth > MAX_NESTING:
                raise BaseError(f"nested deeper than {MAX_NESTING} levels", offset=at)
            self.take()
            return Unary(op, self.unary(depth + 1), at)
        return self.postfix(self.primary(depth), depth)

    def primary(self, depth: int) -> Expr:
        kind, value, at = self.take()
        if kind == "num":
            return Lit(float(value) if any(c in value for c in ".eE") else int(value), at)
        if kind == "str":
            return Lit(_unquote(value, at), at)
        if kind == "op" and value == "(":
            inner = self.expression(0, depth + 1)
            self.expect(")")
            return inner
        if kind == "op" and value == "[":
            items: list[Expr] = []
            if self.peek()[1] != "]":
                items = self.arguments(depth, "]")
            else:
                self.take()
            return Call("list.of", tuple(items), at)
        if kind == "op" and value == "/":
            raise BaseError("a regular expression is not supported", offset=at,
                            construct="regular expression")  # fmt: skip
        if kind != "name":
            raise BaseError(f"unexpected {value!r}", offset=at)
        if value in _KEYWORDS:
            return Lit(_KEYWORDS[value], at)
        if value == "this":
            raise BaseError(
                "'this' (the base file itself) is not supported", offset=at, construct="this"
            )
        if value in ("file", "note", "formula") and self.peek()[1] in (".", "["):
            return self.scoped(value, at, depth)
        if self.peek()[1] == "(":
            self.take()
            if value in UNSUPPORTED_GLOBALS:
                raise BaseError(
                    f"the function {value}() is not supported", offset=at, construct=f"{value}()"
                )
            if value not in GLOBALS:
                raise BaseError(f"unknown function {value}()", offset=at, construct=f"{value}()")
            return Call(value, tuple(self.arguments(depth, ")")), at)
        return Prop(value.casefold(), at)

    def scoped(self, scope: str, at: int, depth: int) -> Expr:
        """``file.x``, ``note.x``, ``formula.x`` and ``note["x"]``."""
        if self.take()[1] == "[":
            key = self.expression(0, depth + 1)
            self.expect("]")
            if not isinstance(key, Lit) or not isinstance(key.value, str):
                raise BaseError(f"{scope}[...] takes a quoted name", offset=at)
            name = key.value
        else:
            kind, name, name_at = self.take()
            if kind != "name":
                raise BaseError(f"a name is needed after '{scope}.'", offset=name_at)
        if scope == "note":
            return Prop(name.strip().casefold(), at)
        if scope == "formula":
            return Prop(f"formula.{name}", at)
        if self.peek()[1] == "(":
            self.take()
            if name not in FILE_FUNCTIONS:
                raise BaseError(
                    f"unknown or unsupported file function file.{name}()",
                    offset=at,
                    construct=f"file.{name}()",
                )
            return Call(f"file.{name}", tuple(self.arguments(depth, ")")), at)
        if name not in FILE_FIELDS:
            construct = f"file.{name}"
            raise BaseError(
                f"the file property {construct} is not supported", offset=at, construct=construct
            )
        return Prop(f"file.{name}", at)

    def postfix(self, expr: Expr, depth: int) -> Expr:
        while True:
            kind, value, at = self.peek()
            if kind != "op" or value not in (".", "["):
                return expr
            self.take()
            if value == "[":
                key = self.expression(0, depth + 1)
                self.expect("]")
                expr = Index(expr, key, at)
                continue
            kind, name, name_at = self.take()
            if kind != "name":
                raise BaseError(f"a name is needed after '.', found {name!r}", offset=name_at)
            if self.peek()[1] == "(":
                self.take()
                expr = Method(expr, name, tuple(self.arguments(depth, ")")), name_at)
            else:
                expr = Field(expr, name, name_at)

    def arguments(self, depth: int, close: str) -> list[Expr]:
        """The arguments after an opening bracket, through ``close``."""
        if self.peek()[1] == close:
            self.take()
            return []
        out = [self.expression(0, depth + 1)]
        while self.peek()[1] == ",":
            self.take()
            out.append(self.expression(0, depth + 1))
        self.expect(close)
        return out


_FILE_READS = {
    "file.hasTag": "file.tags",
    "file.hasLink": "file.links",
    "file.inFolder": "file.folder",
}


def references(expr: Expr) -> list[Prop]:
    """Every property an expression reads, in order (``file.hasProperty("p")`` reads ``p``,
    ``file.hasTag`` ``file.tags``...)."""
    if isinstance(expr, Prop):
        return [expr]
    if isinstance(expr, Lit):
        return []
    if isinstance(expr, Call):
        named = []
        if expr.name == "file.hasProperty":
            named = [
                Prop(a.value.strip().casefold(), a.at)
                for a in expr.args
                if isinstance(a, Lit) and isinstance(a.value, str)
            ]
        if expr.name in _FILE_READS:
            named = [Prop(_FILE_READS[expr.name], expr.at)]
        return [*named, *(p for a in expr.args for p in references(a))]
    if isinstance(expr, Method):
        return [*references(expr.target), *(p for a in expr.args for p in references(a))]
    if isinstance(expr, Field):
        return references(expr.target)
    if isinstance(expr, Index):
        return [*references(expr.target), *references(expr.key)]
    if isinstance(expr, Unary):
        return references(expr.operand)
    return [*references(expr.left), *references(expr.right)]


__all__ = [
    "FILE_FIELDS",
    "FILE_FUNCTIONS",
    "GLOBALS",
    "BaseError",
    "Binary",
    "Call",
    "Expr",
    "Field",
    "Index",
    "Lit",
    "Method",
    "Prop",
    "Unary",
    "parse",
    "references",
]
