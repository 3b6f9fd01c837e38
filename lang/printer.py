"""The canonical text printer: modules, expressions and types in the Relay text format 0.0.5.

`print_module(mod)` writes text that `relay.grammar.parse` reads back to a structurally
equal module, and printing is idempotent. The format is TVM's `astext()`:

* The printer owns names. A variable keeps only a hint; each printed name is the hint made
  a valid identifier (`conv1.weight` → `conv1_weight`, `_x` → `v_x`, `` → `v`; `base/x`
  stays as it is), with a numeric suffix when it would clash with any other name in the
  output.
* Graph form. Atoms (variables, globals, operators, constructors, constants) print in
  place. Any other node prints in place only when it is used once in the module and sits
  in tail position (the end of a scope or the value of a `let`); otherwise it is bound
  once, `%N = ...;`, and referred to as `%N`. Numbers are never reused in one output.
* Constants other than scalars of literal dtypes, symbolic dimensions and opaque attribute
  values go to the `#[metadata]` section (`meta[relay.Constant][i]`, `meta[tir.SizeVar][i]`,
  `meta[VirtualDevice][i]`).
* With `types` (node → type, from inference), `/* ty=T */` comments as TVM writes them.
* With `inline_constants=N`, a metadata constant of at most N elements also shows its
  values in a comment after its reference, `meta[relay.Constant][0] /* [1, 2.5] */`
  (TVM's format has no literal for a tensor; the comment keeps the text parseable to the
  same module, and the metadata section still holds the values).

Everything is iterative (an explicit stack, or generators driven by
`relay.lang.trampoline.run`), so program depth never meets Python's recursion limit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any

import numpy as np

from .adt import Constructor, TypeData
from .attrs import Attrs, FuncAttrs
from .dtype import looks_like_scalar_dtype
from .expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    pattern_vars,
)
from .metadata import MetaObject, write_metadata
from .module import IRModule
from .op import Op
from .trampoline import run
from .traversal import children, scope_operands
from .types import (
    AnyDim,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    ShapeVar,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
)

VERSION_HEADER = '#[version = "0.0.5"]'

Gen = Generator[Any, Any, Any]

# ------------------------------------------------------------------------------ literals

_FLOAT_TYPES: dict[str, type[np.floating]] = {
    "float16": np.float16,
    "float32": np.float32,
    "float64": np.float64,
}
_SUFFIX = {
    "int16": "i16",
    "int32": "",
    "int64": "i64",
    "float16": "f16",
    "float32": "f",
    "float64": "f64",
}


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _reads_back(text: str, value: np.floating) -> bool:
    return bool(np.asarray(float(text), dtype=value.dtype).tobytes() == value.tobytes())


def format_float(value: float | np.floating, dtype: str = "float64") -> str:
    """The shortest decimal text that reads back (through `float`) to exactly `value`.

    `value` is first rounded to `dtype` (`float16`, `float32` or `float64`). Infinities
    are `inf` / `-inf` and NaN is `nan`; no suffix is added.
    """
    scalar = _FLOAT_TYPES[dtype](value)
    if np.isnan(scalar):
        return "nan"
    if np.isinf(scalar):
        return "inf" if scalar > 0 else "-inf"
    positional = np.format_float_positional(scalar, unique=True, trim="-")
    scientific = np.format_float_scientific(scalar, unique=True, trim="-")
    text = positional if len(positional) <= len(scientific) else scientific
    if abs(float(text)) > float(np.finfo(scalar.dtype).max):
        # e.g. float32 max is `3.4028235e+38`, above the max as a double: readers that
        # range-check the decimal value (TVM does) would reject it; write it exactly.
        text = repr(float(scalar))
    if _reads_back(text, scalar):
        return text
    for digits in range(1, 18):  # pragma: no cover - unique mode already round-trips
        text = np.format_float_scientific(scalar, precision=digits, unique=False, trim="-")
        if _reads_back(text, scalar):
            return text
    return repr(float(scalar))  # pragma: no cover


def _canonical_nan(dtype: str) -> bytes:
    return np.asarray(np.nan, dtype=dtype).tobytes()


def scalar_literal(constant: Constant) -> str | None:
    """The literal text of a scalar constant (`5`, `5i64`, `1.5f`, `True`), or None.

    None means the constant has no literal form (not rank 0, a dtype without literals
    such as int8 or uint8, or a NaN with a payload) and must go to the metadata section.
    """
    data = constant.data
    if data.ndim != 0:
        return None
    dtype = constant.dtype
    if dtype == "bool":
        return "True" if bool(data) else "False"
    if dtype not in _SUFFIX:
        return None
    if dtype in _FLOAT_TYPES:
        native = np.asarray(data, dtype=dtype)
        value = float(native)
        if np.isnan(value) and native.tobytes() != _canonical_nan(dtype):
            return None
        return format_float(value, dtype) + _SUFFIX[dtype]
    return f"{int(data)}{_SUFFIX[dtype]}"


def constant_values_text(data: np.ndarray) -> str:
    """The values of a tensor on one line (`[[1, 2], [3, 4]]`, `True`, `[0.5, nan]`)."""
    text = np.array2string(
        np.asarray(data),
        separator=", ",
        max_line_width=1 << 30,
        threshold=1 << 30,
        formatter={
            "float_kind": lambda v: np.format_float_positional(v, trim="-"),
            "bool": str,
        },
    )
    return " ".join(text.split())


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")


def attr_value_text(value: object, meta: Callable[[MetaObject], str] | None = None) -> str:
    """An attribute value as the text format writes it (`[1, 1]`, `1e-05f`, `"NCHW"`).

    `meta` gives the `meta[...][i]` reference of an opaque metadata object; without it
    such a value is a TypeError.
    """

    def go(v: object) -> Gen:
        if isinstance(v, list | tuple):
            parts = []
            for item in v:
                parts.append((yield go(item)))
            return "[" + ", ".join(parts) + "]"
        if isinstance(v, MetaObject):
            if meta is None:
                raise TypeError(f"printer: {v!r} needs a metadata section to be printed")
            return meta(v)
        return _attr_scalar(v)

    return run(go(value))  # type: ignore[no-any-return]


def _attr_scalar(v: object) -> str:
    if v is None:
        return "None"
    if isinstance(v, bool | np.bool_):
        return "True" if v else "False"
    if isinstance(v, int | np.integer):
        return str(int(v))
    if isinstance(v, float | np.floating):
        # Attribute values are doubles; `f` (TVM's spelling) reads beyond float32 range only
        # as infinity, so larger magnitudes say `f64`.
        value = float(v)
        suffix = "f64" if _FLOAT32_MAX < abs(value) < np.inf else "f"
        return format_float(value, "float64") + suffix
    if isinstance(v, str):
        return f'"{_escape(v)}"'
    return f'"{_escape(str(v))}"'


# --------------------------------------------------------------------------------- names

# `/` is an identifier character after the first (`%base/x`), but `//` would start a comment.
_NOT_IDENT = re.compile(r"[^A-Za-z0-9_/]|/(?=/)")
_KEYWORDS = (
    *("let", "fn", "def", "if", "else", "type", "match", "extern", "free_var"),
    *("ref", "ref_read", "ref_write", "Tensor", "True", "False", "None", "nullptr", "meta"),
)
_DTYPE_PREFIXES = ("int", "uint", "float", "bool", "bfloat", "handle")


def sanitize_name(hint: str, prefix: str = "v") -> str:
    """`hint` as an identifier `[A-Za-z][A-Za-z0-9_/]*` (bad characters become `_`).

    `/` is kept, as TVM's lexer reads it inside names, except where it would be read as
    the start of a comment (the first of two slashes becomes `_`).
    """
    name = _NOT_IDENT.sub("_", hint)
    if not name:
        return prefix
    if not ("a" <= name[0] <= "z" or "A" <= name[0] <= "Z"):
        name = prefix + name
    return name


class _Names:
    """Unique names over one output, one per object (by identity)."""

    def __init__(self, prefix: str, reserved: tuple[str, ...] = (), types: bool = False) -> None:
        self.prefix = prefix
        self.types = types
        self.used: set[str] = set(reserved)
        self.next_suffix: dict[str, int] = {}
        self.bases: dict[str, str] = {}
        self.by_id: dict[int, str] = {}
        self.keep: list[object] = []

    def get(self, obj: object, hint: str) -> str:
        name = self.by_id.get(id(obj))
        if name is not None:
            return name
        base = self.bases.get(hint)
        if base is None:
            base = sanitize_name(hint, self.prefix)
            if self.types and base.startswith(_DTYPE_PREFIXES):
                base = self.prefix + base  # would read as a dtype
            self.bases[hint] = base
        name = base
        if name in self.used:
            k = self.next_suffix.get(base, 1)
            while f"{base}{k}" in self.used:
                k += 1
            self.next_suffix[base] = k + 1
            name = f"{base}{k}"
        self.used.add(name)
        self.by_id[id(obj)] = name
        self.keep.append(obj)
        return name


# ------------------------------------------------------------------------------- printer

_COMPOUND = (Function, If, Match, Let)
_ATOMS = frozenset({Var, GlobalVar, Op, Constructor, Constant})


def _is_nullary_ctor_call(node: Expr) -> bool:
    return (
        isinstance(node, Call)
        and isinstance(node.op, Constructor)
        and not node.args
        and not node.op.inputs
        and node.attrs is None
    )


class _Printer:
    """The state of one printing: names, graph numbers, use counts, metadata, output."""

    def __init__(
        self,
        types: Mapping[Expr, Type] | None,
        type_names: tuple[str, ...] = (),
        inline_constants: int = 0,
    ):
        self.types = types
        self.inline_constants = inline_constants
        self.vars = _Names("v")
        self.tvars = _Names("t", _KEYWORDS + type_names, types=True)
        self.graph: dict[int, str] = {}
        self.counter = 0
        self.uses: dict[int, int] = {}
        self.constants: list[np.ndarray] = []
        self.constant_index: dict[tuple[str, tuple[int, ...], bytes], int] = {}
        self.shape_vars: list[ShapeVar] = []
        self.shape_var_index: dict[int, int] = {}
        self.meta_objects: dict[str, dict[MetaObject, int]] = {}
        self.type_memo: dict[int, str] = {}
        self.keep: list[object] = []
        self.lines: list[str] = []
        self.current: list[str] = []
        self.indent = 0
        self.line_indent = 0

    def start_scope(self, type_names: tuple[str, ...]) -> None:
        """Start naming afresh: each top-level definition is its own scope, so a `def`'s
        parameters keep their names whatever other definitions call theirs."""
        self.vars = _Names("v")
        self.tvars = _Names("t", _KEYWORDS + type_names, types=True)

    # ------------------------------------------------------------------ output
    def write(self, text: str) -> None:
        if not self.current:
            self.line_indent = self.indent
        self.current.append(text)

    def newline(self) -> None:
        self.lines.append("  " * self.line_indent + "".join(self.current))
        self.current = []

    # ------------------------------------------------------------------ analysis
    def analyze(self, root: Expr, seen: set[int]) -> list[Var]:
        """Count uses below `root` (nodes in `seen` are already counted); its free vars.

        The free variables are returned in order of first appearance (depth first, left
        to right).
        """
        uses = self.uses
        local: set[int] = set()
        bound: set[int] = set()
        found: list[Var] = []
        stack = [root]
        while stack:
            node = stack.pop()
            key = id(node)
            if key in local:
                continue
            local.add(key)
            kids = children(node)
            if key not in seen:
                seen.add(key)
                for child in kids:
                    child_key = id(child)
                    uses[child_key] = uses.get(child_key, 0) + 1
            kind = type(node)
            if kind is Var:
                found.append(node)  # type: ignore[arg-type]
            elif kind is Let:
                bound.add(id(node.var))  # type: ignore[attr-defined]
            elif kind is Function:
                bound.update(id(p) for p in node.params)  # type: ignore[attr-defined]
            elif kind is Match:
                for clause in node.clauses:  # type: ignore[attr-defined]
                    bound.update(id(v) for v in pattern_vars(clause.lhs))
            stack.extend(reversed(kids))
        return [v for v in found if id(v) not in bound]

    def is_atom(self, node: Expr) -> bool:
        return type(node) in _ATOMS or _is_nullary_ctor_call(node)

    # ------------------------------------------------------------------ types
    def type_text(self, t: Type) -> str:
        memo = self.type_memo.get(id(t))
        if memo is not None:
            return memo
        if isinstance(t, TensorType) and t.is_static():
            text = self._tensor_type(t, [str(d) for d in t.shape])
        else:
            text = run(self._type(t))
        self.type_memo[id(t)] = text
        self.keep.append(t)
        return text

    def _tensor_type(self, t: TensorType, dims: list[str]) -> str:
        if not dims and looks_like_scalar_dtype(t.dtype):
            return t.dtype
        return f"Tensor[({', '.join(dims)}), {t.dtype}]"

    def dim_text(self, dim: object) -> str:
        if isinstance(dim, AnyDim):
            return "?"
        if isinstance(dim, ShapeVar):
            index = self.shape_var_index.get(id(dim))
            if index is None:
                index = len(self.shape_vars)
                self.shape_vars.append(dim)
                self.shape_var_index[id(dim)] = index
            return f"meta[tir.SizeVar][{index}]"
        return str(dim)

    def type_params_text(self, params: tuple[TypeVar, ...]) -> str:
        if not params:
            return ""
        return "[" + ", ".join(self.tvars.get(p, p.name_hint) for p in params) + "]"

    def _type(self, t: Type) -> Gen:
        if isinstance(t, TensorType):
            return self._tensor_type(t, [self.dim_text(d) for d in t.shape])
        if isinstance(t, TupleType):
            parts = []
            for f in t.fields:
                parts.append((yield self._type(f)))
            if len(parts) == 1:
                return f"({parts[0]},)"
            return "(" + ", ".join(parts) + ")"
        if isinstance(t, FuncType):
            params = self.type_params_text(t.type_params)
            args = []
            for a in t.arg_types:
                args.append((yield self._type(a)))
            ret = yield self._type(t.ret_type)
            return f"fn {params}({', '.join(args)}) -> {ret}"
        if isinstance(t, TypeVar):
            return self.tvars.get(t, t.name_hint)
        if isinstance(t, GlobalTypeVar):
            return t.name_hint
        if isinstance(t, TypeCall):
            if not t.args:
                return t.func.name_hint
            args = []
            for a in t.args:
                args.append((yield self._type(a)))
            return f"{t.func.name_hint}[{', '.join(args)}]"
        if isinstance(t, RefType):
            inner = yield self._type(t.value)
            return f"ref({inner})"
        if isinstance(t, IncompleteType):
            return "_"
        raise TypeError(f"printer: unhandled type {type(t).__name__}")

    def ty(self, node: Expr) -> str:
        """The `/* ty=T */` comment of `node`, if types were given and it has one."""
        if self.types is None:
            return ""
        t = self.types.get(node)
        return "" if t is None else f" /* ty={self.type_text(t)} */"

    # ------------------------------------------------------------------ atoms
    def var_name(self, var: Var) -> str:
        return "%" + self.vars.get(var, var.name_hint)

    def var_decl(self, var: Var) -> str:
        text = self.var_name(var)
        if var.type_annotation is not None:
            text += ": " + self.type_text(var.type_annotation)
        return text + self.ty(var)

    def constant_text(self, node: Constant) -> str:
        literal = scalar_literal(node)
        if literal is None:
            data = node.data
            key = (data.dtype.str, data.shape, data.tobytes())
            index = self.constant_index.get(key)
            if index is None:
                index = len(self.constants)
                self.constants.append(data)
                self.constant_index[key] = index
            literal = f"meta[relay.Constant][{index}]"
            if data.size <= self.inline_constants:
                literal += f" /* {constant_values_text(data)} */"
        return literal + self.ty(node)

    def atom_text(self, node: Expr) -> str:
        if isinstance(node, Var):
            return self.var_name(node)
        if isinstance(node, GlobalVar):
            return "@" + node.name_hint
        if isinstance(node, Op):
            return node.name
        if isinstance(node, Constructor):
            return node.name_hint
        if isinstance(node, Constant):
            return self.constant_text(node)
        if _is_nullary_ctor_call(node):
            return node.op.name_hint + self.ty(node)  # type: ignore[attr-defined]
        raise TypeError(f"printer: {type(node).__name__} is not an atom")

    def ref(self, node: Expr) -> str:
        """A child in a position that takes an atom: its graph number or atom text."""
        number = self.graph.get(id(node))
        return number if number is not None else self.atom_text(node)

    def ref_var_like(self, node: Expr) -> str:
        """A callee or projected tuple: parenthesized unless a name."""
        number = self.graph.get(id(node))
        if number is not None:
            return number
        if isinstance(node, Var | GlobalVar | Op) or (
            isinstance(node, Constructor) and node.inputs
        ):
            return self.atom_text(node)
        return f"({self.atom_text(node)})"

    # ------------------------------------------------------------------ simple nodes
    def attrs_text(self, attrs: Attrs | FuncAttrs | None) -> list[str]:
        if attrs is None:
            return []
        items = attrs.items if isinstance(attrs, FuncAttrs) else attrs.non_default_items()
        return [f"{key}={attr_value_text(value, self.meta_ref)}" for key, value in items]

    def meta_ref(self, obj: MetaObject) -> str:
        """`meta[TypeKey][i]` for an opaque object (equal objects share an index)."""
        objects = self.meta_objects.setdefault(obj.type_key, {})
        index = objects.get(obj)
        if index is None:
            index = objects[obj] = len(objects)
        return f"meta[{obj.type_key}][{index}]"

    def simple_text(self, node: Expr) -> str:
        """Text of a one-line node whose children are atoms or already bound."""
        if isinstance(node, Call):
            parts = [self.ref(a) for a in node.args] + self.attrs_text(node.attrs)
            return f"{self.ref_var_like(node.op)}({', '.join(parts)})"
        if isinstance(node, Tuple):
            fields = [self.ref(f) for f in node.fields]
            return f"({fields[0]},)" if len(fields) == 1 else f"({', '.join(fields)})"
        if isinstance(node, TupleGetItem):
            return f"{self.ref_var_like(node.tuple_value)}.{node.index}"
        if isinstance(node, RefCreate):
            return f"ref({self.ref(node.value)})"
        if isinstance(node, RefRead):
            return f"ref_read({self.ref(node.ref)})"
        if isinstance(node, RefWrite):
            return f"ref_write({self.ref(node.ref)}, {self.ref(node.value)})"
        raise TypeError(f"printer: unhandled expression {type(node).__name__}")

    # ------------------------------------------------------------------ bindings
    def pending(self, node: Expr) -> list[Expr]:
        """Nodes to bind, children first, before `node` can be written in place.

        `node` itself is included when it is shared (used more than once).
        """
        if self.is_atom(node) or id(node) in self.graph:
            return []
        kids = scope_operands(node)
        graph = self.graph
        if all(type(k) in _ATOMS or id(k) in graph for k in kids):  # the common case
            return [node] if self.uses.get(id(node), 0) > 1 else []
        out: list[Expr] = []
        visited: set[int] = set()
        stack: list[tuple[Expr, Iterator[Expr]]] = [(node, iter(kids))]
        while stack:
            top, rest = stack[-1]
            for child in rest:
                if self.is_atom(child) or id(child) in self.graph or id(child) in visited:
                    continue
                visited.add(id(child))
                stack.append((child, iter(scope_operands(child))))
                break
            else:
                stack.pop()
                if top is not node:
                    out.append(top)
        if self.uses.get(id(node), 0) > 1:
            out.append(node)
        return out

    def settle(self, node: Expr) -> Gen | None:
        """Bind what `node` needs (and `node` itself if shared) in the current scope.

        Returns a generator to run when a compound node must be bound, else None.
        """
        todo = self.pending(node)
        if not any(isinstance(item, _COMPOUND) for item in todo):
            for item in todo:
                if id(item) not in self.graph:
                    self.bind_simple(item)
            return None
        return self._settle(todo)

    def _settle(self, todo: list[Expr]) -> Gen:
        for item in todo:
            if id(item) in self.graph:  # bound meanwhile, inside an earlier binding
                continue
            if isinstance(item, _COMPOUND):
                yield self.bind_compound(item)
            else:
                self.bind_simple(item)

    def next_number(self) -> str:
        number = f"%{self.counter}"
        self.counter += 1
        return number

    def bind_simple(self, node: Expr) -> None:
        text = self.simple_text(node)
        number = self.next_number()
        self.write(f"{number} = {text}{self.ty(node)};")
        self.newline()
        self.graph[id(node)] = number
        self.keep.append(node)

    def bind_compound(self, node: Expr) -> Gen:
        # As in TVM, the number is taken after the value: bindings inside come first.
        line = len(self.lines)
        self.write("%\0 = ")
        yield self.render_compound(node)
        number = self.next_number()
        self.lines[line] = self.lines[line].replace("%\0", number, 1)
        self.write(self.ty(node) + ";")
        self.newline()
        self.graph[id(node)] = number
        self.keep.append(node)

    def emit_in_place(self, node: Expr) -> Gen | None:
        """Write `node` at the current position (after `settle`).

        Returns a generator to run when `node` is a compound written in place.
        """
        number = self.graph.get(id(node))
        if number is not None:
            self.write(number)
        elif self.is_atom(node):
            self.write(self.atom_text(node))
        elif isinstance(node, _COMPOUND):
            return self._emit_compound(node)
        else:
            self.write(self.simple_text(node) + self.ty(node))
        return None

    def _emit_compound(self, node: Expr) -> Gen:
        yield self.render_compound(node)
        self.write(self.ty(node))

    # ------------------------------------------------------------------ scopes
    def block(self, expr: Expr, head: bool = False) -> Gen:
        """The statements of a scope whose final expression is `expr`.

        With `head`, `expr` is a Let being written in place (in parentheses): its binding
        opens the block whatever its use count.
        """
        node = expr
        while type(node) is Let and (
            head or (id(node) not in self.graph and self.uses.get(id(node), 0) <= 1)
        ):
            head = False
            decl = self.var_decl(node.var)  # type: ignore[attr-defined]
            value = node.value  # type: ignore[attr-defined]
            step = self.settle(value)
            if step is not None:
                yield step
            self.write(f"let {decl} = ")
            step = self.emit_in_place(value)
            if step is not None:
                yield step
            self.write(";")
            self.newline()
            node = node.body  # type: ignore[attr-defined]
        step = self.settle(node)
        if step is not None:
            yield step
        step = self.emit_in_place(node)
        if step is not None:
            yield step
        self.newline()

    def nested(self, expr: Expr, head: bool = False) -> Gen:
        """`expr` as an indented block (the caller wrote the opening bracket)."""
        self.newline()
        self.indent += 1
        yield self.block(expr, head)
        self.indent -= 1

    def render_compound(self, node: Expr) -> Gen:
        if isinstance(node, Function):
            yield self.render_function(node, "fn ")
        elif isinstance(node, If):
            self.write(f"if ({self.ref(node.cond)}) {{")
            yield self.nested(node.true_branch)
            self.write("} else {")
            yield self.nested(node.false_branch)
            self.write("}")
        elif isinstance(node, Match):
            keyword = "match" if node.complete else "match?"
            self.write(f"{keyword} ({self.ref(node.data)}) {{")
            self.newline()
            self.indent += 1
            for clause in node.clauses:
                self.write(self.pattern_text(clause.lhs) + " => {")
                yield self.nested(clause.rhs)
                self.write("},")
                self.newline()
            self.indent -= 1
            self.write("}")
        elif isinstance(node, Let):
            self.write("(")
            yield self.nested(node, head=True)
            self.write(")")
        else:  # pragma: no cover
            raise TypeError(f"printer: {type(node).__name__} is not a compound expression")

    def render_function(self, fn: Function, head: str, free: list[Var] | None = None) -> Gen:
        params = [self.var_decl(p) for p in fn.params] + self.attrs_text(fn.attrs)
        text = f"{head}{self.type_params_text(fn.type_params)}({', '.join(params)})"
        if fn.ret_type is not None:
            text += " -> " + self.type_text(fn.ret_type)
        self.write(text + " {")
        self.newline()
        self.indent += 1
        for var in free or ():
            self.write(f"free_var {self.var_decl(var)};")
            self.newline()
        yield self.block(fn.body)
        self.indent -= 1
        self.write("}")

    # ------------------------------------------------------------------ patterns
    def pattern_text(self, pattern: Pattern) -> str:
        def go(p: Pattern) -> Gen:
            if isinstance(p, PatternWildcard):
                return "_"
            if isinstance(p, PatternVar):
                return self.var_decl(p.var)
            parts = []
            for sub in p.patterns:  # type: ignore[attr-defined]
                parts.append((yield go(sub)))
            if isinstance(p, PatternConstructor):
                name = p.constructor.name_hint
                return f"{name}({', '.join(parts)})" if parts else name
            if isinstance(p, PatternTuple):
                return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"
            raise TypeError(f"printer: unhandled pattern {type(p).__name__}")

        return run(go(pattern))  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ top level
    def type_definition(self, data: TypeData) -> None:
        self.write(f"type {data.header.name_hint}{self.type_params_text(data.type_vars)} {{")
        self.newline()
        self.indent += 1
        for ctor in data.constructors:
            if ctor.inputs:
                inputs = ", ".join(self.type_text(t) for t in ctor.inputs)
                self.write(f"{ctor.name_hint}({inputs}),")
            else:
                self.write(f"{ctor.name_hint},")
            self.newline()
        self.indent -= 1
        self.write("}")
        self.newline()

    def metadata_lines(self) -> None:
        table: dict[str, list[object]] = {}
        if self.constants:
            table["relay.Constant"] = list(self.constants)
        if self.shape_vars:
            table["tir.SizeVar"] = list(self.shape_vars)
        for type_key, objects in self.meta_objects.items():
            table.setdefault(type_key, []).extend(objects)  # dicts keep insertion order
        if table:
            self.lines.append("#[metadata]")
            self.lines.append(write_metadata(table))


def print_module(
    mod: IRModule, types: Mapping[Expr, Type] | None = None, *, inline_constants: int = 0
) -> str:
    """The module as text: header, type definitions, functions, then the metadata section.
    Metadata constants of at most `inline_constants` elements also show their values in a
    comment where they are used."""
    type_names = tuple(g.name_hint for g in mod.type_definitions)
    printer = _Printer(types, type_names, inline_constants)
    functions = sorted(mod.functions.items(), key=lambda item: item[0].name_hint)
    seen: set[int] = set()
    free = [printer.analyze(fn, seen) for _, fn in functions]
    printer.lines.append(VERSION_HEADER)
    first = True
    for gtv in sorted(mod.type_definitions, key=lambda g: g.name_hint):
        if not first:
            printer.lines.append("")
        first = False
        printer.start_scope(type_names)
        printer.type_definition(mod.type_definitions[gtv])
    for (gv, fn), fn_free in zip(functions, free):
        if not first:
            printer.lines.append("")
        first = False
        printer.start_scope(type_names)
        run(printer.render_function(fn, f"def @{gv.name_hint}", fn_free))
        printer.newline()
    printer.metadata_lines()
    return "\n".join(printer.lines) + "\n"


def print_expr(
    expr: Expr, types: Mapping[Expr, Type] | None = None, *, inline_constants: int = 0
) -> str:
    """An expression on its own (no header); free variables declared with `free_var`;
    `inline_constants` as for `print_module`."""
    printer = _Printer(types, inline_constants=inline_constants)
    for var in printer.analyze(expr, set()):
        printer.write(f"free_var {printer.var_decl(var)};")
        printer.newline()
    run(printer.block(expr))
    printer.metadata_lines()
    return "\n".join(printer.lines)


def print_type(t: Type) -> str:
    """A type as text (`Tensor[(1, 3), float32]`, `fn (A) -> B`, `List[A]`)."""
    return _Printer(None).type_text(t)
