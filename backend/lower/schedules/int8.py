"""int8 kernels: `nn.dense` and `nn.conv2d` on 8-bit operands with int32 accumulation (what
`relay.quantize` realizes), as register-blocked loop nests whose innermost dot products are
one tensorized instruction (`te.tensorize`, intrinsics of `te.intrinsics_x86`).

The instruction is picked by the target's features (`choose_plan`): AVX-512 VNNI `vpdpbusd`
on 16 int32 lanes, AVX-VNNI `vpdpbusd` on 8, else `vpmaddwd` on int16 pairs (16 lanes with
AVX-512BW, 8 with AVX2); a target without AVX2 keeps the ordinary schedules. Every path is
exact (no saturating instruction):

* `vpdpbusd` multiplies an unsigned byte by a signed one. The data operand (int8) is moved
  to uint8 by adding 128 (`a + 128`), and the product corrected by a weight sum computed once
  (`sum_k (a + 128) * w = sum_k a * w + 128 * sum_k w`): the result subtracts
  `128 * wsum[n]`, as VNNI users do. Zero padding of the data is 128 in that form.
* `vpmaddwd` multiplies int16 pairs: both operands sign- (or zero-) extended to int16, which
  no product of 8-bit values overflows (`pmaddubsw` would saturate, so it is not used).

dense `C[m, n] = sum_k A[m, k] * W[n, k]`, with L lanes and G values per lane:

    a[Mp, Kp]               = A (+128, or as int16), zero past M, K      # root, parallel
    w[Np/L, Kp/G, L, G]     = W, zero past N, K                          # folded at build time
    for no (parallel), mo:                                               # when W is constant
      acc[MR, NB] = 0                                     # MR x NB/L vector registers
      for ko: for mi (unrolled): for v (unrolled):
        acc[mi, v*L : +L] = dot(acc[mi, v*L : +L], a[m, ko*G : +G], w[n/L, ko, :, :])
      out[m, n] = tail(acc[mi, ni] - 128 * wsum[n])       # bias, requantize: vectorized

conv2d (NCHW/OIHW, groups 1): the data converted once to `d[N, C/G, H', W', G]` (padded,
each group of `G` channels interleaved: one pass over `G` contiguous input rows, vectorized
by LLVM), the weight packed at build time, then one of two forms:

* the column form (`column_form`: unpadded 1x1 convs, and stride-1 convs whose rows fill
  the vectors; `_schedule_conv2d_columns`): output columns in the lanes. A register tile of
  `OCB` channels by `VB` column vectors accumulates
  `dot(acc, w[oc, kh, kw, ico, :], d[n, ico, oh*sh + kh, ow + kw : +L, :])` over
  `(kh, kw, ic/G)`, the weight pair (or quad) broadcast and the `L` x `G` data block loaded
  as it lies; the result `res[N, OC, OH, OW']` is NCHW, so the tail reads contiguous rows.
  With VNNI the broadcast operand is the signed weight (`vpdpbusd` `s8u8` form). An
  unpadded 1x1 conv runs over its flattened output plane (`flat_plane`: one row of
  `OH * OW` columns, the data conversion picking the strided pixels), and where the plane
  splits into whole tiles each block of channels is computed inside the tail's loop.
* otherwise: output channels in the lanes: a tile of `OWT` columns by `VB` channel vectors
  over `(kh, kw, ic/G)`, the data group broadcast, the weight `[OC/L, KH, KW, IC/G, L, G]`
  in the lanes, stored channel-blocked `res[N, OC/L, OH, OW, L]`; the tail reads it back in
  NCHW with the `L` channels of a block inside each output row (`_schedule_tail`).

Depthwise convs (`groups` = channels) run on groups of taps: pairs for `vpmaddwd`, quads
for VNNI (`int8_depthwise.py`).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping
from typing import Any

from attrs import frozen

from ...target import Target
from ...te.rewrite import register_rewrite
from ...te.tensor import ComputeOp, Tensor, compute, reduce_axis, sum_
from ...te.tensorize import TensorIntrinsic
from ...tir.expr import Cast, Mul, PrimExpr, Var, all_of, cast, const
from ...tir.op import if_then_else
from . import PARALLEL_MIN_ELEMENTS, PARALLEL_MIN_WORK, Schedule, extents
from .dense import VECTOR_REGISTERS, analyze_product, anchor_view, install, require

INT8 = ("int8", "uint8")


@frozen
class DotPlan:
    """How int8 products run: the intrinsic (`lanes` int32 outputs of `group` products each),
    the dtypes its broadcast operand `a` (the data) and lane operand `b` (the weight) are
    converted to, and `shift`, what the data is offset by (128 into uint8, else 0)."""

    kind: str
    intrinsic: TensorIntrinsic
    lanes: int
    group: int
    a_dtype: str
    b_dtype: str
    shift: int


_FORCED: list[tuple[str, bool]] = []

PAIR_KINDS = ("avx2", "avx512bw")
"""The plans on int16 pairs (`vpmaddwd`): any 8-bit weight dtype, no data shift."""

DEPTHWISE_PAIRS = True
"""Whether int8 depthwise convs get the tap-group nest (`int8_depthwise`: `vpmaddwd` pairs or
VNNI quads); else the depthwise schedule widens each tap to int32 (for comparisons)."""


@contextlib.contextmanager
def force_plan(kind: str, portable: bool = True) -> Iterator[None]:
    """Use plan `kind` (`avx512_vnni`, `avx_vnni`, `avx512bw`, `avx2`) whatever the target, with the
    portable body of its intrinsic (`portable`): checks a schedule made for an instruction
    this host lacks, exactly, on this host (the instruction is replaced by its definition)."""
    _FORCED.append((kind, portable))
    try:
        yield
    finally:
        _FORCED.pop()


def _plan(kind: str, data_dtype: str, portable: bool) -> DotPlan:
    from ...te import intrinsics_x86 as x86

    if kind == "avx2":
        intr, lanes, group, a_dt, b_dt, shift = x86.AVX2_I16, 8, 2, "int16", "int16", 0
    elif kind == "avx512bw":
        intr, lanes, group, a_dt, b_dt, shift = x86.AVX512BW_I16, 16, 2, "int16", "int16", 0
    else:
        intr = x86.AVX512_VNNI_U8S8 if kind == "avx512_vnni" else x86.AVX_VNNI_U8S8
        lanes, group, a_dt, b_dt = (16 if kind == "avx512_vnni" else 8), 4, "uint8", "int8"
        shift = 128 if data_dtype == "int8" else 0
    if portable:
        intr = x86.PORTABLE[intr.name]
    return DotPlan(kind, intr, lanes, group, a_dt, b_dt, shift)


def choose_plan(target: Target, data_dtype: str, weight_dtype: str) -> DotPlan | None:
    """The plan for a product of `data_dtype` by `weight_dtype` on `target` (module
    docstring), None when the target has none (no AVX2) or the dtypes are not 8-bit."""
    if data_dtype not in INT8 or weight_dtype not in INT8:
        return None
    if _FORCED:
        kind, portable = _FORCED[-1]
        if kind not in PAIR_KINDS and weight_dtype != "int8":
            kind = "avx2"
        return _plan(kind, data_dtype, portable)
    vnni_ok = weight_dtype == "int8"
    if (
        vnni_ok
        and target.has_feature("avx512vnni")
        and target.has_feature("avx512bw")
        and target.vector_bits >= 512
    ):
        return _plan("avx512_vnni", data_dtype, False)
    if vnni_ok and (
        target.has_feature("avxvnni")
        or (target.has_feature("avx512vnni") and target.has_feature("avx512vl"))
    ):
        return _plan("avx_vnni", data_dtype, False)
    if target.has_feature("avx512bw") and target.vector_bits >= 512:
        return _plan("avx512bw", data_dtype, False)
    if target.has_feature("avx2"):
        return _plan("avx2", data_dtype, False)
    return None


def _to_a(plan: DotPlan, x: PrimExpr) -> PrimExpr:
    """A data value as the intrinsic's `a` operand."""
    if plan.shift:
        return cast(plan.a_dtype, cast("int32", x) + plan.shift)
    return cast(plan.a_dtype, x)


def _registers(target: Target) -> int:
    return VECTOR_REGISTERS.get(target.vector_bits, 16)


def _tile(target: Target, columns: int, lanes: int) -> tuple[int, int]:
    """(rows, vectors) of the register tile: rows x vectors accumulators, leaving registers
    for the vectors of `b` and the broadcast."""
    vecs = max(1, min(4 if _registers(target) >= 32 else 2, -(-columns // lanes)))
    rows = max(1, min(6 if vecs >= 2 else 8, (_registers(target) - vecs - 2) // vecs))
    return rows, vecs


def _int_product(op: ComputeOp, lhs: Any, rhs: Any) -> bool:
    """Whether the anchor's product source is `int32(lhs) * int32(rhs)` (either order)."""
    body = op.body[0]
    src = body.source[0]  # type: ignore[attr-defined]
    if not isinstance(src, Mul) or src.dtype != "int32":
        return False
    parts = [src.a, src.b]
    if not all(isinstance(p, Cast) and p.dtype == "int32" for p in parts):
        return False
    loads = {id(p.value) for p in parts}  # type: ignore[attr-defined]
    return loads == {id(lhs), id(rhs)}


# ------------------------------------------------------------------------------ dense


@frozen
class Int8Dense:
    """An int8 dense anchor the tensorized nest handles: `M x N` outputs, reduction `K`,
    run by `plan`."""

    plan: DotPlan
    m: int
    n: int
    k: int


def analyze_dense_int8(op: Any, target: Target) -> Int8Dense | None:
    """The int8 dense anchor `op` for `target`, or None when it is not an 8-bit product into
    int32 with a `(units, k)` weight, or the target has no plan."""
    p = analyze_product(op)
    if p is None or p.rhs_layout != "k" or len(op.axis) != 2 or op.output(0).dtype != "int32":
        return None
    m_var, n_var = (iv.var for iv in op.axis)
    if len(p.lhs.indices) != 2 or p.lhs.indices[0] is not m_var or p.lhs.indices[1] is not p.k.var:
        return None
    if len(p.rhs.indices) != 2 or p.rhs.indices[0] is not n_var:
        return None
    if not _int_product(op, p.lhs, p.rhs) or 0 in extents(op):
        return None
    plan = choose_plan(target, p.lhs.dtype, p.rhs.dtype)
    K = int(getattr(p.k.dom.extent, "value", 0))
    if plan is None or K == 0:
        return None
    M, N = extents(op)
    return Int8Dense(plan, M, N, K)


def dense_int8_tile(d: Int8Dense, target: Target) -> tuple[int, int]:
    """The default (rows, vectors) register tile of the int8 dense nest."""
    rows, vecs = _tile(target, d.n, d.plan.lanes)
    return min(rows, d.m), vecs


def schedule_dense_int8(
    s: Schedule,
    outputs: list[Tensor],
    anchor: Tensor,
    target: Target,
    config: Mapping[str, Any] | None = None,
) -> bool:
    """The tensorized dense nest (module docstring); False (nothing changed) when the
    anchor is not an 8-bit product into int32 with a `(units, k)` weight, or the target has
    no plan. `config` (`backend.tune`) may set the register tile's `rows` and `vectors`."""
    d = analyze_dense_int8(s[anchor].op, target)
    if d is None:
        return False
    plan, M, N, K = d.plan, d.m, d.n, d.k
    L = plan.lanes
    rows, vecs = dense_int8_tile(d, target)
    if config:
        rows = min(int(config.get("rows", rows)), M)
        vecs = int(config.get("vectors", vecs))
    nb = vecs * L
    np_ = -(-N // nb) * nb
    host, parts = install(s, outputs, anchor, "int8.dense", kind=plan.kind, rows=rows, nb=nb)
    a, w, acc, res, wsum = parts["a"], parts["w"], parts["acc"], parts["res"], parts.get("wsum")
    if res is not acc:
        s[res].compute_root()
        if host is not anchor:
            from .injective import schedule_injective_stage

            schedule_injective_stage(s, host, target)
        host = res
    st = s[host]
    hm, hn = st.op.axis
    no, ni = st.split(hn, factor=nb)
    mo, mi = st.split(hm, factor=rows)
    st.reorder(no, mo, mi, ni)
    vl = min(nb, max(1, target.vector_bits // 32))
    _, nii = st.split(ni, factor=vl)
    st.vectorize(nii)
    threads = target.num_threads
    parallel = threads > 1 and M * N * K >= PARALLEL_MIN_WORK
    col_blocks = np_ // nb
    if parallel and col_blocks < 4 * threads:
        at = st.fuse(no, mo)
        st.parallel(at)
        w_at = None
    else:
        if parallel:
            st.parallel(no)
        at, w_at = mo, no
    _schedule_acc(s, acc, st, at, plan)
    _schedule_rows(s, a, target)
    ws = s[w]
    if w_at is not None:
        ws.compute_at(st, w_at)
    if wsum is not None:
        s[wsum].compute_root()
    return True


@register_rewrite("int8.dense")
def dense_int8_rewrite(op: Any, kind: str, rows: int, nb: int) -> dict[str, Tensor]:
    """The int8 dense anchor `op` computed with plan `kind`'s operands by `rows` x `nb`
    tiles (`"a"`, `"w"`, `"acc"`, `"res"`, and `"wsum"` when the data is shifted)."""
    p = require(analyze_product(op), "int8.dense", op)
    plan = _plan(kind, p.lhs.dtype, False)
    M, N = extents(op)
    K = int(getattr(p.k.dom.extent, "value", 0))
    L, G = plan.lanes, plan.group
    mp, np_, kp = -(-M // rows) * rows, -(-N // nb) * nb, -(-K // G) * G
    data, weight = p.lhs.producer, p.rhs.producer

    def a_body(m: Var, k: Var) -> PrimExpr:
        inside = all_of(m < M, k < K) if (mp != M or kp != K) else None
        value = _to_a(plan, data[m, k])
        return value if inside is None else if_then_else(inside, value, const(0, plan.a_dtype))

    a = compute((mp, kp), a_body, name=f"{data.name}_{plan.a_dtype}", tag="injective")

    def w_body(nb_: Var, ko: Var, lane: Var, g: Var) -> PrimExpr:
        n, k = nb_ * L + lane, ko * G + g
        value = cast(plan.b_dtype, weight[n, k])
        if np_ == N and kp == K:
            return value
        return if_then_else(all_of(n < N, k < K), value, const(0, plan.b_dtype))

    w = compute((np_ // L, kp // G, L, G), w_body, name=f"{weight.name}_packed", tag="pack")
    ko, g = reduce_axis(kp // G, "ko"), reduce_axis(G, "g")

    def acc_body(m: Var, n: Var) -> PrimExpr:
        x = cast("int32", a[m, ko.var * G + g.var])
        y = cast("int32", w[n // L, ko.var, n % L, g.var])
        return sum_(x * y, axis=[ko, g])

    acc = compute((mp, np_), acc_body, name=f"{op.name}_int8", tag=op.tag, attrs=op.attrs)
    wsum = None
    if plan.shift:
        kk = reduce_axis(K, "k")
        wsum = compute(
            (N,),
            lambda n: sum_(cast("int32", weight[n, kk.var]) * plan.shift, axis=kk),
            name=f"{weight.name}_sum",
        )

    # Fewer columns than a tile: the tail's loop cannot cover the padded tile, so the tile
    # is stored to a padded result first (`res`), which the tail reads.
    res = compute((mp, np_), lambda m, n: acc[m, n], name=f"{op.name}_res") if nb > N else acc

    def view(m: Var, n: Var) -> PrimExpr:
        return res[m, n] - wsum[n] if wsum is not None else res[m, n]

    parts = {"view": anchor_view(op, view), "a": a, "w": w, "acc": acc, "res": res}
    if wsum is not None:
        parts["wsum"] = wsum
    return parts


def _schedule_acc(s: Schedule, acc: Tensor, host: Any, at: Any, plan: DotPlan) -> None:
    """`acc` computed at loop `at` of `host`: the reduction outermost, the tile's loops
    unrolled, the lanes and the group tensorized (the last axis split into vectors)."""
    ast = s[acc]
    ast.compute_at(host, at)
    axes = list(ast.op.axis)
    red = list(ast.op.reduce_axis)
    *tile, last = axes
    vo, vi = ast.split(last, factor=plan.lanes)
    ast.reorder(*red[:-1], *tile, vo, vi, red[-1])
    for iv in tile:
        ast.unroll(iv)
    ast.unroll(vo)
    ast.tensorize(vi, plan.intrinsic)


def _schedule_rows(s: Schedule, t: Tensor, target: Target) -> None:
    """A conversion stage at root, parallel over its first axis."""
    st = s[t]
    st.compute_root()
    axes = list(st.op.axis)
    if target.num_threads > 1 and math.prod(extents(t.op)) >= 64 * 1024:
        st.parallel(axes[0])


# ------------------------------------------------------------------------------ conv2d


def analyze_conv2d_int8(op: Any, target: Target) -> tuple[Any, DotPlan] | None:
    """(the convolution, its plan) of an int8 conv2d anchor the tensorized nests handle
    (NCHW/OIHW, groups 1, 8-bit operands into int32), or None."""
    from .conv2d import analyze_conv

    c = analyze_conv(op)
    if c is None or c.groups != 1 or c.out_dtype != "int32" or len(c.out_shape) != 4:
        return None
    if (c.data_layout, c.kernel_layout, c.out_layout) != ("NCHW", "OIHW", "NCHW"):
        return None
    if not _int_product(c.op, *_conv_loads(c)):
        return None
    plan = choose_plan(target, c.raw.dtype, c.weight.dtype)
    if plan is None or 0 in c.out_shape:
        return None
    return c, plan


def conv2d_int8_tile(c: Any, plan: DotPlan, target: Target) -> dict[str, int]:
    """The default register tile of the int8 conv nest of `c`: the column form's
    `{"channels", "vectors"}` (`column_form`), else the channel form's
    `{"columns", "vectors"}`."""
    OC = int(getattr(c.weight.shape[0], "value", 0))
    OW = c.out_shape[3]
    if column_form(c, plan):
        ocb, vb = _column_tile(target, OC, column_width(c), plan.lanes)
        return {"channels": ocb, "vectors": vb}
    owt, vb = _tile(target, OC, plan.lanes)
    return {"columns": min(owt, OW), "vectors": vb}


def schedule_conv2d_int8(
    s: Schedule,
    outputs: list[Tensor],
    anchor: Tensor,
    target: Target,
    config: Mapping[str, Any] | None = None,
) -> bool:
    """The tensorized conv2d nest (module docstring); False (nothing changed) for another
    form (layouts other than NCHW/OIHW, groups, dtypes) or a target without a plan.
    `config` (`backend.tune`) may set the register tile (`conv2d_int8_tile`'s knobs)."""
    from .conv2d import analyze_conv

    c = analyze_conv(s[anchor].op)
    if c is not None and c.groups > 1 and DEPTHWISE_PAIRS:
        from .int8_depthwise import schedule_depthwise_int8

        portable = bool(_FORCED) and _FORCED[-1][1]
        return schedule_depthwise_int8(s, outputs, anchor, target, portable)
    found = analyze_conv2d_int8(s[anchor].op, target)
    if found is None:
        return False
    c, plan = found
    tile = {**conv2d_int8_tile(c, plan, target), **(config or {})}
    if column_form(c, plan):
        ocb, vb = int(tile["channels"]), int(tile["vectors"])
        _schedule_conv2d_columns(s, outputs, anchor, c, plan, target, ocb, vb)
        return True
    x, wt = c.raw, c.weight
    B, IC = (int(getattr(d, "value", 0)) for d in x.shape[:2])
    OC, _, KH, KW = (int(getattr(d, "value", 0)) for d in wt.shape)
    _, _, OH, OW = c.out_shape
    L = plan.lanes
    owt, vb = min(int(tile["columns"]), OW), int(tile["vectors"])
    host, parts = install(s, outputs, anchor, "int8.conv2d", kind=plan.kind, owt=owt, vb=vb)
    d, w, acc, res, wsum = parts["d"], parts["w"], parts["acc"], parts["res"], parts.get("wsum")
    rs = s[res]
    rb, rob, roh, row, rl = rs.op.axis
    obo, obi = rs.split(rob, factor=vb)
    owo, owi = rs.split(row, factor=owt)
    rs.reorder(rb, obo, roh, owo, obi, owi, rl)
    rs.vectorize(rl)
    work = B * OC * OH * OW * KH * KW * IC
    if target.num_threads > 1 and work >= PARALLEL_MIN_WORK:
        rs.parallel(rs.fuse(rb, obo, roh))
    # acc's tile: (b, ob, oh, ow) region [1, vb, 1, owt]; the reduction outside it
    ast = s[acc]
    ast.compute_at(rs, owo)
    ab, aob, aoh, aow, al = ast.op.axis
    rkh, rkw, rico, rg = ast.op.reduce_axis
    ast.reorder(rkh, rkw, rico, ab, aob, aoh, aow, al, rg)
    ast.unroll(aob)
    ast.unroll(aow)
    ast.tensorize(al, plan.intrinsic)
    _schedule_data(s, d, target)
    s[w].compute_root()
    if wsum is not None:
        s[wsum].compute_root()
    if host is not anchor:
        _schedule_tail(s, host, c.out_shape, L, target)
    return True


def _schedule_tail(s: Schedule, host: Tensor, out_shape: Any, lanes: int, target: Target) -> None:
    """The conv's tail (NCHW, reading the channel-blocked `res`) with the `lanes` channels of
    one block inside each output row, so that the block's rows of `res` are read from cache
    by all of them; other shapes get the injective schedule."""
    from . import parallel_rows, vector_factor
    from .injective import schedule_injective_stage

    sizes = extents(host.op)
    if list(sizes) != list(out_shape) or sizes[1] <= lanes:
        schedule_injective_stage(s, host, target)
        return
    st = s[host]
    b, oc, oh, ow = st.op.axis
    oco, oci = st.split(oc, factor=lanes)
    factor = vector_factor(sizes[3], target.lanes(host.dtype))
    if factor:
        owo, owi = st.split(ow, factor=factor)
        st.reorder(b, oco, oh, oci, owo, owi)
        st.vectorize(owi)
    else:
        st.reorder(b, oco, oh, oci, ow)
    rows = [b, oco, oh]
    row_sizes = [sizes[0], -(-sizes[1] // lanes), sizes[2]]
    parallel_rows(st, rows, row_sizes, None, 1, math.prod(sizes), target)


def _schedule_data(s: Schedule, d: Tensor, target: Target) -> None:
    """The data conversion `d[b, ico, h, w, g]` at root: `G` input rows interleaved into
    one, the group unrolled inside the column loop, which is left to LLVM's loop vectorizer
    (contiguous loads of each row, widened, interleaved by shuffles into wide stores)."""
    ds = s[d]
    ds.compute_root()
    b, ico, h, _, g = ds.op.axis
    ds.unroll(g)
    sizes = extents(d.op)
    if target.num_threads > 1 and math.prod(sizes) >= 64 * 1024:
        ds.parallel(ds.fuse(b, ico, h))
    elif math.prod(sizes[2:]) <= SMALL_PLANE:
        ds.fuse(b, ico, h)  # LLVM would unroll the whole plane (rows and columns)


SMALL_PLANE = 256
"""Elements of one channel group's plane (`h x w x G`) up to which the data conversion
runs all rows of all groups as one loop: LLVM unrolls the rows and columns of a plane this
small (7 x 8 x 2) into long straight code that is slow to optimize; larger planes keep
their row loop (fused, a 112-column plane ran slower)."""


def _conv_weight_sum(wt: Tensor, shift: int) -> Tensor:
    """`shift * sum(w)` per output channel of an OIHW int8 weight: the correction for data
    shifted by `shift` to unsigned."""
    OC, IC, KH, KW = (int(getattr(d, "value", 0)) for d in wt.shape)
    ric, rh, rw = reduce_axis(IC, "ic"), reduce_axis(KH, "kh"), reduce_axis(KW, "kw")
    return compute(
        (OC,),
        lambda oc: sum_(cast("int32", wt[oc, ric.var, rh.var, rw.var]) * shift, axis=[ric, rh, rw]),
        name=f"{wt.name}_sum",
    )


@register_rewrite("int8.conv2d")
def conv2d_int8_rewrite(op: Any, kind: str, owt: int, vb: int) -> dict[str, Tensor]:
    """The int8 conv2d anchor `op` computed with plan `kind`'s operands by tiles of `owt`
    columns and `vb` channel vectors (`"d"`, `"w"`, `"acc"`, `"res"`, and `"wsum"` when the
    data is shifted)."""
    from .conv2d import analyze_conv

    c = require(analyze_conv(op), "int8.conv2d", op)
    x, wt = c.raw, c.weight
    plan = _plan(kind, x.dtype, False)
    B, IC, H, W = (int(getattr(d, "value", 0)) for d in x.shape)
    OC, _, KH, KW = (int(getattr(d, "value", 0)) for d in wt.shape)
    _, _, OH, OW = c.out_shape
    (sh, sw), (dh, dw) = c.strides, c.dilation
    pt, pl = c.pads[0][0], c.pads[1][0]
    L, G = plan.lanes, plan.group
    ocb = -(-OC // (vb * L)) * vb
    owp = -(-OW // owt) * owt
    icp = -(-IC // G) * G
    hp = (OH - 1) * sh + (KH - 1) * dh + 1
    wp = (owp - 1) * sw + (KW - 1) * dw + 1

    def d_body(b: Var, ico: Var, h: Var, w_: Var, g: Var) -> PrimExpr:
        hh, ww, ic = h - pt, w_ - pl, ico * G + g
        inside = all_of(hh >= 0, hh < H, ww >= 0, ww < W, ic < IC)
        return if_then_else(inside, _to_a(plan, x[b, ic, hh, ww]), const(plan.shift, plan.a_dtype))

    d = compute((B, icp // G, hp, wp, G), d_body, name=f"{x.name}_nc{G}hwc", tag="injective")

    def w_body(ob: Var, kh: Var, kw: Var, ico: Var, lane: Var, g: Var) -> PrimExpr:
        oc, ic = ob * L + lane, ico * G + g
        value = cast(plan.b_dtype, wt[oc, ic, kh, kw])
        return if_then_else(all_of(oc < OC, ic < IC), value, const(0, plan.b_dtype))

    w = compute((ocb, KH, KW, icp // G, L, G), w_body, name=f"{wt.name}_packed", tag="pack")
    rkh, rkw = reduce_axis(KH, "kh"), reduce_axis(KW, "kw")
    rico, rg = reduce_axis(icp // G, "ico"), reduce_axis(G, "g")

    def acc_body(b: Var, ob: Var, oh: Var, ow: Var, lane: Var) -> PrimExpr:
        hh, ww = oh * sh + rkh.var * dh, ow * sw + rkw.var * dw
        xv = cast("int32", d[b, rico.var, hh, ww, rg.var])
        yv = cast("int32", w[ob, rkh.var, rkw.var, rico.var, lane, rg.var])
        return sum_(xv * yv, axis=[rkh, rkw, rico, rg])

    acc = compute((B, ocb, OH, owp, L), acc_body, name=f"{c.op.name}_int8", tag=c.op.tag,
                  attrs=c.op.attrs)  # fmt: skip
    res = compute((B, ocb, OH, owp, L), lambda *i: acc[i], name=f"{c.op.name}_res")
    wsum = _conv_weight_sum(wt, plan.shift) if plan.shift else None

    def view(b: Var, oc: Var, oh: Var, ow: Var) -> PrimExpr:
        value = res[b, oc // L, oh, ow, oc % L]
        return value - wsum[oc] if wsum is not None else value

    parts = {"view": anchor_view(op, view), "d": d, "w": w, "acc": acc, "res": res}
    if wsum is not None:
        parts["wsum"] = wsum
    return parts


# ------------------------------------------------------------------- conv2d, columns in lanes


def _lanes_intrinsic(plan: DotPlan) -> TensorIntrinsic:
    """`plan`'s intrinsic with the roles swapped: the weight broadcast (`a`), the data in
    the lanes (`b`): `vpdpbusd` with the signed operand broadcast; `vpmaddwd` as it is."""
    from ...te import intrinsics_x86 as x86

    if plan.kind in PAIR_KINDS:
        return plan.intrinsic
    swapped = x86.AVX512_VNNI_S8U8 if plan.kind == "avx512_vnni" else x86.AVX_VNNI_S8U8
    return x86.PORTABLE[swapped.name] if plan.intrinsic.name.endswith("_portable") else swapped


def flat_plane(c: Any) -> bool:
    """Whether conv `c` reads one input pixel for each output pixel (a 1x1 kernel, no
    padding, any stride): the column form then runs over the flattened output plane (the
    data conversion picks the strided pixels), so only the plane's end is padded to whole
    vectors, not every row (a 7-column row in 16 lanes wastes 9)."""
    from .conv2d import _ints

    KH, KW = _ints(c.weight.shape)[2:]
    return (KH, KW) == (1, 1) and not any(sum(c.pads, ()))


ROW_PADDING_MAX = 1.25
"""Most a row's width may grow, padded to whole vectors, for a conv to take the column form
(ResNet's 7-column 3x3 convs in 16 lanes: 2.3x; they take the channel form)."""


def column_form(c: Any, plan: DotPlan) -> bool:
    """Whether conv `c` runs in the column form (output columns in the lanes): flat-plane
    convs, and stride-1 convs whose rows pad to whole vectors by at most `ROW_PADDING_MAX`;
    others put output channels in the lanes."""
    if flat_plane(c):
        return True
    width = int(c.out_shape[3])
    padded = -(-width // plan.lanes) * plan.lanes
    return c.strides[1] == 1 and padded <= ROW_PADDING_MAX * width


def column_width(c: Any) -> int:
    """The columns of one row of the column form: the output width, or the whole plane
    (`flat_plane`)."""
    _, _, OH, OW = c.out_shape
    return int(OH * OW) if flat_plane(c) else int(OW)


def _column_tile(target: Target, out_channels: int, width: int, lanes: int) -> tuple[int, int]:
    """(channels, vectors) of the register tile of the column form: `channels` x `vectors`
    accumulators, leaving registers for the data vectors and a broadcast weight. Of the
    vector counts up to the register budget, the one padding `width` least (the widest of
    those)."""
    most = max(1, min(3 if _registers(target) >= 32 else 2, -(-width // lanes)))
    vecs = min(range(most, 0, -1), key=lambda v: -(-width // (v * lanes)) * v)
    rows = max(1, min(8, out_channels, (_registers(target) - vecs - 2) // vecs))
    return rows, vecs


def _schedule_conv2d_columns(
    s: Schedule,
    outputs: list[Tensor],
    anchor: Tensor,
    c: Any,
    plan: DotPlan,
    target: Target,
    ocb: int,
    vb: int,
) -> None:
    """The column form of the int8 conv (`column_form`): output columns in the
    vector lanes, `ocb` output channels (broadcast weights) by `vb` column vectors per
    register tile, the result in NCHW (`res`), so the requantize tail reads contiguous
    rows; the data interleaved in channel groups (`_schedule_data`)."""
    OC = int(getattr(c.weight.shape[0], "value", 0))
    B, _, OH, OW = c.out_shape
    L = plan.lanes
    flat = flat_plane(c)
    host, parts = install(s, outputs, anchor, "int8.conv2d_columns", kind=plan.kind, ocb=ocb,
                          vb=vb, flat=flat)  # fmt: skip
    d, acc, res, wsum = parts["d"], parts["acc"], parts["res"], parts.get("wsum")
    KH, KW = (int(getattr(e, "value", 0)) for e in c.weight.shape[2:])
    IC = int(getattr(c.raw.shape[1], "value", 0))
    parallel = target.num_threads > 1 and B * OC * OH * OW * KH * KW * IC >= PARALLEL_MIN_WORK
    blocks, threads = B * OC // ocb, target.num_threads
    in_tail = (
        flat
        and host is not anchor
        and OC % ocb == 0
        and (OH * OW) % (vb * L) == 0
        and list(extents(host.op)) == list(c.out_shape)
        and (not parallel or blocks % threads == 0 or blocks >= 4 * threads)
    )
    rs = s[res]
    rb, roc, roh, row = rs.op.axis
    at, owi = rs.split(row, factor=vb * L)
    if in_tail:
        # the result of each block of `ocb` channels is computed inside the tail's loop
        # over the blocks and read back from cache (a block's planes: 8 x 112 x 112 int32
        # is 400 KB), not from a buffer of all channels. Blocks are the parallel tasks:
        # only when they share out evenly (3 blocks on 2 threads ran 1.4x slower than
        # the result at root; 18 ran 1.35x faster)
        st = s[host]
        hb, hoc = _vectorized_planes(st, target)
        hoco, _ = st.split(hoc, factor=ocb)
        block_loop = st.fuse(hb, hoco)
        if parallel:
            st.parallel(block_loop)
        rs.compute_at(st, block_loop)
        rs.reorder(rb, roh, at, roc, owi)
    else:
        oco, oci = rs.split(roc, factor=ocb)
        rs.reorder(rb, oco, roh, at, oci, owi)
        if parallel:
            rs.parallel(rs.fuse(rb, oco, roh))
    _, owl = rs.split(owi, factor=L)
    rs.vectorize(owl)
    ast = s[acc]
    ast.compute_at(rs, at)
    _, aoc, _, aow = ast.op.axis
    awv, awl = ast.split(aow, factor=L)
    ast.reorder(*ast.op.reduce_axis[:-1], *ast.op.axis[:3], awv, awl, ast.op.reduce_axis[-1])
    ast.unroll(aoc)
    ast.unroll(awv)
    ast.tensorize(awl, _lanes_intrinsic(plan))
    _schedule_data(s, d, target)
    s[parts["w"]].compute_root()
    if wsum is not None:
        s[wsum].compute_root()
    if host is not anchor and not in_tail:
        if flat:
            _schedule_plane_tail(s, host, target)
        else:
            schedule_padded_tail(s, host, target)


def _vectorized_planes(st: Any, target: Target) -> tuple[Any, Any]:
    """Stage `st` (NCHW) with each channel's plane as one loop (its rows fused: a flat-plane
    conv's result is read at `oh * w + ow`, one contiguous run per channel), vectorized by
    int32 vectors; returns the batch and channel loops."""
    b, oc, oh, ow = st.op.axis
    _, lanes = st.split(st.fuse(oh, ow), factor=target.lanes("int32"))
    st.vectorize(lanes)
    return b, oc


def _schedule_plane_tail(s: Schedule, host: Tensor, target: Target) -> None:
    """The tail of a flat-plane conv (`flat_plane`; `host` NCHW at root): each channel's
    plane as one vectorized loop (`_vectorized_planes`), parallel over the channels."""
    from ..parallel_plan import ELEMENT_WEIGHT
    from . import parallel_rows

    sizes = extents(host.op)
    st = s[host]
    b, oc = _vectorized_planes(st, target)
    work = math.prod(sizes) * ELEMENT_WEIGHT
    if parallel_rows(st, [b, oc], sizes[:2], None, 1, work, target, PARALLEL_MIN_ELEMENTS) is None:
        st.fuse(b, oc)


def schedule_padded_tail(s: Schedule, host: Tensor, target: Target) -> None:
    """The tail of a conv (`host`, NCHW at root) that reads a result whose rows are padded
    past the output's width. When no vector width divides the output width, one loop over
    the rows (`b, c, oh`) with the columns inside: vectorized when a row holds at least 8
    int32 lanes (14 columns: 8 + 6 lanes), else a plain loop (7 columns); otherwise the
    injective schedule. Fusing such a row with the next axis indexes the padded result by
    `//` and `%` of the width: a scalar loop with a division per element, slower to run
    (MobileNet's 960-channel 7x7 depthwise kernel: 130 us fused, 37 us by rows on Zen 4)
    and, unrolled by LLVM into gathers, to compile."""
    from ..parallel_plan import ELEMENT_WEIGHT
    from . import parallel_rows, vector_factor
    from .injective import schedule_injective_stage

    sizes = extents(host.op)
    if len(sizes) != 4 or vector_factor(sizes[3], target.lanes(host.dtype)):
        schedule_injective_stage(s, host, target)
        return
    lanes = target.lanes("int32")
    while lanes > 8 and sizes[3] < lanes:
        lanes //= 2
    st = s[host]
    b, oc, oh, ow = st.op.axis
    if sizes[3] >= lanes:
        _, owi = st.split(ow, factor=lanes)
        st.vectorize(owi)
    work = math.prod(sizes) * ELEMENT_WEIGHT
    rows = parallel_rows(st, [b, oc, oh], sizes[:3], None, 1, work, target, PARALLEL_MIN_ELEMENTS)
    if rows is None:
        st.fuse(b, oc, oh)  # one loop over the rows


@register_rewrite("int8.conv2d_columns")
def conv2d_columns_rewrite(
    op: Any, kind: str, ocb: int, vb: int, flat: bool = False
) -> dict[str, Tensor]:
    """The int8 conv2d anchor `op` (`column_form`) in the column form with plan
    `kind`'s operands, by tiles of `ocb` channels and `vb` column vectors (`"d"`, `"w"`,
    `"acc"`, `"res"`, and `"wsum"` when the data is shifted). `flat` (`flat_plane` convs):
    the data, `acc` and `res` hold each channel's plane as one row."""
    from .conv2d import analyze_conv

    c = require(analyze_conv(op), "int8.conv2d_columns", op)
    x, wt = c.raw, c.weight
    plan = _plan(kind, x.dtype, False)
    B, IC, H, W = (int(getattr(e, "value", 0)) for e in x.shape)
    OC, _, KH, KW = (int(getattr(e, "value", 0)) for e in wt.shape)
    _, _, OH, OW = c.out_shape
    (sh, sw), (dh, dw) = c.strides, c.dilation
    pt, pl = c.pads[0][0], c.pads[1][0]
    L, G = plan.lanes, plan.group
    rows, cols = (1, OH * OW) if flat else (OH, OW)
    ocp = -(-OC // ocb) * ocb
    owp = -(-cols // (vb * L)) * (vb * L)
    icp = -(-IC // G) * G
    hp = (rows - 1) * sh + (KH - 1) * dh + 1
    wp = owp + (KW - 1) * dw

    def d_body(b: Var, ico: Var, h: Var, w_: Var, g: Var) -> PrimExpr:
        ic = ico * G + g
        if flat:
            inside = all_of(w_ < OH * OW, ic < IC)
            value = x[b, ic, w_ // OW * sh, w_ % OW * sw]
        else:
            hh, ww = h - pt, w_ - pl
            inside = all_of(hh >= 0, hh < H, ww >= 0, ww < W, ic < IC)
            value = x[b, ic, hh, ww]
        return if_then_else(inside, _to_a(plan, value), const(plan.shift, plan.a_dtype))

    d = compute((B, icp // G, hp, wp, G), d_body, name=f"{x.name}_nc{G}hwc", tag="injective")

    def w_body(oc: Var, kh: Var, kw: Var, ico: Var, g: Var) -> PrimExpr:
        ic = ico * G + g
        value = cast(plan.b_dtype, wt[oc, ic, kh, kw])
        return if_then_else(all_of(oc < OC, ic < IC), value, const(0, plan.b_dtype))

    w = compute((ocp, KH, KW, icp // G, G), w_body, name=f"{wt.name}_packed", tag="pack")
    rkh, rkw = reduce_axis(KH, "kh"), reduce_axis(KW, "kw")
    rico, rg = reduce_axis(icp // G, "ico"), reduce_axis(G, "g")

    def acc_body(b: Var, oc: Var, oh: Var, ow: Var) -> PrimExpr:
        wv = cast("int32", w[oc, rkh.var, rkw.var, rico.var, rg.var])
        xv = cast("int32", d[b, rico.var, oh * sh + rkh.var * dh, ow + rkw.var * dw, rg.var])
        return sum_(wv * xv, axis=[rkh, rkw, rico, rg])

    acc = compute((B, ocp, rows, owp), acc_body, name=f"{c.op.name}_int8", tag=c.op.tag,
                  attrs=c.op.attrs)  # fmt: skip
    res = compute((B, ocp, rows, owp), lambda *i: acc[i], name=f"{c.op.name}_res")
    wsum = _conv_weight_sum(wt, plan.shift) if plan.shift else None

    def view(b: Var, oc: Var, oh: Var, ow: Var) -> PrimExpr:
        value = res[b, oc, 0, oh * OW + ow] if flat else res[b, oc, oh, ow]
        return value - wsum[oc] if wsum is not None else value

    parts = {"view": anchor_view(op, view), "d": d, "w": w, "acc": acc, "res": res}
    if wsum is not None:
        parts["wsum"] = wsum
    return parts


def _conv_loads(c: Any) -> tuple[Any, Any]:
    from ...te.tensor import ProducerLoad
    from ...tir.visitor import sub_expressions

    loads = [e for e in sub_expressions(c.op.body[0].source[0]) if isinstance(e, ProducerLoad)]
    data = [ld for ld in loads if ld.producer is c.data]
    weight = [ld for ld in loads if ld.producer is c.weight]
    return (data[0] if data else None), (weight[0] if weight else None)


__all__ = [
    "DotPlan",
    "Int8Dense",
    "analyze_conv2d_int8",
    "analyze_dense_int8",
    "choose_plan",
    "conv2d_int8_tile",
    "dense_int8_tile",
    "force_plan",
    "schedule_conv2d_int8",
    "schedule_dense_int8",
]
