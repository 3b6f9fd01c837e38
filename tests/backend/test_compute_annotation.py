"""Compute definitions of annotations, device placement and debug hooks: copies of their
argument (each field of a tuple argument)."""

from __future__ import annotations

import numpy as np
import pytest
from relay.backend.lower.computes import compute_for
from relay.backend.runtime.op_impls import implementation_for
from relay.backend.te import ComputeOp, placeholder
from relay.backend.te.evaluate import evaluate
from relay.lang import get_op
from relay.lang.types import TensorType
from relay.testing.relations import op_call_type

RNG = np.random.default_rng(7)


def run_both(name, *arrays, tuple_arg=False, **attrs):
    """(compute results, reference results) of one call, each a list of arrays."""
    op = get_op(name)
    types = [TensorType(a.shape, str(a.dtype)) for a in arrays]
    out_type = op_call_type(name, *types, tuple_arg=tuple_arg, **attrs)
    op_attrs = op.make_attrs(**attrs) if op.attrs_schema is not None else None
    holders = [placeholder(a.shape, str(a.dtype), f"in{i}") for i, a in enumerate(arrays)]
    outs = compute_for(op)(op_attrs, holders, out_type)
    got = evaluate(outs, dict(zip(holders, arrays)), strict_select=True)
    args = [tuple(arrays)] if tuple_arg else list(arrays)
    want = implementation_for(op)(args, op_attrs)
    return got, list(want) if isinstance(want, tuple) else [want], outs


def check(name, *arrays, tuple_arg=False, **attrs):
    """The compute of `name` equals the reference: exactly for integers, within 1e-5
    relative (plus 1e-5 of the largest magnitude, for cancellation) for floats."""
    got, want, outs = run_both(name, *arrays, tuple_arg=tuple_arg, **attrs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        if w.dtype.kind == "f":
            scale = float(np.max(np.abs(w[np.isfinite(w)]), initial=1.0))
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * scale)
        else:
            np.testing.assert_array_equal(g, w)
    return outs


def normal(*shape, dtype="float32"):
    return RNG.normal(size=shape).astype(dtype)


def ints(*shape, dtype="int32", lo=-5, hi=6):
    return RNG.integers(lo, hi, shape).astype(dtype)


NAMES = ["annotation.stop_fusion", "annotation.checkpoint", "on_device", "device_copy", "debug"]
ATTRS = {
    "device_copy": {"src_virtual_device": 0, "dst_virtual_device": 1},
    "debug": {"debug_func": None},
}


@pytest.mark.parametrize("name", NAMES)
def test_identity_on_tensors(name):
    for x in (normal(2, 3), ints(4, dtype="int8"), np.asarray(2.5, "float64")):
        (out,) = check(name, x, **ATTRS.get(name, {}))
        assert isinstance(out.op, ComputeOp) and out.op.tag == "elemwise"


@pytest.mark.parametrize("name", ["on_device", "debug", "annotation.stop_fusion"])
def test_identity_on_tuples(name):
    outs = check(name, normal(2, 3), ints(3, dtype="int8"), tuple_arg=True, **ATTRS.get(name, {}))
    assert len(outs) == 2
