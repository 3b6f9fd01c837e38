"""TIR features of the tuning cost model: fixed length, deterministic, and describing what
a schedule changes (loop extents and kinds, vector width, parallel extent, strides,
touched bytes)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from relay.backend import tir
from relay.backend.tune.features import FEATURE_COUNT, FEATURE_NAMES, feature_matrix, tir_features

from .tune_models import matmul


def named(vec: np.ndarray) -> dict[str, float]:
    return dict(zip(FEATURE_NAMES, vec.tolist()))


def test_fixed_length_and_names():
    assert len(FEATURE_NAMES) == FEATURE_COUNT == len(set(FEATURE_NAMES))
    for f in (matmul(32, 4, 8, 4), matmul(48, 1, 16, 2, vectorize=False, parallel=False)):
        for g in (f, tir.lower_pipeline(f)):
            v = tir_features(g)
            assert v.shape == (FEATURE_COUNT,)
            assert v.dtype == np.float64
            assert np.all(np.isfinite(v))


def test_deterministic_across_lowerings():
    a = tir_features(matmul(32, 4, 8, 4))
    b = tir_features(matmul(32, 4, 8, 4))
    np.testing.assert_array_equal(a, b)
    m = feature_matrix([matmul(32, 4, 8, 4), matmul(32, 2, 8, 4)])
    assert m.shape == (2, FEATURE_COUNT)
    np.testing.assert_array_equal(m[0], a)


def test_distinct_schedules_give_distinct_features():
    configs = [(ti, tj, tk) for ti in (1, 2, 4) for tj in (8, 16) for tk in (1, 4)]
    rows = {tuple(tir_features(matmul(32, *c)).tolist()) for c in configs}
    assert len(rows) == len(configs)


def test_annotations_of_the_main_site():
    f = named(tir_features(matmul(64, 4, 16, 4)))
    # the update C_local[i, j] += A[i, k] * B[k, j]: 64^3 iterations, 2 flops each
    assert f["main.log_iterations"] == pytest.approx(math.log2(1 + 64**3))
    assert f["main.log_flops"] == pytest.approx(math.log2(1 + 2 * 64**3))
    assert f["main.vector_width"] == 16
    assert f["main.log_parallel_extent"] == pytest.approx(math.log2(64 / 4))
    assert f["main.outermost_parallel"] == 1
    assert f["main.innermost_vectorized"] == 1
    assert f["main.loads"] == 3  # C_local, A, B
    assert f["main.stores_local"] == 1
    # along the vectorized j: C_local and B are contiguous, A is broadcast (stride 0)
    assert f["main.stride1_share"] == pytest.approx(3 / 4)
    assert f["main.stride0_share"] == pytest.approx(1 / 4)
    assert f["func.parallel_loops"] == 1
    assert f["func.allocations"] == 1
    assert f["func.log_local_bytes"] == pytest.approx(math.log2(1 + 4 * 16 * 4))
    serial = named(tir_features(matmul(64, 4, 16, 4, vectorize=False, parallel=False)))
    assert serial["main.vector_width"] == 1
    assert serial["main.log_parallel_extent"] == 0
    assert serial["main.innermost_serial"] == 1


def test_after_lower_pipeline_vector_lanes_are_seen():
    f = named(tir_features(tir.lower_pipeline(matmul(64, 4, 16, 4))))
    assert f["main.vector_width"] == 16
    assert f["main.log_flops"] == pytest.approx(math.log2(1 + 2 * 64**3))
    assert f["main.stride0_share"] == pytest.approx(1 / 4)  # A broadcast into the lanes


def test_hand_written_nest_bytes_strides_and_intensity():
    a = tir.decl_buffer((64, 16), "float32", "a")
    b = tir.decl_buffer((16,), "float32", "b")
    c = tir.decl_buffer((16, 64), "float32", "c")
    i, j = tir.Var("i"), tir.Var("j")
    # c[j, i] = a[i, j] + b[j]: the store is transposed, stride 64 along j
    body = tir.For(
        i, 0, 64, tir.ForKind.PARALLEL,
        tir.For(j, 0, 16, tir.ForKind.SERIAL,
                tir.BufferStore(c, a.load(i, j) + b.load(j), (j, i))),
    )  # fmt: skip
    f = named(tir_features(tir.PrimFunc("add_t", (a, b, c), body)))
    assert f["main.log_iterations"] == pytest.approx(math.log2(1 + 64 * 16))
    assert f["main.ops_per_iteration"] == 1
    assert f["main.stride1_share"] == pytest.approx(2 / 3)  # a and b
    assert f["main.strided_share"] == pytest.approx(1 / 3)  # c
    assert f["main.store_inner_stride"] == 64
    touched = (64 * 16 + 16 + 16 * 64) * 4
    assert f["main.log_bytes_touched"] == pytest.approx(math.log2(1 + touched))
    assert f["main.log_arith_intensity"] == pytest.approx(math.log2((64 * 16 + 1) / (touched + 1)))
    assert f["main.level1_log_extent"] == pytest.approx(math.log2(17))
    assert f["main.level2_kind"] == 3  # parallel
    assert f["main.level1_dependent_share"] == 1  # every access moves with j
    assert f["main.level2_dependent_share"] == pytest.approx(2 / 3)  # b does not move with i


def test_deep_nests_and_long_sequences_do_not_recurse():
    a = tir.decl_buffer((4,), "float32", "a")
    stores = [tir.BufferStore(a, tir.const(float(k), "float32"), (k % 4,)) for k in range(5000)]
    wide = tir.For(tir.Var("i"), 0, 2, tir.ForKind.SERIAL, tir.SeqStmt(stores))
    assert named(tir_features(tir.PrimFunc("wide", (a,), wide)))["func.sites"] == 5000
    body: tir.Stmt = tir.SeqStmt(stores[:3])
    for d in range(3000):
        body = tir.For(tir.Var(f"i{d}"), 0, 1, tir.ForKind.SERIAL, body)
    f = named(tir_features(tir.PrimFunc("deep", (a,), body)))
    assert f["func.sites"] == 3
    assert f["main.depth"] == 3000
    assert f["func.loops"] == 3000


def test_symbolic_extents_and_non_affine_indices():
    n = tir.Var("n")
    a = tir.decl_buffer((n,), "float32", "a")
    i = tir.Var("i")
    body = tir.For(i, 0, n, tir.ForKind.SERIAL, tir.BufferStore(a, a.load((i * i) % n), (i,)))
    v = tir_features(tir.PrimFunc("gather", (a,), body))
    f = named(v)
    assert np.all(np.isfinite(v))
    assert f["main.unknown_stride_share"] == pytest.approx(1 / 2)
