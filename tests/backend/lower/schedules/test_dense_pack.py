"""The dense schedule on `nn.contrib_dense_pack`: a weight packed `NC{b}n` by the
micro-kernel's column block is read as it is (no packing stage), one packed by another
block is repacked; both against the reference implementation, with few and many rows."""

from __future__ import annotations

import numpy as np
import pytest
from relay.backend.lower.schedules.dense import (
    analyze_product,
    choose_blocking,
    fits_registers,
    packed_block,
)
from relay.backend.runtime.op_impls import implementation_for
from relay.backend.runtime.op_impls.transform import convert_layout
from relay.backend.target import Target
from relay.backend.te import placeholder
from relay.lang import get_op
from relay.testing.compute_check import apply_compute, assert_matches, run_default_schedule

RNG = np.random.default_rng(5)
AVX2 = Target.parse("llvm -mcpu=x86-64 -mattr=+avx2,+fma,-avx512f -num-threads=2")


def pack_case(m: int, n: int, k: int, block: int, target: Target = AVX2):
    x = placeholder((m, k), "float32", "x")
    w = placeholder((n // block, k, block), "float32", "w")
    layout = f"NC{block}n"
    out, attrs = apply_compute("nn.contrib_dense_pack", [x, w], units=n, weight_layout=layout)
    xa = RNG.normal(size=(m, k)).astype("float32")
    wa = convert_layout(RNG.normal(size=(n, k)).astype("float32"), "NC", layout)
    (got,), s = run_default_schedule([x, w], [out], [xa, wa], target)
    want = implementation_for(get_op("nn.contrib_dense_pack"))([xa, wa], attrs)
    return got, want, s, out


def stage_names(s) -> list[str]:
    return [st.op.name for st in s.stages]


@pytest.mark.parametrize(("m", "n", "k"), [(13, 48, 19), (64, 64, 64), (128, 32, 130), (7, 16, 1)])
def test_a_weight_packed_by_the_column_block_is_read_as_it_is(m: int, n: int, k: int) -> None:
    block = choose_blocking(m, n, 8, AVX2).nb
    got, want, s, _ = pack_case(m, n, k, block)
    assert_matches(got, want, atol_scale=2e-6)
    assert not any(name.endswith("_packed") for name in stage_names(s))


@pytest.mark.parametrize(("m", "n", "k", "block"), [(13, 48, 19, 4), (20, 24, 9, 24), (9, 6, 5, 3)])
def test_a_weight_packed_by_another_block_is_repacked(m: int, n: int, k: int, block: int) -> None:
    got, want, s, _ = pack_case(m, n, k, block)
    assert_matches(got, want, atol_scale=2e-6)
    assert any(name.endswith("_packed") for name in stage_names(s))


def test_few_rows_with_a_packed_weight() -> None:
    got, want, _, _ = pack_case(2, 32, 40, 16)
    assert_matches(got, want, atol_scale=2e-6)


def test_the_product_analysis_sees_the_block() -> None:
    _, _, _, out = pack_case(8, 32, 8, 16)
    p = analyze_product(out.op)
    assert p is not None and p.rhs_layout == "packed" and p.block == 16
    assert packed_block(p.lhs, p.op.axis[-1].var, p.k.var) == 0


@pytest.mark.parametrize(
    ("block", "fits"), [(8, True), (16, True), (24, False), (4, False), (32, False)]
)
def test_blocks_that_fit_the_registers_on_avx2(block: int, fits: bool) -> None:
    assert fits_registers(block, 8, AVX2) is fits
