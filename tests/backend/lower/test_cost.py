"""Kernel costs from compute definitions: fused operator names, FLOPs and bytes.

Every count is derived by hand in the test from the operator's definition. Programs go
through the build's optimizer (inlining into `@main`, the O3 pipeline, fusion) and each
Primitive function it makes is lowered as `compile_plan` lowers it; a few compute
definitions the pipeline rewrites away (layer norm) are lowered from a hand-written
Primitive function.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import relay
from relay.backend.kernel_cost import KernelCost
from relay.backend.lower.cost import (
    MAX_NAME_LENGTH,
    describe_kernel,
    fused_name,
    fused_ops,
    interpreted_cost,
    kernel_bytes,
    kernel_flops,
)
from relay.backend.lower.lower_func import LoweringError, lower_primitive
from relay.lang.attrs import FuncAttrs
from relay.lang.expr import Call, Constant, Function, Var
from relay.lang.op import get_op
from relay.lang.traversal import post_order
from relay.lang.types import TensorType
from relay.passes import PassContext, standard_pipeline

F32 = 4


def parse(body: str) -> relay.IRModule:
    return relay.parse('#[version = "0.0.5"]\n' + body)


def built_kernels(body: str) -> list[KernelCost]:
    """The costs of the kernels `relay.build` makes of a one-function program (the O3
    pipeline, fusion last), in evaluation order."""
    # alter-op-layout is off: the figures are those of the NCHW kernels these tests write
    with PassContext(opt_level=3, disabled_pass=["alter-op-layout"]):
        main = standard_pipeline(3)(parse(body))["main"]
    calls = [n for n in post_order(main) if isinstance(n, Call)]
    groups = [c.op for c in calls if isinstance(c.op, Function) and c.op.is_primitive]
    return [describe_kernel(fn, lower_primitive(fn, None, f"k{k}")) for k, fn in enumerate(groups)]


def built_kernel(body: str) -> KernelCost:
    """The cost of the one kernel a program makes."""
    (cost,) = built_kernels(body)
    return cost


def primitive_kernel(body: str) -> KernelCost:
    """The cost of a hand-written Primitive `@main`, lowered directly."""
    fn = parse(body)["main"]
    return describe_kernel(fn, lower_primitive(fn, None, "k"))


def conv_out(size: int, kernel: int, stride: int, pad: int) -> int:
    return (size + 2 * pad - kernel) // stride + 1


# ---------------------------------------------------------------------------- convolution


@pytest.mark.parametrize(
    ("c", "k", "groups", "stride", "pad"),
    [
        (3, 5, 1, 2, 1),  # plain, stride 2, padded
        (4, 6, 2, 2, 1),  # grouped
        (4, 4, 4, 2, 1),  # depthwise
        (4, 8, 4, 1, 0),  # depthwise with multiplier 2, unpadded
    ],
)
def test_conv2d_bias_relu_flops_and_bytes(
    c: int, k: int, groups: int, stride: int, pad: int
) -> None:
    n, h, w, r = 2, 9, 7, 3
    oh, ow = conv_out(h, r, stride, pad), conv_out(w, r, stride, pad)
    cost = built_kernel(
        f"def @main(%x: Tensor[({n}, {c}, {h}, {w}), float32],"
        f" %w: Tensor[({k}, {c // groups}, {r}, {r}), float32], %b: Tensor[({k}), float32]) {{"
        f"  %0 = nn.conv2d(%x, %w, strides=[{stride}, {stride}], padding=[{pad}, {pad}, {pad},"
        f" {pad}], groups={groups}, channels={k}, kernel_size=[{r}, {r}]);"
        "  %1 = nn.bias_add(%0, %b);"
        "  nn.relu(%1) }"
    )
    out = n * k * oh * ow
    # a multiply-accumulate per (output, input channel of its group, tap); then the bias add
    # and relu's compare per output element
    assert cost.flops == 2 * out * (c // groups) * r * r + 2 * out
    assert cost.bytes == F32 * (n * c * h * w + k * (c // groups) * r * r + k + out)
    assert cost.ops == ("nn.conv2d", "nn.bias_add", "nn.relu")
    assert cost.name == "fused_nn_conv2d_nn_bias_add_nn_relu"
    assert cost.kind == "nn.conv2d"


def test_int8_conv2d_counts_integer_multiply_accumulates_not_index_arithmetic() -> None:
    # the padding stage's bounds tests and every index are integer arithmetic: never counted
    cost = built_kernel(
        "def @main(%x: Tensor[(1, 4, 8, 8), int8], %w: Tensor[(5, 4, 3, 3), int8]) {"
        '  nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=5, kernel_size=[3, 3], out_dtype="int32")'
        " }"
    )
    assert cost.flops == 2 * (5 * 8 * 8) * 4 * 3 * 3
    assert cost.bytes == 1 * 4 * 64 + 1 * 5 * 4 * 9 + 4 * 5 * 64


# ------------------------------------------------------------------------------- matmuls


@pytest.mark.parametrize("bias", [False, True])
def test_dense_flops_and_bytes(bias: bool) -> None:
    m, n, k = 3, 7, 5
    body = "nn.bias_add(nn.dense(%x, %w), %b)" if bias else "nn.dense(%x, %w)"
    cost = built_kernel(
        f"def @main(%x: Tensor[({m}, {k}), float32], %w: Tensor[({n}, {k}), float32],"
        f" %b: Tensor[({n}), float32]) {{ {body} }}"
    )
    assert cost.flops == 2 * m * n * k + (m * n if bias else 0)
    # an unused parameter is not an argument of the kernel
    assert cost.bytes == F32 * (m * k + n * k + m * n + (n if bias else 0))
    assert cost.kind == "nn.dense"


def test_batch_matmul_flops_and_bytes() -> None:
    b, m, n, k = 2, 3, 4, 5
    cost = built_kernel(
        f"def @main(%x: Tensor[({b}, {m}, {k}), float32], %y: Tensor[({b}, {n}, {k}), float32]) {{"
        "  nn.batch_matmul(%x, %y, transpose_b=True) }"
    )
    assert cost.flops == 2 * b * m * n * k
    assert cost.bytes == F32 * (b * m * k + b * n * k + b * m * n)
    assert (cost.name, cost.kind) == ("fused_nn_batch_matmul", "nn.batch_matmul")


# ---------------------------------------------------------------------------- elementwise


def test_elementwise_chain_counts_each_operation_per_element() -> None:
    cost = built_kernel(
        "def @main(%x: Tensor[(4, 6), float32], %y: Tensor[(4, 6), float32],"
        " %v: Tensor[(6), float32]) {"
        "  %0 = add(%x, %y); %1 = multiply(%0, %v); %2 = nn.relu(%1); %3 = exp(%2);"
        "  %4 = subtract(%3, 1f); %5 = tanh(%4); divide(%5, %y) }"
    )
    # add, multiply (broadcast), relu's compare, exp, subtract, tanh, divide
    assert cost.flops == 7 * 4 * 6
    assert cost.bytes == F32 * (24 + 24 + 6 + 24)
    assert cost.ops == ("add", "multiply", "nn.relu", "exp", "subtract", "tanh", "divide")
    assert cost.kind == "add"  # no operator anchors an injective kernel: the first one


def test_data_movement_is_no_flops() -> None:
    cost = built_kernel(
        "def @main(%x: Tensor[(2, 3, 4), float32]) {"
        "  %0 = transpose(%x, axes=[2, 0, 1]); %1 = reshape(%0, newshape=[4, 6]);"
        "  strided_slice(%1, begin=[1, 0], end=[3, 6]) }"
    )
    assert cost.flops == 0
    assert cost.bytes == F32 * (24 + 12)
    assert cost.name == "fused_transpose_reshape_strided_slice"


def test_integer_data_arithmetic_counts_as_ops() -> None:
    cost = built_kernel(
        "def @main(%x: Tensor[(2, 3), int32], %y: Tensor[(2, 3), int32]) {"
        "  %0 = add(%x, %y); multiply(%0, 3) }"
    )
    assert cost.flops == 2 * 6
    assert cost.bytes == 4 * 18


def test_lifted_constants_count_in_the_bytes() -> None:
    x = Var("x", TensorType((2, 5), "float64"))
    weights = np.arange(10, dtype="float64").reshape(2, 5)
    body = Call(
        get_op("multiply"),
        [Call(get_op("add"), [x, Constant(weights)]), relay.const(np.float64(3.0))],
    )
    fn = Function([x], body, attrs=FuncAttrs({"Primitive": 1}))
    lowered = lower_primitive(fn, None, "k")
    assert len(lowered.constants) == 1
    assert kernel_flops(lowered.te) == 2 * 10
    assert kernel_bytes(lowered.te) == 8 * (10 + 10 + 10)  # x, the constant, the output


# ----------------------------------------------------------------------------- reductions


def test_sum_and_mean() -> None:
    costs = built_kernels(
        "def @main(%x: Tensor[(4, 6, 5), float32]) {  %0 = sum(%x, axis=[1]); mean(%0, axis=[1]) }"
    )
    assert [c.name for c in costs] == ["fused_sum", "fused_mean"]
    total, mean = costs
    # sum: one add per reduced element into each of 4 x 5 outputs
    assert total.flops == (4 * 5) * 6
    assert total.bytes == F32 * (120 + 20)
    # mean: 5 adds and a division for each of 4 outputs
    assert mean.flops == 4 * (5 + 1)
    assert mean.bytes == F32 * (20 + 4)
    assert (total.kind, mean.kind) == ("sum", "mean")


def test_softmax() -> None:
    rows, cols = 4, 6
    cost = built_kernel(f"def @main(%x: Tensor[({rows}, {cols}), float32]) {{ nn.softmax(%x) }}")
    # max: a max per element; exponentials: subtract, exp per element; their sum: an add
    # per element; normalize: the reciprocal of the sum and a multiply per element (the
    # reciprocal is written per element and counted so; the loop computes it once per row)
    assert cost.flops == rows * cols * (1 + 2 + 1 + 2)
    assert cost.bytes == F32 * 2 * rows * cols
    assert cost.kind == "nn.softmax"


def test_layer_norm_compute_definition() -> None:
    rows, cols = 4, 6
    cost = primitive_kernel(
        f"def @main(%x: Tensor[({rows}, {cols}), float32], %g: Tensor[({cols}), float32],"
        f" %b: Tensor[({cols}), float32], Primitive=1) {{ nn.layer_norm(%x, %g, %b) }}"
    )
    n = rows * cols
    # sum: an add per element; mean: a division per row; squared deviations: subtract (the
    # difference is one node, used twice), multiply, add per element; variance: a division
    # per row; normalize: subtract, add epsilon, sqrt, divide, scale, shift per element
    assert cost.flops == n + rows + 3 * n + rows + 6 * n
    assert cost.bytes == F32 * (n + cols + cols + n)
    assert (cost.name, cost.kind) == ("fused_nn_layer_norm", "nn.layer_norm")


def test_layer_norm_as_the_build_expands_it() -> None:
    rows, cols = 4, 6
    costs = built_kernels(
        f"def @main(%x: Tensor[({rows}, {cols}), float32], %g: Tensor[({cols}), float32],"
        f" %b: Tensor[({cols}), float32]) {{ nn.layer_norm(%x, %g, %b) }}"
    )
    n = rows * cols
    # one kernel (row reductions, passes/fuse_ops.py), reading x once and writing once
    (cost,) = costs
    assert cost.name == "fused_mean_subtract_multiply_mean_add_rsqrt_multiply_multiply_add"
    assert cost.kind == "mean"  # a reduction anchors, not the first op
    assert cost.bytes == F32 * (n + cols + cols + n)
    # mean: adds + a division per row; variance: subtract, square, add per element and a
    # division per row; normalize: add epsilon and rsqrt per row, then the multiply by it,
    # scale and shift per element (the difference x - mean is one node, counted once)
    assert cost.flops == (n + rows) + (3 * n + rows) + (2 * rows + 3 * n)


def test_argmax_counts_its_tuple_reduction_once() -> None:
    cost = built_kernel("def @main(%x: Tensor[(4, 6), float32]) { argmax(%x, axis=[1]) }")
    # per reduced element: the value compare and the tie test (==); the index compares and
    # the flattened index arithmetic are integer, NaN tests are not arithmetic
    assert cost.flops == 4 * 6 * 2
    assert cost.bytes == F32 * 24 + 4 * 4


def test_a_kernel_the_interpreter_runs_has_names_and_static_bytes_but_no_flops() -> None:
    fn = parse(
        "def @main(%x: Tensor[(?, 3), float32], %y: Tensor[(3), float64], Primitive=1)"
        ' -> Tensor[(?, 3), float32] { %0 = cast(%y, dtype="float32"); add(%x, %0) }'
    )["main"]
    with pytest.raises(LoweringError):
        lower_primitive(fn, None, "k")
    cost = interpreted_cost(fn)
    assert (cost.name, cost.ops, cost.kind) == ("fused_cast_add", ("cast", "add"), "cast")
    assert (cost.flops, cost.bytes) == (0, 8 * 3)  # the dynamic tensors have no known size


# ----------------------------------------------------------------------------------- names


def test_fused_ops_in_evaluation_order_each_call_once() -> None:
    fn = parse(
        "def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32], Primitive=1) {"
        "  %0 = exp(%x); %1 = nn.relu(%y); %2 = add(%0, %1); multiply(%2, %2) }"
    )["main"]
    assert fused_ops(fn) == ("exp", "nn.relu", "add", "multiply")
    assert fused_name(fused_ops(fn)) == "fused_exp_nn_relu_add_multiply"


def test_a_kernel_without_operators_is_a_copy() -> None:
    cost = primitive_kernel("def @main(%x: Tensor[(2, 3), float32], Primitive=1) { (%x, %x) }")
    assert (cost.name, cost.ops, cost.kind, cost.flops) == ("fused_copy", (), "copy", 0)
    assert cost.bytes == F32 * 3 * 6


def test_fused_name_replaces_dots() -> None:
    assert fused_name(["nn.conv2d", "add", "nn.relu"]) == "fused_nn_conv2d_add_nn_relu"
    assert fused_name(["qnn.requantize"]) == "fused_qnn_requantize"


def test_long_names_keep_whole_operators_and_a_digest() -> None:
    ops = ["nn.conv2d", *(["add", "nn.relu", "multiply", "nn.bias_add"] * 6)]
    name = fused_name(ops)
    full = "fused_" + "_".join(o.replace(".", "_") for o in ops)
    assert len(full) > MAX_NAME_LENGTH
    assert len(name) <= MAX_NAME_LENGTH
    match = re.fullmatch(r"(fused_.*)_([0-9a-f]{8})", name)
    assert match is not None, name
    parts = [o.replace(".", "_") for o in ops]
    kept = next(j for j in range(len(parts)) if match.group(1) == "_".join(["fused", *parts[:j]]))
    assert kept > 0  # whole operator names, as many as fit before the digest
    assert len(match.group(1)) + 1 + len(parts[kept]) + 9 > MAX_NAME_LENGTH
    assert fused_name(ops) == name  # stable
    assert fused_name([*ops[:-1], "subtract"]) != name  # another chain, another name
    exact = ["x" * (MAX_NAME_LENGTH - len("fused_"))]
    assert fused_name(exact) == "fused_" + exact[0]  # at the limit: untouched


def test_a_single_huge_operator_name_is_still_bounded() -> None:
    name = fused_name(["y" * 200])
    assert len(name) <= MAX_NAME_LENGTH
    assert name.startswith("fused_")


def test_costs_scale_with_the_batch() -> None:
    def cost(batch: int) -> KernelCost:
        return built_kernel(
            f"def @main(%x: Tensor[({batch}, 8), float32], %w: Tensor[(3, 8), float32]) {{"
            "  nn.relu(nn.dense(%x, %w)) }"
        )

    one, five = cost(1), cost(5)
    assert five.flops == 5 * one.flops == 5 * (2 * 3 * 8 + 3)
    assert five.bytes - one.bytes == F32 * 4 * (8 + 3)
