"""Valid random calls of every operator: shapes, dtypes, attributes and index constants.

`GENERATORS` maps each operator (the `Op` object) to a function

    gen(tape: Tape, op: Op, x: TensorType | None) -> OpCall | None

that reads its choices from `tape` and returns a call TVM's semantics accept. With `x`
given, the call takes a tensor of that type as its argument `OpCall.primary` (so program
generators can feed it an existing node), or the function returns None if `x` does not
fit (wrong rank, dtype kind, too small). With `x=None` it invents its own inputs.

Arguments of an `OpCall` are
* a `TensorType`: a free input (any finite values will do),
* `Nonzero(type)`: a free input whose values must not be zero (integer divisors),
* an `np.ndarray`: a constant the call needs as it is (indices in range, shapes, ...).

`op_calls(op)` is the hypothesis strategy of such calls. Every choice is read from bytes;
choice 0 is the simplest one (size-1 dimensions, the first axis, the first listed option),
so examples shrink towards small, plain calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeAlias

import numpy as np
from attrs import frozen
from hypothesis import strategies as st

from ..lang.attrs import Attrs
from ..lang.dtype import numpy_dtype
from ..lang.op import Op, lookup_op
from ..lang.types import TensorType, TupleType, Type
from ..typecheck.relations import RelationError, relation_for
from .relations import StandaloneContext

__all__ = [
    "GENERATORS",
    "Nonzero",
    "OpCall",
    "Tape",
    "broadcast_partner",
    "call_type",
    "factorization",
    "generator_for",
    "kind",
    "op_calls",
    "spec_type",
    "static_shape",
]


# --------------------------------------------------------------------------- choices


class Tape:
    """The choices of a generated call or program, read from bytes (zeros past the end).

    `dtypes` are the dtypes new tensors may have.
    """

    def __init__(self, data: bytes = b"", dtypes: Sequence[str] = ("float32",)) -> None:
        self.data = data
        self.pos = 0
        self.dtypes = tuple(dtypes)

    def load(self, data: bytes) -> None:
        """Read the next choices from `data`."""
        self.data, self.pos = data, 0

    def choose(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi]; the zero choice is `lo`."""
        span = hi - lo
        if span <= 0:
            return lo
        n = (span.bit_length() + 7) // 8
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return lo + int.from_bytes(chunk, "big") % (span + 1) if chunk else lo

    def pick(self, seq: Sequence[Any]) -> Any:
        """An element of `seq`; the zero choice is the first."""
        return seq[self.choose(0, len(seq) - 1)]

    def maybe(self, tenths: int) -> bool:
        """True with probability tenths/10; the zero choice is False."""
        return self.choose(0, 9) >= 10 - tenths

    def dims(self, rank: int, lo: int = 1, hi: int = 4) -> tuple[int, ...]:
        """`rank` sizes in [lo, hi]."""
        return tuple(self.choose(lo, hi) for _ in range(rank))

    def dtype(self, kinds: str) -> str | None:
        """One of the allowed dtypes of a kind in `kinds` ("f", "i", "b"), or None."""
        fits = [d for d in self.dtypes if kind(d) in kinds]
        return self.pick(fits) if fits else None


def kind(dtype: str) -> str:
    """ "f" for floats, "i" for (signed or unsigned) integers, "b" for bool."""
    k = numpy_dtype(dtype).kind
    return "i" if k == "u" else k


# --------------------------------------------------------------------------- calls


@frozen
class Nonzero:
    """A free input whose values must not be zero."""

    type: TensorType


ArgSpec: TypeAlias = TensorType | Nonzero | np.ndarray


class OpCall(NamedTuple):
    """A valid call: the operator, its arguments, its attributes.

    With `tuple_arg`, the arguments are passed as one tuple (`concatenate((a, b))`).
    `primary` is the position of the argument of the type asked for, if any.
    """

    op: Op
    args: tuple[ArgSpec, ...]
    attrs: Attrs | None
    tuple_arg: bool = False
    primary: int | None = 0

    def arg_types(self) -> list[Type]:
        """The argument types as the operator's relation sees them."""
        types: list[Type] = [spec_type(a) for a in self.args]
        return [TupleType(types)] if self.tuple_arg else types


def spec_type(spec: ArgSpec) -> TensorType:
    """The tensor type of one argument."""
    if isinstance(spec, Nonzero):
        return spec.type
    if isinstance(spec, np.ndarray):
        return TensorType(spec.shape, str(spec.dtype))
    return spec


def call_type(call: OpCall) -> Type:
    """The result type of `call` by the operator's own type relation.

    Raises the relation's `RelationError` if it rejects the call, or `RelationError` if
    it cannot decide (every argument is known, so it always should).
    """
    ctx = StandaloneContext()
    out = relation_for(call.op)(call.arg_types(), call.attrs, ctx)
    if out is None:
        raise RelationError(f"{call.op.name}: the relation did not decide the result type")
    return ctx.resolve(out)


Generator: TypeAlias = Callable[[Tape, Op, TensorType | None], OpCall | None]

GENERATORS: dict[Op, Generator] = {}
"""The call generator of each operator."""


def _register(*names: str) -> Callable[[Generator], Generator]:
    def register(fn: Generator) -> Generator:
        for name in names:
            op = lookup_op(name)
            if op is not None:
                GENERATORS[op] = fn
        return fn

    return register


def generator_for(op: Op) -> Generator:
    """The call generator of `op`; `KeyError` naming it if there is none."""
    try:
        return GENERATORS[op]
    except KeyError:
        raise KeyError(f"operator `{op.name}` has no call generator") from None


def _call(
    op: Op,
    args: Sequence[ArgSpec],
    primary: int | None = 0,
    tuple_arg: bool = False,
    **attrs: Any,
) -> OpCall:
    made = op.make_attrs(**attrs) if op.attrs_schema is not None else None
    return OpCall(op, tuple(args), made, tuple_arg, primary)


def _input(
    t: Tape,
    x: TensorType | None,
    ranks: Sequence[int] = (2, 1, 3, 0, 4),
    kinds: str = "fib",
    lo: int = 1,
    hi: int = 4,
    fits: Callable[[TensorType], bool] | None = None,
) -> TensorType | None:
    """`x` if it has a rank in `ranks`, a dtype kind in `kinds` and `fits`; None if not.
    Without `x`, a new tensor type of such a rank and dtype (sizes in [lo, hi])."""
    if x is not None:
        if x.ndim not in ranks or kind(x.dtype) not in kinds:
            return None
        if not all(type(d) is int for d in x.shape):
            return None
        return x if fits is None or fits(x) else None
    dtype = t.dtype(kinds)
    if dtype is None:
        return None
    for _ in range(3):
        made = TensorType(t.dims(t.pick(ranks), lo, hi), dtype)
        if fits is None or fits(made):
            return made
    return None


def static_shape(t: TensorType) -> tuple[int, ...]:
    """The shape of `t`, whose dimensions must all be numbers."""
    out = []
    for d in t.shape:
        if not isinstance(d, int):
            raise ValueError(f"the shape of {t} is not static")
        out.append(d)
    return tuple(out)


_shape = static_shape


def _axis(t: Tape, ndim: int, extra: int = 0) -> int:
    """An axis of a rank-`ndim` tensor (`extra` more positions), sometimes negative."""
    axis = t.choose(0, ndim - 1 + extra)
    return axis - ndim - extra if t.maybe(3) else axis


def _index_array(t: Tape, shape: Sequence[int], bound: int, negative: bool = False) -> np.ndarray:
    """An int32 array of `shape` with values in [0, bound) (or [-bound, bound))."""
    size = int(np.prod(shape, dtype=np.int64))
    values = [t.choose(-bound if negative else 0, bound - 1) for _ in range(size)]
    return np.asarray(values, dtype="int32").reshape(tuple(shape))


SCALES = (1.0, 2.0, 0.5, 1.5, 3.0)


# --------------------------------------------------------------------------- elementwise

FLOAT_UNARY = (
    "exp", "fast_exp", "log", "log2", "log10", "sqrt", "rsqrt", "sigmoid", "tanh",
    "fast_tanh", "erf", "fast_erf", "floor", "ceil", "round", "trunc", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
)  # fmt: skip
NUMERIC_UNARY = ("negative", "abs", "sign")
ANY_UNARY = ("copy", "zeros_like", "ones_like", "annotation.stop_fusion", "annotation.checkpoint")
INT_DIVISION = ("divide", "floor_divide", "floor_mod", "mod", "trunc_divide", "trunc_mod")
NUMERIC_BINARY = ("add", "subtract", "multiply", "maximum", "minimum", *INT_DIVISION)
COMPARISON = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
LOGICAL = ("logical_and", "logical_or", "logical_xor")
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor")
SHIFTS = ("left_shift", "right_shift")


@_register(*FLOAT_UNARY, "isnan", "isinf", "isfinite")
def _float_unary(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="f")
    return None if x is None else _call(op, [x])


@_register(*NUMERIC_UNARY)
def _numeric_unary(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="fi")
    return None if x is None else _call(op, [x])


@_register(*ANY_UNARY)
def _any_unary(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x)
    return None if x is None else _call(op, [x])


@_register("logical_not")
def _logical_not(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="b")
    return None if x is None else _call(op, [x])


@_register("bitwise_not")
def _bitwise_not(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="ib")
    return None if x is None else _call(op, [x])


def broadcast_partner(t: Tape, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with `shape` (the same, a suffix, with 1s, a scalar, ...)."""
    form = t.choose(0, 5)
    if form == 0:
        return shape
    if form == 1:
        return shape[t.choose(0, len(shape)) :]
    if form == 2:
        return tuple(1 if t.maybe(5) else d for d in shape)
    if form == 3:
        return ()
    if form == 4:
        return (*t.dims(t.choose(1, 2), 1, 3), *shape)
    return tuple(t.choose(1, 3) if d == 1 else d for d in shape)


def _binary(t: Tape, op: Op, x: TensorType, rhs: Callable[[TensorType], ArgSpec]) -> OpCall:
    other = TensorType(broadcast_partner(t, _shape(x)), x.dtype)
    if t.maybe(3):
        return _call(op, [other, x], primary=1)
    return _call(op, [x, rhs(other)])


@_register(*NUMERIC_BINARY)
def _numeric_binary(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="fi")
    if x is None:
        return None
    if op.name in INT_DIVISION and kind(x.dtype) == "i":  # x is always the dividend
        return _call(op, [x, Nonzero(TensorType(broadcast_partner(t, _shape(x)), x.dtype))])
    return _binary(t, op, x, lambda o: o)


@_register("power")
def _power(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="f")
    return None if x is None else _binary(t, op, x, lambda o: o)


@_register(*COMPARISON)
def _comparison(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x)
    return None if x is None else _binary(t, op, x, lambda o: o)


@_register(*LOGICAL)
def _logical(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="b")
    return None if x is None else _binary(t, op, x, lambda o: o)


@_register(*BITWISE)
def _bitwise(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="ib")
    return None if x is None else _binary(t, op, x, lambda o: o)


@_register(*SHIFTS)
def _shift(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="i")
    if x is None:
        return None
    amounts = np.asarray(t.choose(0, 3), dtype=x.dtype)  # a shift by the width is undefined
    return _call(op, [x, amounts])


@_register("clip")
def _clip(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="fi")
    if x is None:
        return None
    lo = float(t.choose(-4, 1)) / 2
    return _call(op, [x], a_min=lo, a_max=lo + t.choose(0, 6) / 2)


@_register("cast")
def _cast(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x)
    return None if x is None else _call(op, [x], dtype=t.pick((x.dtype, *t.dtypes)))


@_register("reinterpret")
def _reinterpret(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="fi")
    if x is None:
        return None
    size = numpy_dtype(x.dtype).itemsize
    same = [d for d in t.dtypes if kind(d) != "b" and numpy_dtype(d).itemsize == size]
    return _call(op, [x], dtype=t.pick((x.dtype, *same)))


@_register("cast_like")
def _cast_like(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x)
    if x is None:
        return None
    like = TensorType(t.dims(t.choose(0, 2)), t.pick((x.dtype, *t.dtypes)))
    return _call(op, [x, like])


@_register("where")
def _where(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x)
    if x is None:
        return None
    first = broadcast_partner(t, _shape(x))
    second = broadcast_partner(t, np.broadcast_shapes(_shape(x), first))
    if kind(x.dtype) == "b" and t.maybe(5):  # x is the condition
        dtype = t.pick(t.dtypes)
        return _call(op, [x, TensorType(first, dtype), TensorType(second, dtype)])
    cond = TensorType(first, "bool")
    other = TensorType(second, x.dtype)
    if t.maybe(5):
        return _call(op, [cond, other, x], primary=2)
    return _call(op, [cond, x, other], primary=1)


@_register("full_like")
def _full_like(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x)
    return None if x is None else _call(op, [x, TensorType((), x.dtype)])


@_register("full")
def _full(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(0,))
    if x is None:
        return None
    dtype = t.pick(("", *t.dtypes))
    return _call(op, [x], shape=t.dims(t.choose(0, 3)), dtype=dtype)


@_register("zeros", "ones")
def _init(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    return _call(op, [], primary=None, shape=t.dims(t.choose(0, 3)), dtype=t.pick(t.dtypes))


@_register("arange")
def _arange(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    dtype = t.dtype("fi")
    if dtype is None:
        return None
    count = t.choose(1, 6)
    unsigned = numpy_dtype(dtype).kind == "u"
    start: float = t.choose(0 if unsigned else -3, 3)
    step: float = t.pick((1, 2, 3) if unsigned else (1, 2, -1, 3))
    if unsigned and step < 0:
        start += count
    if kind(dtype) == "f" and t.maybe(3):
        start, step = start / 2, step / 2
    stop = start + count * step
    if kind(dtype) == "f":
        start, stop, step = float(start), float(stop), float(step)
    values = [np.asarray(v, dtype=dtype) for v in (start, stop, step)]
    return _call(op, values, primary=None, start=start, stop=stop, step=step, dtype=dtype)


# --------------------------------------------------------------------------- reductions


def _reduce_axes(t: Tape, ndim: int) -> tuple[list[int] | None, bool, set[int]]:
    """An `axis` attribute, `exclude`, and the set of axes they reduce."""
    exclude = t.maybe(2)
    if ndim == 0 or not t.maybe(7):
        return None, exclude, set(range(ndim))
    picked = [a for a in range(ndim) if t.maybe(5)]
    axis = [a - ndim if t.maybe(3) else a for a in picked]
    if not picked:
        return axis, exclude, set(range(ndim))
    reduced = {a for a in range(ndim) if (a not in picked) == exclude}
    return axis, exclude, reduced


@_register("sum", "mean", "max", "min", "prod", "all", "any", "argmax", "argmin")
def _reduce(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    kinds = "b" if op.name in ("all", "any") else "fi"
    ranks = (2, 1, 3, 4) if op.name.startswith("arg") else (2, 1, 3, 0, 4)
    x = _input(t, x, ranks=ranks, kinds=kinds)
    if x is None:
        return None
    axis, exclude, _ = _reduce_axes(t, x.ndim)
    attrs: dict[str, Any] = {"axis": axis, "keepdims": t.maybe(4), "exclude": exclude}
    if op.name.startswith("arg"):
        attrs["select_last_index"] = t.maybe(3)
    return _call(op, [x], **attrs)


@_register("variance")
def _variance(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4), kinds="f")
    if x is None:
        return None
    axis, exclude, reduced = _reduce_axes(t, x.ndim)
    mean = TensorType(tuple(1 if i in reduced else d for i, d in enumerate(_shape(x))), x.dtype)
    return _call(
        op, [x, mean], axis=axis, keepdims=t.maybe(4), exclude=exclude, unbiased=t.maybe(3)
    )


# --------------------------------------------------------------------------- transforms


def factorization(t: Tape, size: int, max_rank: int = 4) -> list[int]:
    """Sizes whose product is `size`."""
    dims: list[int] = []
    rest = size
    while rest > 1 and len(dims) < max_rank - 1 and t.maybe(6):
        d = t.pick([k for k in range(2, rest + 1) if rest % k == 0])
        dims.append(d)
        rest //= d
    dims.append(rest)
    return dims


@_register("reshape")
def _reshape(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4))
    if x is None:
        return None
    shape = _shape(x)
    if t.maybe(4):  # plain sizes, one of them -1
        dims = factorization(t, int(np.prod(shape)))
        if t.maybe(5):
            dims[t.choose(0, len(dims) - 1)] = -1
        return _call(op, [x], newshape=dims)
    newshape: list[int] = []  # TVM's special values, consuming the input left to right
    i, inferred = 0, False
    while i < len(shape):
        d = shape[i]
        step = t.choose(0, 5)
        if step == 1 and not inferred:
            newshape.append(-1)
            inferred = True
            i += 1
        elif step == 2:
            newshape.append(0)
            i += 1
        elif step == 3 and i + 1 < len(shape):
            newshape.append(-3)
            i += 2
        elif step == 4 and len(newshape) < 4:
            a = t.pick([k for k in range(1, d + 1) if d % k == 0])
            form = t.choose(0, 2)
            newshape += [-4, -1 if form == 1 else a, -1 if form == 2 else d // a]
            i += 1
        elif step == 5:
            newshape.append(-2)
            i = len(shape)
        else:
            newshape.append(d)
            i += 1
    return _call(op, [x], newshape=newshape)


@_register("reshape_like")
def _reshape_like(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4))
    if x is None:
        return None
    shape = _shape(x)
    if len(shape) >= 2 and t.maybe(3):  # keep the first axis, replace the rest
        like = (t.choose(1, 3), *factorization(t, int(np.prod(shape[1:]))))
        return _call(op, [x, TensorType(like, x.dtype)], lhs_begin=1, rhs_begin=1)
    like_shape = factorization(t, int(np.prod(shape)))
    return _call(op, [x, TensorType(tuple(like_shape), t.pick(t.dtypes))])


@_register("transpose")
def _transpose(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4))
    if x is None:
        return None
    if t.maybe(2):
        return _call(op, [x], axes=None)
    left = list(range(x.ndim))
    perm = [left.pop(t.choose(0, len(left) - 1)) for _ in range(x.ndim)]
    return _call(op, [x], axes=[a - x.ndim if t.maybe(3) else a for a in perm])


@_register("squeeze")
def _squeeze(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(3, 2, 4, 1), lo=1, hi=3)
    if x is None:
        return None
    ones = [i for i, d in enumerate(_shape(x)) if d == 1]
    if t.maybe(3):
        return _call(op, [x], axis=None)
    return _call(op, [x], axis=[a for a in ones if t.maybe(6)])


@_register("expand_dims")
def _expand_dims(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 0, 3))
    if x is None or x.ndim > 4:
        return None
    return _call(op, [x], axis=_axis(t, x.ndim, extra=1), num_newaxis=t.choose(1, 2))


@_register("concatenate")
def _concatenate(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4))
    if x is None:
        return None
    axis = _axis(t, x.ndim)
    parts: list[ArgSpec] = [x]
    for _ in range(t.choose(1, 2)):
        shape = list(_shape(x))
        if t.maybe(6):
            shape[axis] = t.choose(1, 3)
        parts.append(TensorType(tuple(shape), x.dtype))
    return _call(op, parts, tuple_arg=True, axis=axis)


@_register("stack")
def _stack(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 0, 3))
    if x is None or x.ndim > 4:
        return None
    return _call(op, [x] * t.choose(1, 3), tuple_arg=True, axis=_axis(t, x.ndim, extra=1))


@_register("split")
def _split(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4), hi=6)
    if x is None:
        return None
    axis = _axis(t, x.ndim)
    size = _shape(x)[axis]
    spec: int | list[int]
    if t.maybe(5) or size == 1:
        spec = t.pick([k for k in range(1, size + 1) if size % k == 0])
    else:
        spec = sorted({t.choose(1, size - 1) for _ in range(t.choose(1, 3))})
    return _call(op, [x], indices_or_sections=spec, axis=axis)


def _slice_axis(t: Tape, d: int) -> tuple[int, int, int]:
    """A begin, end and stride selecting at least one element of an axis of size `d`."""
    if t.maybe(2):  # backwards
        stride = -t.choose(1, 2)
        begin = t.choose(0, d - 1)
        end = t.choose(-1, begin - 1)
        return begin - d if t.maybe(3) else begin, end if end >= 0 else -d - 1, stride
    stride = t.choose(1, 3)
    begin = t.choose(0, d - 1)
    end = t.choose(begin + 1, d + 2)
    return begin - d if t.maybe(3) else begin, end, stride


@_register("strided_slice")
def _strided_slice(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4), hi=6)
    if x is None:
        return None
    shape = _shape(x)
    if t.maybe(3):  # size mode on some axes
        axes = [a for a in range(x.ndim) if t.maybe(6)] or [0]
        begin = [t.choose(0, shape[a] - 1) for a in axes]
        sizes = [t.choose(1, shape[a] - b) if t.maybe(7) else -1 for a, b in zip(axes, begin)]
        return _call(
            op,
            [x],
            begin=begin,
            end=sizes,
            strides=[1] * len(axes),
            axes=axes,
            slice_mode="size",
        )
    count = x.ndim if t.maybe(7) else t.choose(1, x.ndim)
    picked = [_slice_axis(t, d) for d in shape[:count]]
    begin, end, strides = ([p[i] for p in picked] for i in range(3))
    if t.maybe(3):
        return _call(op, [x], begin=begin, end=end, strides=strides, axes=list(range(count)))
    return _call(op, [x], begin=begin, end=end, strides=strides, axes=None)


@_register("slice_like")
def _slice_like(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4), hi=5)
    if x is None:
        return None
    shape = _shape(x)
    rank = t.choose(1, x.ndim)
    like = tuple(t.choose(1, d) for d in shape[:rank])
    axes = None if t.maybe(6) else [a for a in range(rank) if t.maybe(5)] or [0]
    return _call(op, [x, TensorType(like, t.pick(t.dtypes))], axes=axes)


@_register("tile")
def _tile(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 0, 3))
    if x is None:
        return None
    return _call(op, [x], reps=[t.choose(1, 2) for _ in range(t.choose(1, 4))])


@_register("repeat")
def _repeat(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4))
    return None if x is None else _call(op, [x], repeats=t.choose(1, 3), axis=_axis(t, x.ndim))


@_register("reverse")
def _reverse(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4))
    return None if x is None else _call(op, [x], axis=_axis(t, x.ndim))


def _stretched(t: Tape, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape `shape` broadcasts to: its 1s stretched, leading dimensions added."""
    lead = t.dims(t.choose(0, 2), 1, 3) if len(shape) < 4 else ()
    return (*lead, *(t.choose(1, 3) if d == 1 else d for d in shape))


@_register("broadcast_to")
def _broadcast_to(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 0, 3), lo=1, hi=3)
    if x is None:
        return None
    return _call(op, [x], shape=_stretched(t, _shape(x)))


@_register("broadcast_to_like")
def _broadcast_to_like(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 0, 3), lo=1, hi=3)
    if x is None:
        return None
    return _call(op, [x, TensorType(_stretched(t, _shape(x)), t.pick(t.dtypes))])


@_register("collapse_sum_like")
def _collapse_sum_like(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="fi")
    if x is None:
        return None
    shape = _shape(x)
    target = tuple(1 if t.maybe(4) else d for d in shape[t.choose(0, len(shape)) :])
    return _call(op, [x, TensorType(target, x.dtype)])


@_register("layout_transform")
def _layout_transform(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(4, 3))
    if x is None:
        return None
    if x.ndim == 3:
        src, dst = t.pick((("NCW", "NWC"), ("NWC", "NCW"), ("NCW", "WNC")))
        return _call(op, [x], src_layout=src, dst_layout=dst)
    c = _shape(x)[1]
    blocks = [b for b in (2, 4) if c % b == 0]
    choices = ["NHWC", "HWCN", "NCHW"] + [f"NCHW{b}c" for b in blocks]
    return _call(op, [x], src_layout="NCHW", dst_layout=t.pick(choices))


@_register("shape_of", "ndarray_size")
def _shape_of(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x)
    return None if x is None else _call(op, [x], dtype=t.pick(("int32", "int64")))


@_register("meshgrid")
def _meshgrid(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(1, 0))
    if x is None:
        return None
    parts: list[ArgSpec] = [x]
    for _ in range(t.choose(0, 2)):
        parts.append(TensorType(t.dims(t.choose(0, 1)), x.dtype))
    return _call(op, parts, tuple_arg=True, indexing=t.pick(("ij", "xy")))


# --------------------------------------------------------------------------- indexing


@_register("take")
def _take(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3))
    if x is None:
        return None
    shape = _shape(x)
    mode = t.pick(("clip", "wrap", "fast"))
    if x.ndim >= 2 and t.maybe(2):  # one batch dimension
        axis = t.choose(1, x.ndim - 1)
        idx = _index_array(t, (shape[0], *t.dims(t.choose(0, 1), 1, 3)), shape[axis])
        return _call(op, [x, idx], axis=axis, batch_dims=1, mode=mode)
    flat: int | None = None if t.maybe(2) else _axis(t, x.ndim)
    bound = int(np.prod(shape)) if flat is None else shape[flat]
    idx = _index_array(t, t.dims(t.choose(0, 2), 1, 3), bound, negative=mode != "fast")
    return _call(op, [x, idx], axis=flat, mode=mode)


@_register("gather")
def _gather(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3))
    if x is None:
        return None
    shape = _shape(x)
    axis = _axis(t, x.ndim)
    ishape = [t.choose(1, d) for d in shape]
    ishape[axis] = t.choose(1, 4)
    return _call(op, [x, _index_array(t, ishape, shape[axis])], axis=axis)


@_register("gather_nd")
def _gather_nd(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3))
    if x is None:
        return None
    shape = _shape(x)
    depth = t.choose(1, x.ndim)
    rest = t.dims(t.choose(0, 2), 1, 3)
    rows = [_index_array(t, rest, shape[i]) for i in range(depth)]
    return _call(op, [x, np.stack(rows) if rows else np.zeros((0,), "int32")])


@_register("scatter_elements")
def _scatter_elements(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3), kinds="fi")
    if x is None:
        return None
    shape = _shape(x)
    axis = _axis(t, x.ndim)
    ishape = [t.choose(1, d) for d in shape]
    idx = _index_array(t, ishape, shape[axis])
    reduction = t.pick(("update", "add", "mul", "mean", "min", "max"))
    return _call(op, [x, idx, TensorType(tuple(ishape), x.dtype)], axis=axis, reduction=reduction)


@_register("one_hot")
def _one_hot(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(0,), kinds="fi")  # the on value
    if x is None:
        return None
    depth = t.choose(1, 4)
    rank = t.choose(0, 2)
    idx = _index_array(t, t.dims(rank, 1, 3), depth + 1)  # `depth` itself: an all-off row
    dtype = t.pick(("", x.dtype))
    return _call(op, [idx, x, x], primary=1, depth=depth, axis=_axis(t, rank, 1), dtype=dtype)


@_register("sparse_to_dense")
def _sparse_to_dense(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(1,), fits=lambda v: _shape(v)[0] <= 4)  # the values
    if x is None:
        return None
    n = _shape(x)[0]
    out = (t.choose(n, n + 2), *t.dims(t.choose(0, 1), 1, 3))
    cells = list(np.ndindex(*out))
    picked = [cells.pop(t.choose(0, len(cells) - 1)) for _ in range(n)]
    idx: np.ndarray = np.asarray(picked, dtype="int32").reshape(n, len(out))
    if len(out) == 1 and t.maybe(5):
        idx = idx.reshape(n)
    default = TensorType((), x.dtype)
    return _call(op, [idx, x, default], primary=1, output_shape=list(out))


@_register("adv_index")
def _adv_index(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3))
    if x is None:
        return None
    shape = _shape(x)
    base = t.dims(t.choose(1, 2), 1, 3)
    parts: list[ArgSpec] = [x]
    for i in range(t.choose(1, x.ndim)):
        ishape = tuple(1 if t.maybe(3) else d for d in base)
        parts.append(_index_array(t, ishape, shape[i]))
    return _call(op, parts, tuple_arg=True)


@_register("unravel_index")
def _unravel_index(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    dims = t.dims(t.choose(1, 3), 1, 4)
    count = t.choose(0, 4)
    idx = _index_array(t, (count,) if count else (), int(np.prod(dims)))
    return _call(op, [idx, np.asarray(dims, dtype="int32")], primary=None)


@_register("matrix_set_diag")
def _matrix_set_diag(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 3))
    if x is None:
        return None
    *lead, m, n = _shape(x)
    k1 = t.choose(-(m - 1), n - 1)
    k2 = t.choose(k1, n - 1) if t.maybe(5) else k1
    length = min(m + min(k2, 0), n - max(k1, 0))
    dshape = (*lead, length) if k1 == k2 else (*lead, k2 - k1 + 1, length)
    return _call(
        op,
        [x, TensorType(dshape, x.dtype)],
        k1=k1,
        k2=k2,
        super_diag_right_align=t.maybe(5),
        sub_diag_right_align=t.maybe(5),
    )


@_register("sequence_mask")
def _sequence_mask(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 3), kinds="f")
    if x is None:
        return None
    shape = _shape(x)
    axis = t.choose(0, 1)
    lengths = _index_array(t, (shape[1 - axis],), shape[axis] + 1)
    return _call(op, [x, lengths], axis=axis, mask_value=float(t.pick((0.0, -1.0, 2.5))))


# --------------------------------------------------------------------------- algorithms


@_register("argsort", "sort")
def _sort(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3), kinds="fi")
    if x is None:
        return None
    dtype = t.pick(("int32", "int64")) if op.name == "argsort" else x.dtype
    return _call(op, [x], axis=_axis(t, x.ndim), is_ascend=not t.maybe(3), dtype=dtype)


@_register("topk")
def _topk(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3), kinds="fi")
    if x is None:
        return None
    axis = _axis(t, x.ndim)
    return _call(
        op,
        [x],
        k=t.choose(-1, _shape(x)[axis]),
        axis=axis,
        ret_type=t.pick(("both", "values", "indices")),
        is_ascend=t.maybe(3),
        dtype=t.pick(("int32", "int64")),
    )


@_register("cumsum", "cumprod")
def _scan(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 0), kinds="fi")
    if x is None:
        return None
    axis = _axis(t, x.ndim) if x.ndim and not t.maybe(2) else None
    dtype = t.pick((None, x.dtype, *[d for d in t.dtypes if kind(d) != "b"]))
    return _call(op, [x], axis=axis, dtype=dtype, exclusive=t.maybe(3))


@_register("einsum")
def _einsum(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3), kinds="f")
    if x is None:
        return None
    sizes: dict[str, int] = {}
    term = ""
    for d in _shape(x):  # a letter per axis; equal sizes may share one (a diagonal)
        same = [c for c, s in sizes.items() if s == d]
        letter = t.pick(same) if same and t.maybe(2) else "abcdefg"[len(sizes)]
        sizes[letter] = d
        term += letter
    terms, parts = [term], [x]
    if t.maybe(6):
        other = ""
        for _ in range(t.choose(1, 3)):
            if t.maybe(6):
                other += t.pick(sorted(sizes))
            else:
                letter = "pqr"[len([c for c in sizes if c in "pqr"])]
                sizes.setdefault(letter, t.choose(1, 3))
                other += letter
        terms.append(other)
        parts.append(TensorType(tuple(sizes[c] for c in other), x.dtype))
    equation = ",".join(terms)
    if t.maybe(6):
        used = sorted(set("".join(terms)))
        out = [used.pop(t.choose(0, len(used) - 1)) for _ in range(t.choose(0, len(used)))]
        equation += "->" + "".join(out)
    return _call(op, parts, tuple_arg=True, equation=equation)


# --------------------------------------------------------------------------- nn


@_register("nn.dense", "nn.matmul")
def _dense(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3), kinds="f")
    if x is None:
        return None
    shape = _shape(x)
    units = t.choose(1, 6)
    if op.name == "nn.dense":
        weight = TensorType((units, shape[-1]), x.dtype)
        return _call(op, [x, weight], units=t.pick((None, units)))
    ta = x.ndim >= 2 and t.maybe(3)
    k = shape[-2] if ta else shape[-1]
    tb = t.maybe(5)
    weight = TensorType((units, k) if tb else (k, units), x.dtype)
    return _call(op, [x, weight], units=t.pick((None, units)), transpose_a=ta, transpose_b=tb)


@_register("nn.contrib_dense_pack")
def _dense_pack(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2,), kinds="f")
    if x is None:
        return None
    block = t.choose(1, 4)
    weight = TensorType((t.choose(1, 3), _shape(x)[1], block), x.dtype)
    return _call(op, [x, weight], units=None, weight_layout=f"NC{block}n")


@_register("nn.batch_matmul")
def _batch_matmul(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(3,), kinds="f")
    if x is None:
        return None
    b, r, c = _shape(x)
    ta, tb = t.maybe(3), t.maybe(5)
    k, j = (r if ta else c), t.choose(1, 4)
    yb = 1 if t.maybe(2) else b
    y = TensorType((yb, j, k) if tb else (yb, k, j), x.dtype)
    return _call(op, [x, y], transpose_a=ta, transpose_b=tb)


def _channel(t: Tape, x: TensorType) -> tuple[int, TensorType]:
    """An axis of `x` and the (C,) type of a per-channel parameter along it."""
    axis = _axis(t, x.ndim)
    return axis, TensorType((_shape(x)[axis],), x.dtype)


@_register("nn.bias_add", "nn.prelu")
def _per_channel(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 4, 3, 1), kinds="f")
    if x is None:
        return None
    axis, c = _channel(t, x)
    return _call(op, [x, c], axis=axis)


@_register("nn.relu")
def _relu(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="f")
    return None if x is None else _call(op, [x])


@_register("nn.leaky_relu")
def _leaky_relu(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="f")
    return None if x is None else _call(op, [x], alpha=t.pick((0.01, 0.2, 0.5)))


@_register("nn.softmax", "nn.fast_softmax", "nn.log_softmax")
def _softmax(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4), kinds="f")
    return None if x is None else _call(op, [x], axis=_axis(t, x.ndim))


@_register("nn.batch_norm")
def _batch_norm(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(4, 2, 3, 1), kinds="f")
    if x is None:
        return None
    axis, c = _channel(t, x)
    return _call(
        op,
        [x, c, c, c, c],
        axis=axis,
        epsilon=t.pick((1e-5, 0.1)),
        center=not t.maybe(2),
        scale=not t.maybe(2),
    )


@_register("nn.layer_norm", "nn.instance_norm")
def _norm(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    ranks = (3, 4, 2) if op.name == "nn.instance_norm" else (2, 3, 4, 1)
    x = _input(t, x, ranks=ranks, kinds="f")
    if x is None:
        return None
    if op.name == "nn.instance_norm":
        axis = t.pick((1, -1))
        c = TensorType((_shape(x)[axis],), x.dtype)
    else:
        axis, c = _channel(t, x)
    return _call(op, [x, c, c], axis=axis, epsilon=t.pick((1e-5, 0.01)), center=not t.maybe(2))


@_register("nn.group_norm")
def _group_norm(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(3, 4, 2), kinds="f")
    if x is None:
        return None
    channels = _shape(x)[1]
    c = TensorType((channels,), x.dtype)
    groups = t.pick([g for g in range(1, channels + 1) if channels % g == 0])
    return _call(op, [x, c, c], num_groups=groups, axis=1, epsilon=1e-5)


@_register("nn.l2_normalize")
def _l2_normalize(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4), kinds="f")
    if x is None:
        return None
    axes = sorted({t.choose(0, x.ndim - 1) for _ in range(t.choose(1, x.ndim))})
    return _call(op, [x], eps=t.pick((1e-5, 1e-3)), axis=axes)


@_register("nn.dropout")
def _dropout(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="f")
    return None if x is None else _call(op, [x], rate=t.pick((0.5, 0.1, 0.0)))


@_register("nn.lrn")
def _lrn(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(4, 3), kinds="f")
    if x is None:
        return None
    return _call(
        op, [x], size=t.pick((1, 3, 5, 2)), axis=t.pick((1, -1)), bias=2.0, alpha=1e-4, beta=0.75
    )


@_register("nn.batch_flatten")
def _batch_flatten(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(3, 2, 4, 1))
    return None if x is None else _call(op, [x])


@_register("nn.cross_entropy", "nn.cross_entropy_with_logits")
def _cross_entropy(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2,), kinds="f")
    return None if x is None else _call(op, [x, x])


@_register("nn.fifo_buffer")
def _fifo_buffer(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3), kinds="f")
    if x is None:
        return None
    axis = _axis(t, x.ndim)
    buffer = list(_shape(x))
    buffer[axis] += t.choose(1, 3)
    return _call(op, [x, TensorType(tuple(buffer), x.dtype)], axis=axis)


@_register("nn.pad")
def _pad(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4))
    if x is None:
        return None
    mode = t.pick(("constant", "edge", "reflect"))
    limit = 2 if mode != "reflect" else 0
    widths = [
        [t.choose(0, min(limit, d - 1) if mode == "reflect" else limit) for _ in range(2)]
        for d in _shape(x)
    ]
    return _call(op, [x, TensorType((), x.dtype)], pad_width=widths, pad_mode=mode)


@_register("nn.mirror_pad")
def _mirror_pad(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4))
    if x is None:
        return None
    mode = t.pick(("SYMMETRIC", "REFLECT"))
    cut = 0 if mode == "SYMMETRIC" else 1
    widths = [[t.choose(0, min(2, d - cut)) for _ in range(2)] for d in _shape(x)]
    return _call(op, [x], pad_width=widths, mode=mode)


@_register("nn.upsampling", "nn.upsampling3d")
def _upsampling(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    three = op.name == "nn.upsampling3d"
    x = _input(t, x, ranks=(5,) if three else (4,), kinds="f")
    if x is None:
        return None
    layout = t.pick(("NCDHW", "NDHWC") if three else ("NCHW", "NHWC"))
    spatial = _shape(x)[1:-1] if layout.endswith("C") else _shape(x)[2:]
    names = ("scale_d", "scale_h", "scale_w")[-len(spatial) :]
    # a scaled size rounding to 0 is an empty tensor (which the interpreter refuses)
    scales = {k: t.pick([s for s in SCALES if d * s >= 1]) for k, d in zip(names, spatial)}
    if three:
        method = t.pick(("nearest_neighbor", "trilinear"))
        mode = t.pick(("half_pixel", "align_corners", "asymmetric"))
        return _call(
            op, [x], layout=layout, method=method, coordinate_transformation_mode=mode, **scales
        )
    method = t.pick(("nearest_neighbor", "bilinear", "bicubic"))
    return _call(op, [x], layout=layout, method=method, align_corners=t.maybe(3), **scales)


@_register("nn.depth_to_space", "nn.space_to_depth")
def _depth_space(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(4,), hi=6)
    if x is None:
        return None
    _, c, h, w = _shape(x)
    if op.name == "nn.depth_to_space":
        blocks = [b for b in (1, 2, 3) if c % (b * b) == 0]
    else:
        blocks = [b for b in (1, 2, 3) if h % b == 0 and w % b == 0]
    return _call(op, [x], block_size=t.pick(blocks), mode=t.pick(("DCR", "CRD")))


# --------------------------------------------------------------------------- windows


class _Window(NamedTuple):
    """Per spatial axis: kernel/pool size, stride, dilation; and the `padding` attribute."""

    sizes: list[int]
    strides: list[int]
    dilation: list[int]
    padding: list[int]


def _window(t: Tape, spatial: Sequence[int], max_size: int = 3, max_stride: int = 3) -> _Window:
    """A window that fits every spatial axis once padded."""
    n = len(spatial)
    form = t.choose(0, 2)
    if form == 0:
        p = t.choose(0, 1)
        before, after, padding = [p] * n, [p] * n, [p]
    elif form == 1:
        before = [t.choose(0, 1) for _ in range(n)]
        after, padding = before, list(before)
    else:
        before = [t.choose(0, 2) for _ in range(n)]
        after = [t.choose(0, 1) for _ in range(n)]
        padding = before + after
    sizes, strides, dilation = [], [], []
    for s, b, a in zip(spatial, before, after):
        d = t.choose(1, 2)
        fit = (s + b + a - 1) // d + 1
        if fit < 1:
            d, fit = 1, s + b + a
        sizes.append(t.choose(1, max(1, min(max_size, fit))))
        dilation.append(d)
        strides.append(t.choose(1, max_stride))
    return _Window(sizes, strides, dilation, padding)


def _groups(t: Tape, channels: int) -> int:
    return t.pick([1] + [g for g in range(2, channels + 1) if channels % g == 0])


CONV_N = {"nn.conv1d": 1, "nn.conv2d": 2, "nn.conv3d": 3}
DATA_LAYOUT = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
LAST_LAYOUT = {1: "NWC", 2: "NHWC", 3: "NDHWC"}


@_register(*CONV_N)
def _conv(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    n = CONV_N[op.name]
    x = _input(t, x, ranks=(n + 2,), kinds="f", hi=3 if n == 3 else 6)
    if x is None:
        return None
    shape = _shape(x)
    nhwc = n == 2 and t.maybe(3)
    c, spatial = (shape[-1], shape[1:-1]) if nhwc else (shape[1], shape[2:])
    groups = _groups(t, c)
    cout = groups * t.choose(1, 2)
    win = _window(t, spatial)
    if nhwc:
        weight = (*win.sizes, c // groups, cout)
    else:
        weight = (cout, c // groups, *win.sizes)
    return _call(
        op,
        [x, TensorType(weight, x.dtype)],
        strides=win.strides,
        padding=win.padding,
        dilation=win.dilation,
        groups=groups,
        channels=cout if t.maybe(5) else None,
        kernel_size=win.sizes if t.maybe(5) else None,
        data_layout="NHWC" if nhwc else DATA_LAYOUT[n],
        kernel_layout="HWIO" if nhwc else {1: "OIW", 2: "OIHW", 3: "OIDHW"}[n],
    )


@_register("nn.conv1d_transpose", "nn.conv2d_transpose")
def _conv_transpose(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    n = 1 if op.name == "nn.conv1d_transpose" else 2
    x = _input(t, x, ranks=(n + 2,), kinds="f", hi=5)
    if x is None:
        return None
    shape = _shape(x)
    c = shape[1]
    groups = _groups(t, c)
    per_group = t.choose(1, 2)
    win = _window(t, [1] * n, max_stride=2)  # transposed: any padding below the full size
    output_padding = [t.choose(0, s - 1) for s in win.strides]
    padding = win.padding
    full = [
        s * (size - 1) + (k - 1) * d + 1 + op_
        for size, s, k, d, op_ in zip(
            shape[2:], win.strides, win.sizes, win.dilation, output_padding
        )
    ]
    if len(padding) == 2 * n:
        total = [padding[i] + padding[i + n] for i in range(n)]
    else:
        total = [2 * p for p in (padding * n if len(padding) == 1 else padding)]
    if any(f - p < 1 for f, p in zip(full, total)):
        padding = [0]
    weight = TensorType((c, per_group, *win.sizes), x.dtype)
    return _call(
        op,
        [x, weight],
        strides=win.strides,
        padding=padding,
        dilation=win.dilation,
        output_padding=output_padding,
        groups=groups,
        channels=per_group * groups if t.maybe(5) else None,
        kernel_size=win.sizes if t.maybe(5) else None,
    )


@_register("nn.contrib_conv2d_NCHWc")
def _conv_nchwc(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(5,), kinds="f", fits=lambda v: _shape(v)[4] <= 4)
    if x is None:
        return None
    _, c_outer, h, w, ib = _shape(x)
    ob = t.choose(1, 4)
    o_outer = t.choose(1, 2)
    win = _window(t, [h, w])
    weight = TensorType((o_outer, c_outer, *win.sizes, ib, ob), x.dtype)
    return _call(
        op,
        [x, weight],
        strides=win.strides,
        padding=win.padding,
        dilation=win.dilation,
        channels=o_outer * ob,
        kernel_size=win.sizes,
        data_layout=f"NCHW{ib}c",
        kernel_layout=f"OIHW{ib}i{ob}o",
        out_layout=f"NCHW{ob}c",
    )


@_register("nn.contrib_conv2d_winograd_without_weight_transform")
def _winograd(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(4,), kinds="f", lo=2, hi=6)
    if x is None:
        return None
    _, c, h, w = _shape(x)
    pad = t.choose(0, 1)
    if min(h, w) + 2 * pad < 3:
        pad = 1
        if min(h, w) + 2 < 3:
            return None
    tile, cout = t.pick((2, 4)), t.choose(1, 4)
    weight = TensorType((tile + 2, tile + 2, cout, c), x.dtype)
    return _call(
        op,
        [x, weight],
        tile_size=tile,
        channels=cout,
        kernel_size=[3, 3],
        padding=[pad, pad],
    )


@_register("nn.contrib_conv2d_winograd_weight_transform")
def _winograd_weight(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    if x is not None:
        x = _input(t, x, ranks=(4,), kinds="f", fits=lambda v: _shape(v)[2:] == (3, 3))
        if x is None:
            return None
    else:
        dtype = t.dtype("f")
        if dtype is None:
            return None
        x = TensorType((t.choose(1, 4), t.choose(1, 3), 3, 3), dtype)
    return _call(op, [x], tile_size=t.pick((2, 4)))


POOL_N = {
    **{f"nn.{k}_pool{n}d": n for k in ("max", "avg") for n in (1, 2, 3)},
}


@_register(*POOL_N)
def _pool(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    n = POOL_N[op.name]
    x = _input(t, x, ranks=(n + 2,), hi=4 if n == 3 else 6, kinds="fi")
    if x is None:
        return None
    shape = _shape(x)
    last = t.maybe(3)
    spatial = shape[1:-1] if last else shape[2:]
    win = _window(t, spatial)
    attrs: dict[str, Any] = {
        "pool_size": win.sizes,
        "strides": win.strides,
        "dilation": win.dilation,
        "padding": win.padding,
        "layout": LAST_LAYOUT[n] if last else DATA_LAYOUT[n],
        "ceil_mode": t.maybe(3),
    }
    if op.name.startswith("nn.avg"):
        attrs["count_include_pad"] = t.maybe(5)
        if kind(x.dtype) == "i" and attrs["ceil_mode"] and attrs["count_include_pad"]:
            attrs["ceil_mode"] = False  # a last window past the padding divides ints by 0
    return _call(op, [x], **attrs)


ADAPTIVE_N = {f"nn.adaptive_{k}_pool{n}d": n for k in ("max", "avg") for n in (1, 2, 3)}


@_register(*ADAPTIVE_N)
def _adaptive_pool(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    n = ADAPTIVE_N[op.name]
    x = _input(t, x, ranks=(n + 2,), hi=4 if n == 3 else 6, kinds="fi")
    if x is None:
        return None
    form = t.choose(0, 2)
    sizes = [] if form == 0 else [t.choose(1, 4) for _ in range(1 if form == 1 else n)]
    layout = LAST_LAYOUT[n] if t.maybe(3) else DATA_LAYOUT[n]
    return _call(op, [x], output_size=sizes, layout=layout)


@_register("nn.global_max_pool2d", "nn.global_avg_pool2d")
def _global_pool(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(4,), kinds="fi")
    return None if x is None else _call(op, [x], layout=t.pick(("NCHW", "NHWC")))


# --------------------------------------------------------------------------- image

RESIZE_N = {"image.resize1d": 1, "image.resize2d": 2, "image.resize3d": 3}


@_register(*RESIZE_N)
def _resize(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    n = RESIZE_N[op.name]
    x = _input(t, x, ranks=(n + 2,), kinds="f", hi=4 if n == 3 else 5)
    if x is None:
        return None
    method = t.pick(("nearest_neighbor", "linear", "cubic"))
    attrs: dict[str, Any] = {
        "size": [t.choose(1, 6 if n < 3 else 4) for _ in range(n)],
        "layout": LAST_LAYOUT[n] if t.maybe(3) else DATA_LAYOUT[n],
        "method": method,
        "coordinate_transformation_mode": t.pick(
            ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel")
        ),
    }
    if method == "nearest_neighbor":
        attrs["rounding_method"] = t.pick(("", "round", "floor", "ceil"))
    if method == "cubic":
        attrs["cubic_alpha"] = t.pick((-0.5, -0.75))
        attrs["cubic_exclude"] = t.choose(0, 1)
    return _call(op, [x], **attrs)


@_register("image.crop_and_resize")
def _crop_and_resize(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(4,), kinds="f", hi=5)
    if x is None:
        return None
    last = t.maybe(3)
    boxes = t.choose(1, 3)
    box_indices = _index_array(t, (boxes,), _shape(x)[0])
    return _call(
        op,
        [x, TensorType((boxes, 4), x.dtype), box_indices],
        crop_size=[t.choose(1, 4), t.choose(1, 4)],
        layout="NHWC" if last else "NCHW",
        method=t.pick(("bilinear", "nearest_neighbor")),
        extrapolation_value=t.pick((0.0, 1.5)),
    )


@_register("image.dilation2d")
def _dilation2d(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(4,), kinds="f", hi=6)
    if x is None:
        return None
    _, c, h, w = _shape(x)
    win = _window(t, [h, w])
    padding = win.padding if len(win.padding) != 1 else win.padding * 2
    return _call(
        op,
        [x, TensorType((c, *win.sizes), x.dtype)],
        strides=win.strides,
        padding=padding,
        dilations=win.dilation,
    )


@_register("image.affine_grid")
def _affine_grid(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    if x is not None:
        x = _input(t, x, ranks=(3,), kinds="f", fits=lambda v: _shape(v)[1:] == (2, 3))
        if x is None:
            return None
    else:
        dtype = t.dtype("f")
        if dtype is None:
            return None
        x = TensorType((t.choose(1, 3), 2, 3), dtype)
    return _call(op, [x], target_shape=[t.choose(2, 5), t.choose(2, 5)])  # 1: no grid step


@_register("image.grid_sample")
def _grid_sample(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(4, 5), kinds="f", hi=5)
    if x is None:
        return None
    k = x.ndim - 2
    grid = TensorType((_shape(x)[0], k, *t.dims(k, 1, 4)), x.dtype)
    methods = ("bilinear", "nearest", "bicubic") if k == 2 else ("bilinear", "nearest")
    return _call(
        op,
        [x, grid],
        method=t.pick(methods),
        layout="NCHW" if k == 2 else "NCDHW",
        padding_mode=t.pick(("zeros", "border", "reflection")),
        align_corners=t.maybe(5),
    )


# --------------------------------------------------------------------------- annotations


@_register("on_device", "device_copy", "debug")
def _device(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x)
    if x is None:
        return None
    if op.name == "on_device":
        return _call(op, [x], virtual_device=t.pick((None, 1)), constrain_result=t.maybe(3))
    if op.name == "device_copy":
        return _call(op, [x], src_virtual_device=1, dst_virtual_device=2)
    return _call(op, [x], debug_func=None)


# --------------------------------------------------------------------------- strategy

_OP_BYTES = 96  # enough choices for the largest call


@st.composite
def _op_call(draw: Any, op: Op, dtypes: tuple[str, ...]) -> OpCall:
    gen = generator_for(op)
    for _ in range(20):
        tape = Tape(draw(st.binary(min_size=_OP_BYTES, max_size=_OP_BYTES)), dtypes)
        call = gen(tape, op, None)
        if call is not None:
            return call
    raise ValueError(f"op_calls: no call of `{op.name}` with dtypes {dtypes}")


def op_calls(op: Op | str, dtypes: Sequence[str] = ("float32",)) -> st.SearchStrategy[OpCall]:
    """Valid random calls of `op` (an `Op` or its name) whose new tensors have `dtypes`.

    Each call is an `OpCall`: `call.args` are `TensorType`s (free inputs), `Nonzero`
    inputs and constant `np.ndarray`s; `call_type(call)` is its result type.

        from hypothesis import given
        from relay.testing import op_calls

        @given(op_calls("nn.conv2d"))
        def test_my_conv_kernel(call): ...
    """
    found = lookup_op(op) if isinstance(op, str) else op
    if found is None:
        raise ValueError(f"op_calls: no operator `{op}`")
    generator_for(found)
    return _op_call(found, tuple(dtypes))
