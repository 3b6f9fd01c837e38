"""Compute definitions of nn.* operators (dense, softmax, norms, padding, ...) against the
reference implementations, evaluated with the numpy TE evaluator."""

from __future__ import annotations

import numpy as np
import pytest
from relay.backend.lower.computes.nn import layout_index, primal_index
from relay.backend.runtime.op_impls import IMPLS
from relay.backend.te import ComputeOp, placeholder
from relay.backend.te.evaluate import evaluate
from relay.backend.tir.expr import const
from relay.lang.op import get_op
from relay.testing.compute_check import (
    RandomArrays,
    apply_compute,
    check_compute,
    run_default_schedule,
)

ARRAYS = RandomArrays(7, int_range=(-5, 6))
RNG = ARRAYS.rng
normal, ints = ARRAYS.normal, ARRAYS.ints


# ------------------------------------------------------------------------ dense, matmul


@pytest.mark.parametrize("shape", [(3, 5), (5,), (2, 3, 5)])
def test_dense_float_shapes(shape):
    (out,) = check_compute("nn.dense", [normal(*shape), normal(4, 5)], units=None)
    assert isinstance(out.op, ComputeOp) and out.op.tag == "dense"
    assert len(out.op.reduce_axis) == 1


def test_dense_int8_accumulates_in_int32():
    x = ints(3, 40, dtype="int8", lo=-128, hi=128)
    w = ints(4, 40, dtype="int8", lo=-128, hi=128)
    check_compute("nn.dense", [x, w], units=4, out_dtype="int32")
    check_compute("nn.dense", [ints(2, 6), ints(3, 6)], units=3)


def test_dense_pack_reads_the_packed_layout():
    w = normal(8, 6)
    packed = np.ascontiguousarray(w.reshape(2, 4, 6).transpose(0, 2, 1))
    check_compute("nn.contrib_dense_pack", [normal(3, 6), packed], units=8, weight_layout="NC4n")
    packed8 = np.ascontiguousarray(w.reshape(1, 8, 6).transpose(0, 2, 1))
    check_compute(
        "nn.contrib_dense_pack",
        [ints(3, 6), packed8.astype("int32")],
        units=None,
        weight_layout="NC8n",
    )


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_transposes(ta, tb):
    a = normal(2, 5, 3) if ta else normal(2, 3, 5)
    b = normal(4, 5) if tb else normal(5, 4)
    (out,) = check_compute("nn.matmul", [a, b], units=None, transpose_a=ta, transpose_b=tb)
    assert out.op.tag == "dense"
    ai = ints(5, 3) if ta else ints(3, 5)
    bi = ints(4, 5) if tb else ints(5, 4)
    check_compute("nn.matmul", [ai, bi], units=None, transpose_a=ta, transpose_b=tb)


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_batch_matmul_transposes_and_broadcasts(ta, tb):
    a = normal(2, 5, 3) if ta else normal(2, 3, 5)
    b = normal(1, 4, 5) if tb else normal(1, 5, 4)
    (out,) = check_compute("nn.batch_matmul", [a, b], transpose_a=ta, transpose_b=tb)
    assert out.op.tag == "batch_matmul"
    x = ints(1, 3, 20, dtype="int8", lo=-128, hi=128)
    y = ints(3, 20, 2, dtype="int8", lo=-128, hi=128)
    check_compute("nn.batch_matmul", [x, y], out_dtype="int32")


# --------------------------------------------------------------------------- activations


@pytest.mark.parametrize("axis", [1, -1, 0])
def test_bias_add_axes(axis):
    x = normal(2, 3, 4)
    check_compute("nn.bias_add", [x, normal(x.shape[axis])], axis=axis)
    xi = ints(2, 3, 4)
    check_compute("nn.bias_add", [xi, ints(xi.shape[axis])], axis=axis)


def test_relu_leaky_relu_prelu():
    x = normal(3, 4)
    x[0, 0] = np.nan
    check_compute("nn.relu", [x])
    check_compute("nn.relu", [ints(3, 4)])
    check_compute("nn.leaky_relu", [normal(3, 4)], alpha=0.1)
    check_compute("nn.leaky_relu", [ints(3, 4)], alpha=2.7)
    check_compute("nn.prelu", [normal(2, 3, 4), normal(3)], axis=1)
    check_compute("nn.prelu", [normal(2, 3, 4), normal(4)], axis=-1)
    check_compute("nn.prelu", [ints(2, 3), ints(3)], axis=1)


@pytest.mark.parametrize("name", ["nn.softmax", "nn.fast_softmax", "nn.log_softmax"])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_family(name, axis):
    (out,) = check_compute(name, [normal(3, 4, 5) * 4], axis=axis)
    assert "softmax" in out.op.tag
    check_compute(name, [normal(6, dtype="float64")], axis=0)


# ------------------------------------------------------------------------- normalization


@pytest.mark.parametrize("axis", [1, -1])
@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("scale", [True, False])
def test_batch_norm_three_outputs(axis, center, scale):
    x = normal(2, 3, 4)
    c = x.shape[axis]
    var = np.abs(normal(c)) + 0.1
    outs = check_compute(
        "nn.batch_norm",
        [x, normal(c), normal(c), normal(c), var],
        axis=axis,
        epsilon=1e-3,
        center=center,
        scale=scale,
    )
    assert len(outs) == 3


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_layer_norm_axes(axis):
    x = normal(3, 4, 5) * 3 + 1
    c = x.shape[axis]
    check_compute("nn.layer_norm", [x, normal(c), normal(c)], axis=axis, epsilon=1e-5)
    check_compute("nn.layer_norm", [x, normal(c), normal(c)], axis=axis, center=False, scale=False)


@pytest.mark.parametrize("axis", [1, -1])
def test_instance_norm(axis):
    x = normal(2, 3, 4, 5)
    c = x.shape[axis]
    check_compute("nn.instance_norm", [x, normal(c), normal(c)], axis=axis, epsilon=1e-5)
    check_compute("nn.instance_norm", [normal(2, 3, 4), normal(3), normal(3)], axis=1, scale=False)


@pytest.mark.parametrize(("groups", "axis"), [(2, 1), (3, 1), (1, 1), (2, -1)])
def test_group_norm(groups, axis):
    x = normal(2, 6, 3, 6)
    check_compute("nn.group_norm", [x, normal(6), normal(6)], num_groups=groups, axis=axis)


@pytest.mark.parametrize("axes", [[1], [0, 2], [-1], [0, 1, 2]])
def test_l2_normalize(axes):
    check_compute("nn.l2_normalize", [normal(2, 3, 4)], eps=1e-3, axis=axes)
    check_compute("nn.l2_normalize", [normal(2, 3, 4) * 1e-3], eps=0.5, axis=axes)


@pytest.mark.parametrize("axes", [[1], [0, 2], None])
def test_l2_normalize_floor_is_tvms_max_and_a_nan_sum_gives_eps(axes):
    """`max(sum, eps)` is `sum > eps ? sum : eps`: rows whose sum is below eps divide by
    sqrt(eps), and so do rows whose sum is NaN (evaluated and compiled)."""
    x = normal(2, 3, 4) * 1e-2  # sums of squares below eps = 0.01
    x[1] *= 100.0  # and above
    with_nan = x.copy()
    with_nan[0, 1, 2] = np.nan
    p = placeholder(x.shape, "float32", "p0")
    for data in (x, with_nan):
        check_compute("nn.l2_normalize", [data], eps=0.01, axis=axes)
        out, attrs = apply_compute("nn.l2_normalize", [p], eps=0.01, axis=axes)
        (got,), _ = run_default_schedule([p], [out], [data])
        want = IMPLS[get_op("nn.l2_normalize")]([data], attrs)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        assert np.isnan(got).sum() == np.isnan(data).sum()  # only the NaN input stays NaN


def test_dropout_is_identity_with_a_mask():
    outs = check_compute("nn.dropout", [normal(2, 3)], rate=0.3)
    assert len(outs) == 2


@pytest.mark.parametrize(("size", "axis"), [(5, 1), (3, 1), (4, -1), (1, 1)])
def test_lrn(size, axis):
    x = normal(2, 6, 3)
    check_compute("nn.lrn", [x], size=size, axis=axis, bias=2.0, alpha=1e-2, beta=0.75)


def test_batch_flatten():
    check_compute("nn.batch_flatten", [normal(2, 3, 4, 5)])
    check_compute("nn.batch_flatten", [ints(3, 4)])
    check_compute("nn.batch_flatten", [ints(3)])


def test_cross_entropy():
    x = np.abs(normal(3, 4)) + 0.1
    y = np.eye(4, dtype="float32")[[0, 2, 3]]
    (out,) = check_compute("nn.cross_entropy", [x, y])
    assert out.shape == ()
    check_compute("nn.cross_entropy_with_logits", [normal(3, 4), y])


@pytest.mark.parametrize(("axis", "data_len"), [(0, 1), (1, 2), (1, 3), (-1, 3)])
def test_fifo_buffer(axis, data_len):
    buf_shape = [4, 4]
    data_shape = list(buf_shape)
    data_shape[axis] = data_len
    check_compute("nn.fifo_buffer", [normal(*data_shape), normal(*buf_shape)], axis=axis)
    check_compute("nn.fifo_buffer", [ints(*data_shape), ints(*buf_shape)], axis=axis)


# ------------------------------------------------------------------------------- padding


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_modes(mode):
    width = [[1, 2], [0, 0], [2, 1]]
    check_compute(
        "nn.pad", [normal(3, 3, 4), np.asarray(1.5, "float32")], pad_width=width, pad_mode=mode
    )
    check_compute(
        "nn.pad", [ints(3, 4), np.asarray(7, "int32")], pad_width=[[2, 1], [3, 0]], pad_mode=mode
    )


def test_pad_with_no_padding_is_a_copy():
    check_compute("nn.pad", [normal(2, 3), np.asarray(0.0, "float32")], pad_width=[[0, 0], [0, 0]])


@pytest.mark.parametrize("mode", ["SYMMETRIC", "REFLECT"])
def test_mirror_pad(mode):
    check_compute("nn.mirror_pad", [normal(3, 4)], mode=mode, pad_width=[[2, 1], [0, 3]])
    check_compute("nn.mirror_pad", [ints(1, 3, 4)], mode=mode, pad_width=[[0, 0], [1, 1], [2, 2]])


# -------------------------------------------------------------------- depth <-> space


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_depth_to_space_and_back(mode, layout):
    shape = (2, 8, 3, 2) if layout == "NCHW" else (2, 3, 2, 8)
    check_compute("nn.depth_to_space", [normal(*shape)], block_size=2, layout=layout, mode=mode)
    check_compute("nn.depth_to_space", [ints(*shape)], block_size=2, layout=layout, mode=mode)
    shape2 = (1, 3, 4, 6) if layout == "NCHW" else (1, 4, 6, 3)
    check_compute("nn.space_to_depth", [normal(*shape2)], block_size=2, layout=layout, mode=mode)
    check_compute("nn.space_to_depth", [ints(*shape2)], block_size=2, layout=layout, mode=mode)


# ---------------------------------------------------------------------- layout helpers


def test_layout_index_and_primal_index_are_inverse():
    shape = (2, 3, 5, 4)  # NCHW... as N C W 4c: C = 12
    idx = layout_index("NCW4c", shape, {"N": const(1), "C": const(7), "W": const(2)})
    assert [e.value if hasattr(e, "value") else None for e in idx][:1] == [1]
    holder = placeholder(shape, "float32", "x")
    from relay.backend.te import compute

    flat = compute(
        (2, 12, 5), lambda n, c, w: holder[layout_index("NCW4c", shape, {"N": n, "C": c, "W": w})]
    )
    back = compute(shape, lambda *i: flat[tuple(primal_index("NCW4c", shape, i)[a] for a in "NCW")])
    data = normal(*shape)
    (got,) = evaluate(back, {holder: data})
    np.testing.assert_array_equal(got, data)


# ---------------------------------------------------------------------------- coverage

OTHER_FAMILY_OPS = {
    "argsort", "sort", "topk", "cumsum", "cumprod", "einsum",
    "annotation.stop_fusion", "annotation.checkpoint", "on_device", "device_copy", "debug",
}  # fmt: skip
KNOWN_GAPS: dict[str, str] = {}  # operator name -> why it has no compute definition


def test_every_nn_conv_pool_image_algorithm_annotation_operator_has_a_compute():
    from relay.backend.lower.computes import has_compute
    from relay.lang import all_ops

    ops = [
        op
        for op in all_ops()
        if op.name.startswith(("nn.", "image.")) or op.name in OTHER_FAMILY_OPS
    ]
    assert len(ops) >= 68
    missing = sorted(op.name for op in ops if not has_compute(op) and op.name not in KNOWN_GAPS)
    assert not missing, f"operators without a compute definition: {', '.join(missing)}"
