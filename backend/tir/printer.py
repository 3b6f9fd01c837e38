"""A readable, Python-like listing of loop-IR kernels, statements and expressions.

    def fused_add(A: float32[4, 8], B: float32[4, 8], C: float32[4, 8]):
      for i in parallel(0, 4):
        for j in vectorized(0, 8):
          C[i*8 + j] = A[i*8 + j] + B[i*8 + j]

Loops print as `kind(min, extent)`, followed by `# pragma_<key>` for each code-generation hint
of `Stage.pragma` they carry. Parentheses appear only where precedence needs them. Integer
`//` and `%` are floor division and modulo (as in Python), `truncdiv`/`truncmod` the truncating
ones; `a / b` is true division of floats. Constants print bare when they are `int64`, `float32`
or `bool`, and with a dtype suffix otherwise (`3i32`, `2u8`, `0.5f64`, `1.0f16`). Vectors print
as `ramp(base, stride, lanes)` and `x16(value)` (a broadcast to 16 lanes). The printer owns
names: variables and buffers whose hints clash get suffixes (`i`, `i_1`); buffers that share
memory (`flat_view`s) print with one name. Statements are printed with an explicit stack.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .buffer import Buffer
from .dtypes import INDEX_DTYPE, element_of, is_float
from .expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Reduce,
    Select,
    StringImm,
    Sub,
    Var,
)
from .stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
)

INDENT = "  "

# precedence: higher binds tighter
_ATOM = 10
_UNARY = 8
_INFIX: dict[type, tuple[str, int]] = {
    Or: ("or", 1),
    And: ("and", 2),
    EQ: ("==", 4),
    NE: ("!=", 4),
    LT: ("<", 4),
    LE: ("<=", 4),
    GT: (">", 4),
    GE: (">=", 4),
    Add: ("+", 5),
    Sub: ("-", 5),
    Mul: ("*", 6),
    FloorDiv: ("//", 6),
    FloorMod: ("%", 6),
}
_SUFFIX = {"int": "i", "uint": "u", "float": "f", "bfloat": "bf"}


def _float_text(value: float, dtype: str) -> str:
    if value != value:
        return "nan"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    base = element_of(dtype)
    text = str(np.float32(value)) if base == "float32" else repr(float(value))
    if not any(c in text for c in ".en"):
        text += ".0"
    return text


def _const_text(e: IntImm | FloatImm) -> str:
    dtype = e.dtype
    if isinstance(e, FloatImm) or is_float(dtype):
        text = _float_text(float(e.value), dtype)
        if dtype == "float32":
            return text
    else:
        if dtype == "bool":
            return "True" if e.value else "False"
        text = str(int(e.value))
        if dtype == INDEX_DTYPE:
            return text
    m = re.fullmatch(r"([a-z]+?)(\d+)", dtype)
    if m and m.group(1) in _SUFFIX:
        return f"{text}{_SUFFIX[m.group(1)]}{m.group(2)}"
    return f"{dtype}({text})"


def _sanitize(hint: str) -> str:
    name = re.sub(r"\W", "_", hint) or "v"
    return "_" + name if name[0].isdigit() else name


class Namer:
    """Unique printable names for variables (by identity) and buffers (by data pointer)."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.keep: list[Any] = []

    def fresh(self, key: Any, hint: str) -> str:
        """The name of `key`, made from `hint` the first time it is seen."""
        got = self.names.get(id(key))
        if got is not None:
            return got
        base = _sanitize(hint)
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        self.names[id(key)] = name
        self.keep.append(key)
        return name

    def var(self, v: Var) -> str:
        """The name of a variable."""
        return self.fresh(v, v.name)

    def buffer(self, b: Buffer) -> str:
        """The name of a buffer (shared by every buffer aliasing its memory)."""
        return self.fresh(b.data, b.name)


class _ExprPrinter:
    def __init__(self, namer: Namer) -> None:
        self.namer = namer

    def text(self, e: PrimExpr) -> str:
        return self.prec(e)[0]

    def operand(self, e: PrimExpr, need: int) -> str:
        text, p = self.prec(e)
        return f"({text})" if p < need else text

    def call(self, name: str, args: Any) -> str:
        return f"{name}({', '.join(self.text(a) for a in args)})"

    def prec(self, e: PrimExpr) -> tuple[str, int]:
        cls = type(e)
        if isinstance(e, Var):
            return self.namer.var(e), _ATOM
        if isinstance(e, (IntImm, FloatImm)):
            text = _const_text(e)
            return text, _UNARY if text.startswith("-") else _ATOM
        if cls in _INFIX:
            sym, p = _INFIX[cls]
            a, b = e.a, e.b  # type: ignore[attr-defined]
            left_need = p + 1 if p == 4 else p
            gap = "" if p == 6 else " "
            return f"{self.operand(a, left_need)}{gap}{sym}{gap}{self.operand(b, p + 1)}", p
        if isinstance(e, Div):
            if is_float(e.dtype):
                return f"{self.operand(e.a, 6)}/{self.operand(e.b, 7)}", 6
            return self.call("truncdiv", (e.a, e.b)), _ATOM
        if isinstance(e, Mod):
            return self.call("truncmod", (e.a, e.b)), _ATOM
        if isinstance(e, Min):
            return self.call("min", (e.a, e.b)), _ATOM
        if isinstance(e, Max):
            return self.call("max", (e.a, e.b)), _ATOM
        if isinstance(e, Not):
            return f"not {self.operand(e.a, 3)}", 3
        if isinstance(e, Select):
            return self.call("select", (e.condition, e.true_value, e.false_value)), _ATOM
        if isinstance(e, Cast):
            return self.call(e.dtype, (e.value,)), _ATOM
        if isinstance(e, Call):
            return self.call(e.name, e.args), _ATOM
        if isinstance(e, StringImm):
            return repr(e.value), _ATOM
        if isinstance(e, Let):
            name = self.namer.var(e.var)
            return f"(let {name} = {self.text(e.value)} in {self.text(e.body)})", _ATOM
        if isinstance(e, Ramp):
            return f"ramp({self.text(e.base)}, {self.text(e.stride)}, {e.lanes})", _ATOM
        if isinstance(e, Broadcast):
            return f"x{e.lanes}({self.text(e.value)})", _ATOM
        if isinstance(e, BufferLoad):
            idx = ", ".join(self.text(i) for i in e.indices)
            return f"{self.namer.buffer(e.buffer)}[{idx}]", _ATOM
        if isinstance(e, Reduce):
            axes = ", ".join(
                f"{self.namer.var(iv.var)} in ({self.text(iv.dom.min)}, {self.text(iv.dom.extent)})"
                for iv in e.axis
            )
            src = ", ".join(self.text(s) for s in e.source)
            cond = self.text(e.condition)
            where = "" if cond == "True" else f", where={cond}"
            pick = f"[{e.value_index}]" if len(e.source) > 1 else ""
            return f"{e.combiner.name}({src}, axis=[{axes}]{where}){pick}", _ATOM
        producer = getattr(e, "producer", None)
        if producer is not None:  # a TE ProducerLoad
            idx = ", ".join(self.text(i) for i in e.indices)  # type: ignore[attr-defined]
            return f"{self.namer.fresh(producer, producer.name)}[{idx}]", _ATOM
        return f"<{cls.__name__}>", _ATOM


def _shape_text(p: _ExprPrinter, buffer: Buffer) -> str:
    return f"{buffer.dtype}[{', '.join(p.text(d) for d in buffer.shape)}]"


def _loop_header(p: _ExprPrinter, s: For) -> str:
    kind = "serial" if s.kind is ForKind.SERIAL else s.kind.value
    var = p.namer.var(s.loop_var)
    pragmas = "".join(f"  # {k}" for k in sorted(s.annotations) if k.startswith("pragma_"))
    return f"for {var} in {kind}({p.text(s.min)}, {p.text(s.extent)}):{pragmas}"


def _binding(p: _ExprPrinter, var: Var, value: PrimExpr) -> str:
    name = p.namer.var(var)
    ann = "" if var.dtype == INDEX_DTYPE else f": {var.dtype}"
    return f"{name}{ann} = {p.text(value)}"


def _stmt_lines(p: _ExprPrinter, root: Stmt, depth: int) -> list[str]:
    lines: list[str] = []
    stack: list[tuple[Stmt | str, int]] = [(root, depth)]
    while stack:
        s, d = stack.pop()
        pad = INDENT * d
        if isinstance(s, str):
            lines.append(pad + s)
        elif isinstance(s, SeqStmt):
            stack.extend((c, d) for c in reversed(s.stmts))
            if not s.stmts:
                lines.append(pad + "pass")
        elif isinstance(s, BufferStore):
            idx = ", ".join(p.text(i) for i in s.indices)
            lines.append(f"{pad}{p.namer.buffer(s.buffer)}[{idx}] = {p.text(s.value)}")
        elif isinstance(s, For):
            lines.append(pad + _loop_header(p, s))
            stack.append((s.body, d + 1))
        elif isinstance(s, IfThenElse):
            lines.append(f"{pad}if {p.text(s.condition)}:")
            if s.else_case is not None:
                stack.append((s.else_case, d + 1))
                stack.append(("else:", d))
            stack.append((s.then_case, d + 1))
        elif isinstance(s, LetStmt):
            lines.append(pad + _binding(p, s.var, s.value))
            stack.append((s.body, d))
        elif isinstance(s, Allocate):
            b = s.buffer
            lines.append(f"{pad}allocate {p.namer.buffer(b)}: {_shape_text(p, b)} {b.scope}")
            stack.append((s.body, d))
        elif isinstance(s, Evaluate):
            lines.append(pad + p.text(s.value))
        else:
            lines.append(f"{pad}<{type(s).__name__}>")
    return lines


def astext(node: PrimFunc | Stmt | PrimExpr, namer: Namer | None = None) -> str:
    """The readable listing of a kernel, a statement or an expression."""
    p = _ExprPrinter(namer or Namer())
    if isinstance(node, PrimExpr):
        return p.text(node)
    if isinstance(node, Stmt):
        return "\n".join(_stmt_lines(p, node, 0))
    if isinstance(node, PrimFunc):
        params = ", ".join(f"{p.namer.buffer(b)}: {_shape_text(p, b)}" for b in node.params)
        lines = [f"def {_sanitize(node.name)}({params}):"]
        if node.attrs:
            attrs = ", ".join(f"{k}={v!r}" for k, v in node.attrs.items())
            lines.append(f"{INDENT}# {attrs}")
        lines.extend(_stmt_lines(p, node.body, 1))
        return "\n".join(lines)
    raise TypeError(f"astext: cannot print a {type(node).__name__}")


__all__ = ["Namer", "astext"]
