"""The default schedule of dense / matmul (register-blocked with a packed weight, GEMV for
few rows): compiled kernels against the reference implementations, on shapes no tile
divides, with element-wise tails, batch axes, int8 accumulation and other targets."""

from __future__ import annotations

import numpy as np
import pytest
import relay
from relay.backend.lower.schedules.dense import (
    GEMV_MAX_ROWS,
    analyze_product,
    choose_blocking,
    replace_anchor,
    split_width,
)
from relay.backend.runtime.op_impls import implementation_for
from relay.backend.target import Target
from relay.backend.te import compute, create_schedule, placeholder
from relay.backend.te.errors import ScheduleError
from relay.lang import get_op
from relay.testing.compute_check import apply_compute, assert_matches, run_default_schedule

RNG = np.random.default_rng(11)


def trace_text(s):
    return str(s.trace)


def dense_case(m, n, k, dtype="float32", out_dtype="", target=None, batch=()):
    x = placeholder((*batch, m, k), dtype, "x")
    w = placeholder((n, k), dtype, "w")
    out, attrs = apply_compute("nn.dense", [x, w], units=n, out_dtype=out_dtype)
    if dtype == "float32":
        xa = RNG.normal(size=(*batch, m, k)).astype(dtype)
        wa = RNG.normal(size=(n, k)).astype(dtype)
    else:
        xa = RNG.integers(-100, 100, (*batch, m, k)).astype(dtype)
        wa = RNG.integers(-100, 100, (n, k)).astype(dtype)
    (got,), s = run_default_schedule([x, w], [out], [xa, wa], target)
    want = implementation_for(get_op("nn.dense"))([xa, wa], attrs)
    return got, want, s


def assert_close(got, want):
    """Floats to 1e-5 relative plus 2e-6 of the largest magnitude; integers exactly."""
    assert_matches(got, want, atol_scale=2e-6)


@pytest.mark.parametrize(
    "m,n,k",
    [
        (13, 37, 19),
        (64, 64, 64),
        (3, 1000, 50),
        (1, 17, 5),
        (33, 16, 1),
        (24, 48, 130),
        (20, 3, 17),
    ],
)
def test_dense_against_reference(m, n, k):
    got, want, s = dense_case(m, n, k)
    assert_close(got, want)
    text = trace_text(s)
    assert "vectorize" in text
    # the weight is packed inside the kernel unless the GEMV form runs (few rows or columns)
    assert ("w_packed" in text) == (m > GEMV_MAX_ROWS and n >= 16)


def test_dense_register_block_is_unrolled_and_packed_per_column_block():
    got, want, s = dense_case(20, 517, 30)  # many column blocks: parallel over them
    assert_close(got, want)
    text = trace_text(s)
    assert 'compute_at("dense_packed", "dense"' in text
    assert 'unroll("dense_packed", "ax0")' in text
    assert 'compute_at("w_packed", "dense"' in text
    got, want, s = dense_case(40, 70, 30)  # few column blocks: the weight packed at root
    assert_close(got, want)
    assert 'parallel("w_packed"' in trace_text(s)


def test_dense_with_leading_batch_axes():
    got, want, _ = dense_case(5, 21, 9, batch=(3,))
    assert_close(got, want)
    got, want, _ = dense_case(2, 21, 9, batch=(3,))  # GEMV form with a batch axis
    assert_close(got, want)


def test_dense_int8_accumulates_in_int32():
    got, want, _ = dense_case(9, 20, 33, dtype="int8", out_dtype="int32")
    assert got.dtype == np.int32
    assert_close(got, want)


@pytest.mark.parametrize(
    "target",
    [Target(vector_bits=256, num_threads=2), Target(vector_bits=512, num_threads=1)],
    ids=["avx2-2threads", "avx512-1thread"],
)
def test_dense_other_targets(target):
    got, want, s = dense_case(61, 70, 41, target=target)  # enough work for threads
    assert_close(got, want)
    assert ("parallel" in trace_text(s)) == (target.num_threads > 1)


def test_dense_bias_relu_tail_is_computed_in_the_output_loops():
    x = placeholder((21, 30), "float32", "x")
    w = placeholder((50, 30), "float32", "w")
    b = placeholder((50,), "float32", "b")
    d, dattrs = apply_compute("nn.dense", [x, w], units=50)
    db, _ = apply_compute("nn.bias_add", [d, b], axis=1)
    r, _ = apply_compute("nn.relu", [db])
    xa, wa = RNG.normal(size=(21, 30)).astype("f4"), RNG.normal(size=(50, 30)).astype("f4")
    ba = RNG.normal(size=(50,)).astype("f4")
    (got,), s = run_default_schedule([x, w, b], [r], [xa, wa, ba])
    want = np.maximum(implementation_for(get_op("nn.dense"))([xa, wa], dattrs) + ba, 0)
    assert_close(got, want)
    # the product is attached to the relu's loops; nothing but the packed weight at root
    assert 'compute_at("dense_packed", "relu"' in trace_text(s)


def test_dense_with_two_outputs_keeps_the_product_materialized():
    x = placeholder((10, 12), "float32", "x")
    w = placeholder((20, 12), "float32", "w")
    d, dattrs = apply_compute("nn.dense", [x, w], units=20)
    r, _ = apply_compute("nn.relu", [d])
    xa, wa = RNG.normal(size=(10, 12)).astype("f4"), RNG.normal(size=(20, 12)).astype("f4")
    (gd, gr), _ = run_default_schedule([x, w], [d, r], [xa, wa])
    want = implementation_for(get_op("nn.dense"))([xa, wa], dattrs)
    assert_close(gd, want)
    assert_close(gr, np.maximum(want, 0))


def test_dense_followed_by_reshape_uses_the_view_at_root():
    x = placeholder((6, 8), "float32", "x")
    w = placeholder((12, 8), "float32", "w")
    d, dattrs = apply_compute("nn.dense", [x, w], units=12)
    rs, _ = apply_compute("reshape", [d], newshape=(3, 24))
    xa, wa = RNG.normal(size=(6, 8)).astype("f4"), RNG.normal(size=(12, 8)).astype("f4")
    (got,), _ = run_default_schedule([x, w], [rs], [xa, wa])
    assert_close(got, implementation_for(get_op("nn.dense"))([xa, wa], dattrs).reshape(3, 24))


@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, True), (True, False)])
def test_matmul_transposes(ta, tb):
    m, n, k = 11, 35, 13
    a_shape = (k, m) if ta else (m, k)
    b_shape = (n, k) if tb else (k, n)
    a = placeholder(a_shape, "float32", "a")
    b = placeholder(b_shape, "float32", "b")
    out, attrs = apply_compute("nn.matmul", [a, b], transpose_a=ta, transpose_b=tb)
    aa, ba = RNG.normal(size=a_shape).astype("f4"), RNG.normal(size=b_shape).astype("f4")
    (got,), _ = run_default_schedule([a, b], [out], [aa, ba])
    assert_close(got, implementation_for(get_op("nn.matmul"))([aa, ba], attrs))


def test_analyze_product_finds_the_packable_operand():
    x = placeholder((4, 6), "float32", "x")
    w = placeholder((5, 6), "float32", "w")
    d, _ = apply_compute("nn.dense", [x, w], units=5)
    p = analyze_product(d.op)
    assert p is not None and p.rhs_layout == "k" and p.rhs.producer is w
    b = placeholder((6, 5), "float32", "b")
    mm, _ = apply_compute("nn.matmul", [x, b], transpose_a=False, transpose_b=False)
    q = analyze_product(mm.op)
    assert q is not None and q.rhs_layout == "n"
    relu, _ = apply_compute("nn.relu", [x])
    assert analyze_product(relu.op) is None


def test_choose_blocking_fits_the_registers():
    t = Target.host()
    lanes = t.lanes("float32")
    b = choose_blocking(1024, 1024, lanes, t)
    regs = 32 if t.vector_bits == 512 else 16
    assert b.nb % lanes == 0 and b.mr * (b.nb // lanes) + b.nb // lanes < regs
    assert choose_blocking(3, 1024, lanes, t).mr == 3


def test_replace_anchor_rejects_a_rewrite_that_does_not_apply():
    x = placeholder((4, 6), "float32", "x")
    r = compute((4, 6), lambda i, j: x[i, j] * 2.0, name="r")
    s = create_schedule(r)
    with pytest.raises(ScheduleError, match=r"dense\.gemm` does not apply to r"):
        replace_anchor(s, r, "dense.gemm", nb=8)
    assert len(s.trace) == 0


def test_split_width_divides_the_reduction_when_it_can():
    assert split_width(512, 16) == 16
    assert split_width(70, 16) == 14  # an odd vector width that divides
    assert split_width(5, 16) == 5
    assert split_width(67, 16) == 16  # a prime: one vector and a guarded last step


def test_gemv_reduction_with_a_guarded_last_step():
    got, want, s = dense_case(1, 40, 67)
    assert_close(got, want)
    assert "dense_partial" in str(s.trace)


_TAILS = {
    "bias": "%d",
    "gelu": "0.5f * %d * (1f + erf(%d * 0.70710678f))",
    "residual": "add(%d, %r)",
}


def _dense_layer(m, n, k, tail):
    return relay.parse(
        f"""#[version = "0.0.5"]
def @main(%x: Tensor[({m}, {k}), float32], %w: Tensor[({n}, {k}), float32],
          %b: Tensor[({n}), float32], %r: Tensor[({m}, {n}), float32]) {{
  let %d = nn.bias_add(nn.dense(%x, %w, units={n}), %b);
  {_TAILS[tail]}
}}
"""
    )


@pytest.mark.parametrize(
    "m,n,k,tail,bound",
    [
        (129, 129, 129, "gelu", True),
        (129, 13, 7, "gelu", True),
        (13, 129, 1, "gelu", False),
        (7, 13, 129, "residual", True),
        (129, 7, 13, "residual", True),
        (1, 129, 13, "residual", False),
        (13, 1, 129, "bias", True),
        (129, 129, 7, "bias", False),
        (7, 7, 7, "bias", True),
    ],
)
def test_dense_layer_tails_against_the_interpreter(m, n, k, tail, bound):
    """A dense layer with its bias and a GELU / residual tail, built with the weight bound
    (packed at build time) or passed at run time, on sizes no register tile divides, agrees
    with the interpreter (erf within its 6 ulp bound: well inside the tolerance)."""
    module = _dense_layer(m, n, k, tail)
    arrays = {
        "x": (RNG.normal(size=(m, k)) * 2).astype("f4"),
        "w": RNG.normal(size=(n, k)).astype("f4"),
        "b": RNG.normal(size=(n,)).astype("f4"),
        "r": RNG.normal(size=(m, n)).astype("f4"),
    }
    want = relay.interpret(module, **arrays)
    target = "llvm -num-threads=2"
    if bound:
        model = relay.build(module, target=target, params={"w": arrays["w"]})
        got = model.run(**{key: v for key, v in arrays.items() if key != "w"})
    else:
        got = relay.build(module, target=target).run(**arrays)
    assert got.shape == (m, n)
    assert_close(got, want)


def _product_with_tail(op, a_shape, b_shape, tail, target=None, **attrs):
    """`op(a, b)` followed by `tail` ("sigmoid", "erf", "nn.relu"), by the default schedule:
    (result, reference, trace text)."""
    a, b = placeholder(a_shape, "float32", "a"), placeholder(b_shape, "float32", "b")
    prod, pattrs = apply_compute(op, [a, b], **attrs)
    out, _ = apply_compute(tail, [prod])
    aa, ba = RNG.normal(size=a_shape).astype("f4"), RNG.normal(size=b_shape).astype("f4")
    (got,), s = run_default_schedule([a, b], [out], [aa, ba], target)
    plain = implementation_for(get_op(op))([aa, ba], pattrs)
    want = implementation_for(get_op(tail))([plain], None)
    return got, want, trace_text(s)


@pytest.mark.parametrize(
    "m,n,k,tail", [(13, 130, 19, "sigmoid"), (64, 144, 64, "erf"), (7, 250, 5, "sigmoid")]
)
def test_expensive_tail_runs_per_column_block(m, n, k, tail):
    """A tail with a transcendental call is applied per column block of stored products, in
    its own vectorized loop (sizes no tile divides agree with the reference; at least 8
    column blocks, so two threads split the column blocks)."""
    for threads in (1, 2):
        target = Target(vector_bits=256, num_threads=threads)
        got, want, text = _product_with_tail("nn.dense", (m, k), (n, k), tail, target, units=n)
        assert_close(got, want)
        assert f'compute_at("dense", "{tail}"' in text  # the products stored per block
        assert 'compute_at("dense_packed", "dense"' in text  # the register block
        assert f'vectorize("{tail}"' in text


def test_cheap_tail_stays_in_the_register_block():
    target = Target(vector_bits=256, num_threads=1)
    got, want, text = _product_with_tail(
        "nn.dense", (13, 30), (40, 30), "nn.relu", target, units=40
    )
    assert_close(got, want)
    assert (
        'compute_at("dense_packed", "nn.relu"' in text
        or 'compute_at("dense_packed", "relu"' in text
    )
    assert 'compute_at("dense", ' not in text


def test_expensive_tail_with_batch_axes_and_few_columns():
    """batch_matmul with a sigmoid tail (batch axes in the parallel loop); few columns on two
    threads (row blocks share the parallel loop) keep the tail in the register block."""
    target = Target(vector_bits=256, num_threads=2)
    got, want, text = _product_with_tail(
        "nn.batch_matmul", (3, 29, 17), (3, 50, 17), "sigmoid", target,
        transpose_a=False, transpose_b=True,
    )  # fmt: skip
    assert_close(got, want)
    assert 'compute_at("batch_matmul", "sigmoid"' in text
    got, want, text = _product_with_tail("nn.dense", (200, 64), (8, 64), "sigmoid", target, units=8)
    assert_close(got, want)
    assert 'compute_at("dense", "sigmoid"' not in text
