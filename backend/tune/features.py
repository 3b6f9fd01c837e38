"""Features of a lowered kernel for the tuning cost model: a fixed-length vector describing
the loop nests of a TIR `PrimFunc`, so a tree model can rank schedules of one kernel.

Every buffer store is a *site*: the loops around it (extents and kinds), the accesses it
makes (the store and the loads of its value) and the arithmetic it does. For each site:

* work: iterations, float operations, operations per iteration, loads, nesting depth;
* annotations: vector width (vector dtypes and vectorized loops), parallel extent,
  unrolled extent, the kind and extent of the innermost loop;
* memory: bytes and cache lines touched by the whole nest, arithmetic intensity, reuse
  (accesses per touched byte), the footprint of the innermost 1..6 loops, how many inner
  loops fit in L1 / L2, and the strides of the accesses along the innermost axis (the
  vector lanes when there are any): the share with stride 0, 1, larger or unknown;
* the innermost `LEVELS` loops one by one: extent, kind and the share of accesses whose
  index depends on the loop.

The vector is the features of the heaviest site (most float operations), then the
iteration-weighted mean over all sites, then a few whole-function counts; `FEATURE_NAMES`
names every entry. Index expressions are linearized (row-major) into per-variable
coefficients; what is not affine (`//`, `%` by a constant are approximated) counts as
unknown. The walks keep their own stacks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from attrs import frozen

from ..tir.dtypes import bits_of, lanes_of
from ..tir.expr import (
    Add,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    CmpOp,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Mod,
    Mul,
    PrimExpr,
    Ramp,
    Select,
    Sub,
    Var,
)
from ..tir.stmt import (
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
from ..tir.visitor import children

LEVELS = 6
"""How many innermost loops of a site are described one by one."""

UNKNOWN_EXTENT = 64
"""The extent assumed for a loop whose extent is not a constant."""

L1_BYTES = 32 * 1024
L2_BYTES = 512 * 1024
LINE_BYTES = 64

_KIND_CODE = {ForKind.SERIAL: 0, ForKind.UNROLLED: 1, ForKind.VECTORIZED: 2, ForKind.PARALLEL: 3}

_SITE_NAMES: tuple[str, ...] = (
    "log_iterations",
    "log_flops",
    "ops_per_iteration",
    "loads",
    "depth",
    "vector_width",
    "log_parallel_extent",
    "outermost_parallel",
    "log_unroll_extent",
    "log_innermost_extent",
    "innermost_serial",
    "innermost_unrolled",
    "innermost_vectorized",
    "innermost_parallel",
    "stride0_share",
    "stride1_share",
    "strided_share",
    "unknown_stride_share",
    "log_max_inner_stride",
    "store_inner_stride",
    "log_bytes_touched",
    "log_lines_touched",
    "log_arith_intensity",
    "log_reuse",
    *(f"log_footprint_inner{d}" for d in range(1, LEVELS + 1)),
    "inner_loops_in_l1",
    "inner_loops_in_l2",
    "guarded",
    "stores_local",
    "local_load_share",
    *(
        f"level{d}_{what}"
        for d in range(1, LEVELS + 1)
        for what in ("log_extent", "kind", "dependent_share")
    ),
)

_FUNC_NAMES: tuple[str, ...] = (
    "sites",
    "loops",
    "log_total_flops",
    "log_total_bytes",
    "log_total_iterations",
    "allocations",
    "log_local_bytes",
    "log_global_alloc_bytes",
    "max_depth",
    "parallel_loops",
    "vectorized_loops",
    "unrolled_loops",
    "parallel_work_share",
)

FEATURE_NAMES: tuple[str, ...] = (
    *(f"main.{n}" for n in _SITE_NAMES),
    *(f"mean.{n}" for n in _SITE_NAMES),
    *(f"func.{n}" for n in _FUNC_NAMES),
)
"""The name of each entry of `tir_features`' vector."""

FEATURE_COUNT = len(FEATURE_NAMES)
"""Length of `tir_features`' vector."""


@frozen
class _Loop:
    var: Var
    extent: int
    kind: ForKind


@frozen
class _Access:
    """One buffer access of a site: linear coefficients of its flat index per variable
    (None when not affine), the vector lanes' stride (0 for a scalar access), element
    bytes, and whether the buffer is local."""

    buffer: Any
    coeffs: dict[Var, float] | None
    lane_stride: float
    lanes: int
    elem_bytes: float
    local: bool
    is_store: bool


def _log(x: float) -> float:
    return math.log2(1.0 + max(x, 0.0))


def _int_value(e: PrimExpr, default: int) -> int:
    return int(e.value) if isinstance(e, IntImm) else default


def _row_major_strides(shape: Sequence[PrimExpr]) -> list[float]:
    strides = [1.0] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * _int_value(shape[d + 1], UNKNOWN_EXTENT)
    return strides


# ------------------------------------------------------------------ linear index analysis

_Linear = tuple[dict[Var, float], float, float] | None
"""(coefficient per variable, constant, lane stride) of an index, None if not affine."""


def _linear(expr: PrimExpr) -> _Linear:
    """The affine form of an index expression (iterative post-order)."""
    done: dict[int, _Linear] = {}
    stack: list[tuple[PrimExpr, bool]] = [(expr, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in done:
            continue
        kids = _index_children(node)
        if not ready and kids:
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in done)
            continue
        done[id(node)] = _combine(node, [done[id(k)] for k in kids])
    return done[id(expr)]


def _index_children(node: PrimExpr) -> list[PrimExpr]:
    if isinstance(node, BinaryOp):
        return [node.a, node.b]
    if isinstance(node, Ramp):
        return [node.base, node.stride]
    if isinstance(node, Broadcast):
        return [node.value]
    if isinstance(node, Cast):
        return [node.value]
    return []


def _scale(form: tuple[dict[Var, float], float, float], k: float) -> _Linear:
    coeffs, const, lane = form
    return ({v: c * k for v, c in coeffs.items()}, const * k, lane * k)


def _combine(node: PrimExpr, kids: list[_Linear]) -> _Linear:
    if isinstance(node, IntImm):
        return ({}, float(node.value), 0.0)
    if isinstance(node, FloatImm):
        return ({}, float(node.value), 0.0)
    if isinstance(node, Var):
        return ({node: 1.0}, 0.0, 0.0)
    if any(k is None for k in kids):
        return None
    if isinstance(node, Cast | Broadcast):
        return kids[0]
    if isinstance(node, Ramp):
        base, stride = kids
        assert base is not None and stride is not None
        if stride[0]:
            return None
        return (base[0], base[1], base[2] + stride[1])
    if isinstance(node, Add | Sub):
        a, b = kids
        assert a is not None and b is not None
        sign = 1.0 if isinstance(node, Add) else -1.0
        coeffs = dict(a[0])
        for v, c in b[0].items():
            coeffs[v] = coeffs.get(v, 0.0) + sign * c
        return (coeffs, a[1] + sign * b[1], a[2] + sign * b[2])
    if isinstance(node, Mul):
        a, b = kids
        assert a is not None and b is not None
        if not b[0] and not b[2]:
            return _scale(a, b[1])
        if not a[0] and not a[2]:
            return _scale(b, a[1])
        return None
    if isinstance(node, FloorDiv | Div):
        a, b = kids
        assert a is not None and b is not None
        if b[0] or b[2] or b[1] == 0:
            return None
        return _scale(a, 1.0 / b[1])
    if isinstance(node, FloorMod | Mod):
        # `x % c` moves like `x` over a stretch shorter than `c`: keep the coefficients.
        a, b = kids
        assert a is not None and b is not None
        if b[0] or b[2]:
            return None
        return a
    return None


def _access(buffer: Any, indices: Sequence[PrimExpr], lanes: int, is_store: bool) -> _Access:
    strides = _row_major_strides(buffer.shape) if len(indices) == len(buffer.shape) else []
    if not strides:
        strides = [1.0] * len(indices)
    coeffs: dict[Var, float] | None = {}
    lane_stride = 0.0
    for index, stride in zip(indices, strides):
        form = _linear(index)
        if form is None or coeffs is None:
            coeffs = None
            continue
        for v, c in form[0].items():
            coeffs[v] = coeffs.get(v, 0.0) + c * stride
        lane_stride += form[2] * stride
    return _Access(
        buffer=buffer.data,
        coeffs=coeffs,
        lane_stride=abs(lane_stride),
        lanes=lanes,
        elem_bytes=max(bits_of(buffer.dtype), 8) / 8.0,
        local=buffer.scope != "global",
        is_store=is_store,
    )


# ------------------------------------------------------------------------- sites


@frozen
class _Site:
    loops: tuple[_Loop, ...]
    accesses: tuple[_Access, ...]
    ops: float  # float (or any, for integer kernels) operations per iteration, lanes counted
    guarded: bool


def _value_ops_and_loads(value: PrimExpr) -> tuple[float, list[BufferLoad]]:
    """Arithmetic operations (times lanes) and the loads of a stored value; the walk does
    not enter the loads' indices."""
    ops = 0.0
    loads: list[BufferLoad] = []
    seen: set[int] = set()
    stack = [value]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, BufferLoad):
            loads.append(node)
            continue
        if isinstance(node, BinaryOp | CmpOp | Select | Call):
            weight = 4.0 if isinstance(node, Call) else 1.0
            ops += weight * lanes_of(node.dtype)
        if isinstance(node, Let):
            stack.extend([node.value, node.body])
            continue
        stack.extend(k for k in children(node) if isinstance(k, PrimExpr))
    return ops, loads


def _collect_sites(func: PrimFunc) -> tuple[list[_Site], dict[str, float]]:
    """Every buffer store of `func` with its loop nest, and whole-function counts."""
    sites: list[_Site] = []
    counts = {
        "loops": 0.0,
        "allocations": 0.0,
        "local_bytes": 0.0,
        "global_alloc_bytes": 0.0,
        "parallel_loops": 0.0,
        "vectorized_loops": 0.0,
        "unrolled_loops": 0.0,
    }
    stack: list[tuple[Stmt, tuple[_Loop, ...], bool]] = [(func.body, (), False)]
    while stack:
        s, loops, guarded = stack.pop()
        if isinstance(s, For):
            loop = _Loop(s.loop_var, max(_int_value(s.extent, UNKNOWN_EXTENT), 1), s.kind)
            counts["loops"] += 1
            if s.kind is ForKind.PARALLEL:
                counts["parallel_loops"] += 1
            elif s.kind is ForKind.VECTORIZED:
                counts["vectorized_loops"] += 1
            elif s.kind is ForKind.UNROLLED:
                counts["unrolled_loops"] += 1
            stack.append((s.body, (*loops, loop), guarded))
        elif isinstance(s, SeqStmt):
            stack.extend((c, loops, guarded) for c in reversed(s.stmts))
        elif isinstance(s, IfThenElse):
            stack.append((s.then_case, loops, True))
            if s.else_case is not None:
                stack.append((s.else_case, loops, True))
        elif isinstance(s, LetStmt):
            stack.append((s.body, loops, guarded))
        elif isinstance(s, Allocate):
            size = 1.0
            for d in s.buffer.shape:
                size *= _int_value(d, UNKNOWN_EXTENT)
            nbytes = size * max(bits_of(s.buffer.dtype), 8) / 8.0
            counts["allocations"] += 1
            key = "global_alloc_bytes" if s.buffer.scope == "global" else "local_bytes"
            counts[key] += nbytes
            stack.append((s.body, loops, guarded))
        elif isinstance(s, BufferStore):
            ops, loads = _value_ops_and_loads(s.value)
            lanes = lanes_of(s.value.dtype)
            accesses = [_access(s.buffer, s.indices, lanes, True)]
            accesses += [_access(ld.buffer, ld.indices, lanes_of(ld.dtype), False) for ld in loads]
            sites.append(_Site(loops, tuple(accesses), ops, guarded))
        elif isinstance(s, Evaluate):
            continue
    return sites, counts


def _footprints(acc: _Access, loops: Sequence[_Loop]) -> list[tuple[float, float]]:
    """(elements, cache lines) `acc` touches while the innermost 1, 2, ... len(loops) loops
    run (upper estimates; entry 0 is a single iteration, the last the whole nest)."""
    count = float(max(acc.lanes, 1))
    span = 1.0 + (count - 1) * acc.lane_stride
    min_stride = acc.lane_stride if acc.lanes > 1 and acc.lane_stride else math.inf
    out: list[tuple[float, float]] = []
    for d in range(len(loops), -1, -1):
        if d < len(loops):
            lp = loops[d]
            c = 1.0 if acc.coeffs is None else abs(acc.coeffs.get(lp.var, 0.0))
            if c:
                count *= lp.extent
                span += (lp.extent - 1) * c
                min_stride = min(min_stride, c)
        if acc.coeffs is None:
            out.append((count, count))
            continue
        elements = min(count, span)
        per_line = 1.0 if min_stride is math.inf else LINE_BYTES / (acc.elem_bytes * min_stride)
        out.append((elements, max(elements / max(per_line, 1.0), 1.0)))
    return out


def _site_features(site: _Site) -> tuple[list[float], float, float, float]:
    """(the site's feature vector, its float operations, bytes touched, iterations)."""
    loops = site.loops
    iterations = float(np.prod([lp.extent for lp in loops])) if loops else 1.0
    flops = site.ops * iterations
    vector_width = max((a.lanes for a in site.accesses), default=1)
    for lp in loops:
        if lp.kind is ForKind.VECTORIZED:
            vector_width *= lp.extent
    parallel = math.prod(lp.extent for lp in loops if lp.kind is ForKind.PARALLEL)
    unrolled = math.prod(lp.extent for lp in loops if lp.kind is ForKind.UNROLLED)
    inner = loops[-1] if loops else None
    inner_kind = [0.0] * 4
    if inner is not None:
        inner_kind[_KIND_CODE[inner.kind]] = 1.0

    # strides along the innermost axis: the lanes of a vector access, else the innermost loop
    n = len(site.accesses)
    site_lanes = site.accesses[0].lanes if site.accesses else 1
    stride_counts = [0.0, 0.0, 0.0, 0.0]
    max_stride = 0.0
    store_stride = 0.0
    for a in site.accesses:
        if a.coeffs is None:
            stride_counts[3] += 1
            continue
        if site_lanes > 1:  # a scalar load in a vector site is broadcast: stride 0
            s = a.lane_stride if a.lanes > 1 else 0.0
        elif inner is not None:
            s = abs(a.coeffs.get(inner.var, 0.0))
        else:
            s = 0.0
        stride_counts[0 if s == 0 else 1 if s == 1 else 2] += 1
        max_stride = max(max_stride, s)
        if a.is_store:
            store_stride = s
    shares = [c / n for c in stride_counts] if n else stride_counts

    # footprints of the innermost 0..depth loops, per access; the whole nest per buffer
    prints = [_footprints(a, loops) for a in site.accesses]
    by_buffer: dict[int, tuple[float, float]] = {}
    for a, fps in zip(site.accesses, prints):
        elements, lines = fps[-1]
        key = id(a.buffer)
        old = by_buffer.get(key, (0.0, 0.0))
        by_buffer[key] = (max(old[0], elements * a.elem_bytes), max(old[1], lines))
    bytes_touched = sum(b for b, _ in by_buffer.values())
    lines_touched = sum(line for _, line in by_buffer.values())
    access_bytes = sum(a.elem_bytes * max(a.lanes, 1) for a in site.accesses) * iterations
    level_bytes = [
        sum(fps[d][0] * a.elem_bytes for a, fps in zip(site.accesses, prints))
        for d in range(len(loops) + 1)
    ]
    footprints = [level_bytes[d] if d <= len(loops) else -1.0 for d in range(1, LEVELS + 1)]
    in_l1 = sum(1 for b in level_bytes[1:] if b <= L1_BYTES)
    in_l2 = sum(1 for b in level_bytes[1:] if b <= L2_BYTES)

    per_level: list[float] = []
    for d in range(1, LEVELS + 1):
        if len(loops) >= d:
            lp = loops[len(loops) - d]
            dependent = sum(
                1 for a in site.accesses if a.coeffs is None or a.coeffs.get(lp.var, 0.0) != 0
            )
            per_level += [_log(lp.extent), float(_KIND_CODE[lp.kind]), dependent / max(n, 1)]
        else:
            per_level += [-1.0, -1.0, -1.0]

    loads = [a for a in site.accesses if not a.is_store]
    vec = [
        _log(iterations),
        _log(flops),
        site.ops,
        float(len(loads)),
        float(len(loops)),
        float(vector_width),
        math.log2(parallel),
        1.0 if loops and loops[0].kind is ForKind.PARALLEL else 0.0,
        math.log2(unrolled),
        _log(inner.extent) if inner is not None else 0.0,
        *inner_kind,
        *shares,
        _log(max_stride),
        min(store_stride, 1e6),
        _log(bytes_touched),
        _log(lines_touched),
        math.log2((flops + 1.0) / (bytes_touched + 1.0)),
        math.log2((access_bytes + 1.0) / (bytes_touched + 1.0)),
        *(_log(f) if f >= 0 else -1.0 for f in footprints),
        float(in_l1),
        float(in_l2),
        1.0 if site.guarded else 0.0,
        1.0 if site.accesses and site.accesses[0].local else 0.0,
        sum(1 for a in loads if a.local) / max(len(loads), 1),
        *per_level,
    ]
    return vec, flops, bytes_touched, iterations


def tir_features(func: PrimFunc) -> np.ndarray:
    """The feature vector (`FEATURE_COUNT` float64 entries, named by `FEATURE_NAMES`) of a
    lowered kernel, before or after `lower_pipeline`; the same function gives the same
    vector."""
    sites, counts = _collect_sites(func)
    n_site = len(_SITE_NAMES)
    main = [0.0] * n_site
    mean = np.zeros(n_site)
    total_flops = total_bytes = total_iters = parallel_work = 0.0
    best_key = (-1.0, -1.0)
    max_depth = 0
    for site in sites:
        vec, flops, nbytes, iters = _site_features(site)
        key = (flops, iters)
        if key > best_key:
            best_key, main = key, vec
        mean += np.asarray(vec) * iters
        total_flops += flops
        total_bytes += nbytes
        total_iters += iters
        if any(lp.kind is ForKind.PARALLEL for lp in site.loops):
            parallel_work += iters
        max_depth = max(max_depth, len(site.loops))
    if total_iters > 0:
        mean /= total_iters
    func_vec = [
        float(len(sites)),
        counts["loops"],
        _log(total_flops),
        _log(total_bytes),
        _log(total_iters),
        counts["allocations"],
        _log(counts["local_bytes"]),
        _log(counts["global_alloc_bytes"]),
        float(max_depth),
        counts["parallel_loops"],
        counts["vectorized_loops"],
        counts["unrolled_loops"],
        parallel_work / total_iters if total_iters else 0.0,
    ]
    out = np.concatenate([np.asarray(main, np.float64), mean, np.asarray(func_vec, np.float64)])
    assert out.shape == (FEATURE_COUNT,)
    return out


def feature_matrix(funcs: Iterable[PrimFunc]) -> np.ndarray:
    """`tir_features` of each kernel, one row each (shape `(n, FEATURE_COUNT)`)."""
    rows = [tir_features(f) for f in funcs]
    return np.stack(rows) if rows else np.zeros((0, FEATURE_COUNT))


__all__ = ["FEATURE_COUNT", "FEATURE_NAMES", "LEVELS", "feature_matrix", "tir_features"]
