"""`fold-scale-axis`: constant per-channel scales fold into conv2d/dense weights."""

import numpy as np
import relay
from hypothesis import given
from hypothesis import strategies as st
from relay.backend.runtime import interpret
from relay.lang import Call, Constant, Function, GlobalVar, IRModule, Var, const, post_order
from relay.lang.op import get_op
from relay.lang.structural import assert_structural_equal, structural_equal
from relay.lang.types import TensorType
from relay.passes import PassContext, fold_scale_axis_pass, parse_pipeline
from relay.typecheck import check_module

RNG = np.random.default_rng(0)


def conv(x, w, channels=None, **attrs):
    op = get_op("nn.conv2d")
    channels = w.data.shape[0] if channels is None else channels
    return Call(op, (x, w), op.make_attrs(channels=channels, kernel_size=[1, 1], **attrs))


def dense(x, w):
    op = get_op("nn.dense")
    return Call(op, (x, w), op.make_attrs(units=w.data.shape[0]))


def multiply(a, b):
    return Call(get_op("multiply"), (a, b))


def main(params, body):
    return IRModule({GlobalVar("main"): Function(params, body)})


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def same_values(before, after, **inputs):
    np.testing.assert_allclose(
        interpret(after, **inputs), interpret(before, **inputs), rtol=1e-5, atol=1e-6
    )


def test_golden_conv2d_then_channel_scale():
    x = Var("x", TensorType((1, 2, 4, 4), "float32"))
    w, c = rand(3, 2, 1, 1), rand(3, 1, 1)
    before = main((x,), multiply(conv(x, const(w)), const(c)))
    after = fold_scale_axis_pass(before)
    expected = main((x,), conv(x, const(w * c.reshape(3, 1, 1, 1))))
    assert_structural_equal(after["main"], expected["main"])
    same_values(before, after, x=rand(1, 2, 4, 4))


def test_scale_first_and_4d_scale_and_dense():
    x = Var("x", TensorType((1, 2, 4, 4), "float32"))
    c4 = rand(1, 3, 1, 1)
    before = main((x,), multiply(const(c4), conv(x, const(rand(3, 2, 1, 1)))))
    after = fold_scale_axis_pass(before)
    assert not any(
        isinstance(n, Call) and n.op.name == "multiply" for n in post_order(after["main"])
    )
    same_values(before, after, x=rand(1, 2, 4, 4))
    y = Var("y", TensorType((2, 5), "float32"))
    before = main((y,), multiply(dense(y, const(rand(4, 5))), const(rand(4))))
    after = fold_scale_axis_pass(before)
    assert isinstance(after["main"].body, Call) and after["main"].body.op.name == "nn.dense"
    same_values(before, after, y=rand(2, 5))


def test_not_folded():
    x = Var("x", TensorType((1, 2, 4, 4), "float32"))
    w = const(rand(3, 2, 1, 1))
    s = Var("s", TensorType((3, 1, 1), "float32"))
    cases = [
        multiply(conv(x, w), const(rand(1, 1, 4))),  # scales along the last axis
        multiply(conv(x, w), const(rand(2, 3, 1, 1))),  # broadcasts the batch
        multiply(conv(x, w), s),  # the scale is not a constant
        multiply(conv(x, Var("w", TensorType((3, 2, 1, 1), "float32")), 3), const(rand(3, 1, 1))),
    ]
    for body in cases:
        mod = main(tuple(relay.lang.free_vars(body)), body)
        check_module(mod)
        assert_structural_equal(fold_scale_axis_pass(mod)["main"], mod["main"])
    # NHWC data, HWIO kernel: the channel axis is not axis 1
    y = Var("y", TensorType((1, 4, 4, 2), "float32"))
    op = get_op("nn.conv2d")
    attrs = op.make_attrs(channels=3, kernel_size=[1, 1], data_layout="NHWC", kernel_layout="HWIO")
    nhwc = Call(op, (y, const(rand(1, 1, 2, 3))), attrs)
    mod = main((y,), multiply(nhwc, const(rand(3))))
    check_module(mod)
    assert_structural_equal(fold_scale_axis_pass(mod)["main"], mod["main"])
    # a convolution read twice is not folded (it would be computed twice)
    shared = conv(x, w)
    body = relay.lang.Tuple((multiply(shared, const(rand(3, 1, 1))), shared))
    mod = main((x,), body)
    assert_structural_equal(fold_scale_axis_pass(mod)["main"], mod["main"])


def test_forward_scale_before_conv2d_and_dense():
    x = Var("x", TensorType((1, 2, 4, 4), "float32"))
    w, c = rand(3, 2, 1, 1), rand(2, 1, 1)
    before = main((x,), conv(multiply(x, const(c)), const(w)))
    after = fold_scale_axis_pass(before)
    expected = main((x,), conv(x, const(w * c.reshape(1, 2, 1, 1))))
    assert_structural_equal(after["main"], expected["main"])
    same_values(before, after, x=rand(1, 2, 4, 4))
    y = Var("y", TensorType((2, 5), "float32"))
    before = main((y,), dense(multiply(const(rand(1, 5)), y), const(rand(4, 5))))
    after = fold_scale_axis_pass(before)
    assert isinstance(after["main"].body.args[0], Var)
    same_values(before, after, y=rand(2, 5))


def test_scale_between_two_convolutions_is_folded_once():
    x = Var("x", TensorType((1, 2, 4, 4), "float32"))
    first = conv(x, const(rand(3, 2, 1, 1)))
    second = conv(multiply(first, const(rand(3, 1, 1))), const(rand(2, 3, 1, 1)))
    before = main((x,), second)
    after = fold_scale_axis_pass(before)
    assert not any(
        isinstance(n, Call) and n.op.name == "multiply" for n in post_order(after["main"])
    )
    same_values(before, after, x=rand(1, 2, 4, 4))


def test_forward_not_folded_for_grouped_convolution():
    x = Var("x", TensorType((1, 2, 4, 4), "float32"))
    op = get_op("nn.conv2d")
    attrs = op.make_attrs(channels=2, kernel_size=[1, 1], groups=2)
    body = Call(op, (multiply(x, const(rand(2, 1, 1))), const(rand(2, 1, 1, 1))), attrs)
    mod = main((x,), body)
    check_module(mod)
    assert_structural_equal(fold_scale_axis_pass(mod)["main"], mod["main"])


def test_registered_at_opt_level_3():
    x = Var("x", TensorType((1, 2, 4, 4), "float32"))
    mod = main((x,), multiply(conv(x, const(rand(3, 2, 1, 1))), const(rand(3, 1, 1))))
    with PassContext(opt_level=2):
        assert parse_pipeline("fold-scale-axis")(mod) is mod
    with PassContext(opt_level=3):
        out = parse_pipeline("fold-scale-axis")(mod)
    assert out["main"].body.op.name == "nn.conv2d"


@given(
    st.integers(1, 4),
    st.integers(1, 4),
    st.integers(3, 6),
    st.sampled_from(["chw", "nchw", "left"]),
    st.integers(0, 2**32 - 1),
)
def test_keeps_types_and_results(cin, cout, size, form, seed):
    rng = np.random.default_rng(seed)
    x = Var("x", TensorType((2, cin, size, size), "float32"))
    w = const(rng.standard_normal((cout, cin, 3, 3)).astype("float32"))
    shape = (cout, 1, 1) if form != "nchw" else (1, cout, 1, 1)
    c = const(rng.standard_normal(shape).astype("float32"))
    op = get_op("nn.conv2d")
    call = Call(op, (x, w), op.make_attrs(channels=cout, kernel_size=[3, 3], padding=[1, 1]))
    body = multiply(c, call) if form == "left" else multiply(call, c)
    cin_scale = const(rng.standard_normal((cin, 1, 1)).astype("float32"))
    w2 = const(rng.standard_normal((cout, cin, 3, 3)).astype("float32"))
    body = multiply(body, Call(op, (multiply(x, cin_scale), w2), call.attrs))
    mod = main((x,), relay.lang.Tuple((body, multiply(body, const(2.0)))))
    out = fold_scale_axis_pass(mod)
    assert structural_equal(
        check_module(mod).global_types["main"], check_module(out).global_types["main"]
    )
    assert not any(
        isinstance(n, Call) and n.op.name == "multiply" and n.args[0] is x
        for n in post_order(out["main"])
    )
    assert sum(isinstance(n, Constant) and n.data.ndim == 4 for n in post_order(out["main"])) == 2
    xi = rng.standard_normal((2, cin, size, size)).astype("float32")
    for a, b in zip(interpret(out, x=xi), interpret(mod, x=xi)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_deep_chain():
    # 100,000 let bindings; the fold at the end crosses a let-bound convolution
    x = Var("x", TensorType((1, 1, 2, 2), "float32"))
    body: relay.lang.Expr = x
    bindings = []
    for i in range(100_000):
        v = Var(f"v{i}")
        bindings.append((v, Call(get_op("negative"), (body,))))
        body = v
    w, c = const(np.ones((1, 1, 1, 1), "float32")), const(np.full((1, 1, 1), 2.0, "float32"))
    v, u = Var("conv"), Var("scaled")
    bindings += [(v, conv(body, w)), (u, multiply(v, c))]
    mod = main((x,), relay.lang.let_chain(bindings, u))
    out = fold_scale_axis_pass(mod)
    weights = [n.data for n in post_order(out["main"]) if isinstance(n, Constant)]
    assert [float(a.reshape(-1)[0]) for a in weights] == [2.0]
