"""Fusion of the example models by the opt-level-3 pipeline: the exact number of `Primitive`
groups in every global function (with where each number comes from), and the structure the
fusion rules imply on ResNet-18 (each conv2d with its batch-norm scale and shift, its relu
and the residual add) and on the transformer layer."""

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import relay
from relay.backend.runtime import interpret
from relay.lang import Call, Function, IRModule, Op, post_order
from relay.passes import PassContext, standard_pipeline, values_close

EXAMPLES = Path(__file__).parents[2] / "examples"


def optimize(name: str) -> tuple[IRModule, IRModule]:
    mod = relay.parse_file(str(EXAMPLES / f"{name}.relay"))
    # the fusion of the NCHW programs (alter-op-layout's packed ones: test_alter_op_layout)
    with PassContext(opt_level=3, disabled_pass=["alter-op-layout"]) as ctx:
        return mod, standard_pipeline(3)(mod, ctx)


def groups(fn: Function) -> list[list[str]]:
    """The operator names of each `Primitive` function called in `fn`, producers first."""
    return [
        [n.op.name for n in post_order(e.op.body) if isinstance(n, Call) and isinstance(n.op, Op)]
        for e in post_order(fn)
        if isinstance(e, Call) and isinstance(e.op, Function) and e.op.is_primitive
    ]


# The models keep their helper functions (nothing is marked inline), so groups are counted
# per global function; @main of ResNet-18, MobileNet-v2, the LSTM and the TreeLSTM only
# calls helpers (and builds lists and trees), so it has no group of its own.
#
# Batch norm. The weights are parameters of @main, so simplify-inference's expansion
# `x * expand_dims(scale) + expand_dims(beta - mean * scale)` with
# `scale = gamma / sqrt(var + eps)` leaves computations on parameters only. `add, sqrt,
# divide` (the scale) is one group per batch norm: its post-dominator is the shift add, and
# the path there runs through the conv group (out-elementwise-fusable), which TVM's rule
# does not allow. The shift `beta - mean * scale` and both expand_dims are elementwise or
# broadcast and fuse into the conv group. With constant weights fold-constant would remove
# the scale groups.
SCALE = ["add", "sqrt", "divide"]
BN = ["nn.conv2d", "expand_dims", "multiply", "multiply", "subtract", "expand_dims", "add"]

_RESNET_BLOCKS = {f"basic_block_{c}": 4 for c in (64, 128, 256, 512)}  # 2 convs x (scale, conv)
_RESNET_DOWN = {f"basic_block_{c}_down": 6 for c in (128, 256, 512)}  # 3 convs (1 shortcut)
_MOBILENET_SIZES = "16_24 24_24 24_32 32_32 32_64 64_64 64_96 96_96 96_160 160_160 160_320"
EXPECTED_GROUPS = {
    # dense+bias_add+relu twice, dense+bias_add, softmax (out-elementwise-fusable: alone)
    "mlp": {"main": 4},
    # features: (conv+bias_add+relu, max_pool) x 2; classifier as in mlp; main: the
    # batch_flatten between the two helpers
    "lenet": {"features": 4, "classifier": 4, "main": 1},
    # stem: scale, conv group (+relu), max_pool; head: global_avg_pool2d, batch_flatten,
    # dense+bias_add, softmax (each out-elementwise-fusable or injective with a complex
    # consumer)
    "resnet18": {"stem": 3, **_RESNET_BLOCKS, **_RESNET_DOWN, "head": 4, "main": 0},
    # a block of 3 convs (expand, depthwise, project) is 3 x (scale, conv group); the first
    # block has no expansion conv; stem: 1 conv; head: 1 conv, pool, flatten, dense, softmax
    "mobilenet_v2": {
        "stem": 2,
        "inverted_residual_32_16": 4,
        **{f"inverted_residual_{s}": 6 for s in _MOBILENET_SIZES.split()},
        "head": 6,
        "main": 0,
    },
    # linear: dense+bias_add; split/merge_heads: reshape+transpose (injective chain);
    # self_attention: batch_matmul+scale, softmax, batch_matmul; gelu: its elementwise
    # chain; feed_forward: 2 x dense+bias_add (gelu is a call of another global);
    # main: reshape, then per layer norm 5 groups (residual add, mean, x - mean,
    # (x - mean)^2 + mean, and the elementwise tail; the last one takes the final reshape)
    "transformer_layer": {
        "linear": 1,
        "split_heads": 1,
        "merge_heads": 1,
        "self_attention": 3,
        "gelu": 1,
        "feed_forward": 2,
        "main": 3,
    },
    # lstm_cell: 2 x dense+bias_add (the second takes the add of both), split (its tuple
    # goes to several groups), the next cell state's chain, the next hidden state's chain
    "lstm": {"lstm_cell": 5, "lstm": 0, "main": 0},
    # tree_lstm: in the fold closure: h-sum add, dense on the child state, the forget gate
    # chain (dense+bias_add of the input moved in by to-graph-normal-form); then dense on
    # the children's h sum, dense+bias_add+add, split, the cell chain, the hidden chain
    "treelstm": {"foldl": 0, "tree_lstm": 8, "main": 0},
}


@pytest.mark.parametrize("name", sorted(EXPECTED_GROUPS))
def test_group_counts_of_example_models(name: str) -> None:
    _, out = optimize(name)
    counts = {gv.name_hint: len(groups(fn)) for gv, fn in out.functions.items()}
    assert counts == EXPECTED_GROUPS[name]
    complex_ops = {"nn.conv2d", "nn.dense", "nn.batch_matmul", "nn.softmax", "nn.max_pool2d"}
    for fn in out.functions.values():
        for g in groups(fn):
            assert sum(op in complex_ops for op in g) <= 1, g  # one kernel, one complex op


@pytest.mark.parametrize("name", ["mlp", "lenet", "transformer_layer", "lstm", "treelstm"])
def test_o3_pipeline_keeps_the_results_of_example_models(name: str) -> None:
    mod, out = optimize(name)
    rng = np.random.default_rng(0)
    inputs = {}
    for p in mod["main"].params:
        t = p.type_annotation
        inputs[p.name_hint] = rng.uniform(0.5, 1.0, [int(d) for d in t.shape]).astype(t.dtype)
    # float32 layer norms, expanded into mean / subtract / divide: values near 0 differ
    # by a few ulps of the larger intermediate values
    assert values_close(interpret(mod, **inputs), interpret(out, **inputs), 1e-4, 1e-4)


def test_resnet18_each_conv_group_takes_scale_shift_relu_and_residual_add() -> None:
    _, out = optimize("resnet18")
    # ResNet-18's convolutions have no bias (as in torchvision): a conv group is the conv,
    # the batch-norm scale (multiply) and shift (add, with its parameter-only subtract
    # and the expand_dims of scale and shift), then the relu, or the residual add and
    # the relu for the second conv of a block; a downsampling shortcut conv takes its
    # batch norm only (its output goes into the second conv's group through the add)
    relu, residual = [*BN, "nn.relu"], [*BN, "add", "nn.relu"]
    expected = {
        "stem": [relu],
        **{f"basic_block_{c}": [relu, residual] for c in (64, 128, 256, 512)},
        **{f"basic_block_{c}_down": [relu, BN, residual] for c in (128, 256, 512)},
        "head": [],
        "main": [],
    }
    for gv, fn in out.functions.items():
        found = groups(fn)
        convs = [g for g in found if "nn.conv2d" in g]
        assert [Counter(g) for g in convs] == [Counter(g) for g in expected[gv.name_hint]]
        for g in convs:
            assert g.count("nn.conv2d") == 1 and g[0] == "nn.conv2d"  # the conv is the input
        # one parameter-only scale group per batch norm, and nothing else but the stem's
        # max pool and the head's complex ops
        others = [g for g in found if "nn.conv2d" not in g]
        assert others.count(SCALE) == len(convs)
        rest = [g for g in others if g != SCALE]
        if gv.name_hint == "stem":
            assert rest == [["nn.max_pool2d"]]
        elif gv.name_hint == "head":
            assert rest == [
                ["nn.global_avg_pool2d"],
                ["nn.batch_flatten"],
                ["nn.dense", "nn.bias_add"],  # the dense's bias add joins it
                ["nn.softmax"],
            ]
        else:
            assert rest == []


def test_transformer_layer_fusion() -> None:
    _, out = optimize("transformer_layer")
    # elementwise chains fuse: GELU's 0.5 * x * (1 + erf(x * c)) is one group
    assert groups(out["gelu"]) == [["multiply", "multiply", "erf", "add", "multiply"]]
    # injective chains fuse
    assert groups(out["split_heads"]) == [["reshape", "transpose"]]
    assert groups(out["merge_heads"]) == [["transpose", "reshape"]]
    # softmax is out-elementwise-fusable (TVM's kOutEWiseFusable, relay-ops.md) and takes
    # elementwise ops after it, not before: the scaling by 1/8 before it joins the
    # batch_matmul that produces the scores, the complex op it directly follows
    assert groups(out["self_attention"]) == [
        ["nn.batch_matmul", "multiply"],
        ["nn.softmax"],
        ["nn.batch_matmul"],
    ]
    # each expanded layer norm is one group (row reductions, fuse_ops.py): the residual add
    # producing its data, the mean, the variance mean((x - mean)^2), the normalization
    # (x - mean) * rsqrt(var + eps), the scale and the shift; the second one takes the
    # final reshape, which keeps its rows
    layer_norm = [
        "add",
        "mean",
        "subtract",
        "multiply",
        "mean",
        "add",
        "rsqrt",
        "multiply",
        "multiply",
        "add",
    ]
    assert groups(out["main"]) == [["reshape"], layer_norm, [*layer_norm, "reshape"]]
