"""Annotation, device and debug operators are identities on their value."""

import numpy as np
import pytest
from relay.backend.runtime.op_impls import IMPLS
from relay.lang import get_op

NAMES = ["annotation.stop_fusion", "annotation.checkpoint", "on_device", "device_copy", "debug"]
ATTRS = {
    "device_copy": {"src_virtual_device": 0, "dst_virtual_device": 1},
    "debug": {"debug_func": None},
}


@pytest.mark.parametrize("name", NAMES)
def test_identity_on_tensors_and_tuples(name):
    op = get_op(name)
    impl = IMPLS[op]
    attrs = op.make_attrs(**ATTRS.get(name, {}))
    x = np.arange(3, dtype="float16")
    assert impl([x], attrs) is x
    pair = (x, np.zeros((), "int8"))
    assert impl([pair], attrs) is pair
