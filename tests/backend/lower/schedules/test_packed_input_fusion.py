"""The `layout_transform` that packs a convolution's NCHW data joins the kernel of the
`nn.contrib_conv2d_NCHWc` it feeds (`passes/fuse_ops.py` `PACKED_DATA_CONVS`) and becomes
the read of the padded input stage (`schedules/conv2d_nchwc.py` `_pad_at_root`): built
models agree with the interpreter for blocks of 3 (the RGB stem), 8 and a block that does
not divide the channels, with and without padding, for one and two threads."""

from __future__ import annotations

import numpy as np
import pytest
import relay
from relay.backend.target import Target
from relay.driver import build
from relay.testing.compute_check import assert_matches
from relay.transform import PassContext

RNG = np.random.default_rng(11)


def one_conv(c: int, size: int, oc: int, k: int, stride: int, pad: int) -> str:
    return f"""#[version = "0.0.5"]
def @main(%data: Tensor[(1, {c}, {size}, {size}), float32],
          %weight: Tensor[({oc}, {c}, {k}, {k}), float32], %bias: Tensor[({oc}), float32]) {{
  clip(nn.bias_add(nn.conv2d(%data, %weight, strides=[{stride}, {stride}],
                             padding=[{pad}, {pad}, {pad}, {pad}], channels={oc},
                             kernel_size=[{k}, {k}]), %bias), a_min=0f, a_max=6f)
}}"""


CASES = [
    # in channels, size, out channels, kernel, stride, pad
    (3, 23, 16, 3, 2, 1),  # the stem: NCHW3c, rows parallel in the padding stage
    (3, 17, 8, 3, 1, 1),
    (16, 13, 24, 3, 1, 1),  # NCHW8c: two input channel blocks
    (6, 11, 8, 1, 1, 0),  # no padding: the packing itself is computed at root
    (5, 9, 10, 3, 2, 2),  # 5 channels: a block of 5 (no vector width divides it)
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", CASES)
def test_packing_fuses_into_the_conv_and_matches_the_interpreter(case, threads):
    c, size, oc, k, stride, pad = case
    mod = relay.parse(one_conv(c, size, oc, k, stride, pad))
    params = {
        "weight": RNG.normal(size=(oc, c, k, k)).astype("float32"),
        "bias": RNG.normal(size=(oc,)).astype("float32"),
    }
    x = RNG.normal(size=(1, c, size, size)).astype("float32")
    dump: dict = {}
    with PassContext(opt_level=3):
        model = build(mod, target=Target.host(threads), params=params, dump=dump)
        oracle = build(mod, target="interp", params=params)
    assert_matches(model.run(data=x), oracle.run(data=x), atol=1e-4)
    kernels = dump["te"].split("# kernel ")[1:]
    packing = 'layout_transform(%p0, src_layout="NCHW", dst_layout="NCHW'
    fused = [k for k in kernels if packing in k and "nn.contrib_conv2d_NCHWc(" in k]
    assert len(fused) == 1, dump["te"]
    alone = [k for k in kernels if packing in k and k not in fused]
    assert not alone  # no packing kernel of its own


def test_a_weight_packing_stays_out_of_the_conv_kernel():
    """Unbound weights are packed by a kernel of their own, not inside every conv call."""
    mod = relay.parse(one_conv(3, 11, 8, 3, 1, 1))
    x = RNG.normal(size=(1, 3, 11, 11)).astype("float32")
    w = RNG.normal(size=(8, 3, 3, 3)).astype("float32")
    b = RNG.normal(size=(8,)).astype("float32")
    dump: dict = {}
    with PassContext(opt_level=3):
        model = build(mod, target=Target.host(2), dump=dump)
        oracle = build(mod, target="interp")
    assert_matches(model.run(data=x, weight=w, bias=b), oracle.run(data=x, weight=w, bias=b),
                   atol=1e-4)  # fmt: skip
    conv = [k for k in dump["te"].split("# kernel ")[1:] if "nn.contrib_conv2d_NCHWc(" in k]
    assert len(conv) == 1
    head = conv[0].split("# schedule")[0]
    assert 'src_layout="OIHW"' not in head
    assert 'layout_transform(%p0, src_layout="NCHW"' in head


PACKED = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 16, 8, 8), float32], %w: Tensor[(2, 2, 3, 3, 8, 8), float32]) {
  %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW8c");
  %1 = nn.contrib_conv2d_NCHWc(%0, %w, padding=[1, 1, 1, 1], channels=16,
                               kernel_size=[3, 3], data_layout="NCHW8c",
                               kernel_layout="OIHW8i8o", out_layout="NCHW8c");
  %2 = nn.relu(%1);
  %3 = %2;
  OUTPUT
}"""


@pytest.mark.parametrize(
    "output,together",
    [
        ("%3", True),  # the packing's one consumer is the conv's data
        ("(%3, %0)", False),  # the packed data is an output too
        ("(%3, nn.relu(%0))", False),  # another consumer: the packing stays a kernel
    ],
)
def test_fusion_groups(output, together):
    """fuse-ops puts the packing `layout_transform` in the conv's group only when the conv's
    data is its one use."""
    from relay.lang.expr import Call, Function
    from relay.lang.op import Op
    from relay.lang.traversal import post_order
    from relay.passes import fuse_ops_pass

    mod = relay.parse(PACKED.replace("OUTPUT", output), prelude=False)
    fused = fuse_ops_pass(mod)
    groups = [
        {n.op.name for n in post_order(e.op.body) if isinstance(n, Call) and isinstance(n.op, Op)}
        for e in post_order(fused["main"])
        if isinstance(e, Call) and isinstance(e.op, Function) and e.op.is_primitive
    ]
    joined = [g for g in groups if "nn.contrib_conv2d_NCHWc" in g]
    assert len(joined) == 1
    assert ("layout_transform" in joined[0]) == together
    x = RNG.normal(size=(1, 16, 8, 8)).astype("float32")
    w = RNG.normal(size=(2, 2, 3, 3, 8, 8)).astype("float32")
    with PassContext(opt_level=3):
        model = build(mod, target=Target.host(2))
        oracle = build(mod, target="interp")
    got, want = model.run(x=x, w=w), oracle.run(x=x, w=w)
    for g, o in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):  # fmt: skip
        assert_matches(g, o, atol=1e-4)
