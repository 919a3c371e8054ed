"""The IR parser: the printer's text back into a Module (see ``printer`` for the syntax).

``parse_module(text)`` reads any number of ``func.func`` definitions;
``parse_function(text)`` exactly one. ``//`` comments are ignored, except that a
comment on the same line as the end of an op (or after a function's opening
brace) becomes that op's (function's) ``loc`` -- unless it is a test annotation
(``// expected-error ...``, ``// CHECK: ...``).

Values may be used before their definition (a forward reference); whether a use
is dominated by its definition is the verifier's business, so the parser only
rejects names that are never defined. Malformed text raises ``ParseError`` with a
``line:column: error: message`` diagnostic: unknown ops, undefined or redefined
values, operand types that disagree with the value's definition, bad attributes,
bad types, and plain syntax errors. Result types are taken as written; checking
them against the op table is the verifier's job.
"""
from __future__ import annotations

import re

from ..ops import registry
from .core import RETURN, STRUCTURAL, YIELD, Block, Function, Module, Operation, Region, Value
from .types import TensorType, parse_type


class ParseError(ValueError):
    """A syntax or semantic error in IR text, at ``line``:``col`` (1-based)."""

    def __init__(self, message: str, line: int, col: int, filename: str | None = None):
        self.message = message
        self.line = line
        self.col = col
        self.filename = filename
        super().__init__(self.format())

    def format(self, filename: str | None = None) -> str:
        prefix = filename or self.filename
        where = f"{self.line}:{self.col}"
        return f"{prefix}:{where}: error: {self.message}" if prefix else f"{where}: error: {self.message}"


# ---- tokens --------------------------------------------------------------------------------------
_TOKEN_SPEC = [
    ("ws", r"[ \t\r\f]+"),
    ("nl", r"\n"),
    ("comment", r"//[^\n]*"),
    ("value", r"%[A-Za-z0-9_$.]+(?:#\d+)?"),
    ("symbol", r"@(?:[A-Za-z_][A-Za-z0-9_$.]*|\"(?:\\.|[^\"\\\n])*\")"),
    ("label", r"\^[A-Za-z0-9_$.]+"),
    ("type", r"tensor<[^>\n]*>"),
    ("float", r"-?(?:\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)"),
    ("int", r"-?\d+"),
    ("neginf", r"-inf\b"),
    ("string", r"\"(?:\\.|[^\"\\\n])*\""),
    ("ident", r"[A-Za-z_][A-Za-z0-9_.$]*"),
    ("arrow", r"->"),
    ("punct", r"[(){}\[\],=:]"),
]
_TOKEN_RE = re.compile("|".join(f"(?P<{k}>{p})" for k, p in _TOKEN_SPEC))
_ANNOTATION_RE = re.compile(r"expected-|[A-Z][A-Z0-9_]*(?:-[A-Z0-9_]+)*:")


class Token:
    __slots__ = ("kind", "text", "line", "col", "end_col")

    def __init__(self, kind, text, line, col):
        self.kind, self.text, self.line, self.col = kind, text, line, col
        self.end_col = col + len(text)

    def __repr__(self):
        return f"Token({self.kind}, {self.text!r}, {self.line}:{self.col})"


def tokenize(text: str, line_offset: int = 0, filename: str | None = None):
    """Tokens (comments removed) and the comments by line: ``{line: (col, text)}``."""
    tokens, comments = [], {}
    line, line_start, pos = 1 + line_offset, 0, 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise ParseError(f"unexpected character {text[pos]!r}", line, pos - line_start + 1, filename)
        kind, s = m.lastgroup, m.group()
        col = pos - line_start + 1
        if kind == "nl":
            line += 1
            line_start = m.end()
        elif kind == "comment":
            comments[line] = (col, s[2:].strip())
        elif kind != "ws":
            tokens.append(Token(kind, s, line, col))
        pos = m.end()
    tokens.append(Token("eof", "", line, pos - line_start + 1))
    return tokens, comments


# ---- values and scopes ---------------------------------------------------------------------------
class _Forward(Value):
    """A placeholder for a value used before its definition."""

    @property
    def owner(self):
        return None


class _Scope:
    def __init__(self, parent: "_Scope | None"):
        self.parent = parent
        self.defs: dict[str, list[Value]] = {}     # name -> results (one for a single value)
        self.multi: set[str] = set()                # names defined as '%n:k'
        self.forward: dict[tuple, tuple] = {}       # (name, index|None) -> (placeholder, token)

    def lookup(self, name):
        s = self
        while s is not None:
            if name in s.defs:
                return s, s.defs[name]
            s = s.parent
        return None, None


def _split_ref(text: str):
    body = text[1:]
    if "#" in body:
        name, k = body.split("#", 1)
        return name, int(k)
    return body, None


def _valid_op_name(name: str) -> bool:
    if name in STRUCTURAL:
        return True
    if not name.startswith("gradc."):
        return False
    return name[len("gradc."):] in registry.all_ops()


class Parser:
    def __init__(self, text: str, *, filename: str | None = None, positions: dict | None = None,
                 line_offset: int = 0):
        self.filename = filename
        self.tokens, self.comments = tokenize(text, line_offset, filename)
        self.i = 0
        self.positions = positions

    # ---- token helpers ---------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def peek(self, k=1) -> Token:
        return self.tokens[min(self.i + k, len(self.tokens) - 1)]

    def advance(self) -> Token:
        t = self.tokens[self.i]
        if t.kind != "eof":
            self.i += 1
        return t

    def error(self, message: str, tok: Token | None = None) -> ParseError:
        t = tok or self.tok
        return ParseError(message, t.line, t.col, self.filename)

    def at(self, text: str) -> bool:
        t = self.tok
        return t.kind in ("punct", "arrow", "ident") and t.text == text

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.advance()
            return True
        return False

    def expect(self, text: str, what: str | None = None) -> Token:
        if not self.at(text):
            found = self.tok.text or "end of input"
            raise self.error(f"expected '{text}'{' ' + what if what else ''}, found '{found}'")
        return self.advance()

    def expect_kind(self, kind: str, what: str) -> Token:
        if self.tok.kind != kind:
            found = self.tok.text or "end of input"
            raise self.error(f"expected {what}, found '{found}'")
        return self.advance()

    def trailing_comment(self, tok: Token) -> str | None:
        c = self.comments.get(tok.line)
        if c is None or c[0] < tok.end_col:
            return None
        text = c[1]
        if not text or _ANNOTATION_RE.match(text):
            return None
        return text

    def record(self, obj, tok: Token) -> None:
        if self.positions is not None:
            self.positions[obj] = (tok.line, tok.col)

    # ---- module and functions ----------------------------------------------------------------
    def parse_module(self) -> Module:
        module = Module()
        seen: dict[str, Token] = {}
        while self.tok.kind != "eof":
            if not self.at("func.func"):
                raise self.error(f"expected 'func.func', found '{self.tok.text}'")
            start = self.tok
            f = self.parse_function()
            if f.name in seen:
                raise self.error(f"redefinition of symbol @{f.name}", start)
            seen[f.name] = start
            module.add(f)
        return module

    def parse_function(self) -> Function:
        start = self.expect("func.func")
        sym = self.expect_kind("symbol", "a function name like @f")
        name = _unquote(sym.text[1:]) if sym.text.startswith('@"') else sym.text[1:]
        scope = _Scope(None)
        self.expect("(", "to open the argument list")
        arg_names, arg_types, arg_attrs, arg_toks = [], [], [], []
        if not self.at(")"):
            while True:
                vt = self.expect_kind("value", "an argument name like %x")
                if "#" in vt.text:
                    raise self.error("an argument name cannot have a '#' suffix", vt)
                self.expect(":", "after the argument name")
                arg_types.append(self.parse_type())
                arg_attrs.append(self.parse_attr_dict() if self.at("{") else {})
                arg_names.append(vt.text[1:])
                arg_toks.append(vt)
                if not self.accept(","):
                    break
        self.expect(")", "to close the argument list")
        result_types = []
        if self.accept("->"):
            result_types = self.parse_result_types()
        attrs = {}
        if self.accept("attributes"):
            attrs = self.parse_attr_dict()
        hints = [None if n.isdigit() else n for n in arg_names]
        func = Function(name, arg_types, hints, result_types, arg_attrs, attrs)
        self.record(func, start)
        for a, n, t in zip(func.args, arg_names, arg_toks):
            self.define(scope, n, [a], t)
        brace = self.expect("{", "to open the function body")
        func.loc = self.trailing_comment(brace)
        self.parse_ops(func.body, scope)
        self.expect("}", "to close the function body")
        self.finish_scope(scope)
        return func

    def parse_ops(self, block: Block, scope: _Scope) -> None:
        while not self.at("}"):
            if self.tok.kind == "eof":
                raise self.error("unexpected end of input: missing '}'")
            if self.tok.kind == "label":
                raise self.error("a region holds a single block; unexpected block label")
            block.append(self.parse_op(scope))

    # ---- operations --------------------------------------------------------------------------
    def parse_op(self, scope: _Scope) -> Operation:
        start = self.tok
        lhs, n_results, counted = None, 0, False
        if self.tok.kind == "value":
            lhs = self.advance()
            if "#" in lhs.text:
                raise self.error("a result name cannot have a '#' suffix", lhs)
            n_results = 1
            if self.accept(":"):
                counted = True
                n_results = int(self.expect_kind("int", "a result count").text)
                if n_results < 1:
                    raise self.error("result count must be positive")
            self.expect("=", "after the result name")
        name_tok = self.expect_kind("ident", "an op name")
        name = name_tok.text
        if not _valid_op_name(name):
            raise self.error(f"unknown op '{name}'", name_tok)
        if name in (RETURN, YIELD) and lhs is not None:
            raise self.error(f"'{name}' has no results", lhs)

        refs = []
        if self.tok.kind == "value":
            refs.append(self.advance())
            while self.accept(","):
                refs.append(self.expect_kind("value", "an operand"))
        attrs = self.parse_attr_dict() if self.at("{") else {}
        regions = []
        if self.at("(") and self.peek().text == "{":
            regions = self.parse_regions(scope)

        operand_types, result_types = [], []
        if name in (RETURN, YIELD) and not (self.at(":") and self.peek().text == "("):
            if refs:
                self.expect(":", "before the operand types")
                operand_types = [self.parse_type()]
                while self.accept(","):
                    operand_types.append(self.parse_type())
        else:
            self.expect(":", "before the op's type")
            sig_tok = self.expect("(", "to open the operand types")
            if not self.at(")"):
                operand_types = [self.parse_type()]
                while self.accept(","):
                    operand_types.append(self.parse_type())
            self.expect(")", "to close the operand types")
            self.expect("->", "in the op's type")
            result_types = self.parse_result_types()
            if lhs is None and result_types:
                raise self.error(f"'{name}' has {len(result_types)} result type(s) but no result names",
                                 sig_tok)
        last = self.tokens[self.i - 1]

        if len(operand_types) != len(refs):
            raise self.error(f"'{name}' has {len(refs)} operand(s) but its type lists {len(operand_types)}",
                             name_tok)
        if len(result_types) != n_results:
            raise self.error(f"'{name}' defines {n_results} result(s) but its type lists "
                             f"{len(result_types)}", lhs or name_tok)
        operands = [self.use(scope, r, t) for r, t in zip(refs, operand_types)]
        op = Operation(name, operands, result_types, attrs, regions, loc=self.trailing_comment(last))
        self.record(op, start)
        if lhs is not None:
            self.define(scope, lhs.text[1:], op.results, lhs, multi=counted)
        return op

    def parse_regions(self, scope: _Scope) -> list:
        self.expect("(")
        regions = []
        while True:
            self.expect("{", "to open a region")
            inner = _Scope(scope)
            block = Block()
            if self.tok.kind == "label":
                self.advance()
                if self.accept("("):
                    if not self.at(")"):
                        while True:
                            vt = self.expect_kind("value", "a block argument like %a")
                            self.expect(":", "after the block argument name")
                            t = self.parse_type()
                            n = vt.text[1:]
                            a = block.add_argument(t, None if n.isdigit() else n)
                            self.define(inner, n, [a], vt)
                            if not self.accept(","):
                                break
                    self.expect(")", "to close the block arguments")
                self.expect(":", "after the block header")
            self.parse_ops(block, inner)
            self.expect("}", "to close the region")
            self.finish_scope(inner)
            regions.append(Region([block]))
            if not self.accept(","):
                break
        self.expect(")", "to close the region list")
        return regions

    # ---- values ------------------------------------------------------------------------------
    def define(self, scope: _Scope, name: str, values, tok: Token, multi: bool = False) -> None:
        owner, _ = scope.lookup(name)
        if owner is not None:
            raise self.error(f"redefinition of value '%{name}'", tok)
        scope.defs[name] = list(values)
        if multi:
            scope.multi.add(name)
        for key in list(scope.forward):
            if key[0] != name:
                continue
            placeholder, use_tok = scope.forward.pop(key)
            real = self._select(name, list(values), multi, key[1], use_tok)
            if real.type != placeholder.type:
                raise self.error(f"definition of '%{name}' has type {real.type}, but an earlier use "
                                 f"(line {use_tok.line}) expects {placeholder.type}", tok)
            placeholder.replace_all_uses_with(real)

    def _select(self, name, values, multi, index, tok) -> Value:
        if index is None:
            if multi:
                raise self.error(f"'%{name}' names {len(values)} results; use '%{name}#0' .. "
                                 f"'%{name}#{len(values) - 1}'", tok)
            return values[0]
        if index >= len(values):
            raise self.error(f"'%{name}' has {len(values)} result(s); '#{index}' is out of range", tok)
        return values[index]

    def use(self, scope: _Scope, tok: Token, type_: TensorType) -> Value:
        name, index = _split_ref(tok.text)
        owner, values = scope.lookup(name)
        if owner is not None:
            v = self._select(name, values, name in owner.multi, index, tok)
            if v.type != type_:
                raise self.error(f"use of value '{tok.text}' expects different type than its definition: "
                                 f"'{type_}' vs '{v.type}'", tok)
            return v
        key = (name, index)
        if key in scope.forward:
            placeholder, first = scope.forward[key]
            if placeholder.type != type_:
                raise self.error(f"use of value '{tok.text}' expects different type than prior uses: "
                                 f"'{type_}' vs '{placeholder.type}'", tok)
            return placeholder
        placeholder = _Forward(type_)
        scope.forward[key] = (placeholder, tok)
        return placeholder

    def finish_scope(self, scope: _Scope) -> None:
        """Hand unresolved forward references to the enclosing scope, or report them."""
        for key, (placeholder, tok) in scope.forward.items():
            if scope.parent is None:
                raise self.error(f"use of undefined value '{tok.text}'", tok)
            parent_entry = scope.parent.forward.get(key)
            if parent_entry is None:
                scope.parent.forward[key] = (placeholder, tok)
            else:
                if parent_entry[0].type != placeholder.type:
                    raise self.error(f"use of value '{tok.text}' expects different type than prior uses: "
                                     f"'{placeholder.type}' vs '{parent_entry[0].type}'", tok)
                placeholder.replace_all_uses_with(parent_entry[0])
        scope.forward.clear()

    # ---- types and attributes ----------------------------------------------------------------
    def parse_type(self) -> TensorType:
        t = self.tok
        if t.kind != "type":
            raise self.error(f"expected a tensor type like tensor<2x3xf32>, found '{t.text or 'end of input'}'")
        self.advance()
        try:
            return parse_type(t.text)
        except (ValueError, KeyError):
            raise self.error(f"bad type '{t.text}': expected tensor<DIMSxELT> with ELT one of f32, f64, i64, i1",
                             t) from None

    def parse_result_types(self) -> list:
        if self.accept("("):
            types = []
            if not self.at(")"):
                types.append(self.parse_type())
                while self.accept(","):
                    types.append(self.parse_type())
            self.expect(")", "to close the result types")
            return types
        return [self.parse_type()]

    def parse_attr_dict(self) -> dict:
        self.expect("{")
        attrs: dict = {}
        if self.accept("}"):
            return attrs
        while True:
            kt = self.tok
            if kt.kind == "ident":
                key = kt.text
            elif kt.kind == "string":
                key = _unquote(kt.text)
            else:
                raise self.error(f"expected an attribute name, found '{kt.text or 'end of input'}'")
            self.advance()
            if key in attrs:
                raise self.error(f"duplicate attribute '{key}'", kt)
            attrs[key] = self.parse_attr_value() if self.accept("=") else True
            if self.accept("}"):
                return attrs
            self.expect(",", "or '}' in the attribute dictionary")

    def parse_attr_value(self):
        t = self.tok
        if t.kind == "int":
            self.advance()
            return int(t.text)
        if t.kind == "float":
            self.advance()
            return float(t.text)
        if t.kind == "neginf":
            self.advance()
            return float("-inf")
        if t.kind == "string":
            self.advance()
            try:
                return _unquote(t.text)
            except ValueError as e:
                raise self.error(f"bad attribute string: {e}", t) from None
        if t.kind == "ident":
            words = {"true": True, "false": False, "none": None, "inf": float("inf"), "nan": float("nan")}
            if t.text in words:
                self.advance()
                return words[t.text]
            raise self.error(f"bad attribute value '{t.text}' (expected a number, true, false, none, a "
                             "string or a list)")
        if self.at("["):
            self.advance()
            items = []
            if not self.accept("]"):
                items.append(self.parse_attr_value())
                while self.accept(","):
                    items.append(self.parse_attr_value())
                self.expect("]", "to close the list attribute")
            return items
        if self.at("{"):
            return self.parse_attr_dict()
        raise self.error(f"bad attribute value '{t.text or 'end of input'}' (expected a number, true, false, "
                         "none, a string or a list)")


def _unquote(text: str) -> str:
    body, out, i = text[1:-1], [], 0
    simple = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1:i + 2]
        if nxt in simple:
            out.append(simple[nxt])
            i += 2
        elif re.fullmatch(r"[0-9A-Fa-f]{2}", body[i + 1:i + 3]):
            out.append(chr(int(body[i + 1:i + 3], 16)))
            i += 3
        else:
            raise ValueError(f"unknown escape '\\{nxt}'")
    return "".join(out)


def parse_module(text: str, *, filename: str | None = None, positions: dict | None = None,
                 line_offset: int = 0) -> Module:
    """Parse IR text holding zero or more functions.

    ``positions``, when given, is filled with ``{op or function: (line, column)}`` of
    the source (lines shifted by ``line_offset``), so diagnostics can point at it.
    """
    return Parser(text, filename=filename, positions=positions, line_offset=line_offset).parse_module()


def parse_function(text: str, **kw) -> Function:
    """Parse IR text holding exactly one function."""
    m = parse_module(text, **kw)
    if len(m.functions) != 1:
        raise ParseError(f"expected exactly one function, found {len(m.functions)}", 1, 1, kw.get("filename"))
    return m.functions[0]
