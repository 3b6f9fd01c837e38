"""Reference implementations of nn.* operators (dense, softmax, norms, padding, ...)."""

import itertools

import numpy as np
import pytest
from relay.backend.runtime import EvalError
from relay.backend.runtime.op_impls import IMPLS
from relay.lang import get_op


def call(name, *args, **attrs):
    op = get_op(name)
    return IMPLS[op](list(args), op.make_attrs(**attrs))


RNG = np.random.default_rng(0)


def test_dense_matches_loops_and_int8_accumulates_exactly():
    x = RNG.normal(size=(3, 5)).astype("float32")
    w = RNG.normal(size=(4, 5)).astype("float32")
    out = call("nn.dense", x, w, units=4)
    want = [
        [sum(float(x[i, k]) * float(w[j, k]) for k in range(5)) for j in range(4)] for i in range(3)
    ]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, want, rtol=1e-5)
    xi = np.full((2, 300), -128, "int8")
    wi = np.full((3, 300), -128, "int8")
    exact = call("nn.dense", xi, wi, units=None, out_dtype="int32")
    assert exact.dtype == np.int32 and (exact == 128 * 128 * 300).all()
    assert call("nn.dense", x[0], w, units=None).shape == (4,)


def test_dense_pack_unpacks_the_weight_layout():
    x = RNG.normal(size=(2, 6)).astype("float32")
    w = RNG.normal(size=(8, 6)).astype("float32")
    packed = w.reshape(2, 4, 6).transpose(0, 2, 1)  # NC4n: (units / 4, k, 4)
    out = call("nn.contrib_dense_pack", x, packed, units=8, weight_layout="NC4n")
    np.testing.assert_allclose(out, call("nn.dense", x, w, units=8), rtol=1e-6)


def test_matmul_and_batch_matmul_transposes_and_broadcast():
    a = RNG.normal(size=(3, 4))
    b = RNG.normal(size=(4, 5))
    np.testing.assert_allclose(call("nn.matmul", a, b, units=None), a @ b)
    np.testing.assert_allclose(
        call("nn.matmul", a.T, b.T, units=None, transpose_a=True, transpose_b=True), a @ b
    )
    np.testing.assert_allclose(
        call("nn.matmul", RNG.normal(size=(2, 3, 4)), b, units=None).shape, (2, 3, 5)
    )
    ba = RNG.normal(size=(2, 3, 4))
    bb = RNG.normal(size=(1, 4, 5))
    out = call("nn.batch_matmul", ba, bb)
    assert out.shape == (2, 3, 5)
    for i in range(2):
        np.testing.assert_allclose(out[i], ba[i] @ bb[0])
    bt = call("nn.batch_matmul", ba, bb.transpose(0, 2, 1), transpose_b=True)
    np.testing.assert_allclose(bt, out)
    with pytest.raises(EvalError):
        call("nn.batch_matmul", ba, RNG.normal(size=(3, 4, 5)))


def test_bias_add_and_prelu_along_an_axis():
    x = RNG.normal(size=(2, 3, 4)).astype("float32")
    bias = np.arange(3, dtype="float32")
    np.testing.assert_allclose(call("nn.bias_add", x, bias), x + bias[None, :, None])
    np.testing.assert_allclose(
        call("nn.bias_add", x, np.arange(4, dtype="float32"), axis=-1), x + np.arange(4)
    )
    alpha = np.array([0.1, 0.2, 0.3], "float32")
    out = call("nn.prelu", x, alpha)
    for i, c, k in itertools.product(range(2), range(3), range(4)):
        v = x[i, c, k]
        assert out[i, c, k] == pytest.approx(v if v > 0 else alpha[c] * v)


def test_softmax_family():
    x = RNG.normal(size=(3, 5)).astype("float32") * 10
    for name in ["nn.softmax", "nn.fast_softmax"]:
        s = call(name, x)
        assert s.dtype == np.float32
        np.testing.assert_allclose(s.sum(axis=-1), 1, rtol=1e-6)
        x64 = x.astype("float64")
        np.testing.assert_allclose(call(name, x64 + 1000), call(name, x64), rtol=1e-9)
    s0 = call("nn.softmax", x, axis=0)
    np.testing.assert_allclose(s0.sum(axis=0), 1, rtol=1e-6)
    big = np.array([[1e4, 0.0]], "float32")
    assert call("nn.softmax", big).tolist() == [[1.0, 0.0]]
    ls = call("nn.log_softmax", x)
    np.testing.assert_allclose(
        ls, np.log(call("nn.softmax", x).astype("float64")), rtol=1e-4, atol=1e-5
    )
    assert call("nn.log_softmax", big)[0, 1] == pytest.approx(-1e4)
    h = call("nn.softmax", x.astype("float16"))
    assert h.dtype == np.float16


def test_batch_norm_uses_the_moving_statistics():
    x = RNG.normal(size=(2, 3, 2, 2)).astype("float32")
    gamma, beta = np.array([1.0, 2.0, 3.0], "float32"), np.array([0.5, 0.0, -1.0], "float32")
    mean, var = np.array([0.1, -0.2, 0.3], "float32"), np.array([1.0, 4.0, 0.25], "float32")
    out, m, v = call("nn.batch_norm", x, gamma, beta, mean, var, epsilon=1e-3)
    for c in range(3):
        want = (x[:, c] - mean[c]) / np.sqrt(var[c] + 1e-3) * gamma[c] + beta[c]
        np.testing.assert_allclose(out[:, c], want, rtol=1e-5, atol=1e-6)
    assert m.tolist() == mean.tolist() and v.tolist() == var.tolist()
    plain, _, _ = call("nn.batch_norm", x, gamma, beta, mean, var, center=False, scale=False)
    np.testing.assert_allclose(plain[:, 1], (x[:, 1] + 0.2) / np.sqrt(4 + 1e-5), rtol=1e-5)
    last, _, _ = call("nn.batch_norm", x.transpose(0, 2, 3, 1), gamma, beta, mean, var, axis=-1)
    np.testing.assert_allclose(
        last, call("nn.batch_norm", x, gamma, beta, mean, var)[0].transpose(0, 2, 3, 1), rtol=1e-6
    )


def test_layer_instance_and_group_norm():
    x = RNG.normal(size=(2, 4, 3, 5)).astype("float32") * 3 + 1
    ones, zeros = np.ones(5, "float32"), np.zeros(5, "float32")
    ln = call("nn.layer_norm", x, ones, zeros)
    np.testing.assert_allclose(ln.mean(axis=-1), 0, atol=1e-5)
    np.testing.assert_allclose(ln.var(axis=-1), 1, rtol=1e-3)
    g4, b4 = np.arange(1, 5, dtype="float32"), np.arange(4, dtype="float32")
    inorm = call("nn.instance_norm", x, g4, b4)
    v = x.astype("float64")
    m, s = v.mean(axis=(2, 3), keepdims=True), v.var(axis=(2, 3), keepdims=True)
    np.testing.assert_allclose(
        inorm,
        (v - m) / np.sqrt(s + 1e-5) * g4[:, None, None] + b4[:, None, None],
        rtol=1e-5,
        atol=1e-5,
    )
    # one group per channel is instance norm; one group is normalizing each sample
    np.testing.assert_allclose(
        call("nn.group_norm", x, g4, b4, num_groups=4), inorm, rtol=1e-5, atol=1e-5
    )
    whole = call("nn.group_norm", x, np.ones(4, "float32"), np.zeros(4, "float32"), num_groups=1)
    np.testing.assert_allclose(whole.reshape(2, -1).mean(axis=1), 0, atol=1e-5)
    two = call("nn.group_norm", x, np.ones(4, "float32"), np.zeros(4, "float32"), num_groups=2)
    first = v[:, :2]
    np.testing.assert_allclose(
        two[:, :2],
        (first - first.mean(axis=(1, 2, 3), keepdims=True))
        / np.sqrt(first.var(axis=(1, 2, 3), keepdims=True) + 1e-5),
        rtol=1e-5,
        atol=1e-5,
    )
    off = call("nn.layer_norm", x, ones * 2, zeros + 7, center=False)
    np.testing.assert_allclose(off, ln * 2, rtol=1e-5, atol=1e-5)


def test_l2_normalize_dropout_batch_flatten():
    x = RNG.normal(size=(2, 3, 4)).astype("float32")
    out = call("nn.l2_normalize", x, eps=1e-12, axis=[1, 2])
    np.testing.assert_allclose(np.sum(out.astype("float64") ** 2, axis=(1, 2)), 1, rtol=1e-5)
    tiny = call("nn.l2_normalize", np.array([[1e-3, 0.0]], "float32"), eps=1.0, axis=[1])
    assert tiny.tolist() == [[pytest.approx(1e-3), 0.0]]  # sqrt(max(1e-6, eps)) = 1
    y, mask = call("nn.dropout", x, rate=0.3)
    np.testing.assert_array_equal(y, x)
    assert mask.dtype == np.float32 and (mask == 1).all()
    assert call("nn.batch_flatten", x).shape == (2, 12)


def test_l2_normalize_floors_the_sum_at_eps_with_tvms_max():
    """`x / sqrt(s > eps ? s : eps)` for the sum of squares `s`: a sum below eps, above
    eps, and NaN (TVM's `max` then gives eps, so only the NaN element stays NaN)."""
    x = np.array([[0.01, -0.02], [3.0, 4.0]], "float32")
    out = call("nn.l2_normalize", x, eps=0.01, axis=[1])
    want = [[0.01 / 0.1, -0.02 / 0.1], [3.0 / 5.0, 4.0 / 5.0]]  # sums 5e-4 < eps, 25 > eps
    np.testing.assert_allclose(out, want, rtol=1e-6)
    with_nan = np.array([[np.nan, 0.5, -2.0], [1.0, 2.0, 2.0]], "float32")
    out = call("nn.l2_normalize", with_nan, eps=0.25, axis=None)
    assert np.isnan(out[0, 0]) and not np.isnan(out[0, 1:]).any() and not np.isnan(out[1]).any()
    np.testing.assert_allclose(out.ravel()[1:], with_nan.ravel()[1:] / 0.5, rtol=1e-6)
    out = call("nn.l2_normalize", with_nan, eps=0.25, axis=[1])
    np.testing.assert_allclose(out[0, 1:], [1.0, -4.0], rtol=1e-6)  # row 0: NaN sum, eps
    np.testing.assert_allclose(out[1], [1 / 3, 2 / 3, 2 / 3], rtol=1e-6)  # row 1: sum 9


def test_lrn_matches_the_formula():
    x = RNG.normal(size=(1, 5, 2, 2)).astype("float32")
    for size in (3, 4):
        out = call("nn.lrn", x, size=size, alpha=0.5, beta=0.75, bias=2.0)
        for c in range(5):
            lo = c - size // 2
            window = [x[0, j] ** 2 for j in range(lo, lo + size) if 0 <= j < 5]
            want = x[0, c] / (2.0 + 0.5 / size * sum(window)) ** 0.75
            np.testing.assert_allclose(out[0, c], want, rtol=1e-5)


def test_cross_entropy_and_fifo_buffer():
    p = np.array([[0.25, 0.75], [0.5, 0.5]], "float32")
    y = np.array([[0, 1], [1, 0]], "float32")
    assert float(call("nn.cross_entropy", p, y)) == pytest.approx(-(np.log(0.75) + np.log(0.5)) / 2)
    assert float(call("nn.cross_entropy_with_logits", p, y)) == pytest.approx(-(0.75 + 0.5) / 2)
    buf = np.arange(6, dtype="int32").reshape(1, 6)
    out = call("nn.fifo_buffer", np.array([[10, 11]], "int32"), buf, axis=1)
    assert out.tolist() == [[2, 3, 4, 5, 10, 11]]


def test_pad_modes_by_hand():
    x = np.array([[1, 2, 3]], "int32")
    width = [[0, 1], [2, 1]]
    const = call("nn.pad", x, np.array(9, "int32"), pad_width=width)
    assert const.tolist() == [[9, 9, 1, 2, 3, 9], [9, 9, 9, 9, 9, 9]]
    edge = call("nn.pad", x, np.array(0, "int32"), pad_width=[[0, 0], [2, 1]], pad_mode="edge")
    assert edge.tolist() == [[1, 1, 1, 2, 3, 3]]
    refl = call("nn.pad", x, np.array(0, "int32"), pad_width=[[0, 0], [2, 1]], pad_mode="reflect")
    assert refl.tolist() == [[3, 2, 1, 2, 3, 2]]
    f = call("nn.pad", x.astype("float16"), np.array(0.5, "float64"), pad_width=[[0, 0], [1, 0]])
    assert f.dtype == np.float16 and f.tolist() == [[0.5, 1, 2, 3]]
    sym = call("nn.mirror_pad", x, pad_width=[[0, 0], [2, 2]])
    assert sym.tolist() == [[2, 1, 1, 2, 3, 3, 2]]
    mref = call("nn.mirror_pad", x, pad_width=[[0, 0], [2, 2]], mode="REFLECT")
    assert mref.tolist() == [[3, 2, 1, 2, 3, 2, 1]]
    with pytest.raises(EvalError):
        call("nn.mirror_pad", x, pad_width=[[0, 0], [3, 0]], mode="REFLECT")


def test_upsampling():
    x = np.arange(6, dtype="float32").reshape(1, 1, 2, 3)
    near = call("nn.upsampling", x, scale_h=2.0, scale_w=2.0)
    np.testing.assert_array_equal(near, x.repeat(2, axis=2).repeat(2, axis=3))
    assert call("nn.upsampling", x, scale_h=1.5, scale_w=1.0).shape == (1, 1, 3, 3)
    lin = call(
        "nn.upsampling", x, scale_h=1.0, scale_w=5 / 3, method="bilinear", align_corners=True
    )
    np.testing.assert_allclose(lin[0, 0, 0], [0, 0.5, 1, 1.5, 2], rtol=1e-6)
    nhwc = call("nn.upsampling", x.transpose(0, 2, 3, 1), scale_h=2.0, scale_w=2.0, layout="NHWC")
    np.testing.assert_array_equal(nhwc, near.transpose(0, 2, 3, 1))
    x3 = np.arange(8, dtype="float32").reshape(1, 1, 2, 2, 2)
    up3 = call(
        "nn.upsampling3d",
        x3,
        scale_d=2.0,
        scale_h=1.0,
        scale_w=2.0,
        coordinate_transformation_mode="asymmetric",
    )
    np.testing.assert_array_equal(up3, x3.repeat(2, axis=2).repeat(2, axis=4))
    # half_pixel (the default) with TVM's floor rounding: sources -0.25, 0.25, 0.75, 1.25
    half = call("nn.upsampling3d", x3, scale_d=1.0, scale_h=1.0, scale_w=2.0)
    assert half[0, 0, 0, 0].tolist() == [0, 0, 0, 1]


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space_matches_the_channel_formula_and_inverts(mode):
    b = 2
    x = RNG.normal(size=(1, 8, 2, 3)).astype("float32")
    out = call("nn.depth_to_space", x, block_size=b, mode=mode)
    assert out.shape == (1, 2, 4, 6)
    for c, y, xx in itertools.product(range(2), range(4), range(6)):
        by, bx = y % b, xx % b
        src = (by * b + bx) * 2 + c if mode == "DCR" else c * b * b + by * b + bx
        assert out[0, c, y, xx] == x[0, src, y // b, xx // b]
    np.testing.assert_array_equal(call("nn.space_to_depth", out, block_size=b, mode=mode), x)
    nhwc = call(
        "nn.depth_to_space", x.transpose(0, 2, 3, 1), block_size=b, mode=mode, layout="NHWC"
    )
    np.testing.assert_array_equal(nhwc, out.transpose(0, 2, 3, 1))
