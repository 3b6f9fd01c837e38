"""The helpers of relay.testing.compute_check themselves: comparisons, name scans, arrays."""

import numpy as np
import pytest
import relay.lang.opdefs.reduce as reduce_family
from relay.backend.te import ComputeOp
from relay.testing import (
    RandomArrays,
    assert_matches,
    check_compute,
    compute_and_reference,
    declared_op_names,
    op_names_called_in,
)


def test_compute_and_reference_agree_on_add():
    a, b = np.arange(6, dtype="float32").reshape(2, 3), np.ones(3, "float32")
    got, expected, outs = compute_and_reference("add", [a, b])
    np.testing.assert_array_equal(got[0], a + b)
    np.testing.assert_array_equal(expected[0], a + b)
    assert len(outs) == 1 and isinstance(outs[0].op, ComputeOp)


def test_check_compute_returns_the_output_tensors_and_takes_a_tuple_argument():
    (out,) = check_compute(
        "concatenate", [np.ones((2, 3), "int32"), np.zeros((1, 3), "int32")], tuple_arg=True, axis=0
    )
    assert tuple(int(d.value) for d in out.shape) == (3, 3)


def test_assert_matches_is_exact_for_integers_and_scaled_for_floats():
    assert_matches(np.array([1, 2], "int32"), np.array([1, 2], "int32"))
    with pytest.raises(AssertionError):
        assert_matches(np.array([1, 3], "int32"), np.array([1, 2], "int32"))
    with pytest.raises(AssertionError):
        assert_matches(np.array([1, 2], "int64"), np.array([1, 2], "int32"))
    big = np.array([1e4, 0.0], "float32")
    assert_matches(big + np.array([0, 5e-2], "float32"), big)  # 1e-5 of the largest magnitude
    with pytest.raises(AssertionError):
        assert_matches(big + np.array([0, 5e-2], "float32"), big, atol=1e-6)
    with pytest.raises(AssertionError):
        assert_matches(big + np.array([0, 5e-2], "float32"), big, atol_scale=2e-6)
    nan = np.array([np.nan, np.inf, 1.0], "float32")
    assert_matches(nan.copy(), nan)


def test_op_names_called_in_finds_constant_first_arguments(tmp_path):
    path = tmp_path / "t.py"
    path.write_text('verify("add", x)\nverify(name, x)\nother("sub")\nverify("nn.relu")\n')
    assert op_names_called_in(str(path), "verify") == {"add", "nn.relu"}


def test_declared_op_names_reads_an_opdefs_module():
    names = declared_op_names(reduce_family)
    assert {"sum", "argmax", "mean"} <= names and len(names) == 10


def test_random_arrays_are_reproducible_and_bounded():
    a, b = RandomArrays(3, int_range=(-2, 3)), RandomArrays(3, int_range=(-2, 3))
    x, y = a.ints(50), b.ints(50)
    np.testing.assert_array_equal(x, y)
    assert x.dtype == np.int32 and x.min() >= -2 and x.max() <= 2
    u = a.uniform(40, lo=1.0, hi=2.0, dtype="float64")
    assert u.dtype == np.float64 and u.min() >= 1.0 and u.max() < 2.0
    assert a.normal(2, 3).shape == (2, 3)
