"""The host side of native calls: data addresses and the reuse of call frames."""

from __future__ import annotations

import numpy as np
import pytest
import relay
from hypothesis import given
from hypothesis import strategies as st
from relay.backend.runtime import native


@given(
    shape=st.lists(st.integers(0, 5), min_size=0, max_size=3),
    dtype=st.sampled_from(["float32", "float64", "int8", "uint16", "bool"]),
    start=st.integers(0, 3),
    transpose=st.booleans(),
)
def test_data_address_is_the_address_numpy_reports(shape, dtype, start, transpose):
    base = np.zeros([s + 3 for s in shape] or [4], dtype=dtype)
    view = base[(slice(start, None),) * base.ndim]
    if transpose:
        view = view.T
    assert native.data_address(view) == view.ctypes.data
    assert native.data_address(base) == base.ctypes.data


def test_the_fast_address_reader_is_checked_before_use():
    # On CPython with numpy's usual object layout the header reader is chosen; the choice
    # itself is verified against numpy's own answer on several arrays.
    assert native._header_layout_holds() is (native.data_address is native._address_by_header)


ADD = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(3), float32]) {
  (add(%x, %y), multiply(%x, 2f))
}"""


@pytest.fixture(scope="module")
def model():
    return relay.build(relay.parse(ADD))


def test_repeated_calls_with_changing_inputs_read_each_call_s_arrays(model):
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = rng.standard_normal((2, 3)).astype("float32")
        y = rng.standard_normal(3).astype("float32")
        by_position = model.run(x, y)
        by_name = model.run(y=y, x=x)
        for got in (by_position, by_name):
            np.testing.assert_allclose(got[0], x + y, rtol=1e-6)
            np.testing.assert_allclose(got[1], x * 2, rtol=1e-6)
        assert by_position[0] is not by_name[0]


def test_a_buffer_overlapping_a_parameter_is_detected():
    text = """#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %w: Tensor[(4), float32]) { add(%x, %w) }"""
    w = np.arange(4, dtype="float32")
    model = relay.build(relay.parse(text), params={"w": w})
    assert model.params, "the weight stays a parameter of the compiled model"
    param = model.params[0]
    assert model._overlaps_params(param)
    assert model._overlaps_params(param[2:])
    assert not model._overlaps_params(np.empty(4, dtype="float32"))
    x = np.ones(4, dtype="float32")
    out = np.empty(4, dtype="float32")
    assert model.run(x, out=out) is out
    np.testing.assert_array_equal(out, x + param)
