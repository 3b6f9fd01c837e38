"""The default schedule of batch_matmul (the dense micro-kernel per batch): compiled kernels
against the reference implementation, every transpose combination, broadcast batches,
shapes no tile divides, few rows (GEMV form) and an element-wise tail."""

from __future__ import annotations

import numpy as np
import pytest
from relay.backend.runtime.op_impls import implementation_for
from relay.backend.target import Target
from relay.backend.te import placeholder
from relay.lang import get_op
from relay.testing.compute_check import apply_compute, assert_matches, run_default_schedule

RNG = np.random.default_rng(5)


def assert_close(got, want):
    """Floats to 1e-5 relative plus 2e-6 of the largest magnitude; integers exactly."""
    assert_matches(got, want, atol_scale=2e-6)


def bmm_case(batch, m, n, k, ta=False, tb=True, a_batch=None, b_batch=None, target=None):
    ab = batch if a_batch is None else a_batch
    bb = batch if b_batch is None else b_batch
    a_shape = (ab, k, m) if ta else (ab, m, k)
    b_shape = (bb, n, k) if tb else (bb, k, n)
    a = placeholder(a_shape, "float32", "a")
    b = placeholder(b_shape, "float32", "b")
    out, attrs = apply_compute("nn.batch_matmul", [a, b], transpose_a=ta, transpose_b=tb)
    aa = RNG.normal(size=a_shape).astype("f4")
    ba = RNG.normal(size=b_shape).astype("f4")
    (got,), s = run_default_schedule([a, b], [out], [aa, ba], target)
    want = implementation_for(get_op("nn.batch_matmul"))([aa, ba], attrs)
    return got, want, s


@pytest.mark.parametrize(
    "batch,m,n,k", [(3, 13, 37, 19), (2, 32, 32, 16), (4, 7, 70, 9), (1, 20, 5, 3)]
)
def test_batch_matmul_against_reference(batch, m, n, k):
    got, want, s = bmm_case(batch, m, n, k)
    assert_close(got, want)
    # transpose_b: the rhs is packed per batch, unless there are too few columns
    assert ("b_packed" in str(s.trace)) == (n >= 16)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, True), (True, False)])
def test_batch_matmul_transposes(ta, tb):
    got, want, s = bmm_case(3, 11, 29, 14, ta=ta, tb=tb)
    assert_close(got, want)
    assert ("b_packed" in str(s.trace)) == tb


def test_batch_matmul_broadcasts_a_batch_of_one():
    got, want, _ = bmm_case(3, 9, 20, 6, a_batch=1)
    assert_close(got, want)
    got, want, _ = bmm_case(3, 9, 20, 6, b_batch=1)
    assert_close(got, want)


def test_batch_matmul_few_rows_uses_the_gemv_form():
    got, want, s = bmm_case(5, 2, 40, 33)
    assert_close(got, want)
    assert "b_packed" not in str(s.trace)


def test_batch_matmul_parallel_over_batches_and_a_tail():
    a = placeholder((6, 24, 40), "float32", "a")
    b = placeholder((6, 50, 40), "float32", "b")
    mm, attrs = apply_compute("nn.batch_matmul", [a, b], transpose_a=False, transpose_b=True)
    scaled, _ = apply_compute("nn.relu", [mm])
    aa = RNG.normal(size=(6, 24, 40)).astype("f4")
    ba = RNG.normal(size=(6, 50, 40)).astype("f4")
    (got,), s = run_default_schedule(
        [a, b], [scaled], [aa, ba], Target(vector_bits=512, num_threads=2)
    )
    want = np.maximum(implementation_for(get_op("nn.batch_matmul"))([aa, ba], attrs), 0)
    assert_close(got, want)
    text = str(s.trace)
    assert 'compute_at("batch_matmul_packed", "relu"' in text and "parallel" in text
