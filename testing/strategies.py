"""Hypothesis strategies that generate syntactically valid programs.

`modules()` draws whole `IRModule`s, `exprs()` closed expressions, `types()` types,
`constants()` tensor constants and `patterns()` match patterns. Generated programs are
*well-formed* but not necessarily well-typed:

* every variable is bound where it is used (parameters, `let`, pattern variables; a `let`
  variable is also in scope in its own value, for recursive closures), and each binder is
  bound exactly once;
* type variables are used only under the `[A, ...]` list that binds them;
* constructors come from the module's own ADTs, calls of constructors and of globals
  pass as many arguments as they take, ADTs are applied to the right number of types;
* every operator call carries an attribute object built by the operator's schema.

Every construct of the IR shows up: `let` with and without annotations, graph-form sharing
(the same node object used twice, and dataflow DAGs), `if`, closures with type
parameters, return types and `FuncAttrs`, calls of operators, globals, local closures and
constructors, `match`/`match?` with nested patterns, tuples (unit and 1-tuples included),
projections, references, scalar literals of every literal dtype (inf, nan, extremes),
metadata constants, types of every kind, and variable names a printer must sanitize.

How: every choice is read from a few drawn bytes; choice `0` is always the simplest option
and bytes past the end read as zeros. Each compound node (and each ADT, signature and
attribute set) draws its own chunk of bytes inside its own hypothesis span: hypothesis
spends ~0.1 ms per draw and a module makes hundreds of choices, so this keeps an example
at a few milliseconds, while the shrinker still sees the tree (zeroing a chunk turns the
node into a leaf; a span can be replaced by a descendant span). `max_depth` bounds
nesting and `max_size` the number of compound nodes.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, NamedTuple
from typing import TypeVar as _T

import numpy as np
from hypothesis import strategies as st

from ..lang.adt import Constructor, TypeData
from ..lang.attrs import AttrField, Attrs, FuncAttrs, Kind
from ..lang.dtype import numpy_dtype
from ..lang.expr import (
    Call,
    Clause,
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
    let_chain,
)
from ..lang.freevars import free_vars
from ..lang.module import IRModule
from ..lang.op import Op, all_ops
from ..lang.types import (
    ANY,
    Dim,
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

__all__ = [
    "LITERAL_DTYPES",
    "METADATA_DTYPES",
    "VAR_NAMES",
    "attrs_for",
    "constants",
    "exprs",
    "func_attrs",
    "literal_constants",
    "metadata_constants",
    "modules",
    "patterns",
    "types",
    "usable_ops",
    "var_names",
]

# ------------------------------------------------------------------------------ tables

VAR_NAMES = (
    "x", "y", "x", "a", "p0", "data", "x.y", "1", "_", "", "x1", "v", "v1", "_x",
    "conv1.weight", "a/b", "x-y", "x y", "%x", "λ", "名前", "0",
)  # fmt: skip
"""Hints for local variables: plain, duplicated, and ones a printer must sanitize/unique."""

TYPE_VAR_NAMES = ("A", "B", "T", "A", "a", "", "1", "t1", "x.y", "τ", "_")
SHAPE_VAR_NAMES = ("n", "m", "batch", "n", "", "n.1")
GLOBAL_NAMES = ("main", "f", "g", "helper", "f1", "f_2", "_private", "net/block1", "Main", "if")
ADT_NAMES = ("List", "Tree", "Option", "Pair", "Nat", "Box", "Either", "Stream")
CTOR_NAMES = (
    "Cons", "Nil", "Some", "None", "Leaf", "Node", "Z", "S", "MkPair", "Left", "Right",
    "Lmao", "C1", "Ctor_2", "Empty", "Wrap", "Item", "End",
)  # fmt: skip
FUNC_ATTR_KEYS = (
    "Primitive", "Inline", "Compiler", "global_symbol", "Composite",
    "relay.reshape_only", "PartitionedFromPattern", "Extern", "my.custom_key",
)  # fmt: skip

LITERAL_DTYPES = ("int32", "float32", "int64", "int16", "float16", "float64", "bool")
"""Dtypes whose scalars have a literal form in the text format."""

METADATA_DTYPES = (
    "int8", "float32", "uint8", "int32", "int64", "float16", "float64", "int16",
    "uint16", "uint32", "uint64", "bool",
)  # fmt: skip
"""Dtypes a constant array may have (what has no literal form goes to the metadata)."""

TENSOR_DTYPES = (
    "float32", "int32", "int64", "int8", "uint8", "float16", "float64", "bool", "int16",
    "uint1", "bfloat16", "uint64",
)  # fmt: skip
DIMS = (1, 2, 3, 4, 8, 16, 224, 0, 1024, 2**31 - 1)
SMALL_INTS = (0, 1, -1, 2, 3, 4, 8, 224, 2**31 - 1, -(2**31), 2**40)
ATTR_FLOATS = (0.5, 1e-5, 1.0, -1.0, 0.2, 0.1, math.inf, -math.inf, 1e30, -0.0)
ATTR_STRINGS = ("", "NCHW", "NHWC", "OIHW", "clip", "linear", "half_pixel")
ATTR_DTYPES = ("", "float32", "int8", "int32", "int64", "uint8", "float16", "bool", "float64")
# printable text, what a printer must escape, control characters
STRING_CHARS = 'abcXYZ019 _.,-/:;=()[]{}<>%@#*+"\\\n\t\r\x00\x1b\u2028λéß日🙂'

_E = _T("_E")
NODE_BYTES = 40  # choices of one expression node (a hypothesis draw each)


class _Env(NamedTuple):
    """What is in scope: variables, type variables, and variables known to be callable."""

    vars: tuple[Var, ...] = ()
    tvars: tuple[TypeVar, ...] = ()
    callables: tuple[tuple[Var, int], ...] = ()

    def bind(self, *new: Var) -> _Env:
        calls = tuple(
            (v, len(v.type_annotation.arg_types))
            for v in new
            if isinstance(v.type_annotation, FuncType)
        )
        return self._replace(vars=self.vars + new, callables=self.callables + calls)


_OPS_CACHE: list[Any] = [-1, []]


def _fillable(op: Op) -> bool:
    schema = op.attrs_schema
    return schema is None or all(f.kind in _Gen.KIND_VALUES for f in schema.fields)


def usable_ops() -> list[Op]:
    """Every declared operator whose attribute schema the strategies can fill (`add` first)."""
    ops = all_ops()
    if _OPS_CACHE[0] != len(ops):
        usable = [op for op in ops if _fillable(op)]
        usable.sort(key=lambda op: op.name != "add")
        _OPS_CACHE[:] = [len(ops), usable]
    return list(_OPS_CACHE[1])


class _Gen:
    """The choices of one example, read from a byte tape, plus the module context."""

    def __init__(
        self, tape: bytes = b"", draw: Any = None, budget: int = 40, module: IRModule | None = None
    ) -> None:
        self.draw = draw
        self.tapes = [tape]  # the chunk being read, innermost last
        self.positions = [0]
        self.budget = budget
        self.ops = usable_ops()
        self.dag_ops = [op for op in self.ops if 1 <= op.num_inputs <= 3 or op.num_inputs < 0]
        self.adts: list[tuple[GlobalTypeVar, int]] = []
        self.type_data: list[TypeData] = []
        self.ctors: list[Constructor] = []
        self.globals: list[tuple[GlobalVar, int]] = []
        self.shape_vars: list[ShapeVar] = []
        self.pool: list[Expr] = []
        self.free: dict[int, frozenset[int]] = {}
        if module is not None:
            for data in module.type_definitions.values():
                self.adts.append((data.header, len(data.type_vars)))
                self.type_data.append(data)
                self.ctors.extend(data.constructors)
            self.globals = [(gv, len(fn.params)) for gv, fn in module.functions.items()]

    # ------------------------------------------------------------------ choices
    def chunked(self, size: int, build: Callable[[], _E]) -> _E:
        """`build()` reading its choices from a freshly drawn chunk of `size` bytes.

        Each chunk is one hypothesis draw inside its own span, so the shrinker sees the
        program's structure: it can zero a node's chunk (the node becomes a leaf) or
        replace a node by one of its descendants. Without `draw`, the current tape is used.
        """
        if self.draw is None:
            return build()
        stack = _WORK.__dict__.setdefault("stack", [])
        stack.append((self, size, build))
        try:
            return self.draw(_CHUNK)  # type: ignore[no-any-return]
        finally:
            stack.pop()

    def raw(self, n: int) -> bytes:
        """The next `n` bytes of the current chunk (zeros past its end)."""
        pos = self.positions[-1]
        self.positions[-1] = pos + n
        chunk = self.tapes[-1][pos : pos + n]
        return chunk + bytes(n - len(chunk))

    def choose(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi]; the zero choice is `lo`."""
        span = hi - lo
        if span <= 0:
            return lo
        value = int.from_bytes(self.raw((span.bit_length() + 7) // 8), "big")
        return lo + value % (span + 1)

    def pick(self, seq: Sequence[_E]) -> _E:
        """An element of `seq`; the zero choice is the first."""
        return seq[self.choose(0, len(seq) - 1)]

    def last(self, seq: Sequence[_E]) -> _E:
        """An element of `seq`; the zero choice is the last (the innermost variable)."""
        return seq[len(seq) - 1 - self.choose(0, len(seq) - 1)]

    def maybe(self, tenths: int) -> bool:
        """True with probability tenths/10; the zero choice is False."""
        return self.choose(0, 9) >= 10 - tenths

    def distinct(self, names: Sequence[str], n: int) -> list[str]:
        """`n` distinct names from `names`."""
        left = list(dict.fromkeys(names))
        return [left.pop(self.choose(0, len(left) - 1)) for _ in range(n)]

    # ------------------------------------------------------------------ values
    def scalar(self, dtype: str) -> Any:
        """A value of a scalar of `dtype`: simple ones, special ones, extremes, any bits."""
        kind = self.choose(0, 5)
        np_dtype = numpy_dtype(dtype)
        if dtype == "bool":
            return bool(kind % 2)
        if np_dtype.kind in "iu":
            info = np.iinfo(np_dtype)
            lo, hi = int(info.min), int(info.max)
            if kind < 2:
                small = self.pick((0, 1, -1, 2, -2, 3))
                return abs(small) if lo == 0 else small
            if kind < 4:
                return self.pick((lo, hi, lo + 1, hi - 1))
        else:
            info_f = np.finfo(np_dtype)
            if kind < 2:
                return self.pick((0.0, 1.0, -1.5, 0.1, -0.0, 3.14159))
            if kind == 2:
                return self.pick((math.nan, math.inf, -math.inf))
            if kind == 3:
                return self.pick((float(info_f.max), -float(info_f.max), float(info_f.tiny),
                                  float(info_f.smallest_subnormal), 1e-5))  # fmt: skip
        value = np.frombuffer(self.raw(np_dtype.itemsize), np_dtype)[0].item()
        return math.nan if value != value else value  # the text format has one NaN

    def literal_constant(self, dtypes: Sequence[str] = LITERAL_DTYPES) -> Constant:
        dtype = self.pick(dtypes)
        return Constant(np.asarray(self.scalar(dtype), dtype=numpy_dtype(dtype)))

    def metadata_constant(self) -> Constant:
        dtype = numpy_dtype(self.pick(METADATA_DTYPES))
        literal = str(dtype) in LITERAL_DTYPES
        rank = self.choose(1, 3) if literal or self.maybe(5) else 0
        shape = tuple(self.choose(0, 3) for _ in range(rank))
        size = int(np.prod(shape, dtype=np.int64))
        if dtype == np.bool_:
            array = np.frombuffer(self.raw(size), np.uint8) % 2 == 1
        else:
            array = np.frombuffer(self.raw(size * dtype.itemsize), dtype)
        return Constant(array.reshape(shape))

    def attr_int(self) -> int:
        return self.pick(SMALL_INTS) if self.maybe(8) else self.choose(-(2**63), 2**63 - 1)

    def attr_float(self) -> float:
        if self.maybe(8):
            return self.pick(ATTR_FLOATS)
        value = float(np.frombuffer(self.raw(8), np.float64)[0])
        return 0.25 if math.isnan(value) else value  # NaN != NaN: attrs could never be equal

    def attr_str(self) -> str:
        if not self.maybe(4):
            return self.pick(ATTR_STRINGS)
        return "".join(self.pick(STRING_CHARS) for _ in range(self.choose(0, 6)))

    def attr_ints(self) -> tuple[int, ...]:
        return tuple(self.attr_int() for _ in range(self.choose(0, 4)))

    KIND_VALUES: dict[Kind, Callable[[_Gen], Any]] = {
        Kind.INT: attr_int,
        Kind.FLOAT: attr_float,
        Kind.BOOL: lambda g: g.maybe(5),
        Kind.STR: attr_str,
        Kind.DTYPE: lambda g: g.pick(ATTR_DTYPES),
        Kind.INTS: attr_ints,
        Kind.INTS_NESTED: lambda g: tuple(g.attr_ints() for _ in range(g.choose(0, 3))),
        Kind.FLOATS: lambda g: tuple(g.attr_float() for _ in range(g.choose(0, 3))),
        Kind.INT_OR_INTS: lambda g: g.attr_ints() if g.maybe(5) else g.attr_int(),
        Kind.ANY: lambda g: g.attr_value(nested=False),
    }

    def attr_value(self, nested: bool = True) -> Any:
        """A literal attribute value: int, string, bool, float, None or a list of them."""
        kind = self.choose(0, 5 if nested else 4)
        if kind == 0:
            return self.attr_int()
        if kind == 1:
            return self.attr_str()
        if kind == 2:
            return self.maybe(5)
        if kind == 3:
            return self.attr_float()
        if kind == 4:
            return self.attr_ints()
        return None if self.maybe(5) else [self.attr_value(False) for _ in range(self.choose(0, 3))]

    def field_value(self, f: AttrField) -> Any:
        kind = self.choose(0, 4)
        if kind == 0 and not f.required:
            return _DEFAULT
        if kind == 1 and f.optional:
            return None
        return self.KIND_VALUES[f.kind](self)

    def attrs(self, op: Op) -> Attrs | None:
        schema = op.attrs_schema
        if schema is None:
            return None

        def build() -> Attrs:
            values = {f.name: self.field_value(f) for f in schema.fields}
            return schema.make(**{k: v for k, v in values.items() if v is not _DEFAULT})

        return self.chunked(8 * len(schema.fields), build)

    def func_attrs(self) -> FuncAttrs:
        items = {key: self.attr_value() for key in self.distinct(FUNC_ATTR_KEYS, self.choose(0, 3))}
        if "Primitive" in items:
            items["Primitive"] = 1
        return FuncAttrs(items)

    def var(self, env: _Env, annotate: int = 4) -> Var:
        annotation = self.type(1, env.tvars) if self.maybe(annotate) else None
        return Var(self.pick(VAR_NAMES), annotation)

    def type_params(self, chance: int) -> tuple[TypeVar, ...]:
        if not self.maybe(chance):
            return ()
        return tuple(TypeVar(self.pick(TYPE_VAR_NAMES)) for _ in range(self.choose(1, 2)))

    # ------------------------------------------------------------------ types
    def type(self, depth: int, tvars: tuple[TypeVar, ...]) -> Type:
        forms: list[Callable[[int, tuple[TypeVar, ...]], Type]] = [
            self.tensor_type,
            self.tensor_type,
            self.incomplete_type,
        ]
        if tvars:
            forms += [self.type_var, self.type_var]
        if any(arity == 0 or depth > 0 for _, arity in self.adts):
            forms.append(self.type_call)
        if depth > 0:
            forms += [self.tuple_type, self.func_type, self.ref_type]
        return self.pick(forms)(depth - 1, tvars)

    def dim(self) -> Dim:
        kind = self.choose(0, 9)
        if kind < 7:
            return self.pick(DIMS[: 4 + kind])
        if kind < 9:
            return ANY
        if self.shape_vars and self.maybe(6):
            return self.pick(self.shape_vars)
        var = ShapeVar(self.pick(SHAPE_VAR_NAMES), self.pick(("int32", "int64")))
        self.shape_vars.append(var)
        return var

    def tensor_type(self, depth: int, tvars: tuple[TypeVar, ...]) -> Type:
        shape = [self.dim() for _ in range(self.choose(0, 4))]
        return TensorType(shape, self.pick(TENSOR_DTYPES))

    def incomplete_type(self, depth: int, tvars: tuple[TypeVar, ...]) -> Type:
        return IncompleteType()

    def type_var(self, depth: int, tvars: tuple[TypeVar, ...]) -> Type:
        return self.last(tvars)

    def type_call(self, depth: int, tvars: tuple[TypeVar, ...]) -> Type:
        gtv, arity = self.pick([a for a in self.adts if a[1] == 0 or depth >= 0])
        return TypeCall(gtv, [self.type(depth, tvars) for _ in range(arity)])

    def tuple_type(self, depth: int, tvars: tuple[TypeVar, ...]) -> Type:
        return TupleType([self.type(depth, tvars) for _ in range(self.choose(0, 3))])

    def func_type(self, depth: int, tvars: tuple[TypeVar, ...]) -> Type:
        params = self.type_params(3)
        inner = tvars + params
        args = [self.type(depth, inner) for _ in range(self.choose(0, 3))]
        return FuncType(args, self.type(depth, inner), params)

    def ref_type(self, depth: int, tvars: tuple[TypeVar, ...]) -> Type:
        return RefType(self.type(depth, tvars))

    # ------------------------------------------------------------------ ADTs
    def type_definitions(self, names: list[str], params: list[tuple[TypeVar, ...]]) -> None:
        headers = [GlobalTypeVar(name) for name in names]
        self.adts = [(gtv, len(tvs)) for gtv, tvs in zip(headers, params)]
        ctor_names = list(CTOR_NAMES)
        for gtv, tvs in zip(headers, params):
            ctors = self.chunked(48, partial(self.constructors, gtv, tvs, ctor_names))
            self.type_data.append(TypeData(gtv, tvs, ctors))
            self.ctors.extend(ctors)

    def constructors(
        self, gtv: GlobalTypeVar, tvars: tuple[TypeVar, ...], names: list[str]
    ) -> list[Constructor]:
        ctors = []
        for tag in range(0 if self.maybe(1) else self.choose(1, 3)):
            inputs = [self.type(1, tvars) for _ in range(self.choose(0, 2))]
            ctors.append(Constructor(names.pop(self.choose(0, len(names) - 1)), inputs, gtv, tag))
        return ctors

    # ------------------------------------------------------------------ patterns
    def pattern(self, depth: int, env: _Env, bound: list[Var]) -> Pattern:
        forms = [self.wildcard_pattern, self.var_pattern]
        if any(depth > 0 or not c.inputs for c in self.ctors):
            forms.append(self.ctor_pattern)
        if depth > 0:
            forms.append(self.tuple_pattern)
        return self.pick(forms)(depth - 1, env, bound)

    def wildcard_pattern(self, depth: int, env: _Env, bound: list[Var]) -> Pattern:
        return PatternWildcard()

    def var_pattern(self, depth: int, env: _Env, bound: list[Var]) -> Pattern:
        var = self.var(env, annotate=3)
        bound.append(var)
        return PatternVar(var)

    def ctor_pattern(
        self, depth: int, env: _Env, bound: list[Var], ctor: Constructor | None = None
    ) -> Pattern:
        ctor = ctor or self.pick([c for c in self.ctors if depth >= 0 or not c.inputs])
        return PatternConstructor(ctor, [self.pattern(depth, env, bound) for _ in ctor.inputs])

    def tuple_pattern(self, depth: int, env: _Env, bound: list[Var]) -> Pattern:
        return PatternTuple([self.pattern(depth, env, bound) for _ in range(self.choose(0, 3))])

    # ------------------------------------------------------------------ expressions
    def expr(self, env: _Env, depth: int) -> Expr:
        if depth <= 0 or self.budget <= 0:
            return self.leaf(env)
        return self.chunked(NODE_BYTES, lambda: self.compound(env, depth))

    def compound(self, env: _Env, depth: int) -> Expr:
        self.budget -= 1
        forms: list[Callable[[_Env, int], Expr]] = [
            self.leaf, self.op_call, self.let, self.op_call, self.let, self.let_seq,
            self.tuple_expr, self.if_, self.fn, self.projection, self.ref, self.match,
            self.closure_call, self.dag,
        ]  # fmt: skip
        if self.globals:
            forms.append(self.global_call)
        if self.ctors:
            forms += [self.ctor_call, self.ctor_call]
        if self.pool:
            forms += [self.shared, self.shared]
        result = self.pick(forms)(env, depth - 1)
        if not isinstance(result, Var | Constant | GlobalVar | Constructor):
            self.pool.append(result)
        return result

    def leaf(self, env: _Env, depth: int = 0) -> Expr:
        forms: list[Callable[[_Env], Expr]] = [self.literal]
        if env.vars:
            forms += [self.var_ref, self.var_ref, self.var_ref]
        forms += [self.unit, self.literal, self.meta_constant]
        if self.globals:
            forms.append(self.global_ref)
        if any(c.inputs for c in self.ctors):
            forms.append(self.ctor_ref)
        if any(not c.inputs for c in self.ctors):
            forms.append(self.nullary_ctor)
        return self.pick(forms)(env)

    def literal(self, env: _Env) -> Expr:
        return self.literal_constant()

    def meta_constant(self, env: _Env) -> Expr:
        return self.metadata_constant()

    def var_ref(self, env: _Env) -> Expr:
        return self.last(env.vars)

    def unit(self, env: _Env) -> Expr:
        return Tuple(())

    def global_ref(self, env: _Env) -> Expr:
        return self.pick(self.globals)[0]

    def ctor_ref(self, env: _Env) -> Expr:
        # a constructor with fields is a first-class function; a nullary one is always called
        return self.pick([c for c in self.ctors if c.inputs])

    def nullary_ctor(self, env: _Env) -> Expr:
        return Call(self.pick([c for c in self.ctors if not c.inputs]), ())

    def args(self, env: _Env, depth: int, n: int) -> list[Expr]:
        return [self.expr(env, depth) for _ in range(n)]

    def op_call(self, env: _Env, depth: int) -> Expr:
        op = self.pick(self.ops)
        n = op.num_inputs if op.num_inputs >= 0 else self.choose(0, 3)
        return Call(op, self.args(env, depth, n), self.attrs(op))

    def global_call(self, env: _Env, depth: int) -> Expr:
        gv, arity = self.pick(self.globals)
        return Call(gv, self.args(env, depth, arity))

    def ctor_call(self, env: _Env, depth: int) -> Expr:
        ctor = self.pick(self.ctors)
        return Call(ctor, self.args(env, depth, len(ctor.inputs)))

    def closure_call(self, env: _Env, depth: int) -> Expr:
        callee: Expr
        if env.callables and not self.maybe(2):
            callee, arity = self.last(env.callables)
        else:
            callee = self.fn(env, depth)
            arity = len(callee.params)
        call = Call(callee, self.args(env, depth, arity))
        if self.maybe(1):  # curried: %f(a)(b)
            call = Call(call, self.args(env, depth, self.choose(0, 2)))
        return call

    def let(self, env: _Env, depth: int) -> Expr:
        var = self.var(env)
        kind = self.choose(0, 4)
        value: Expr
        if kind < 3:
            value = self.expr(env, depth)
        else:  # a closure; recursive (its variable in scope in its own value) if kind 4
            value = self.fn(env, depth, var if kind == 4 else None)
        inner = env.bind(var)
        if isinstance(value, Function):
            inner = inner._replace(callables=(*inner.callables, (var, len(value.params))))
        return Let(var, value, self.expr(inner, depth))

    def let_seq(self, env: _Env, depth: int) -> Expr:
        bindings = []
        for _ in range(self.choose(2, 4)):
            var = self.var(env, annotate=2)
            bindings.append((var, self.expr(env, depth)))
            env = env.bind(var)
            self.budget -= 1
        return let_chain(bindings, self.expr(env, depth))

    def tuple_expr(self, env: _Env, depth: int) -> Expr:
        return Tuple(self.args(env, depth, self.choose(0, 3)))

    def if_(self, env: _Env, depth: int) -> Expr:
        return If(self.expr(env, depth), self.expr(env, depth), self.expr(env, depth))

    def fn(self, env: _Env, depth: int, itself: Var | None = None) -> Function:
        """A closure; `itself` (a recursive let's variable) is in scope in its body."""
        type_params = self.type_params(2)
        inner = env._replace(tvars=env.tvars + type_params)
        params = [self.var(inner, annotate=5) for _ in range(self.choose(0, 3))]
        ret_type = self.type(1, inner.tvars) if self.maybe(3) else None
        attrs = self.func_attrs() if self.maybe(2) else FuncAttrs()
        inner = inner.bind(*params)
        if itself is not None:
            inner = inner.bind(itself)._replace(callables=(*inner.callables, (itself, len(params))))
        body = self.expr(inner, depth)
        return Function(params, body, ret_type, type_params, attrs)

    def projection(self, env: _Env, depth: int) -> Expr:
        value = self.tuple_expr(env, depth) if self.maybe(3) else self.expr(env, depth)
        if isinstance(value, Tuple) and value.fields:
            return TupleGetItem(value, self.choose(0, len(value.fields) - 1))
        return TupleGetItem(value, self.choose(0, 2))

    def ref(self, env: _Env, depth: int) -> Expr:
        kind = self.choose(0, 2)
        if kind == 0:
            return RefCreate(self.expr(env, depth))
        if kind == 1:
            return RefRead(self.expr(env, depth))
        return RefWrite(self.expr(env, depth), self.expr(env, depth))

    def match(self, env: _Env, depth: int) -> Expr:
        data = self.expr(env, depth)
        with_ctors = [d for d in self.type_data if d.constructors]
        heads: list[Callable[[list[Var]], Pattern]] = []
        if with_ctors and not self.maybe(3):  # one arm per constructor, as real code does
            for ctor in self.pick(with_ctors).constructors:
                heads.append(lambda bound, c=ctor: self.ctor_pattern(1, env, bound, c))  # type: ignore[misc]
        else:
            heads += [lambda bound: self.pattern(2, env, bound)] * self.choose(1, 3)
        if self.maybe(3):
            heads.append(lambda bound: self.pattern(0, env, bound))
        clauses = []
        for head in heads:
            bound: list[Var] = []
            lhs = head(bound)
            clauses.append(Clause(lhs, self.expr(env.bind(*bound), depth)))
        return Match(data, clauses, complete=not self.maybe(3))

    def shared(self, env: _Env, depth: int) -> Expr:
        """A node made earlier, used again (graph form), if its free variables are in scope."""
        in_scope = {id(v) for v in env.vars}
        fits = [e for e in self.pool if self.free_ids(e) <= in_scope]
        return self.last(fits) if fits else self.leaf(env)

    def free_ids(self, expr: Expr) -> frozenset[int]:
        ids = self.free.get(id(expr))
        if ids is None:
            ids = self.free[id(expr)] = frozenset(id(v) for v in free_vars(expr))
        return ids

    def dag(self, env: _Env, depth: int) -> Expr:
        """A dataflow graph: operator calls reading earlier nodes, each used several times."""
        if not self.dag_ops:
            return self.leaf(env)
        nodes = [self.leaf(env), self.leaf(env)]
        for _ in range(self.choose(1, 5)):
            op = self.pick(self.dag_ops)
            n = op.num_inputs if op.num_inputs >= 0 else 2
            nodes.append(Call(op, [self.last(nodes) for _ in range(n)], self.attrs(op)))
            self.budget -= 1
        if self.maybe(4):
            return Tuple(nodes[len(nodes) - 1 - self.choose(1, 3) :])
        return nodes[-1]

    # ------------------------------------------------------------------ modules
    def module(self, max_depth: int, max_functions: int, max_types: int, max_size: int) -> IRModule:
        def header() -> tuple[list[str], list[tuple[TypeVar, ...]], list[str]]:
            adt_names = self.distinct(ADT_NAMES, self.choose(0, max_types))
            return (
                adt_names,
                [self.type_params(4) for _ in adt_names],
                self.distinct(GLOBAL_NAMES, self.choose(1, max_functions)),
            )

        adt_names, adt_params, names = self.chunked(32, header)
        self.type_definitions(adt_names, adt_params)
        signatures = [self.chunked(48, partial(self.signature, name)) for name in names]
        functions = {}
        for gv, params, ret_type, type_params, attrs in signatures:
            self.pool, self.free = [], {}
            self.budget = max_size // len(names) + 1
            body = self.expr(_Env(tvars=type_params).bind(*params), max_depth)
            functions[gv] = Function(params, body, ret_type, type_params, attrs)
        return IRModule(functions, {data.header: data for data in self.type_data})

    def signature(
        self, name: str
    ) -> tuple[GlobalVar, list[Var], Type | None, tuple[TypeVar, ...], FuncAttrs]:
        type_params = self.type_params(2)
        params = [self.var(_Env(tvars=type_params), annotate=6) for _ in range(self.choose(0, 3))]
        ret_type = self.type(2, type_params) if self.maybe(5) else None
        attrs = self.func_attrs() if self.maybe(2) else FuncAttrs()
        gv = GlobalVar(name)
        self.globals.append((gv, len(params)))
        return gv, params, ret_type, type_params, attrs


_DEFAULT = object()
_BYTES: dict[int, st.SearchStrategy[bytes]] = {}


_WORK = threading.local()  # (gen, size, build) of the chunks being drawn, innermost last


@st.composite
def _run_chunk(draw: Any) -> Any:
    gen, size, build = _WORK.stack[-1]
    tape = _BYTES.get(size)
    if tape is None:
        tape = _BYTES[size] = st.binary(min_size=size, max_size=size)
    gen.tapes.append(draw(tape))
    gen.positions.append(0)
    try:
        return build()
    finally:
        gen.tapes.pop()
        gen.positions.pop()


_CHUNK = _run_chunk()  # one strategy object: hypothesis validates each new one, slowly


# ----------------------------------------------------------------------- public API


def _tape(build: Callable[[_Gen], _E], min_size: int, max_size: int) -> st.SearchStrategy[_E]:
    """The strategy that runs `build` on a tape of `min_size` to `max_size` drawn bytes."""
    return st.binary(min_size=min_size, max_size=max_size).map(lambda tape: build(_Gen(tape)))


@st.composite
def _drawn(draw: Any, build: Callable[[_Gen], _E], budget: int, module: IRModule | None) -> _E:
    """The strategy that runs `build` with one hypothesis draw per compound node."""
    gen = _Gen(draw=draw, budget=budget, module=module)
    return gen.chunked(32, lambda: build(gen))


def _check_bounds(**bounds: int) -> None:
    for name, value in bounds.items():
        if value < 0:
            raise ValueError(f"{name} must be non-negative, not {value}")


def modules(
    max_depth: int = 4, max_functions: int = 3, max_types: int = 2, max_size: int = 60
) -> st.SearchStrategy[IRModule]:
    """Well-formed modules: up to `max_types` ADTs (with type parameters, recursive or
    referring to each other) and 1 to `max_functions` global functions (some with type
    parameters, return types and attributes) calling each other.

    `max_depth` bounds the nesting of expressions, `max_size` the number of compound
    expression nodes over the whole module.
    """
    _check_bounds(max_depth=max_depth, max_functions=max_functions - 1, max_types=max_types,
                  max_size=max_size)  # fmt: skip
    if max_types > len(ADT_NAMES) or max_functions > len(GLOBAL_NAMES):
        raise ValueError(
            f"modules(): at most {len(ADT_NAMES)} types and {len(GLOBAL_NAMES)} functions"
        )
    return _drawn(lambda g: g.module(max_depth, max_functions, max_types, max_size), max_size, None)


def exprs(
    max_depth: int = 4, max_size: int = 30, module: IRModule | None = None
) -> st.SearchStrategy[Expr]:
    """Closed expressions (no free variables). With `module`, they may also call its
    globals and use its constructors and ADTs; without, they use operators only."""
    _check_bounds(max_depth=max_depth, max_size=max_size)
    return _drawn(lambda g: g.expr(_Env(), max_depth), max_size, module)


def types(
    max_depth: int = 2, type_vars: Sequence[TypeVar] = (), module: IRModule | None = None
) -> st.SearchStrategy[Type]:
    """Types of every kind: tensors (int, `?` and symbolic dimensions, every dtype), tuples,
    function types with and without type parameters, references, incomplete types, the
    given `type_vars`, and applications of `module`'s ADTs with the right arity."""
    _check_bounds(max_depth=max_depth)
    tvars = tuple(type_vars)
    return _drawn(lambda g: g.type(max_depth, tvars), 0, module)


def patterns(max_depth: int = 2, module: IRModule | None = None) -> st.SearchStrategy[Pattern]:
    """Match patterns: wildcards, variables (fresh, sometimes annotated), tuples and, with
    `module`, its constructors applied to sub-patterns of the right number."""
    _check_bounds(max_depth=max_depth)
    return _drawn(lambda g: g.pattern(max_depth, _Env(), []), 0, module)


def literal_constants(dtypes: Sequence[str] = LITERAL_DTYPES) -> st.SearchStrategy[Constant]:
    """Rank-0 constants of `dtypes` (default: every dtype with a literal form).

    Values include 0, ±1, the extremes of each dtype, ±inf, NaN (one canonical NaN: the
    text format cannot spell payloads), -0.0, the smallest normal and subnormal floats, and
    arbitrary bit patterns.
    """
    choices = tuple(dtypes)
    return _tape(lambda g: g.literal_constant(choices), 4, 16)


def metadata_constants() -> st.SearchStrategy[Constant]:
    """Constants without a literal form: arrays (rank 1 to 3, empty ones too) of any dtype,
    and scalars of the other dtypes (int8, uint8, uint16, ...); arbitrary bit patterns."""
    return _tape(lambda g: g.metadata_constant(), 4, 128)


def constants(literal: bool = True, metadata: bool = True) -> st.SearchStrategy[Constant]:
    """Tensor constants: literal scalars, metadata constants, or both (the default)."""
    choices = []
    if literal:
        choices.append(literal_constants())
    if metadata:
        choices.append(metadata_constants())
    if not choices:
        raise ValueError("constants(): ask for literal or metadata constants (or both)")
    return st.one_of(choices)


def attrs_for(op: Op) -> st.SearchStrategy[Attrs | None]:
    """Valid attributes for a call of `op`: None if it has no schema, else `schema.make(...)`
    with every required field set and each other field at its default or a drawn value."""
    if not _fillable(op):
        raise ValueError(f"attrs_for: cannot fill the attributes of `{op.name}`")
    return _tape(lambda g: g.attrs(op), 0, 256)


def var_names() -> st.SearchStrategy[str]:
    """Name hints for variables, including ones a printer must sanitize or make unique."""
    return st.sampled_from(VAR_NAMES)


def func_attrs() -> st.SearchStrategy[FuncAttrs]:
    """Function attributes: `Primitive=1`, `Compiler="..."`, dotted keys, and values of
    every literal kind (ints, floats, strings, bools, None, nested lists)."""
    return _tape(lambda g: g.func_attrs(), 0, 128)
