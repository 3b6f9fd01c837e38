"""Hypothesis strategies of WELL-TYPED programs and of inputs to run them on.

* `dataflow_programs()`: `@main` is a dataflow graph over the operator library, built
  forwards: each step picks an operator, a call of it that fits an existing node (valid
  shapes and attributes from `typed_ops`), and computes the result type with the
  operator's own type relation, so the program is well-typed by construction.
* `functional_programs()`: `let`, `if`, closures, tuples, an ADT with `match`, recursion
  through a global and references, over small tensors; optionally polymorphic ADTs
  (`Opt[A]`, `Either[A, B]`), global helper functions `@main` calls and binders that reuse
  the names of variables in scope; generated type-directed (an expression is always built
  for the type its context needs).
* `inputs_for(mod)`: inputs for `@main` (finite values in a modest range).

Choices are read from bytes drawn in chunks (one hypothesis draw per step or per node),
choice 0 being the simplest, so failing examples shrink to small programs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
from hypothesis import strategies as st

from ..lang.adt import Constructor, TypeData
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
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from ..lang.module import IRModule
from ..lang.op import Op, get_op, lookup_op
from ..lang.types import (
    AnyDim,
    FuncType,
    GlobalTypeVar,
    RefType,
    ShapeVar,
    TensorType,
    TupleType,
    Type,
    TypeCall,
)
from ..lang.types import TypeVar as TypeParam
from ..typecheck.relations import RelationError
from .typed_ops import (
    GENERATORS,
    Nonzero,
    OpCall,
    Tape,
    call_type,
    kind,
    spec_type,
    static_shape,
)

__all__ = ["dataflow_programs", "functional_programs", "inputs_for"]

_STEP_BYTES = 96
_NODE_BYTES = 24
_CHUNKS: dict[int, st.SearchStrategy[bytes]] = {}


def _chunk(size: int) -> st.SearchStrategy[bytes]:
    found = _CHUNKS.get(size)
    if found is None:  # one strategy object per size: hypothesis validates each new one
        found = _CHUNKS[size] = st.binary(min_size=size, max_size=size)
    return found


def _resolve_ops(ops: Sequence[str | Op] | None) -> list[Op]:
    if ops is None:
        return list(GENERATORS)
    found: list[Op] = []
    for item in ops:
        op = lookup_op(item) if isinstance(item, str) else item
        if op is None:
            raise ValueError(f"dataflow_programs: no operator `{item}`")
        if op not in GENERATORS:
            raise ValueError(f"dataflow_programs: no call generator for `{op.name}`")
        found.append(op)
    if not found:
        raise ValueError("dataflow_programs: `ops` is empty")
    return found


def _check_dtypes(dtypes: Sequence[str], numeric: bool) -> tuple[str, ...]:
    out = tuple(dtypes)
    for d in out:
        numpy_dtype(d)  # ValueError for an unknown dtype
    if not out or (numeric and all(kind(d) == "b" for d in out)):
        raise ValueError(f"needs at least one {'numeric ' if numeric else ''}dtype, got {out}")
    return out


def _size(t: Type) -> int:
    if isinstance(t, TupleType):
        return max((_size(f) for f in t.fields), default=0)
    assert isinstance(t, TensorType)
    return int(np.prod(static_shape(t), dtype=np.int64))


# --------------------------------------------------------------------------- dataflow


class _Graph:
    """The dataflow graph being built: typed nodes, how often each is used, the params."""

    def __init__(self, tape: Tape, max_elements: int, helpers: bool) -> None:
        self.tape = tape
        self.helpers = helpers  # may it add calls of `less`, `cast`, `maximum`, ...?
        self.max_elements = max_elements
        self.params: list[Var] = []
        self.pool: list[tuple[Expr, TensorType]] = []
        self.uses: dict[Expr, int] = {}
        self.outputs: list[tuple[Expr, Type]] = []  # op results, in order

    def param(self, t: TensorType) -> Var:
        var = Var(f"x{len(self.params)}", t)
        self.params.append(var)
        self.pool.append((var, t))
        return var

    def fresh_type(self) -> TensorType:
        t = self.tape
        dims = t.dims(t.pick((2, 3, 4, 1, 0)), 1, 5)
        while int(np.prod(dims)) > self.max_elements:
            dims = dims[1:]
        return TensorType(dims, t.pick(t.dtypes))

    def use(self, node: Expr) -> Expr:
        self.uses[node] = self.uses.get(node, 0) + 1
        return node

    def input_of(self, t: TensorType) -> Expr:
        """A node of type `t`: an existing one (often), else a new parameter (of an allowed
        dtype; other dtypes are computed from one: a comparison for bool, else a cast)."""
        tape = self.tape
        same = [node for node, ty in self.pool if ty == t]
        if same and not tape.maybe(3):
            return self.use(same[len(same) - 1 - tape.choose(0, len(same) - 1)])
        if t.dtype in tape.dtypes:
            return self.use(self.param(t))
        if not self.helpers:
            return self.constant(t, nonzero=False)
        base = self.param(TensorType(t.shape, tape.dtypes[0]))
        if t.dtype == "bool":
            made: Expr = _op("less", base, _op("zeros_like", base))
        else:
            made = _op("cast", base, dtype=t.dtype)
        self.uses[base] = 1
        return made

    def constant(self, t: TensorType, nonzero: bool) -> Constant:
        """A constant of type `t` with small values (none zero if `nonzero`)."""
        tape = self.tape
        shape = static_shape(t)
        values = [tape.choose(1 if nonzero else 0, 4) for _ in range(int(np.prod(shape)))]
        array = np.asarray(values).reshape(shape)
        if t.dtype == "bool":
            array = array % 2 == 1
        return Constant(array.astype(numpy_dtype(t.dtype)))

    def arg(self, spec: Any) -> Expr:
        if isinstance(spec, np.ndarray):
            return Constant(spec)
        if isinstance(spec, Nonzero):  # max(|d|, 1) >= 1 (also for the most negative int)
            if not self.helpers:
                return self.constant(spec.type, nonzero=True)
            base = self.input_of(spec.type)
            return _op("maximum", _op("abs", base), _op("ones_like", base))
        return self.input_of(spec)

    def step(self, ops: Sequence[Op]) -> None:
        """Add one operator call that reads existing nodes (or new parameters)."""
        tape = self.tape
        op = tape.pick(ops)
        gen = GENERATORS[op]
        call: OpCall | None = None
        start = len(self.pool) - 1 - tape.choose(0, len(self.pool) - 1)
        node: Expr | None = None
        for i in range(min(len(self.pool), 8)):
            node, ty = self.pool[(start - i) % len(self.pool)]
            call = gen(tape, op, ty)
            if call is not None:
                break
        if call is None:
            call = gen(tape, op, None)
            node = None
        if call is None:
            return
        try:
            out = call_type(call)
        except RelationError:  # a generator bug: tests/test_ops_relation_vs_impl.py
            return
        if not _all_tensors(out) or _size(out) > self.max_elements:
            return
        if any(_size(spec_type(a)) > self.max_elements for a in call.args):
            return
        args = []
        for i, spec in enumerate(call.args):
            if i == call.primary and node is not None:
                args.append(self.use(node))
            else:
                args.append(self.arg(spec))
        expr = Call(op, [Tuple(args)] if call.tuple_arg else args, call.attrs)
        self.outputs.append((expr, out))
        if isinstance(out, TensorType):
            self.pool.append((expr, out))
            return
        assert isinstance(out, TupleType)
        for i, field in enumerate(out.fields):
            if i == 0 or tape.maybe(4):
                item = TupleGetItem(self.use(expr), i)
                self.pool.append((item, field))  # type: ignore[arg-type]
                self.outputs.append((item, field))
        if tape.maybe(3):  # the tuple itself is a result too
            self.uses[expr] = 0

    def result(self) -> tuple[Expr, Type]:
        """The values nothing reads (a tuple of them if several; nested sometimes)."""
        sinks = [(e, t) for e, t in self.outputs if not self.uses.get(e)]
        if not sinks:
            return self.pool[-1]
        if len(sinks) == 1:
            return sinks[0]
        if len(sinks) >= 3 and self.tape.maybe(3):
            inner = Tuple([e for e, _ in sinks[:2]])
            sinks = [(inner, TupleType([t for _, t in sinks[:2]])), *sinks[2:]]
        return Tuple([e for e, _ in sinks]), TupleType([t for _, t in sinks])


def _all_tensors(t: Type) -> bool:
    if isinstance(t, TupleType):
        return all(isinstance(f, TensorType) for f in t.fields)
    return isinstance(t, TensorType)


def _op(name: str, *args: Expr, **attrs: Any) -> Call:
    op = get_op(name)
    return Call(op, args, op.make_attrs(**attrs) if op.attrs_schema is not None else None)


_HELPERS = ("less", "zeros_like", "cast", "maximum", "abs", "ones_like")


def build_dataflow(
    draw: Callable[[st.SearchStrategy[bytes]], bytes],
    ops: list[Op],
    max_ops: int,
    dtypes: tuple[str, ...],
    max_elements: int,
) -> IRModule:
    """The module `dataflow_programs` makes from the byte chunks `draw` returns."""
    tape = Tape(draw(_chunk(16)), dtypes)
    helpers = {get_op(name) for name in _HELPERS} <= set(ops)
    graph = _Graph(tape, max_elements, helpers)
    for _ in range(tape.choose(1, 3)):
        graph.param(graph.fresh_type())
    for _ in range(tape.choose(1, max_ops)):
        tape.load(draw(_chunk(_STEP_BYTES)))
        graph.step(ops)
    body, ty = graph.result()
    ret = ty if tape.maybe(5) else None
    return IRModule({GlobalVar("main"): Function(graph.params, body, ret)})


_dataflow = st.composite(build_dataflow)


def dataflow_programs(
    ops: Sequence[str | Op] | None = None,
    max_ops: int = 12,
    dtypes: Sequence[str] = ("float32",),
    max_elements: int = 4096,
) -> st.SearchStrategy[IRModule]:
    """Well-typed modules whose `@main` is a random dataflow graph of operator calls.

    Each of 1 to `max_ops` steps calls an operator (from `ops`, names or `Op`s; default:
    every operator of the library) on existing nodes where one fits, else on new
    parameters, with valid random shapes and attributes (broadcasting, reductions with
    axes and keepdims, reshapes, slices, convolutions with strides, padding, dilation
    and groups, pools, normalizations, ...). Nodes are shared: a node is often read by
    several later calls. Tuple results (`nn.batch_norm`, `split`, `topk`, ...) are
    projected (`.0`, ...). `@main`'s parameters are fully annotated tensors of `dtypes`;
    its result is what no call reads (a tuple if there are several). No tensor has more
    than `max_elements` elements, and no integer is divided by a value that can be 0.

        from hypothesis import given
        from relay.testing import dataflow_programs, inputs_for
        from relay.backend.runtime import interpret

        @given(dataflow_programs(ops=["add", "nn.conv2d", "nn.relu"]), st.data())
        def test_my_pass_keeps_results(mod, data):
            inputs = data.draw(inputs_for(mod))
            assert_allclose(interpret(my_pass(mod), **inputs), interpret(mod, **inputs))
    """
    if max_ops < 1 or max_elements < 1:
        raise ValueError("dataflow_programs: max_ops and max_elements must be positive")
    checked = _check_dtypes(dtypes, False)
    return _dataflow(_resolve_ops(ops), max_ops, checked, max_elements)  # type: ignore[call-arg]


# --------------------------------------------------------------------------- functional

_UNARY = {"f": ("negative", "abs", "tanh", "sigmoid", "floor"), "i": ("negative", "abs")}
_BINARY = ("add", "subtract", "multiply", "maximum", "minimum")
_COMPARE = ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal")
_Env = tuple[tuple[Var, Type], ...]
_E = TypeVar("_E", bound=Expr)


class _Functional:
    """Builds a well-typed module, one expression at a time for the type it must have.

    A value of a polymorphic ADT built by a constructor (`Nothing`, `Left(%x)`) has a type
    of its own with holes in it; the generator writes such a call bare only where its
    context fixes the type (the argument of a global whose parameter is annotated, the
    value of an annotated `let`, the body of a global with a return type) and otherwise
    binds it first: `let %o: Opt[float32] = Nothing; %o`."""

    def __init__(
        self,
        draw: Any,
        tape: Tape,
        max_size: int,
        recursion: bool,
        adts: bool,
        refs: bool,
        polymorphic: bool = False,
        helpers: int = 0,
        shadowing: bool = False,
    ) -> None:
        self.draw, self.tape, self.budget, self.refs = draw, tape, max_size, refs
        dtype = tape.pick([d for d in tape.dtypes if kind(d) != "b"])
        self.dtype = dtype
        self.scalar = TensorType((), dtype)
        self.vector = TensorType(tape.dims(tape.choose(1, 2), 1, 4), dtype)
        self.bool = TensorType((), "bool")
        self.int = TensorType((), "int32")
        self.tensors = [self.scalar, self.vector]
        self.values: list[Type] = [
            self.scalar,
            self.vector,
            self.bool,
            TupleType([self.scalar, self.vector]),
            FuncType([self.scalar], self.vector),
        ]
        self.types: dict[GlobalTypeVar, TypeData] = {}
        self.data: TypeCall | None = None
        if adts:
            gtv = GlobalTypeVar("Data")
            self.data = TypeCall(gtv, ())
            ctors = [
                Constructor("Leaf", [self.scalar], gtv, 0),
                Constructor("Node", [self.vector, self.data], gtv, 1),
                Constructor("Empty", [], gtv, 2),
            ]
            self.types[gtv] = TypeData(gtv, [], ctors)
            self.values.append(self.data)
        self.adts: list[TypeCall] = [] if self.data is None else [self.data]
        if polymorphic:
            self._add_polymorphic_adts()
        self.shadowing = shadowing
        self.fixed_next = False  # the next expression's context fixes its type
        self.helpers: list[tuple[GlobalVar, tuple[Type, ...], Type]] = []
        self.callable_helpers = 0
        self.helper_count = helpers
        if refs:
            self.values.append(RefType(self.scalar))
        self.loop: tuple[GlobalVar, TensorType] | None = None
        if recursion:
            self.loop = (GlobalVar("loop"), tape.pick(self.tensors))
        self.in_loop = False

    def _add_polymorphic_adts(self) -> None:
        """`type Opt[A] { Some(A), Nothing }` and `type Either[A, B] { Left(A), Right(B) }`
        with a few instances among the values."""
        opt, either = GlobalTypeVar("Opt"), GlobalTypeVar("Either")
        a = TypeParam("A")
        self.types[opt] = TypeData(
            opt, [a], [Constructor("Some", [a], opt, 0), Constructor("Nothing", [], opt, 1)]
        )
        a, b = TypeParam("A"), TypeParam("B")  # each ADT has type parameters of its own
        self.types[either] = TypeData(
            either,
            [a, b],
            [Constructor("Left", [a], either, 0), Constructor("Right", [b], either, 1)],
        )
        s, v = self.scalar, self.vector
        instances = [
            TypeCall(opt, (s,)),
            TypeCall(opt, (v,)),
            TypeCall(either, (s, v)),
            TypeCall(either, (v, v)),
        ]
        self.adts += instances
        self.values += instances

    def fields(self, ctor: Constructor, t: TypeCall) -> list[Type]:
        """The field types of `ctor` in a value of type `t`."""
        mapping = dict(zip(self.types[t.func].type_vars, t.args))
        return [mapping.get(f, f) if isinstance(f, TypeParam) else f for f in ctor.inputs]

    def built(
        self, ctor: Constructor, args: list[Expr], t: TypeCall, env: _Env, fixed: bool
    ) -> Expr:
        """`ctor(args)` of type `t`; bound to an annotated variable first when `t` is an
        instance of a polymorphic ADT and the context does not fix the type."""
        call = Call(ctor, args)
        if fixed or not t.args:
            return call
        bound = Var(self.name("o", env), t)
        return Let(bound, call, bound)

    def fixed_expr(self, t: Type, env: _Env, depth: int) -> Expr:
        """`expr`, in a position whose context fixes the type."""
        self.fixed_next = True
        return self.expr(t, env, depth)

    def name(self, hint: str, env: _Env) -> str:
        """`hint`, or with `shadowing` sometimes the name of a variable in scope."""
        if self.shadowing and env and self.tape.maybe(4):
            return self.tape.pick(env)[0].name_hint  # type: ignore[no-any-return]
        return hint

    # ------------------------------------------------------------------ plumbing
    def node(self, build: Callable[[], _E]) -> _E:
        """`build()` reading its choices from a freshly drawn chunk."""
        tape = self.tape
        saved = tape.data, tape.pos
        tape.load(self.draw(_chunk(_NODE_BYTES)))
        try:
            return build()
        finally:
            tape.data, tape.pos = saved

    def var(self, hint: str, t: Type, env: _Env = ()) -> Var:
        name = self.name(hint, env)
        if isinstance(t, TypeCall) and t.args:
            return Var(name, t)
        return Var(name, t if self.tape.maybe(2) else None)

    def constant(self, t: TensorType) -> Constant:
        tape = self.tape
        shape = static_shape(t)
        count = int(np.prod(shape, dtype=np.int64))
        if t.dtype == "bool":
            values: list[Any] = [tape.maybe(5) for _ in range(count)]
        elif t.dtype == "int32" and t is self.int:
            values = [tape.choose(0, 3) for _ in range(count)]
        else:
            values = [tape.choose(-4, 4) / (2 if kind(t.dtype) == "f" else 1) for _ in range(count)]
        return Constant(np.asarray(values, dtype=numpy_dtype(t.dtype)).reshape(shape))

    # ------------------------------------------------------------------ expressions
    def expr(self, t: Type, env: _Env, depth: int) -> Expr:
        """An expression of type `t` whose free variables are in `env`."""
        return self.node(lambda: self._expr(t, env, depth))

    def _expr(self, t: Type, env: _Env, depth: int) -> Expr:
        fixed, self.fixed_next = self.fixed_next, False
        if depth <= 0 or self.budget <= 0:
            return self.leaf(t, env, fixed=fixed)
        self.budget -= 1
        forms: list[Callable[[Type, _Env, int], Expr | None]] = [
            self.leaf,
            self.own_form,
            self.own_form,
            self.let,
            self.if_,
            self.closure,
            self.call_env,
            self.project,
        ]
        if self.adts:
            forms.append(self.match)
        if self.refs:
            forms += [self.ref, self.read_env]
        if self.loop is not None and t == self.loop[1] and not self.in_loop:
            forms.append(self.call_loop)
        if any(ret == t for _, _, ret in self.helpers[: self.callable_helpers]):
            forms += [self.call_helper, self.call_helper, self.call_helper]
        form = self.tape.pick(forms)
        if form == self.leaf or form == self.own_form:
            made = form(t, env, depth - 1, fixed=fixed)
        else:
            made = form(t, env, depth - 1)
        return made if made is not None else self.leaf(t, env, fixed=fixed)

    def leaf(self, t: Type, env: _Env, depth: int = 0, fixed: bool = False) -> Expr:
        tape = self.tape
        same = [v for v, vt in env if vt == t]
        if same and tape.maybe(6):
            return same[len(same) - 1 - tape.choose(0, len(same) - 1)]
        if isinstance(t, TensorType):
            if t == self.bool and tape.maybe(7):  # a comparison
                return _op(
                    tape.pick(_COMPARE), self.leaf(self.scalar, env), self.constant(self.scalar)
                )
            return self.constant(t)
        if isinstance(t, TupleType):
            return Tuple([self.leaf(f, env) for f in t.fields])
        if isinstance(t, FuncType):
            params = [Var(self.name("p", env), a) for a in t.arg_types]
            inner = env + tuple(zip(params, t.arg_types))
            return Function(params, self.leaf(t.ret_type, inner, fixed=fixed))
        if isinstance(t, RefType):
            return RefCreate(self.leaf(t.value, env))
        assert isinstance(t, TypeCall)
        ctors = self.types[t.func].constructors
        if t == self.data:
            if tape.maybe(5):
                return Call(ctors[2], [])
            return Call(ctors[0], [self.leaf(self.scalar, env)])
        ctor = ctors[1] if tape.maybe(5) else ctors[0]
        args = [self.leaf(f, env) for f in self.fields(ctor, t)]
        return self.built(ctor, args, t, env, fixed)

    def own_form(self, t: Type, env: _Env, depth: int, fixed: bool = False) -> Expr | None:
        """The forms that build a value of `t`'s own kind."""
        tape = self.tape
        if isinstance(t, TupleType):
            return Tuple([self.expr(f, env, depth) for f in t.fields])
        if isinstance(t, FuncType):
            params = [Var(self.name("p", env), a) for a in t.arg_types]
            annotated = tape.maybe(3)
            inner = env + tuple(zip(params, t.arg_types))
            if fixed or annotated:  # the literal's type is fixed, so is its body's
                body = self.fixed_expr(t.ret_type, inner, depth)
            else:
                body = self.expr(t.ret_type, inner, depth)
            return Function(params, body, t.ret_type if annotated else None)
        if isinstance(t, RefType):
            return RefCreate(self.expr(t.value, env, depth))
        if isinstance(t, TypeCall):
            ctor = tape.pick(self.types[t.func].constructors)
            args = [self.expr(a, env, depth) for a in self.fields(ctor, t)]
            return self.built(ctor, args, t, env, fixed)
        assert isinstance(t, TensorType)
        if t == self.bool:
            if tape.maybe(2):
                return _op(tape.pick(("logical_and", "logical_or")), *self.two(t, env, depth))
            operand = self.int if tape.maybe(3) else self.scalar
            return _op(tape.pick(_COMPARE), *self.two(operand, env, depth))
        if t == self.int:
            return _op(tape.pick(("add", "maximum")), self.expr(t, env, depth), self.constant(t))
        form = tape.choose(0, 4)
        if form == 0:
            return _op(tape.pick(_UNARY[kind(t.dtype)]), self.expr(t, env, depth))
        if form == 1 and t == self.scalar:
            reduce = tape.pick(("sum", "max", "min"))
            return _op(reduce, self.expr(self.vector, env, depth), axis=None)
        if form == 2 and t == self.vector:
            cond = self.expr(self.bool, env, depth)
            return _op("where", cond, *self.two(t, env, depth))
        if form == 3 and t == self.vector:  # broadcast a scalar
            return _op(
                tape.pick(_BINARY), self.expr(t, env, depth), self.expr(self.scalar, env, depth)
            )
        return _op(tape.pick(_BINARY), *self.two(t, env, depth))

    def two(self, t: Type, env: _Env, depth: int) -> tuple[Expr, Expr]:
        return self.expr(t, env, depth), self.expr(t, env, depth)

    def let(self, t: Type, env: _Env, depth: int) -> Expr:
        bound = self.tape.pick(self.values)
        var = self.var("v", bound, env)
        aliases = [v for v, vt in env if vt == bound] if self.shadowing else []
        if aliases and self.tape.maybe(3):  # `let %b = %a`
            value: Expr = self.tape.pick(aliases)
        elif var.type_annotation is not None:
            value = self.fixed_expr(bound, env, depth)
        else:
            value = self.expr(bound, env, depth)
        inner: _Env = (*env, (var, bound))
        if self.shadowing and self.tape.maybe(3):  # `let %a = …; let %a = %a; …`
            alias = self.var(var.name_hint, bound)
            body = self.expr(t, (*inner, (alias, bound)), depth)
            used = TupleGetItem(Tuple([alias, body]), 1)  # the alias is used at least once
            return Let(var, value, Let(alias, var, used))
        return Let(var, value, self.expr(t, inner, depth))

    def if_(self, t: Type, env: _Env, depth: int) -> Expr:
        cond = self.expr(self.bool, env, depth)
        return If(cond, *self.two(t, env, depth))

    def closure(self, t: Type, env: _Env, depth: int) -> Expr:
        """`let f = fn (p) { ... captured ... }; ... f(a) ...`"""
        tape = self.tape
        p_type = tape.pick(self.tensors)
        param = Var(self.name("p", env), p_type)
        f_type = FuncType([p_type], t)
        f = self.var("f", f_type, env)
        annotated = tape.maybe(3)
        if annotated or f.type_annotation is not None:
            body = self.fixed_expr(t, (*env, (param, p_type)), depth)
        else:
            body = self.expr(t, (*env, (param, p_type)), depth)
        fn = Function([param], body, t if annotated else None)
        inner = (*env, (f, f_type))
        call = Call(f, [self.expr(p_type, inner, depth)])
        if isinstance(t, TensorType) and t != self.bool and tape.maybe(4):
            call = _op("add", call, Call(f, [self.expr(p_type, inner, depth)]))
        return Let(f, fn, call)

    def call_env(self, t: Type, env: _Env, depth: int) -> Expr | None:
        fns = [(v, vt) for v, vt in env if isinstance(vt, FuncType) and vt.ret_type == t]
        if not fns:
            return None
        f, ft = self.tape.pick(fns)
        assert isinstance(ft, FuncType)
        return Call(f, [self.fixed_expr(a, env, depth) for a in ft.arg_types])

    def call_helper(self, t: Type, env: _Env, depth: int) -> Expr | None:
        """A call of a global helper function returning `t`."""
        fits = [h for h in self.helpers[: self.callable_helpers] if h[2] == t]
        if not fits:
            return None
        gv, arg_types, _ = self.tape.pick(fits)
        return Call(gv, [self.fixed_expr(a, env, depth) for a in arg_types])

    def project(self, t: Type, env: _Env, depth: int) -> Expr:
        tape = self.tape
        fields = [tape.pick(self.tensors) for _ in range(tape.choose(0, 2))]
        at = tape.choose(0, len(fields))
        fields.insert(at, t)
        return TupleGetItem(self.expr(TupleType(fields), env, depth), at)

    def match(self, t: Type, env: _Env, depth: int) -> Expr:
        """A complete match: a clause per constructor, or some of them and a wildcard."""
        tape = self.tape
        adt = tape.pick(self.adts)
        data = self.expr(adt, env, depth)
        ctors = self.types[adt.func].constructors
        keep = len(ctors) if not tape.maybe(3) else tape.choose(0, len(ctors) - 1)
        clauses = []
        for ctor in ctors[:keep]:
            subs: list[Pattern] = []
            bound: list[tuple[Var, Type]] = []
            for i, field in enumerate(self.fields(ctor, adt)):
                if tape.maybe(7):
                    name = self.name("a" if i == 0 else "rest", env)
                    var = Var(name, field if tape.maybe(2) else None)
                    subs.append(PatternVar(var))
                    bound.append((var, field))
                else:
                    subs.append(PatternWildcard())
            body = self.expr(t, (*env, *bound), depth)
            clauses.append(Clause(PatternConstructor(ctor, subs), body))
        if keep < len(ctors):
            clauses.append(Clause(PatternWildcard(), self.expr(t, env, depth)))
        return Match(data, clauses, complete=True)

    def ref(self, t: Type, env: _Env, depth: int) -> Expr:
        """`let r = ref(a); let u = r := b; ... r^ ...`"""
        r_type = RefType(t)
        r = self.var("r", r_type, env)
        inner = (*env, (r, r_type))
        u = Var("u")
        write = RefWrite(r, self.expr(t, inner, depth))
        return Let(r, RefCreate(self.expr(t, env, depth)), Let(u, write, RefRead(r)))

    def read_env(self, t: Type, env: _Env, depth: int) -> Expr | None:
        refs = [v for v, vt in env if vt == RefType(t)]
        return RefRead(self.tape.pick(refs)) if refs else None

    def call_loop(self, t: Type, env: _Env, depth: int) -> Expr:
        assert self.loop is not None
        count = Constant(np.asarray(self.tape.choose(0, 4), dtype="int32"))
        return Call(self.loop[0], [count, self.expr(t, env, depth)])

    # ------------------------------------------------------------------ globals
    def loop_function(self, depth: int) -> Function:
        """`@loop(%n: int32, %acc) { if (%n < 1) { %acc } else { ... @loop(%n - 1, ...) } }`"""
        assert self.loop is not None
        gv, t = self.loop
        n, acc = Var("n", self.int), Var("acc", t)
        env: _Env = ((acc, t), (n, self.int))
        self.in_loop = True
        tape = self.tape
        smaller = _op("subtract", n, Constant(np.asarray(1, dtype="int32")))
        if tape.maybe(5):  # tail call
            again: Expr = Call(gv, [smaller, self.expr(t, env, depth)])
        else:
            r = Var("r")
            again = Let(r, Call(gv, [smaller, acc]), self.expr(t, (*env, (r, t)), depth))
        self.in_loop = False
        stop = _op("less", n, Constant(np.asarray(1, dtype="int32")))
        return Function([n, acc], If(stop, acc, again), t)

    def helper_function(self, index: int, depth: int) -> Function:
        """`@h<index>`: one or two annotated parameters (tensors, ADT values, a function),
        an annotated return type; its body may call the helpers made before it."""
        tape = self.tape
        _, arg_types, ret = self.helpers[index]
        params = [Var(self.name("e" if i == 0 else "q", ()), a) for i, a in enumerate(arg_types)]
        env: _Env = tuple(zip(params, arg_types))
        self.callable_helpers = index
        self.in_loop = True  # helpers never call @loop, so @loop may call them
        body = self.fixed_expr(ret, env, depth)
        self.in_loop = False
        return Function(params, body, ret if tape.maybe(8) or ret in self.adts else None)

    def module(self, max_depth: int) -> IRModule:
        tape = self.tape
        functions: dict[GlobalVar, Function] = {}
        for i in range(self.helper_count):
            candidates = [t for t in self.values if not isinstance(t, RefType) and t != self.bool]
            candidates += self.adts  # ADT parameters are what the helpers are for
            arg_types = tuple(tape.pick(candidates) for _ in range(tape.choose(1, 2)))
            ret = tape.pick([self.scalar, self.vector, self.vector, *self.adts])
            self.helpers.append((GlobalVar(f"h{i}"), arg_types, ret))
        for i, (gv, _, _) in enumerate(self.helpers):
            functions[gv] = self.node(lambda: self.helper_function(i, max_depth - 1))  # noqa: B023
        self.callable_helpers = len(self.helpers)
        if self.loop is not None:
            functions[self.loop[0]] = self.node(lambda: self.loop_function(max_depth - 1))
        params = [Var(f"x{i}", tape.pick(self.tensors)) for i in range(tape.choose(1, 3))]
        result: Type = tape.pick(
            [
                TupleType([self.scalar, self.vector]),
                self.vector,
                self.scalar,
                TupleType([self.vector, TupleType([self.scalar, self.bool])]),
            ]
        )
        env: _Env = tuple((p, p.type_annotation) for p in params)  # type: ignore[misc]
        if self.loop is not None and not tape.maybe(2):  # run the recursion at least once
            looped = Var("looped")
            call = self.node(lambda: self.call_loop(self.loop[1], env, max_depth - 1))  # type: ignore[index]
            body = self.expr(result, (*env, (looped, self.loop[1])), max_depth)
            body = Let(looped, call, body)
        else:
            body = self.expr(result, env, max_depth)
        functions[GlobalVar("main")] = Function(params, body, result if tape.maybe(5) else None)
        return IRModule(functions, self.types)


def build_functional(
    draw: Callable[[st.SearchStrategy[bytes]], bytes],
    max_depth: int,
    max_size: int,
    dtypes: tuple[str, ...],
    recursion: bool,
    adts: bool,
    refs: bool,
    polymorphic: bool = False,
    helpers: int = 0,
    shadowing: bool = False,
) -> IRModule:
    """The module `functional_programs` makes from the byte chunks `draw` returns."""
    tape = Tape(draw(_chunk(16)), dtypes)
    made = _Functional(draw, tape, max_size, recursion, adts, refs, polymorphic, helpers, shadowing)
    return made.module(max_depth)


_functional = st.composite(build_functional)


def functional_programs(
    max_depth: int = 4,
    max_size: int = 40,
    dtypes: Sequence[str] = ("float32",),
    recursion: bool = True,
    adts: bool = True,
    refs: bool = True,
    polymorphic: bool = False,
    helpers: int = 0,
    shadowing: bool = False,
) -> st.SearchStrategy[IRModule]:
    """Well-typed modules in the functional part of the language, over small tensors.

    `@main` takes one to three annotated tensors (a scalar and a small tensor of one of
    `dtypes`) and returns a tensor or a (nested) tuple of tensors, computed with `let`
    (sometimes annotated), `if` on bool scalars from comparisons, closures (`fn` literals
    capturing variables, bound by `let` and called later, sometimes twice), tuples and
    projections, and operators. With `adts`, the module defines

        type Data { Leaf(scalar), Node(tensor, Data), Empty }

    whose values are built with constructors and taken apart by complete `match`es (a
    clause per constructor, or some and a wildcard). With `recursion`, a global
    `@loop(%n: int32, %acc)` recurses with `%n - 1` until `%n < 1` (called with
    `%n` <= 4; tail and non-tail calls), so every program terminates. With `refs`, values
    go through `ref`, `:=` (`ref_write`) and `!` (`ref_read`). With `polymorphic`, the
    module also defines

        type Opt[A] { Some(A), Nothing }
        type Either[A, B] { Left(A), Right(B) }

    used at a few instances (`Opt[scalar]`, `Either[tensor, tensor]`, ...): a constructor
    call whose own type has holes (`Nothing`, `Left(%x)`) is written bare where its
    context fixes the type (an argument of an annotated parameter, the value of an
    annotated `let`, a body with a return type) and bound by an annotated `let` elsewhere.
    With `helpers=N`, globals `@h0` ... `@h<N-1>` take one or two annotated parameters
    (tensors, ADT values, functions), return a tensor or an ADT value, may call the
    helpers before them, and are called by `@main` and `@loop`. With `shadowing`, new
    binders (let variables, parameters, pattern variables) often reuse the name of a
    variable in scope. `max_depth` bounds nesting (at most 40), `max_size` the number of
    compound expressions.

        from hypothesis import given
        from relay.testing import functional_programs

        @given(functional_programs(refs=False))
        def test_my_pass_type_checks(mod):
            relay.typecheck.check_module(my_pass(mod))
    """
    if not 0 <= max_depth <= 40 or max_size < 0:  # the generator recurses once per level
        raise ValueError("functional_programs: needs 0 <= max_depth <= 40 and max_size >= 0")
    if not 0 <= helpers <= 8:
        raise ValueError("functional_programs: needs 0 <= helpers <= 8")
    checked = _check_dtypes(dtypes, True)
    return _functional(  # type: ignore[call-arg]
        max_depth, max_size, checked, recursion, adts, refs, polymorphic, helpers, shadowing
    )


# --------------------------------------------------------------------------- inputs


def _input_array(seed: int, form: int, t: TensorType, sizes: dict[ShapeVar, int]) -> np.ndarray:
    shape = []
    for d in t.shape:
        if isinstance(d, ShapeVar):
            shape.append(sizes.setdefault(d, 2))
        elif isinstance(d, AnyDim):
            shape.append(2)
        else:
            shape.append(int(d))
    dtype = numpy_dtype(t.dtype)
    if form == 0:
        return np.zeros(shape, dtype)
    if form == 1:
        return np.ones(shape, dtype)
    rng = np.random.default_rng(seed)
    if dtype.kind == "b":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind in "iu":
        return rng.integers(0 if dtype.kind == "u" else -4, 5, shape).astype(dtype)
    return (np.round(rng.uniform(-2.0, 2.0, shape) * 16) / 16).astype(dtype)


def _value_for(draw: Any, t: Type, sizes: dict[ShapeVar, int], name: str) -> Any:
    if isinstance(t, TupleType):
        return tuple(_value_for(draw, f, sizes, name) for f in t.fields)
    if not isinstance(t, TensorType):
        raise ValueError(f"inputs_for: parameter %{name} is not a tensor or tuple of tensors")
    form = draw(st.integers(0, 9))
    seed = draw(st.integers(0, 2**32 - 1)) if form >= 2 else 0
    return _input_array(seed, form, t, sizes)


@st.composite
def _inputs(draw: Any, mod: IRModule, main: str) -> dict[str, Any]:
    fn = mod[main]
    sizes: dict[ShapeVar, int] = {}
    out = {}
    for p in fn.params:
        if p.type_annotation is None:
            raise ValueError(f"inputs_for: parameter %{p.name_hint} of @{main} has no type")
        out[p.name_hint] = _value_for(draw, p.type_annotation, sizes, p.name_hint)
    return out


def inputs_for(mod: IRModule, main: str = "main") -> st.SearchStrategy[dict[str, Any]]:
    """Inputs for `@main` (or `@{main}`): a dict from parameter name to a numpy array of
    the annotated shape and dtype (a tuple of arrays for a tuple parameter).

    Values are finite and modest: floats in [-2, 2] (multiples of 1/16), integers in
    [-4, 4] ([0, 4] unsigned), random bools; sometimes all zeros or all ones. Symbolic
    dimensions get size 2. Use with `interpret(mod, **inputs)`:

        @given(dataflow_programs(), st.data())
        def test_run(mod, data):
            out = interpret(mod, **data.draw(inputs_for(mod)))
    """
    if main not in mod:
        raise ValueError(f"inputs_for: the module has no @{main}")
    return _inputs(mod, main)
