"""`tensorize`: a loop nest replaced by a declared intrinsic, compiled and compared with numpy;
the trace step prints, parses and replays; nests that do not match the intrinsic are errors
that say what differs."""

from __future__ import annotations

import numpy as np
import pytest
from relay.backend.codegen import compile_module
from relay.backend.runtime.native import aligned_copy
from relay.backend.te import (
    ScheduleError,
    Trace,
    compute,
    create_schedule,
    lower,
    placeholder,
    reduce_axis,
    replay,
    sum_,
)
from relay.backend.te.intrinsics_x86 import AVX2_I16, PORTABLE, dot_intrinsic
from relay.backend.te.tensorize import lookup
from relay.backend.tir.expr import cast
from relay.backend.tir.printer import astext
from relay.backend.tir.transform import lower_pipeline

RNG = np.random.default_rng(5)


def packed_product(m, n, k, dtype="int16"):
    """C[m, n] = sum_k A[m, k] * B[n, k] with B packed as [n/8, k/2, 8, 2]."""
    a = placeholder((m, k), dtype, "A")
    b = placeholder((n // 8, k // 2, 8, 2), dtype, "B")
    ko, ki = reduce_axis(k // 2, "ko"), reduce_axis(2, "ki")
    c = compute(
        (m, n),
        lambda i, j: sum_(
            cast("int32", a[i, ko.var * 2 + ki.var])
            * cast("int32", b[j // 8, ko.var, j % 8, ki.var]),
            axis=[ko, ki],
        ),
        name="C",
    )
    return a, b, c, ko, ki


def tensorized(m, n, k, intrinsic, dtype="int16"):
    a, b, c, ko, ki = packed_product(m, n, k, dtype)
    s = create_schedule(c)
    i, j = c.op.axis
    jo, ji = s[c].split(j, factor=8)
    s[c].reorder(i, jo, ko, ji, ki)
    s[c].tensorize(ji, intrinsic)
    return s, (a, b, c)


def run(s, tensors, m, n, k):
    a, b, c = tensors
    lib = compile_module([lower_pipeline(lower(s, [a, b, c], "kernel"))])
    x = RNG.integers(-128, 128, (m, k)).astype(np.int16)
    w = RNG.integers(-128, 128, (n, k)).astype(np.int16)
    x[0, :] = -128  # the int8 extremes: products of -128 * -128 summed in pairs
    w[0, :] = -128
    w[-1, :] = 127
    packed = w.reshape(n // 8, 8, k // 2, 2).transpose(0, 2, 1, 3)
    out = aligned_copy(np.zeros((m, n), np.int32))
    lib.run("kernel", aligned_copy(x), aligned_copy(packed), out)
    return out, x.astype(np.int64) @ w.astype(np.int64).T


@pytest.mark.parametrize("intrinsic", [AVX2_I16, PORTABLE["avx2_i16"]], ids=lambda i: i.name)
def test_tensorized_product_is_exact(intrinsic):
    s, tensors = tensorized(5, 24, 6, intrinsic)
    got, want = run(s, tensors, 5, 24, 6)
    np.testing.assert_array_equal(got, want)


def test_the_region_becomes_one_call_of_the_body():
    s, (a, b, c) = tensorized(3, 16, 4, AVX2_I16)
    text = astext(lower_pipeline(lower(s, [a, b, c], "kernel")))
    assert text.count("tensor.x86.pmaddwd.256(") == 1
    loops = [ln.split()[1] for ln in text.splitlines() if ln.strip().startswith("for ")]
    assert loops == ["i", "j_outer", "ko"], text


def test_trace_prints_parses_and_replays():
    s, (_a, _b, _c) = tensorized(4, 16, 6, AVX2_I16)
    text = str(s.trace)
    assert 'tensorize("C", "j.inner", "avx2_i16")' in text
    assert Trace.parse(text) == s.trace
    assert Trace.from_json(s.trace.to_json()) == s.trace
    a2, b2, c2, _, _ = packed_product(4, 16, 6)
    fresh = replay(text, create_schedule(c2))
    assert fresh["C"].tensorized is not None
    got, want = run(fresh, (a2, b2, c2), 4, 16, 6)
    np.testing.assert_array_equal(got, want)


def test_portable_twin_of_vnni_is_exact_on_u8_s8():
    intrinsic = PORTABLE["avx512_vnni_u8s8"]
    a = placeholder((3, 8), "uint8", "A")
    b = placeholder((1, 2, 16, 4), "int8", "B")
    ko, g = reduce_axis(2, "ko"), reduce_axis(4, "g")
    c = compute(
        (3, 16),
        lambda i, j: sum_(
            cast("int32", a[i, ko.var * 4 + g.var])
            * cast("int32", b[j // 16, ko.var, j % 16, g.var]),
            axis=[ko, g],
        ),
        name="C",
    )
    s = create_schedule(c)
    i, j = c.op.axis
    s[c].reorder(i, ko, j, g)
    s[c].tensorize(j, intrinsic)
    lib = compile_module([lower_pipeline(lower(s, [a, b, c], "kernel"))])
    x = RNG.integers(0, 256, (3, 8)).astype(np.uint8)
    x[0] = 255
    w = RNG.integers(-128, 128, (16, 8)).astype(np.int8)
    w[0] = -128
    packed = w.reshape(1, 16, 2, 4).transpose(0, 2, 1, 3)
    out = aligned_copy(np.zeros((3, 16), np.int32))
    lib.run("kernel", aligned_copy(x), aligned_copy(packed), out)
    np.testing.assert_array_equal(out, x.astype(np.int64) @ w.astype(np.int64).T)


def _lower_error(s, tensors):
    with pytest.raises(ScheduleError) as err:
        lower(s, list(tensors), "kernel")
    return str(err.value)


def test_wrong_extent_is_reported():
    a, b, c, ko, ki = packed_product(4, 16, 4)
    s = create_schedule(c)
    i, j = c.op.axis
    jo, ji = s[c].split(j, factor=4)
    s[c].reorder(i, jo, ko, ji, ki)
    s[c].tensorize(ji, AVX2_I16)
    msg = _lower_error(s, (a, b, c))
    assert "do not match intrinsic avx2_i16" in msg and "4 iterations" in msg


def test_wrong_dtype_is_reported():
    s, tensors = tensorized(4, 16, 4, AVX2_I16, dtype="int8")
    msg = _lower_error(s, tensors)
    assert "the body has a load of B (int8) where it has a load of b (int16)" in msg


def test_operand_not_laid_out_as_the_intrinsic_is_reported():
    a = placeholder((4, 4), "int16", "A")
    b = placeholder((2, 2, 8, 2), "int16", "B")  # read with lanes and groups swapped
    ko, ki = reduce_axis(2, "ko"), reduce_axis(2, "ki")
    c = compute(
        (4, 16),
        lambda i, j: sum_(
            cast("int32", a[i, ko.var * 2 + ki.var])
            * cast("int32", b[j // 8, ko.var, ki.var, j % 8]),
            axis=[ko, ki],
        ),
        name="C",
    )
    # b is (2, 2, 8, 2): index [.., ki, j % 8] reads it as [.., 2, 8]: out of its layout
    s = create_schedule(c)
    i, j = c.op.axis
    jo, ji = s[c].split(j, factor=8)
    s[c].reorder(i, jo, ko, ji, ki)
    s[c].tensorize(ji, AVX2_I16)
    msg = _lower_error(s, (a, b, c))
    assert "B is not read over a contiguous region" in msg


def test_loops_that_run_past_their_range_are_reported():
    a = placeholder((4, 4), "int16", "A")
    b = placeholder((2, 2, 8, 2), "int16", "B")
    ko, ki = reduce_axis(2, "ko"), reduce_axis(2, "ki")
    c = compute(
        (4, 13),  # 13 columns: the split by 8 leaves a guarded tail
        lambda i, j: sum_(
            cast("int32", a[i, ko.var * 2 + ki.var])
            * cast("int32", b[j // 8, ko.var, j % 8, ki.var]),
            axis=[ko, ki],
        ),
        name="C",
    )
    s = create_schedule(c)
    i, j = c.op.axis
    jo, ji = s[c].split(j, factor=8)
    s[c].reorder(i, jo, ko, ji, ki)
    s[c].tensorize(ji, AVX2_I16)
    assert "may run past their range" in _lower_error(s, (a, b, c))


def test_wrong_number_of_loops_is_reported():
    _s, tensors = tensorized(4, 16, 4, AVX2_I16)
    c = tensors[2]
    s2 = create_schedule(c)
    s2[c].tensorize(c.op.axis[0], AVX2_I16)
    msg = _lower_error(s2, tensors)
    assert "data-parallel and" in msg and "the intrinsic has 1 and 1" in msg


def test_unknown_intrinsic_and_redeclaration():
    _, _, c, _, _ = packed_product(4, 16, 4)
    s = create_schedule(c)
    with pytest.raises(ScheduleError, match="no tensor intrinsic named `nope`"):
        s[c].tensorize(c.op.axis[1], "nope")
    assert lookup("avx2_i16") is AVX2_I16
    with pytest.raises(ScheduleError, match="declared twice"):
        dot_intrinsic("avx2_i16", 8, 2, "int16", "int16", "dot.8x2")
