"""What every generator uses: the tape of choices, the call and argument types, and small
choices (an input type, an axis, an index array, a window).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeAlias

import numpy as np
from attrs import frozen

from ...lang.attrs import Attrs
from ...lang.dtype import numpy_dtype
from ...lang.op import Op
from ...lang.types import TensorType, TupleType, Type
from ...typecheck.relations import RelationError, relation_for
from ..relations import StandaloneContext

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
