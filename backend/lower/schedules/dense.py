"""The schedule of matrix products (`dense`: `nn.dense`, `nn.matmul`, `contrib_dense_pack`),
and the machinery `batch_matmul` and `conv2d` share: replacing the anchor's compute by a
faster-to-schedule one, finding the output the anchor is computed in, register blocking.

A product `C[..., m, n] = sum_k A[.., m, k] * B[.., n, k]` (any leading batch axes, any
casts around the loads) is computed as a register-blocked micro-kernel:

    for no in [0, N/NB):                         # parallel (with the batch axes, and the
      pack B[no*NB : no*NB+NB, :] -> Bp[K, NB]   #  row blocks when there are few columns)
      for mo in [0, M/MR):
        acc[MR, NB] = 0                          # cache: MR x NB/V vector registers
        for k in [0, K):
          for mi in MR (unrolled): for v in NB/V (unrolled):
            acc[mi, v*V : v*V+V] += broadcast(A[m, k]) * Bp[k, v*V : v*V+V]
        out[m, n] = tail(acc[mi, ni])            # bias, relu, ... vectorized

A tail with transcendental calls (GELU's erf, a sigmoid: `EXPENSIVE_TAIL_CALLS`) is not
applied to each register block as it leaves the registers: the products of the column block
are stored first (`C[:, no*NB : no*NB+NB]`, 8 KB for 128 rows, in L1), then the tail runs
over them in one vectorized loop per column block. Measured on the transformer's
128x2048x512 dense + GELU (1 thread, fastest thread CPU time of 75 calls, alternating):
7.72 -> 7.51 ms, bit-identical; in the register block's epilogue the tail's long dependency
chains (erf's polynomials and division) overlap little with the multiply-adds. Few column
blocks (`parallel_rows`) keep the tail in the register block. The tail loop computes
`TAIL_INTERLEAVE` machine vectors per step (`tail_interleave`: the whole block's vectors as
one wide vector, rows unrolled for the rest), so several of those chains run side by side:
128x2048x16 dense + GELU, where the tail dominates, 0.651 -> 0.606 ms (1 thread, fastest
thread CPU time, alternating, bit-identical; 2 vectors x 2 rows on AVX2).

`B` is packed into `[N/NB, K, NB]` (zero-filled past N) inside the kernel when its rows are
contiguous in k (`dense`'s `(units, k)` weight), so the inner loop reads it as vectors; the
packing reads the weight once per call, one column block at a time (with the weights bound,
`lower/fold_constants.py` computes the packed weight at build time instead). When `B` is
already contiguous in n (`matmul` without transpose, `batch_matmul` with
`transpose_b=False`) it is read directly, and so is the weight of `nn.contrib_dense_pack`
when its layout `NC{nb}n` has the micro-kernel's column block (a whole number of vectors,
at most the register budget): alter-op-layout packs a constant weight so at compile time,
and the kernel has no packing stage at all. A packed weight of another block is repacked
like a plain one.

Few rows (M <= `GEMV_MAX_ROWS`: batch-1 models) or fewer columns than a vector use the
GEMV form instead, which packs nothing (the weight is read once, which bounds the speed):
the reduction is split into a vector of partial sums (an rfactor written as two computes),
contiguous in k for both operands:

    for no in [0, N/NB):                         # parallel
      for n in NB by NR:
        part[M, NR, V] = 0                       # M x NR vector registers
        for ko in [0, K/V):
          for m, j (unrolled): part[m, j, :] += A[m, ko*V : +V] * B[n+j, ko*V : +V]
        acc[m, n+j] = sum(part[m, j, :])         # horizontal sums
      out[..] = tail(acc[..])

How the anchor's compute is replaced (`install`): the anchor stage's operation becomes a
cheap view of a new compute (the packed product, or conv2d's channel-blocked one), which
lowering inlines into the element-wise tail (or which is the output itself). The new
computes are built by a registered compute rewrite (`te.rewrite`: `"dense.gemm"`,
`"dense.gemv"` here) from the anchor's operation and a few integers, and applied with the
`replace_compute` primitive, so the schedule's trace records it and replays.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen

from ....lang.optable import OpTable
from ...target import Target
from ...te.errors import ScheduleError
from ...te.rewrite import register_rewrite
from ...te.tensor import (
    ComputeOp,
    Operation,
    ProducerLoad,
    Tensor,
    compute,
    reduce_axis,
    sum_,
)
from ...tir.expr import (
    FloorDiv,
    FloorMod,
    IterKind,
    IterVar,
    PrimExpr,
    Range,
    Reduce,
    Var,
    const,
)
from ...tir.op import if_then_else
from ...tir.visitor import sub_expressions
from . import (
    PARALLEL_MIN_WORK,
    Schedule,
    ScheduleRule,
    aligned_depth,
    extents,
    inlined_ops,
    last_stage,
    stage_order,
    substitute,
)

GEMV_MAX_ROWS = 4
"""Products with at most this many rows (per batch) use the GEMV form."""

VECTOR_REGISTERS = {512: 32, 256: 16, 128: 16}
"""Vector registers per vector width (AVX-512 has 32, AVX2 and SSE 16)."""

# ------------------------------------------------------------------ rewriting the anchor


def replace_anchor(s: Schedule, anchor: Tensor, rewrite: str, **params: Any) -> dict[str, Tensor]:
    """Make the stage of `anchor` compute the view of the registered compute rewrite
    `rewrite` (`Schedule.replace_compute`, a recorded trace step); returns the rewrite's
    tensors by name. Call it before scheduling the anchor's stage."""
    return s.replace_compute(anchor, rewrite, **params)  # type: ignore[no-any-return]


def anchor_view(op: Operation, fn: Any) -> Tensor:
    """The element-wise view `fn(*axes)` a rewrite of `op` gives the anchor's stage (its
    name, shape and dtype)."""
    return compute(op.output(0).shape, fn, name=op.name, tag="elemwise")  # type: ignore[no-any-return]


def require(value: Any, rewrite: str, op: Operation) -> Any:
    """`value`, unless it is None: then the rewrite does not apply to `op` (a
    `ScheduleError`, e.g. a trace replayed on another computation)."""
    if value is None:
        raise ScheduleError(f"compute rewrite `{rewrite}` does not apply to {op.name}")
    return value


def _ints(shape: Sequence[PrimExpr]) -> list[int]:
    out = []
    for d in shape:
        v = getattr(d, "value", None)
        if not isinstance(v, int):
            raise ValueError("schedules need static shapes")
        out.append(v)
    return out


def tail_output(s: Schedule, outputs: Sequence[Tensor], anchor: Tensor) -> Tensor | None:
    """The output whose loops the anchor can be computed in: the anchor itself when it is
    an output, else the only output when it reads the anchor element for element (same
    shape, through inlined stages). None otherwise (several outputs, a reshape, ...).
    Ask before `replace_anchor`."""
    if any(o.op is anchor.op for o in outputs):
        return anchor
    if len(outputs) != 1:
        return None
    out = outputs[0]
    if _ints(out.shape) != _ints(anchor.shape) or out.op.num_outputs != 1:
        return None
    consumer, producer = s[out].op, s[anchor].op
    if aligned_depth(consumer, producer, inlined_ops(s)) != len(anchor.shape):
        return None
    return out


def install(
    s: Schedule, outputs: Sequence[Tensor], anchor: Tensor, rewrite: str, **params: Any
) -> tuple[Any, dict[str, Tensor]]:
    """Replace the anchor by the view of the compute rewrite `rewrite` (`replace_anchor`: an
    element-wise read of the rewrite's main compute), inline the view into the tail when the
    tail reads the anchor element for element, and return (the tensor whose loops the main
    compute is computed in: the output, or the view's own stage at root when the tail cannot
    host it, the tail then keeping its default schedule; the rewrite's tensors)."""
    host = tail_output(s, outputs, anchor)
    parts = replace_anchor(s, anchor, rewrite, **params)
    if host is None or host is anchor:
        return anchor, parts
    s[anchor].compute_inline()
    return host, parts


# ------------------------------------------------------------------------ analysis


@frozen
class Product:
    """A matrix-product anchor: `op` reduces `source` over `k`; `lhs`/`rhs` are its two
    loads (the rhs reads the last output axis `n`), `rhs_layout` says what the rhs's last
    index is: `"k"` (pack it), `"n"` (vectorize it directly), `"packed"` (the rhs is
    `[N/block, K, block]`, read at `[n // block, k, n % block]`: `contrib_dense_pack`)."""

    op: ComputeOp
    reduce: Reduce
    k: IterVar
    lhs: ProducerLoad
    rhs: ProducerLoad
    rhs_layout: str
    block: int = 0
    """The rhs's column block when `rhs_layout` is `"packed"`."""


def analyze_product(op: Operation) -> Product | None:
    """The product structure of a one-output sum over one reduce axis of two loads, with
    the rhs reading the last output axis; None when `op` is not of that form."""
    if not isinstance(op, ComputeOp) or op.num_outputs != 1 or not op.axis:
        return None
    body = op.body[0]
    if not isinstance(body, Reduce) or len(body.axis) != 1 or len(body.source) != 1:
        return None
    if body.combiner.name != "sum":
        return None
    k = body.axis[0]
    n = op.axis[-1].var
    loads = [e for e in sub_expressions(body.source[0]) if isinstance(e, ProducerLoad)]
    if len(loads) != 2:
        return None
    rhs = [ld for ld in loads if _mentions(ld, n)]
    lhs = [ld for ld in loads if not _mentions(ld, n)]
    if len(rhs) != 1 or len(lhs) != 1 or not _mentions(rhs[0], k.var):
        return None
    last = rhs[0].indices[-1]
    if last is k.var and not any(_mentions_expr(i, k.var) for i in rhs[0].indices[:-1]):
        layout = "k"
    elif last is n and not any(_mentions_expr(i, n) for i in rhs[0].indices[:-1]):
        layout = "n"
    elif block := packed_block(rhs[0], n, k.var):
        return Product(op, body, k, lhs[0], rhs[0], "packed", block)
    else:
        return None
    return Product(op, body, k, lhs[0], rhs[0], layout)


def packed_block(load: ProducerLoad, n: Var, k: Var) -> int:
    """`block` when `load` reads `[n // block, k, n % block]` (a weight in the layout
    `NC{block}n`), else 0."""
    if len(load.indices) != 3:
        return 0
    outer, middle, inner = load.indices
    if middle is not k or not isinstance(outer, FloorDiv) or not isinstance(inner, FloorMod):
        return 0
    if outer.a is not n or inner.a is not n:
        return 0
    block = getattr(outer.b, "value", None)
    if not isinstance(block, int) or block <= 0 or getattr(inner.b, "value", None) != block:
        return 0
    return block


def _mentions_expr(e: PrimExpr, v: Var) -> bool:
    return any(x is v for x in sub_expressions(e))


def _mentions(load: ProducerLoad, v: Var) -> bool:
    return any(_mentions_expr(i, v) for i in load.indices)


def _replace_load(e: PrimExpr, old: ProducerLoad, new: PrimExpr, sub: dict[Var, PrimExpr]) -> Any:
    """`e` with the load `old` replaced by `new`, then the variables of `sub` substituted."""
    from ...tir.visitor import rewrite_expr

    replaced = rewrite_expr(e, lambda node: new if node is old else None)
    return substitute(replaced, sub)


def _fresh_reduce(iv: IterVar, name: str | None = None) -> IterVar:
    return IterVar(Var(name or iv.var.name, iv.var.dtype), Range(iv.dom.min, iv.dom.extent),
                   IterKind.REDUCE)  # fmt: skip


def packed_product(p: Product, nb: int) -> tuple[Tensor, Tensor | None]:
    """(the product over `n` padded to a multiple of `nb`, reading the rhs packed as
    `[..., N/nb, K, nb]`, and the packing stage) for an rhs contiguous in k (or packed by
    another block); the product over the exact domain and None for an rhs contiguous in n
    or already packed by `nb`."""
    op = p.op
    sizes = [int(getattr(iv.dom.extent, "value", 0)) for iv in op.axis]
    n_ext = sizes[-1]
    k_new = _fresh_reduce(p.k)
    if p.rhs_layout == "n" or (p.rhs_layout == "packed" and p.block == nb):
        shape = sizes

        def plain(*idx: PrimExpr) -> PrimExpr:
            sub: dict[Var, PrimExpr] = {iv.var: i for iv, i in zip(op.axis, idx)}
            sub[p.k.var] = k_new.var
            src = substitute(p.reduce.source[0], sub)
            cond = substitute(p.reduce.condition, sub)
            return Reduce(p.reduce.combiner, (src,), (k_new,), cond, 0)

        return compute(shape, plain, name=f"{op.name}_blocked", tag=op.tag, attrs=op.attrs), None
    n_var = op.axis[-1].var
    batch = [iv for iv in op.axis[:-1] if _mentions(p.rhs, iv.var)]
    k_ext = int(getattr(p.k.dom.extent, "value", 0))
    blocks = -(-n_ext // nb)
    pack_shape = [int(getattr(iv.dom.extent, "value", 0)) for iv in batch] + [blocks, k_ext, nb]

    def pack_body(*idx: PrimExpr) -> PrimExpr:
        *b_idx, no, kk, ni = idx
        sub: dict[Var, PrimExpr] = {iv.var: i for iv, i in zip(batch, b_idx)}
        sub[n_var] = no * nb + ni
        sub[p.k.var] = kk
        value = ProducerLoad(p.rhs.producer, tuple(substitute(i, sub) for i in p.rhs.indices))
        if n_ext % nb == 0:
            return value
        return if_then_else(no * nb + ni < n_ext, value, const(0, value.dtype))

    packed = compute(pack_shape, pack_body, name=f"{p.rhs.producer.name}_packed",
                     tag="pack")  # fmt: skip
    shape = [*sizes[:-1], blocks * nb]

    def body(*idx: PrimExpr) -> PrimExpr:
        sub: dict[Var, PrimExpr] = {iv.var: i for iv, i in zip(op.axis, idx)}
        sub[p.k.var] = k_new.var
        n = idx[-1]
        index = [sub[iv.var] for iv in batch]
        index += [n // nb, k_new.var, n % nb]
        read = packed[tuple(index)]
        src = _replace_load(p.reduce.source[0], p.rhs, read, sub)
        cond = substitute(p.reduce.condition, sub)
        return Reduce(p.reduce.combiner, (src,), (k_new,), cond, 0)

    main = compute(shape, body, name=f"{op.name}_packed", tag=op.tag, attrs=op.attrs)
    return main, packed


@register_rewrite("dense.gemm")
def gemm_rewrite(op: Operation, nb: int) -> dict[str, Tensor]:
    """The product anchor `op` as `packed_product(nb)` (its main compute `"main"`, the
    packing stage `"packed"` when there is one)."""
    p = require(analyze_product(op), "dense.gemm", op)
    main, packed = packed_product(p, nb)
    parts = {"view": anchor_view(op, lambda *i: main[i]), "main": main}
    if packed is not None:
        parts["packed"] = packed
    return parts


# ---------------------------------------------------------------------- the loop nests


@frozen
class Blocking:
    """Register blocking of a product: `mr` rows by `nb` columns (`nb / lanes` vectors)."""

    mr: int
    nb: int
    lanes: int


def choose_blocking(rows: int, cols: int, lanes: int, target: Target) -> Blocking:
    """The micro-kernel's shape: up to 4 column vectors on AVX-512 (2 with 16 registers)
    as the columns fill them, by 6 rows with 4 (or 2 with 16 registers) vectors, else 8:
    at most 24 (12) accumulators, leaving registers for the rhs vectors and the broadcast.
    Measured on dense 1024^3: 6x64 runs at twice the speed on 2 threads as on one and beats
    8x48, 8x32, 5x64 and grouping column blocks (8x64 spills)."""
    vecs = max(1, min(_max_vectors(target), -(-cols // lanes)))
    return Blocking(blocking_rows(rows, vecs, target), vecs * lanes, lanes)


def _max_vectors(target: Target) -> int:
    return 4 if VECTOR_REGISTERS.get(target.vector_bits, 16) >= 32 else 2


def blocking_rows(rows: int, vecs: int, target: Target) -> int:
    """The micro-kernel's rows for `vecs` column vectors (`choose_blocking`'s rule)."""
    return max(1, min(rows, 6 if vecs == _max_vectors(target) else 8))


def fits_registers(block: int, lanes: int, target: Target) -> bool:
    """Whether a column block of `block` is a micro-kernel's (whole vectors, at most the
    register budget's count of them)."""
    return block % lanes == 0 and 1 <= block // lanes <= _max_vectors(target)


def _enough_work(op: Operation, reduce_len: int) -> bool:
    return math.prod(extents(op)) * reduce_len >= PARALLEL_MIN_WORK


def schedule_gemm(
    s: Schedule,
    host: Tensor,
    main: Tensor,
    packed: Tensor | None,
    blocking: Blocking,
    target: Target,
    config: Mapping[str, Any] | None = None,
) -> None:
    """The register-blocked nest (module docstring): `host`'s loops `(*batch, m, n)` tiled
    by `blocking`, `main` computed per row block in registers, `packed` per column block.
    `config` (`backend.tune`) may override `gemm_defaults`' knobs: `parallel`,
    `parallel_rows` (row blocks share the parallel loop), `unroll` (the register block's
    rows and vectors), `k_inner` (the reduction split, its inner part unrolled)."""
    knobs = {**gemm_defaults(host, main, blocking, target), **(config or {})}
    st = s[host]
    axes = list(st.op.axis)
    lanes, nb, mr = blocking.lanes, blocking.nb, blocking.mr
    no, ni = st.split(axes[-1], factor=nb)
    nio, nii = st.split(ni, factor=lanes)
    batch = axes[:-2] if len(axes) >= 2 else []
    parallel = bool(knobs["parallel"])
    mo: IterVar | None = None
    if len(axes) >= 2:
        mo, mi = st.split(axes[-2], factor=mr)
        st.reorder(*batch, no, mo, mi, nio, nii)
    else:
        st.reorder(no, nio, nii)
    st.vectorize(nii)
    pack_at: IterVar | None
    if parallel and knobs["parallel_rows"] and mo is not None:
        # few column blocks: the row blocks share the threads; the rhs packed at root
        par = st.fuse(*batch, no, mo)
        st.parallel(par)
        pack_at, main_at = None, par
    else:
        outer = st.fuse(*batch, no)
        if parallel:
            st.parallel(outer)
        pack_at, main_at = outer, (mo if mo is not None else outer)
    _schedule_main(s, main, st, main_at, lanes, knobs)
    if packed is not None:
        schedule_pack(s, packed, st, pack_at, lanes, target)


EXPENSIVE_TAIL_CALLS = frozenset({"erf", "exp", "tanh", "sigmoid", "log", "pow"})
"""Intrinsics that make a product's tail run per column block (module docstring)."""


def expensive_tail(s: Schedule, host: Tensor, anchor: Tensor) -> bool:
    """Whether the element-wise stages between `anchor` and its tail output `host` (inlined
    into `host`, or `host` itself) call one of `EXPENSIVE_TAIL_CALLS`."""
    from ...tir.expr import Call

    inlined = inlined_ops(s)
    for op in stage_order([host]):
        if op is anchor.op or not isinstance(op, ComputeOp):
            continue
        if op is not host.op and id(op) not in inlined:
            continue
        for body in op.body:
            if any(isinstance(e, Call) and e.name in EXPENSIVE_TAIL_CALLS
                   for e in sub_expressions(body)):  # fmt: skip
                return True
    return False


def _schedule_main(
    s: Schedule, main: Tensor, at: Any, at_iv: IterVar, lanes: int, knobs: Mapping[str, Any]
) -> None:
    """The register block: `main` computed at loop `at_iv` of stage `at`, its reduction
    outside its rows and column vectors (unrolled), the vectors' lanes vectorized."""
    ms = s[main]
    ms.compute_at(at, at_iv)
    m_axes = list(ms.op.axis)
    (k,) = ms.op.reduce_axis
    cno, cni = ms.split(m_axes[-1], factor=lanes)
    ks = [k]
    if int(knobs["k_inner"]) > 1:
        ks = list(ms.split(k, factor=int(knobs["k_inner"])))
    if len(m_axes) >= 2:
        ms.reorder(*m_axes[:-2], *ks, m_axes[-2], cno, cni)
        if knobs["unroll"]:
            ms.unroll(m_axes[-2])
    else:
        ms.reorder(*ks, cno, cni)
    if knobs["unroll"]:
        ms.unroll(cno)
    if len(ks) == 2:
        ms.unroll(ks[1])
    ms.vectorize(cni)


TAIL_INTERLEAVE = 4
"""Machine vectors of an expensive tail computed side by side (`tail_interleave`)."""


def tail_interleave(block_vectors: int, rows: int, interleave: int) -> tuple[int, int]:
    """How the tail loop over a column block of `block_vectors` machine vectors and `rows`
    rows computes `interleave` vectors at a time (so their long dependency chains, erf's
    polynomials and division, overlap): (vectors per vector operation, the largest count
    up to `interleave` dividing the block's; rows unrolled, the rest of `interleave` when
    it divides the rows, else 1)."""
    vectors = max(v for v in range(1, max(1, interleave) + 1) if block_vectors % v == 0)
    unrolled = max(1, interleave // vectors)
    return vectors, unrolled if rows % unrolled == 0 and rows > unrolled else 1


def schedule_gemm_block_tail(
    s: Schedule,
    host: Tensor,
    anchor: Tensor,
    main: Tensor,
    packed: Tensor | None,
    blocking: Blocking,
    knobs: Mapping[str, Any],
    target: Target,
) -> None:
    """The register-blocked nest with an expensive tail (module docstring): per column block
    of `host`'s `(*batch, m, n)`, the anchor's products of the block are computed (register
    blocks of `blocking.mr` rows, `main` in registers) and stored, then `host`'s tail runs
    over the block, vectorized. `knobs` as `schedule_gemm`'s (not `parallel_rows`)."""
    lanes, nb, mr = blocking.lanes, blocking.nb, blocking.mr
    st = s[host]
    axes = list(st.op.axis)
    batch = axes[:-2]
    no, ni = st.split(axes[-1], factor=nb)
    vectors, rows = tail_interleave(nb // lanes, extents(host.op)[-2], TAIL_INTERLEAVE)
    columns = [ni] if vectors * lanes == nb else list(st.split(ni, factor=vectors * lanes))
    row_loops = [axes[-2]]
    if rows > 1:
        row_loops = list(st.split(axes[-2], factor=rows))
    st.reorder(*batch, no, *row_loops, *columns)
    if rows > 1:
        st.unroll(row_loops[-1])
    st.vectorize(columns[-1])
    outer = st.fuse(*batch, no)
    if knobs["parallel"]:
        st.parallel(outer)
    vs = s[anchor]
    vs.compute_at(st, outer)
    v_axes = list(vs.op.axis)
    mo, mi = vs.split(v_axes[-2], factor=mr)
    vno, vni = vs.split(v_axes[-1], factor=lanes)
    vs.reorder(*v_axes[:-2], mo, mi, vno, vni)
    vs.vectorize(vni)
    _schedule_main(s, main, vs, mo, lanes, knobs)
    if packed is not None:
        schedule_pack(s, packed, st, outer, lanes, target)


def gemm_defaults(host: Tensor, main: Tensor, blocking: Blocking, target: Target) -> dict[str, Any]:
    """The default knobs of `schedule_gemm` (what it does without a config)."""
    sizes = [int(getattr(iv.dom.extent, "value", 0)) for iv in host.op.axis]  # type: ignore[attr-defined]
    n_blocks = -(-sizes[-1] // blocking.nb)
    col_blocks = math.prod(sizes[: max(0, len(sizes) - 2)]) * n_blocks
    threads = target.num_threads
    k_len = int(getattr(main.op.reduce_axis[0].dom.extent, "value", 1))  # type: ignore[attr-defined]
    return {
        "parallel": threads > 1 and _enough_work(host.op, k_len),
        "parallel_rows": col_blocks < 4 * threads,
        "unroll": True,
        "k_inner": 1,
    }


def schedule_pack(
    s: Schedule, packed: Tensor, host: Any, at: IterVar | None, lanes: int, target: Target
) -> None:
    """The packing stage `[..., blocks, K, nb]`: computed per column block at loop `at` of
    `host` when given, else at root (parallel over the blocks); its last axis vectorized."""
    ps = s[packed]
    axes = list(ps.op.axis)
    nb = int(getattr(axes[-1].dom.extent, "value", 1))
    inner = axes[-1]
    if nb > lanes:
        _, inner = ps.split(axes[-1], factor=lanes)
    ps.vectorize(inner)
    if at is not None:
        ps.compute_at(host, at)
        return
    if target.num_threads > 1:
        outer = axes[:-2]
        ps.parallel(ps.fuse(*outer) if len(outer) > 1 else outer[0])


def split_width(k: int, lanes: int) -> int:
    """How many partial sums a reduction of length `k` is split into: one vector when it
    divides `k`, else a divisor of `k` of at least half a vector (odd vector widths are
    fine), else `k` itself when shorter than a vector, else one vector with a guarded last
    step."""
    if k % lanes == 0:
        return lanes
    for w in range(min(k, lanes), lanes // 2 - 1, -1):
        if w > 0 and k % w == 0:
            return w
    return k if k < lanes else lanes


def split_k_product(p: Product, width: int) -> tuple[Tensor, Tensor]:
    """(the product as a sum over `width` partial sums, the partial sums
    `[..., m, n, width]` with partial `l` summing `k = ko * width + l`): the reduction
    split so that each partial sum is a vector lane (rfactor by hand)."""
    op = p.op
    sizes = [int(getattr(iv.dom.extent, "value", 0)) for iv in op.axis]
    k_ext = int(getattr(p.k.dom.extent, "value", 0))
    ko = reduce_axis(-(-k_ext // width), "ko")

    def partial_body(*idx: PrimExpr) -> PrimExpr:
        *out, lane = idx
        sub: dict[Var, PrimExpr] = {iv.var: i for iv, i in zip(op.axis, out)}
        k = ko.var * width + lane
        sub[p.k.var] = k
        src = substitute(p.reduce.source[0], sub)
        cond = substitute(p.reduce.condition, sub)
        if k_ext % width:
            src = if_then_else(k < k_ext, src, const(0, src.dtype))
        return Reduce(p.reduce.combiner, (src,), (ko,), cond, 0)

    partial = compute([*sizes, width], partial_body, name=f"{op.name}_partial", tag=op.tag,
                      attrs=op.attrs)  # fmt: skip
    lane = reduce_axis(width, "lane")

    def total_body(*idx: PrimExpr) -> PrimExpr:
        return sum_(partial[tuple(idx) + (lane.var,)], axis=lane)  # noqa: RUF005

    total = compute(sizes, total_body, name=f"{op.name}_sum", tag=op.tag, attrs=op.attrs)
    return total, partial


@register_rewrite("dense.gemv")
def gemv_rewrite(op: Operation, width: int) -> dict[str, Tensor]:
    """The product anchor `op` as `split_k_product(width)` (`"total"`, `"partial"`)."""
    p = require(analyze_product(op), "dense.gemv", op)
    total, partial = split_k_product(p, width)
    return {"view": anchor_view(op, lambda *i: total[i]), "total": total, "partial": partial}


def gemv_tile(rows: int, cols: int, target: Target) -> int:
    """The GEMV nest's default columns per register tile (few rows): as many independent
    accumulators (rows x columns) as half the vector registers, which hides the FMA latency
    and leaves the other half for the operands' loads (AVX2: 8 accumulators; 16 spilled,
    784x512 at batch 1 was 15% slower on one thread)."""
    accumulators = VECTOR_REGISTERS.get(target.vector_bits, 16) // 2
    return max(1, min(cols, accumulators // rows))


def gemv_column_vectors(cols: int, lanes: int) -> int:
    """The GEMV nest's default vectors of columns per parallel block (few rows)."""
    return 4 if cols >= 4 * lanes else 1


def schedule_gemv(
    s: Schedule,
    host: Tensor,
    total: Tensor,
    partial: Tensor,
    target: Target,
    config: Mapping[str, Any] | None = None,
) -> None:
    """Few rows (or few columns): the reduction split into a vector of partial sums
    (`split_k_product`), accumulated in registers for a tile of rows x columns (all the
    rows and `gemv_tile` columns, or all the columns and up to 16 / columns rows: as many
    independent accumulators as hide the FMA latency), then each summed across its
    lanes. Parallel over column blocks (few rows) or row blocks (many rows). `config`
    (`backend.tune`) may set, for few rows, `columns` (vectors of columns per parallel
    block) and `tile` (columns per register tile), and `parallel`."""
    config = config or {}
    st = s[host]
    axes = list(st.op.axis)
    sizes = [_extent_of(iv) for iv in axes]
    lanes = target.lanes(host.dtype)
    batch = axes[:-2]
    m = axes[-2] if len(axes) >= 2 else None
    rows, cols = (sizes[-2] if m is not None else 1), sizes[-1]
    few_rows = rows <= GEMV_MAX_ROWS
    if few_rows:
        nb = int(config.get("columns", gemv_column_vectors(cols, lanes))) * lanes
        no, ni = st.split(axes[-1], factor=nb)
        st.reorder(*batch, no, *([m] if m is not None else []), ni)
        block = st.fuse(*batch, no)
        inner_n = ni
        blocks = math.prod(sizes[: len(batch)]) * -(-cols // nb)
        mr, nr = rows, int(config.get("tile", gemv_tile(rows, cols, target)))
    else:
        assert m is not None
        mo, _ = st.split(m, factor=16)
        block = st.fuse(*batch, mo)
        inner_n = axes[-1]
        blocks = math.prod(sizes[: len(batch)]) * -(-rows // 16)
        nr = cols
        mr = max(1, min(16, 16 // cols))
    if cols >= lanes:
        _, nii = st.split(inner_n, factor=lanes)
        st.vectorize(nii)
    ts = s[total]
    ts.compute_at(st, block)
    t_axes = list(ts.op.axis)
    nto, nti = ts.split(t_axes[-1], factor=nr)
    if len(t_axes) >= 2:
        mto, mti = ts.split(t_axes[-2], factor=mr)
        ts.reorder(*t_axes[:-2], mto, nto, mti, nti)
    ps = s[partial]
    ps.compute_at(ts, nto)
    p_axes = list(ps.op.axis)
    (ko,) = ps.op.reduce_axis
    ps.reorder(*p_axes[:-3], ko, *p_axes[-3:])
    for ax in p_axes[-3:-1]:
        ps.unroll(ax)
    ps.vectorize(p_axes[-1])
    k_len = _extent_of(ko) * _extent_of(p_axes[-1])
    parallel = config.get("parallel", gemv_parallel(host.op, k_len, target))
    if parallel and blocks > 1:
        st.parallel(block)


def gemv_parallel(op: Operation, k_len: int, target: Target) -> bool:
    """Whether the GEMV nest of product `op` (reduction length `k_len`) runs parallel by
    default: several threads and enough work."""
    return target.num_threads > 1 and _enough_work(op, k_len)


def _extent_of(iv: IterVar) -> int:
    return int(getattr(iv.dom.extent, "value", 1))


def _rows(p: Product) -> int:
    sizes = [int(getattr(iv.dom.extent, "value", 0)) for iv in p.op.axis]
    return sizes[-2] if len(sizes) >= 2 else 1


def schedule_product(
    s: Schedule,
    outputs: list[Tensor],
    anchor: Tensor,
    target: Target,
    config: Mapping[str, Any] | None = None,
) -> bool:
    """Schedule a matrix-product anchor (dense or batch_matmul) with the register-blocked or
    GEMV nest; False (nothing changed) when the anchor is not a plain product. `config`
    (`backend.tune`) may set the register block (`rows`, `vectors`) and `schedule_gemm`'s
    knobs of the register-blocked nest, or the GEMV nest's (`schedule_gemv`)."""
    config = config or {}
    p = analyze_product(s[anchor].op)
    if p is None or anchor.op.num_outputs != 1 or 0 in extents(anchor.op):
        return False
    if int(getattr(p.k.dom.extent, "value", 0)) == 0:
        return False
    lanes = target.lanes(anchor.dtype)
    rows = _rows(p)
    cols = int(getattr(p.op.axis[-1].dom.extent, "value", 0))
    if p.rhs_layout == "k" and (rows <= GEMV_MAX_ROWS or cols < lanes):
        width = split_width(int(getattr(p.k.dom.extent, "value", 0)), lanes)
        host, parts = install(s, outputs, anchor, "dense.gemv", width=width)
        schedule_gemv(s, host, parts["total"], parts["partial"], target, config)
        return True
    blocking = choose_blocking(rows, cols, lanes, target)
    if p.rhs_layout == "packed" and fits_registers(p.block, lanes, target):
        blocking = Blocking(blocking_rows(rows, p.block // lanes, target), p.block, lanes)
    if "rows" in config or "vectors" in config:
        mr = int(config.get("rows", blocking.mr))
        blocking = Blocking(mr, int(config.get("vectors", blocking.nb // lanes)) * lanes, lanes)
    gemm_knobs = {k: v for k, v in config.items() if k not in ("rows", "vectors")}
    tail = tail_output(s, outputs, anchor)
    if tail is not None and tail is not anchor and expensive_tail(s, tail, anchor):
        parts = replace_anchor(s, anchor, "dense.gemm", nb=blocking.nb)
        main, packed = parts["main"], parts.get("packed")
        knobs = {**gemm_defaults(tail, main, blocking, target), **gemm_knobs}
        if len(tail.shape) >= 2 and not knobs["parallel_rows"]:
            schedule_gemm_block_tail(s, tail, anchor, main, packed, blocking, knobs, target)
        else:
            s[anchor].compute_inline()
            schedule_gemm(s, tail, main, packed, blocking, target, gemm_knobs)
        return True
    host, parts = install(s, outputs, anchor, "dense.gemm", nb=blocking.nb)
    schedule_gemm(s, host, parts["main"], parts.get("packed"), blocking, target, gemm_knobs)
    return True


def schedule_dense(
    s: Schedule,
    outputs: list[Tensor],
    anchor: Tensor,
    target: Target,
    config: Mapping[str, Any] | None = None,
) -> None:
    """`dense`/`matmul`/`contrib_dense_pack` (module docstring); an anchor of another form
    gets the generic reduction schedule; 8-bit operands get the int8 nest (`int8`).
    `config`: knobs of the register-blocked or GEMV nest (`schedule_product`), or of the
    int8 nest (`schedule_dense_int8`)."""
    from .int8 import schedule_dense_int8

    if schedule_dense_int8(s, outputs, anchor, target, config):
        return
    if not schedule_product(s, outputs, anchor, target, config):
        from .generic import schedule_generic

        schedule_generic(s, outputs, anchor, target)


DENSE: ScheduleRule = ScheduleRule(schedule_dense, last_stage)
"""Matrix-product kernels, anchored at the product stage."""

SCHEDULES: OpTable[ScheduleRule] = OpTable("schedule")
SCHEDULES.register("nn.dense", "nn.matmul", "nn.contrib_dense_pack")(DENSE)

__all__ = [
    "EXPENSIVE_TAIL_CALLS",
    "GEMV_MAX_ROWS",
    "Blocking",
    "Product",
    "analyze_product",
    "anchor_view",
    "blocking_rows",
    "choose_blocking",
    "expensive_tail",
    "fits_registers",
    "gemm_defaults",
    "gemm_rewrite",
    "gemv_column_vectors",
    "gemv_parallel",
    "gemv_rewrite",
    "gemv_tile",
    "install",
    "packed_block",
    "packed_product",
    "replace_anchor",
    "require",
    "schedule_dense",
    "schedule_gemm",
    "schedule_gemm_block_tail",
    "schedule_gemv",
    "schedule_pack",
    "schedule_product",
    "split_k_product",
    "split_width",
    "tail_output",
]
