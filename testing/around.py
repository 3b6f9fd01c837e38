"""`programs_around(pattern)`: well-typed programs that contain a given pattern, for testing
a rewrite where it fires.

The pattern is a dataflow pattern of the pattern language (`relay.passes.pattern`):

    conv = is_op("nn.conv2d")(wildcard(), is_constant().named("w"))
    programs_around(is_op("multiply")(conv, is_constant().named("c")))

Each program's `@main` computes one instance of the pattern: every `is_op(...)(...)` call
becomes a call of that operator with shapes and attributes its call generator
(`typed_ops`) chose, so they are valid for the operator; every `is_constant()` (and every
captured wildcard named in `constants=`) becomes a constant of the shape the generator
asked for (a broadcastable partner for `multiply`, a weight of the right shape for
`nn.conv2d`, ...) with small random values; every other wildcard becomes a parameter,
sometimes computed first by a few context calls (`ops`) that keep its type. After the
pattern, a few more context calls read its result (sometimes two of them: the result is
shared), and `@main` returns what nothing reads. Constraints (`has_attr`, `has_dtype`,
`has_shape`, ...) are honoured by generating until the instance matches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st

from ..lang.dtype import numpy_dtype
from ..lang.expr import Call, Constant, Expr, Function, GlobalVar, TupleGetItem, Var
from ..lang.expr import Tuple as TupleExpr
from ..lang.module import IRModule
from ..lang.op import Op, lookup_op
from ..lang.types import TensorType, TupleType, Type
from ..passes.pattern import (
    AltPattern,
    AttrPattern,
    CallPattern,
    CapturePattern,
    ConstantPattern,
    DFPattern,
    DTypePattern,
    OpNamePattern,
    ShapePattern,
    TupleGetItemPattern,
    TypePattern,
    VarPattern,
    WildcardPattern,
    match,
)
from ..typecheck.relations import RelationError
from .typed_ops import GENERATORS, Nonzero, OpCall, Tape, call_type, spec_type, static_shape

__all__ = ["CONTEXT_OPS", "programs_around"]

CONTEXT_OPS = ("add", "subtract", "multiply", "nn.relu", "negative", "tanh")
"""The operators of the context around the pattern unless `ops=` says otherwise."""

_CALL_BYTES = 128
_TRIES = 12


class _Unfit(Exception):
    """This draw cannot make an instance of the pattern: draw again."""


def _size(t: TensorType) -> int:
    return int(np.prod(static_shape(t), dtype=np.int64))


def _values(tape: Tape, t: TensorType, nonzero: bool) -> np.ndarray:
    """Small values of type `t`: floats multiples of 1/16 in [-2, 2], ints in [-4, 4]."""
    rng = np.random.default_rng(tape.choose(0, 2**16))
    shape, dtype = static_shape(t), numpy_dtype(t.dtype)
    if dtype.kind == "b":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind in "iu":
        low = 1 if nonzero or dtype.kind == "u" else -4
        ints = rng.integers(low, 5, shape)
        if nonzero and dtype.kind == "i":
            ints = ints * rng.choice([-1, 1], shape)
        return ints.astype(dtype)
    floats = np.round(rng.uniform(-2.0, 2.0, shape) * 16) / 16
    if nonzero:
        floats = np.where(floats == 0, 0.5, floats)
    return np.asarray(floats).astype(dtype)


class _Builder:
    """One program: the parameters, the nodes the context may read, and the choices."""

    def __init__(
        self,
        draw: Callable[[st.SearchStrategy[bytes]], bytes],
        tape: Tape,
        constants: frozenset[str],
        ops: list[Op],
        before: int,
        max_elements: int,
    ) -> None:
        self.draw, self.tape, self.constants = draw, tape, constants
        self.ops, self.before, self.max_elements = ops, before, max_elements
        self.params: list[Var] = []

    def fresh_tape(self) -> Tape:
        data = self.draw(st.binary(min_size=_CALL_BYTES, max_size=_CALL_BYTES))
        return Tape(data, self.tape.dtypes)

    def param(self, t: TensorType) -> Var:
        var = Var(f"x{len(self.params)}", t)
        self.params.append(var)
        return var

    def constant(self, spec: Any, tape: Tape) -> Constant:
        if isinstance(spec, np.ndarray):
            return Constant(spec)
        return Constant(_values(tape, spec_type(spec), isinstance(spec, Nonzero)))

    def free(self, spec: Any, tape: Tape) -> Expr:
        """A free operand: a constant where the call needs one, else a parameter, sometimes
        passed through context calls that keep its type."""
        if isinstance(spec, np.ndarray | Nonzero):
            return self.constant(spec, tape)
        node: Expr = self.param(spec)
        for _ in range(tape.choose(0, self.before)):
            made = self.context_call(node, spec, tape)
            if made is not None and made[1] == spec:
                node = made[0]
        return node

    def context_call(self, node: Expr, t: TensorType, tape: Tape) -> tuple[Call, TensorType] | None:
        """A call of a context operator reading `node` (its other operands new parameters
        or constants); None if the chosen operator does not fit."""
        op = tape.pick(self.ops)
        call = GENERATORS[op](tape, op, t)
        if call is None or call.primary is None or call.tuple_arg:
            return None
        try:
            out = call_type(call)
        except RelationError:
            return None
        if not isinstance(out, TensorType) or _size(out) > self.max_elements:
            return None
        args = [
            node if i == call.primary else self.operand(spec, tape)
            for i, spec in enumerate(call.args)
        ]
        return Call(op, args, call.attrs), out

    def operand(self, spec: Any, tape: Tape) -> Expr:
        if isinstance(spec, np.ndarray | Nonzero):
            return self.constant(spec, tape)
        return self.param(spec)

    # ----------------------------------------------------------------- the pattern
    def instance(self, p: DFPattern, spec: Any, tape: Tape) -> tuple[Expr, Type]:
        """An expression matching `p`; `spec` is what the enclosing call asked for at this
        position (a type, a `Nonzero` or a needed constant), None at the root."""
        while True:
            if isinstance(p, CapturePattern):
                if p.name in self.constants and spec is not None:
                    made = self.constant(spec, tape)
                    return made, spec_type(spec)
                p = p.pattern
            elif isinstance(p, AttrPattern | TypePattern | DTypePattern | ShapePattern):
                p = p.pattern
            elif isinstance(p, AltPattern):
                p = p.right if tape.maybe(5) else p.left
            else:
                break
        if isinstance(p, CallPattern):
            return self.call_instance(p, spec)
        if isinstance(p, TupleGetItemPattern):
            value, t = self.instance(p.tuple_value, None, tape)
            if not isinstance(t, TupleType):
                raise _Unfit
            index = p.index if p.index is not None else tape.choose(0, len(t.fields) - 1)
            if index >= len(t.fields):
                raise _Unfit
            return TupleGetItem(value, index), t.fields[index]
        if spec is None:
            raise ValueError(
                f"programs_around: the pattern must be a call pattern, not {type(p).__name__}"
            )
        if isinstance(p, ConstantPattern):
            return self.constant(spec, tape), spec_type(spec)
        if isinstance(p, WildcardPattern | VarPattern):
            return self.free(spec, tape), spec_type(spec)
        raise ValueError(f"programs_around: cannot generate an instance of {type(p).__name__}")

    def call_instance(self, p: CallPattern, spec: Any) -> tuple[Expr, Type]:
        if not isinstance(p.op, OpNamePattern):
            raise ValueError("programs_around: a call pattern's callee must be is_op(name)")
        op = lookup_op(p.op.name)
        if op is None or op not in GENERATORS:
            raise ValueError(f"programs_around: no call generator for operator `{p.op.name}`")
        tape = self.fresh_tape()
        inner = [i for i, a in enumerate(p.args) if _is_structured(a)]
        made: dict[int, tuple[Expr, Type]] = {}
        if inner:  # build the first nested call first, then this call around its type
            made[inner[0]] = self.instance(p.args[inner[0]], None, tape)
        first_type = made[inner[0]][1] if inner else None
        call = self.fitting_call(op, p, tape, first_type, inner[0] if inner else None)
        args: list[Expr] = []
        for i, (sub, arg_spec) in enumerate(zip(p.args, call.args)):
            if i in made:
                args.append(made[i][0])
                continue
            expr, t = self.instance(sub, arg_spec, tape)
            if t != spec_type(arg_spec):
                raise _Unfit
            args.append(expr)
        out = call_type(call)
        if spec is not None and out != spec_type(spec):
            raise _Unfit
        return Call(op, args, call.attrs), out

    def fitting_call(
        self, op: Op, p: CallPattern, tape: Tape, x: Type | None, position: int | None
    ) -> OpCall:
        """A call of `op` with as many operands as `p` has, whose operand `position` has
        type `x` (when given)."""
        for _ in range(_TRIES):
            if x is not None and not isinstance(x, TensorType):
                raise _Unfit
            call = GENERATORS[op](tape, op, x)
            if call is None or call.tuple_arg or len(call.args) != len(p.args):
                tape = self.fresh_tape()
                continue
            if position is not None and call.primary != position:
                tape = self.fresh_tape()
                continue
            try:
                out = call_type(call)
            except RelationError:
                raise _Unfit from None
            sizes = [_size(spec_type(a)) for a in call.args]
            if isinstance(out, TensorType):
                sizes.append(_size(out))
            if max(sizes) > self.max_elements:
                raise _Unfit
            return call
        raise _Unfit

    def after(self, root: Expr, t: Type, count: int) -> tuple[Expr, Type]:
        """`count` context calls reading the pattern's result (or what came after it)."""
        if not isinstance(t, TensorType):
            return root, t
        pool: list[tuple[Expr, TensorType]] = [(root, t)]
        read: set[int] = set()
        for _ in range(count):
            tape = self.fresh_tape()
            node, node_type = pool[0] if tape.maybe(4) else pool[-1]
            made = self.context_call(node, node_type, tape)
            if made is not None:
                read.add(id(node))
                pool.append(made)
        sinks = [(e, ty) for e, ty in pool if id(e) not in read]
        if len(sinks) == 1:
            return sinks[0]
        return TupleExpr([e for e, _ in sinks]), TupleType([ty for _, ty in sinks])


def _is_structured(p: DFPattern) -> bool:
    while isinstance(p, CapturePattern | AttrPattern | TypePattern | DTypePattern | ShapePattern):
        p = p.pattern
    if isinstance(p, AltPattern):
        return _is_structured(p.left) or _is_structured(p.right)
    return isinstance(p, CallPattern | TupleGetItemPattern)


def build_around(
    draw: Callable[[st.SearchStrategy[bytes]], bytes],
    pattern: DFPattern,
    constants: frozenset[str],
    ops: list[Op],
    before: int,
    after: int,
    dtypes: tuple[str, ...],
    max_elements: int,
) -> IRModule | None:
    """One program around `pattern` from the bytes `draw` returns; None if these bytes
    make no instance of it."""
    tape = Tape(draw(st.binary(min_size=8, max_size=8)), dtypes)
    builder = _Builder(draw, tape, constants, ops, before, max_elements)
    try:
        core, t = builder.instance(pattern, None, tape)
    except _Unfit:
        return None
    if match(pattern, core) is None:
        return None
    body, _ = builder.after(core, t, tape.choose(0, after))
    return IRModule({GlobalVar("main"): Function(builder.params, body)})


@st.composite
def _around(draw: Any, *args: Any) -> IRModule:
    for _ in range(_TRIES):
        made = build_around(draw, *args)
        if made is not None:
            return made
    from hypothesis import reject

    reject()  # hypothesis draws again (and says so if that happens too often)


def programs_around(
    pattern: DFPattern,
    *,
    constants: Sequence[str] = (),
    ops: Sequence[str | Op] = CONTEXT_OPS,
    before: int = 2,
    after: int = 3,
    dtypes: Sequence[str] = ("float32",),
    max_elements: int = 1024,
) -> st.SearchStrategy[IRModule]:
    """Well-typed modules whose `@main` contains an instance of `pattern`.

    `pattern` is a call pattern (`is_op("multiply")(is_op("nn.conv2d")(wildcard(),
    is_constant()), is_constant())`), possibly with captures, alternatives (`|`, one side
    is chosen), projections and constraints (`has_attr`, `has_dtype`, ... : instances are
    drawn until one matches). Each call gets shapes and attributes from its operator's
    call generator, so they are valid: a nested call's result is the argument it feeds,
    an `is_constant()` operand is a constant of the shape the generator chose at that
    position (small random values; never zero where the operator divides by it), and a
    captured wildcard whose name is in `constants` is a constant too. Other wildcards are
    `@main`'s parameters, each passed through up to `before` calls of `ops` that keep its
    type; up to `after` calls of `ops` read the result (some read it twice). No tensor has
    more than `max_elements` elements; new tensors have one of `dtypes`.

        fold = is_op("multiply")(is_op("nn.conv2d")(wildcard(), is_constant()), is_constant())
        check_pass(my_fold, programs_around(fold), min_changed=0.2)

    Raises `ValueError` at once for a pattern it cannot generate (a callee that is not
    `is_op(name)`, an operator without a call generator, a bare wildcard) or one no draw
    fits.
    """
    chosen: list[Op] = []
    for item in ops:
        op = lookup_op(item) if isinstance(item, str) else item
        if op is None or op not in GENERATORS:
            raise ValueError(f"programs_around: no call generator for context operator `{item}`")
        chosen.append(op)
    if not chosen or before < 0 or after < 0 or max_elements < 1:
        raise ValueError("programs_around: needs context ops, before/after >= 0, max_elements >= 1")
    args = (pattern, frozenset(constants), chosen, before, after, tuple(dtypes), max_elements)
    _check_generatable(*args)
    return _around(*args)


def _check_generatable(*args: Any) -> None:
    """A `ValueError` now, rather than a health-check failure later, if no draw fits."""
    rng = np.random.default_rng(0)
    for _ in range(40):
        chunks = iter(lambda: rng.bytes(_CALL_BYTES), None)

        def draw(strategy: Any, chunks: Any = chunks) -> bytes:
            return next(chunks)

        if build_around(draw, *args) is not None:
            return
    raise ValueError("programs_around: no generated call matched the pattern in 40 tries")
