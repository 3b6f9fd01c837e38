"""Every declared operator has a reference implementation; a few run through the interpreter."""

import numpy as np
from relay.backend.runtime import evaluate
from relay.backend.runtime.op_impls import IMPLS
from relay.lang import Call, Tuple, TupleGetItem, all_ops, const, get_op


def test_every_declared_operator_has_a_reference_implementation():
    missing = sorted(op.name for op in all_ops() if op not in IMPLS)
    assert not missing, f"operators without a reference implementation: {', '.join(missing)}"


def test_tuple_arguments_and_tuple_results_go_through_the_interpreter():
    a = np.arange(6, dtype="float32").reshape(2, 3)
    op = get_op("concatenate")
    joined = evaluate(Call(op, [Tuple([const(a), const(a)])], op.make_attrs(axis=-1)))
    assert joined.shape == (2, 6) and joined.dtype == np.float32
    split = get_op("split")
    pieces = Call(split, [const(np.arange(6))], split.make_attrs(indices_or_sections=3))
    second = evaluate(TupleGetItem(pieces, 1))
    assert second.tolist() == [2, 3]


def test_batch_norm_returns_a_three_tuple_through_the_interpreter():
    x = np.ones((1, 2, 1, 1), "float32")
    ones, zeros = np.ones(2, "float32"), np.zeros(2, "float32")
    op = get_op("nn.batch_norm")
    call = Call(op, [const(v) for v in (x, ones, zeros, zeros, ones)], op.make_attrs())
    out, mean, var = evaluate(call)
    assert out.dtype == np.float32 and np.allclose(out, 1 / np.sqrt(1 + 1e-5))
    assert mean.tolist() == [0, 0] and var.tolist() == [1, 1]
