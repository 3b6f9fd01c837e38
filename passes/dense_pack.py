"""`alter-op-layout`'s rule for `nn.dense`: a dense layer on a weight packed by columns.

A float32 `nn.dense(%x, <W>, units=N)` with 2-D data of more than `GEMV_MAX_ROWS` rows and
a constant `(N, K)` weight (`relay.build(..., params=...)` binds them) becomes (TVM's x86
`_alter_dense_layout`)

    nn.contrib_dense_pack(%x, <W packed: (N/b, K, b)>, units=N, weight_layout="NC{b}n")

whose weight holds, for each block of `b` output columns, the K rows of `b` contiguous
weights the dense schedule's micro-kernel reads as vectors
(backend/lower/schedules/dense.py): the weight is packed here, at compile time, and the
kernel has no packing stage. A weight that is not a constant stays a `nn.dense` operand:
the kernel then packs each column block as it goes (while it is in cache), which beats a
separate `layout_transform` kernel writing the packed weight out on every call.

`b` is the micro-kernel's column block (`dense_pack_block`): two vectors of the target's
fp32 lanes with 16 vector registers (AVX2: `NC16n`), four with 32 (AVX-512: `NC64n`),
fewer when the columns are fewer, or one vector when that is all that divides `N`. Layers
that the schedule runs in its GEMV form (few rows, or fewer columns than a vector: it
reads the weight contiguous in `K`), other dtypes, N-D data, and a block that does not
divide `N` stay `nn.dense`.
"""

from __future__ import annotations

from collections.abc import Callable

from ..lang.expr import Call, Constant, Expr
from ..lang.op import get_op
from ..lang.types import TensorType, Type
from .layout_rules import CallInfo, Decision, make_tag

GEMV_MAX_ROWS = 4
"""Dense layers with at most this many rows run in the schedule's GEMV form (the value of
`backend.lower.schedules.dense.GEMV_MAX_ROWS`; a test holds them equal)."""

_DENSE = get_op("nn.dense")
DENSE_PACK = get_op("nn.contrib_dense_pack")


def dense_pack_block(units: int, lanes: int) -> int:
    """The column block a dense weight of `units` rows is packed by on a target of `lanes`
    fp32 lanes (module docstring), or 0 when no whole number of vectors divides `units`."""
    if lanes <= 0:
        return 0
    vectors = 4 if lanes >= 16 else 2
    for block in (min(vectors, -(-units // lanes)) * lanes, lanes):
        if units % block == 0:
            return block
    return 0


def _static_shape(t: Type) -> tuple[int, ...] | None:
    if not isinstance(t, TensorType) or t.dtype != "float32":
        return None
    sizes = tuple(d for d in t.shape if isinstance(d, int))
    return sizes if len(sizes) == t.ndim else None


def dense_layouts(call: Call, type_of: Callable[[Expr], Type], lanes: int) -> tuple[str, ...]:
    """`("NC{b}n",)`, the packed layout `call`'s constant weight gets, or () when `call`
    stays a `nn.dense` (module docstring)."""
    a = call.attrs
    if call.op is not _DENSE or a is None or lanes <= 0 or not isinstance(call.args[1], Constant):
        return ()
    if str(a.out_dtype or "float32") != "float32":
        return ()
    data, weight = _static_shape(type_of(call.args[0])), _static_shape(type_of(call.args[1]))
    if data is None or weight is None or len(data) != 2 or len(weight) != 2:
        return ()
    rows, units = data[0], weight[0]
    if rows <= GEMV_MAX_ROWS or units < lanes or data[1] == 0:
        return ()
    block = dense_pack_block(units, lanes)
    return (f"NC{block}n",) if block else ()


def packed_dense(info: CallInfo) -> Decision | None:
    """The layout rule that makes a `nn.dense` for which the pass chose `desired` =
    `("NC{b}n",)` a `nn.contrib_dense_pack` on the weight in that layout; without a choice
    the call runs as it is."""
    if len(info.desired) != 1:
        return None
    a = info.attrs
    attrs = DENSE_PACK.make_attrs(
        units=a.units, out_dtype=a.out_dtype, weight_layout=info.desired[0]
    )
    return Decision((None, make_tag("NC", info.desired[0])), None, attrs, DENSE_PACK)


__all__ = [
    "DENSE_PACK",
    "GEMV_MAX_ROWS",
    "dense_layouts",
    "dense_pack_block",
    "packed_dense",
]
