"""Compute definitions of annotations, device placement and debug hooks: copies of their
argument (each field of a tuple argument)."""

from __future__ import annotations

import numpy as np
import pytest
from relay.backend.te import ComputeOp
from relay.testing.compute_check import RandomArrays, check_compute

ARRAYS = RandomArrays(7, int_range=(-5, 6))
RNG = ARRAYS.rng
normal, ints = ARRAYS.normal, ARRAYS.ints


NAMES = ["annotation.stop_fusion", "annotation.checkpoint", "on_device", "device_copy", "debug"]
ATTRS = {
    "device_copy": {"src_virtual_device": 0, "dst_virtual_device": 1},
    "debug": {"debug_func": None},
}


@pytest.mark.parametrize("name", NAMES)
def test_identity_on_tensors(name):
    for x in (normal(2, 3), ints(4, dtype="int8"), np.asarray(2.5, "float64")):
        (out,) = check_compute(name, [x], **ATTRS.get(name, {}))
        assert isinstance(out.op, ComputeOp) and out.op.tag == "elemwise"


@pytest.mark.parametrize("name", ["on_device", "debug", "annotation.stop_fusion"])
def test_identity_on_tuples(name):
    outs = check_compute(
        name, [normal(2, 3), ints(3, dtype="int8")], tuple_arg=True, **ATTRS.get(name, {})
    )
    assert len(outs) == 2
