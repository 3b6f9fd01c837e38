"""The default schedule of batch_matmul (the dense micro-kernel per batch): compiled kernels
against the reference implementation, every transpose combination, broadcast batches,
shapes no tile divides, few rows (GEMV form) and an element-wise tail."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from relay.backend.codegen import aligned_copy, compile_module
from relay.backend.lower.computes import compute_for
from relay.backend.lower.lower_func import schedule_outputs
from relay.backend.lower.target import Target
from relay.backend.runtime.op_impls import implementation_for
from relay.backend.te import lower, placeholder
from relay.backend.tir.transform import lower_pipeline
from relay.lang import get_op
from relay.lang.types import TensorType
from relay.testing.relations import op_call_type

RNG = np.random.default_rng(5)


def apply(name, inputs, **attrs):
    """The compute of operator `name` on TE `inputs` (its one output) and its attrs."""
    op = get_op(name)
    op_attrs = op.make_attrs(**attrs) if op.attrs_schema is not None else None
    types = [TensorType(tuple(int(d.value) for d in t.shape), t.dtype) for t in inputs]
    out_type = op_call_type(name, *types, **attrs)
    (out,) = compute_for(op)(op_attrs, list(inputs), out_type)
    return out, op_attrs


def run_kernel(inputs, outputs, arrays, target=None):
    """Schedule, lower, compile and run; returns (output arrays, schedule)."""
    s, _ = schedule_outputs(outputs, target)
    func = lower_pipeline(lower(s, list(inputs) + list(outputs), "kernel"))
    fn = compile_module([func]).get("kernel")
    ins = [aligned_copy(a) for a in arrays]
    outs = [aligned_copy(np.zeros([int(d.value) for d in t.shape], t.dtype)) for t in outputs]
    fn(*(ctypes.c_void_p(a.ctypes.data) for a in ins + outs))
    return outs, s


def assert_close(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype
    scale = float(np.max(np.abs(want), initial=1.0))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6 * scale)


def bmm_case(batch, m, n, k, ta=False, tb=True, a_batch=None, b_batch=None, target=None):
    ab = batch if a_batch is None else a_batch
    bb = batch if b_batch is None else b_batch
    a_shape = (ab, k, m) if ta else (ab, m, k)
    b_shape = (bb, n, k) if tb else (bb, k, n)
    a = placeholder(a_shape, "float32", "a")
    b = placeholder(b_shape, "float32", "b")
    out, attrs = apply("nn.batch_matmul", [a, b], transpose_a=ta, transpose_b=tb)
    aa = RNG.normal(size=a_shape).astype("f4")
    ba = RNG.normal(size=b_shape).astype("f4")
    (got,), s = run_kernel([a, b], [out], [aa, ba], target)
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
    mm, attrs = apply("nn.batch_matmul", [a, b], transpose_a=False, transpose_b=True)
    scaled, _ = apply("nn.relu", [mm])
    aa = RNG.normal(size=(6, 24, 40)).astype("f4")
    ba = RNG.normal(size=(6, 50, 40)).astype("f4")
    (got,), s = run_kernel([a, b], [scaled], [aa, ba], Target(vector_bits=512, num_threads=2))
    want = np.maximum(implementation_for(get_op("nn.batch_matmul"))([aa, ba], attrs), 0)
    assert_close(got, want)
    text = str(s.trace)
    assert 'compute_at("batch_matmul_packed", "relu"' in text and "parallel" in text
