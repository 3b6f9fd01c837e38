"""Operator fusion (`relay.passes.fuse_ops_pass`): golden groups, example models, properties."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import relay
from hypothesis import given
from hypothesis import strategies as st
from relay.backend.runtime import interpret
from relay.lang.expr import Call, Expr, Function, GlobalVar, Let, Tuple, TupleGetItem, Var, const
from relay.lang.module import IRModule
from relay.lang.op import Op, OpPattern, get_op
from relay.lang.structural import assert_structural_equal
from relay.lang.traversal import post_order, rewrite_post_order, substitute
from relay.lang.types import TensorType
from relay.passes import fuse_ops_pass
from relay.passes.dominators import IndexedGraph, post_dominator_tree
from relay.passes.fuse_ops import ROW_REDUCTIONS
from relay.testing.typed_programs import dataflow_programs, functional_programs, inputs_for
from relay.typecheck import check_module, infer_module

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def parse(body: str) -> IRModule:
    return relay.parse('#[version = "0.0.5"]\n' + body, prelude=False)


def groups(fn: Expr) -> list[list[str]]:
    """The operator names of each `Primitive` function called in `fn`, producers first."""
    out = []
    for e in post_order(fn):
        if isinstance(e, Call) and isinstance(e.op, Function) and e.op.is_primitive:
            names = [
                n.op.name
                for n in post_order(e.op.body)
                if isinstance(n, Call) and isinstance(n.op, Op)
            ]
            out.append(names)
    return out


def random_inputs(fn: Function, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for p in fn.params:
        t = p.type_annotation
        assert isinstance(t, TensorType)
        shape = [int(d) for d in t.shape]  # type: ignore[call-overload]
        out[p.name_hint] = rng.uniform(-1, 1, shape).astype(t.dtype)
    return out


def assert_same_results(mod: IRModule, fused: IRModule, seed: int = 0) -> None:
    check_module(fused)
    inputs = random_inputs(mod["main"], seed)
    want = interpret(mod, **inputs)
    got = interpret(fused, **inputs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


def assert_one_complex_op(names: list[str]) -> None:
    """A group holds at most one op above broadcast, or only row reductions as such."""
    complex_ops = (OpPattern.COMM_REDUCE, OpPattern.OUT_ELEMWISE_FUSABLE, OpPattern.OPAQUE)
    above = [n for n in names if get_op(n).pattern in complex_ops]
    assert len(above) <= 1 or all(n in ROW_REDUCTIONS for n in above), names


# ------------------------------------------------------------------------ golden groups


def test_conv_bias_relu_is_one_group_golden() -> None:
    mod = parse(
        """def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32],
                     %b: Tensor[(4), float32]) {
             nn.relu(nn.bias_add(nn.conv2d(%x, %w, padding=[1, 1]), %b))
           }"""
    )
    expected = parse(
        """def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32],
                     %b: Tensor[(4), float32]) {
             %0 = fn (%p0: Tensor[(1, 3, 8, 8), float32], %p1: Tensor[(4, 3, 3, 3), float32],
                      %p2: Tensor[(4), float32], Primitive=1) -> Tensor[(1, 4, 8, 8), float32] {
               nn.relu(nn.bias_add(nn.conv2d(%p0, %p1, padding=[1, 1]), %p2))
             };
             %0(%x, %w, %b)
           }"""
    )
    fused = fuse_ops_pass(mod)
    assert_structural_equal(fused["main"], expected["main"])
    assert_same_results(mod, fused)


def test_diamond_is_one_group() -> None:
    mod = parse(
        """def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {
             %0 = nn.conv2d(%x, %w, padding=[1, 1]);
             %1 = nn.relu(%0);
             %2 = exp(%0);
             %3 = negative(%0);
             add(add(%1, %2), %3)
           }"""
    )
    fused = fuse_ops_pass(mod)
    assert [sorted(g) for g in groups(fused["main"])] == [
        sorted(["nn.conv2d", "nn.relu", "exp", "negative", "add", "add"])
    ]
    assert_same_results(mod, fused)


def test_two_convs_are_two_groups() -> None:
    mod = parse(
        """def @main(%x: Tensor[(1, 3, 8, 8), float32], %w1: Tensor[(4, 3, 3, 3), float32],
                     %w2: Tensor[(4, 4, 3, 3), float32]) {
             %0 = nn.relu(nn.conv2d(%x, %w1, padding=[1, 1]));
             nn.relu(nn.conv2d(%0, %w2, padding=[1, 1]))
           }"""
    )
    fused = fuse_ops_pass(mod)
    assert groups(fused["main"]) == [["nn.conv2d", "nn.relu"], ["nn.conv2d", "nn.relu"]]
    assert_same_results(mod, fused)


def test_injective_chain_is_one_group() -> None:
    mod = parse(
        """def @main(%x: Tensor[(2, 3, 4), float32]) {
             %0 = reshape(%x, newshape=[6, 4]);
             %1 = transpose(%0, axes=[1, 0]);
             %2 = strided_slice(%1, begin=[0, 1], end=[4, 5], strides=[1, 1]);
             exp(%2)
           }"""
    )
    fused = fuse_ops_pass(mod)
    assert groups(fused["main"]) == [["reshape", "transpose", "strided_slice", "exp"]]
    assert_same_results(mod, fused)


def test_reduction_takes_elementwise_producers_not_its_consumer() -> None:
    mod = parse(
        """def @main(%x: Tensor[(4, 8), float32], %y: Tensor[(8), float32]) {
             %0 = sum(exp(%x) * %y, axis=[1]);
             sqrt(%0)
           }"""
    )
    fused = fuse_ops_pass(mod)
    assert groups(fused["main"]) == [["exp", "multiply", "sum"], ["sqrt"]]
    assert_same_results(mod, fused)


def test_injective_op_does_not_fuse_into_a_reduction() -> None:
    # TVM's rule: injective (and tuple) producers fuse only if the sink is <= injective.
    mod = parse(
        """def @main(%x: Tensor[(4, 8), float32]) {
             sum(transpose(%x, axes=[1, 0]), axis=[0])
           }"""
    )
    assert groups(fuse_ops_pass(mod)["main"]) == [["transpose"], ["sum"]]


def test_softmax_takes_its_elementwise_tail_not_its_producers() -> None:
    # nn.softmax is out-elementwise-fusable: like conv2d it takes the elementwise ops after
    # it; the edge into it has its pattern, so its producers stay outside.
    mod = parse(
        """def @main(%x: Tensor[(2, 10), float32]) {
             %0 = exp(%x) * 2f;
             %1 = nn.softmax(%0, axis=1);
             %1 * 3f
           }"""
    )
    fused = fuse_ops_pass(mod)
    assert groups(fused["main"]) == [["exp", "multiply"], ["nn.softmax", "multiply"]]
    assert_same_results(mod, fused)


def test_opaque_op_is_alone() -> None:
    mod = parse(
        """def @main(%x: Tensor[(4, 8), float32]) {
             exp(sort(exp(%x), axis=1))
           }"""
    )
    fused = fuse_ops_pass(mod)
    assert groups(fused["main"]) == [["exp"], ["sort"], ["exp"]]
    assert_same_results(mod, fused)


def test_tuple_and_concatenate_fuse_with_their_producers() -> None:
    mod = parse(
        """def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) {
             concatenate((exp(%x), negative(%y)), axis=1)
           }"""
    )
    fused = fuse_ops_pass(mod)
    assert groups(fused["main"]) == [["exp", "negative", "concatenate"]]
    assert_same_results(mod, fused)


def test_root_tuple_is_not_wrapped() -> None:
    mod = parse(
        """def @main(%x: Tensor[(2, 3), float32]) {
             (exp(%x), negative(%x))
           }"""
    )
    fused = fuse_ops_pass(mod)
    body = fused["main"].body
    assert isinstance(body, Tuple)
    assert groups(fused["main"]) == [["exp"], ["negative"]]


def test_projection_of_split_fuses() -> None:
    mod = parse(
        """def @main(%x: Tensor[(4, 6), float32]) {
             %0 = split(exp(%x), indices_or_sections=2, axis=1);
             %0.0 + %0.1
           }"""
    )
    fused = fuse_ops_pass(mod)
    assert groups(fused["main"]) == [["exp", "split", "add"]]
    assert_same_results(mod, fused)


def test_scalar_constants_are_inlined_and_tensor_constants_are_parameters() -> None:
    x = Var("x", TensorType((3,), "float32"))
    body = Call(get_op("add"), [Call(get_op("multiply"), [x, const(2.0)]), const(np.ones(3, "f"))])
    mod = IRModule({GlobalVar("main"): Function([x], body)})
    fused = fuse_ops_pass(mod)
    call = fused["main"].body
    assert isinstance(call, Call) and isinstance(call.op, Function)
    assert len(call.op.params) == 2
    assert [type(a).__name__ for a in call.args] == ["Var", "Constant"]
    np.testing.assert_allclose(
        np.asarray(interpret(fused, x=np.arange(3, dtype="f"))), [1.0, 3.0, 5.0]
    )


def test_max_depth_is_respected() -> None:
    text = "%x"
    for _ in range(20):
        text = f"nn.relu({text})"
    mod = parse(f"def @main(%x: Tensor[(3), float32]) {{ {text} }}")
    fused = fuse_ops_pass.with_options(max_depth=8)(mod)
    assert [len(g) for g in groups(fused["main"])] == [8, 8, 4]
    assert_same_results(mod, fused)
    assert [len(g) for g in groups(fuse_ops_pass(mod)["main"])] == [20]


def test_opt_level_0_puts_every_op_alone() -> None:
    mod = parse(
        """def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 6, 3, 3), float32]) {
             %0 = concatenate((exp(%x), %x), axis=1);
             nn.relu(nn.conv2d(%0, %w, padding=[1, 1]))
           }"""
    )
    fused = fuse_ops_pass.with_options(fuse_opt_level=0)(mod)
    assert groups(fused["main"]) == [["exp"], ["concatenate"], ["nn.conv2d"], ["nn.relu"]]
    assert_same_results(mod, fused)


def test_let_is_a_boundary_but_its_value_is_fused() -> None:
    mod = parse(
        """def @main(%x: Tensor[(3), float32]) {
             let %a = exp(negative(%x));
             nn.relu(%a) + %a
           }"""
    )
    fused = fuse_ops_pass(mod)
    assert isinstance(fused["main"].body, Let)
    assert groups(fused["main"]) == [["negative", "exp"], ["nn.relu", "add"]]
    assert_same_results(mod, fused)


def test_post_dominator_of_a_diamond_is_the_join() -> None:
    mod = parse(
        """def @main(%x: Tensor[(3), float32]) {
             %0 = exp(%x);
             add(nn.relu(%0), negative(%0))
           }"""
    )
    fn = mod["main"]
    graph = IndexedGraph.build(fn.body, fn.params, infer_module(mod))
    tree = post_dominator_tree(graph)
    exp_node = next(n for n in graph.nodes if isinstance(n.expr, Call) and n.expr.op.name == "exp")  # type: ignore[attr-defined]
    parent = tree.parent[exp_node.index]
    assert parent is not None and graph.nodes[parent].expr is fn.body
    assert tree.pattern[exp_node.index] == OpPattern.ELEMWISE


def test_deep_elementwise_chain_is_iterative() -> None:
    x = Var("x", TensorType((2,), "float32"))
    body: Expr = x
    relu = get_op("nn.relu")
    for _ in range(100_000):
        body = Call(relu, [body])
    mod = IRModule({GlobalVar("main"): Function([x], body)})
    fused = fuse_ops_pass(mod)
    sizes = [len(g) for g in groups(fused["main"])]
    assert max(sizes) == 256 and sum(sizes) == 100_000
    assert len(sizes) == -(-100_000 // 256)


# ------------------------------------------------------------------------ example models


def to_graph_form(mod: IRModule) -> IRModule:
    """Inline every `let` (the examples bind pure dataflow values only)."""

    def inline(e: Expr) -> Expr | None:
        if isinstance(e, Let):
            return substitute(e.body, {e.var: e.value})
        return None

    return IRModule(
        {gv: rewrite_post_order(fn, inline) for gv, fn in mod.functions.items()},  # type: ignore[misc]
        mod.type_definitions,
    )


def simplify_batch_norm(mod: IRModule) -> IRModule:
    """`batch_norm(x, g, b, m, v).0` → `x * scale + shift` (per channel, axis 1)."""

    def call(name: str, *args: Expr, **attrs: object) -> Call:
        op = get_op(name)
        return Call(op, args, op.make_attrs(**attrs) if attrs else None)

    def rewrite(e: Expr) -> Expr | None:
        if not (isinstance(e, TupleGetItem) and e.index == 0):
            return None
        bn = e.tuple_value
        if not (isinstance(bn, Call) and bn.op is get_op("nn.batch_norm")):
            return None
        assert bn.attrs is not None and bn.attrs.axis == 1
        x, gamma, beta, mean, var = bn.args
        scale = call("divide", gamma, call("sqrt", call("add", var, const(bn.attrs.epsilon))))
        shift = call("subtract", beta, call("multiply", mean, scale))
        return call(
            "add",
            call("multiply", x, call("expand_dims", scale, axis=1, num_newaxis=2)),
            call("expand_dims", shift, axis=1, num_newaxis=2),
        )

    return IRModule(
        {gv: rewrite_post_order(fn, rewrite) for gv, fn in mod.functions.items()},  # type: ignore[misc]
        mod.type_definitions,
    )


# Groups per global function after inlining lets and simplifying batch norm. In ResNet-18
# and MobileNet-v2 each batch norm leaves one extra group `divide(gamma, sqrt(var + eps))`:
# it is computed from parameters, and its post-dominator path runs through the conv
# group's multiply (out-elementwise-fusable), so TVM's rule keeps it apart (FoldConstant
# removes it when the weights are constants).
_BLOCKS = {"basic_block_64": 4, "basic_block_128": 4, "basic_block_256": 4, "basic_block_512": 4}
_IRES_SIZES = "16_24 24_24 24_32 32_32 32_64 64_64 64_96 96_96 96_160 160_160 160_320"
_IRES = {f"inverted_residual_{sizes}": 6 for sizes in _IRES_SIZES.split()}
EXAMPLE_GROUPS = {
    "mlp": {"main": 4},
    "lenet": {"features": 4, "classifier": 4, "main": 1},
    "resnet18": {
        "stem": 3,
        **_BLOCKS,
        **{f"basic_block_{c}_down": 6 for c in (128, 256, 512)},
        "head": 4,
        "main": 0,
    },
    "mobilenet_v2": {"stem": 2, "inverted_residual_32_16": 4, **_IRES, "head": 6, "main": 0},
    "transformer_layer": {
        "linear": 1,
        "split_heads": 1,
        "merge_heads": 1,
        "self_attention": 3,
        "gelu": 1,
        "feed_forward": 2,
        "main": 6,
    },
}


@pytest.mark.parametrize("name", ["mlp", "lenet", "resnet18", "mobilenet_v2", "transformer_layer"])
def test_example_models(name: str) -> None:
    mod = relay.parse((EXAMPLES / f"{name}.relay").read_text())
    graph = simplify_batch_norm(to_graph_form(mod))
    check_module(graph)
    fused = fuse_ops_pass(graph)
    counts = {gv.name_hint: len(groups(fn)) for gv, fn in fused.functions.items()}
    assert counts == EXAMPLE_GROUPS[name]
    for fn in fused.functions.values():
        for g in groups(fn):
            assert_one_complex_op(g)
    assert_same_results(mod, fused)


def test_resnet18_conv_groups_take_bias_scale_shift_relu_and_residual() -> None:
    mod = simplify_batch_norm(to_graph_form(relay.parse((EXAMPLES / "resnet18.relay").read_text())))
    fused = fuse_ops_pass(mod)
    block = groups(fused["basic_block_64"])
    assert block[0] == block[2] == ["add", "sqrt", "divide"]
    bn = ["nn.conv2d", "expand_dims", "multiply", "multiply", "subtract", "expand_dims", "add"]
    assert block[1] == [*bn, "nn.relu"]
    assert block[3] == [*bn, "add", "nn.relu"]  # the residual add joins the second conv
    down = groups(fused["basic_block_128_down"])
    assert [g for g in down if "nn.conv2d" in g] == [[*bn, "nn.relu"], bn, [*bn, "add", "nn.relu"]]
    assert groups(fused["head"]) == [
        ["nn.global_avg_pool2d"],
        ["nn.batch_flatten"],
        ["nn.dense", "nn.bias_add"],
        ["nn.softmax"],
    ]


# ------------------------------------------------------------------------ properties


@given(dataflow_programs(max_ops=8, max_elements=512), st.data())
def test_fusion_keeps_results_and_limits_complex_ops(mod: IRModule, data: st.DataObject) -> None:
    for level, depth in ((3, 256), (3, 2), (0, 256)):
        fused = fuse_ops_pass.with_options(fuse_opt_level=level, max_depth=depth)(mod)
        check_module(fused)
        for g in groups(fused["main"]):
            assert_one_complex_op(g)
            assert len(g) <= depth
        inputs = data.draw(inputs_for(mod))
        want = interpret(mod, **inputs)
        got = interpret(fused, **inputs)
        _assert_values_close(got, want)


def _assert_values_close(got: object, want: object) -> None:
    if isinstance(want, tuple | list):
        assert isinstance(got, tuple | list) and len(got) == len(want)
        for a, b in zip(got, want):
            _assert_values_close(a, b)
        return
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


@given(functional_programs(max_size=25), st.data())
def test_fusion_keeps_results_of_functional_programs(mod: IRModule, data: st.DataObject) -> None:
    fused = fuse_ops_pass(mod)
    check_module(fused)
    for fn in fused.functions.values():
        for g in groups(fn):
            assert_one_complex_op(g)
    inputs = data.draw(inputs_for(mod))
    _assert_values_close(interpret(fused, **inputs), interpret(mod, **inputs))


def test_fusion_inside_if_branches_and_closures() -> None:
    mod = parse(
        """def @main(%x: Tensor[(3), float32], %c: bool) {
             %0 = fn (%y: Tensor[(3), float32]) { nn.relu(exp(%y) * 2f) };
             if (%c) { %0(negative(%x) + %x) } else { sqrt(abs(%x)) }
           }"""
    )
    fused = fuse_ops_pass(mod)
    check_module(fused)
    assert sorted(groups(fused["main"])) == [
        ["abs", "sqrt"],
        ["exp", "multiply", "nn.relu"],
        ["negative", "add"],
    ]
    x = np.array([-1.0, 0.5, 2.0], dtype="f")
    for c in (True, False):
        np.testing.assert_allclose(
            np.asarray(interpret(fused, x=x, c=np.array(c))),
            np.asarray(interpret(mod, x=x, c=np.array(c))),
            rtol=1e-6,
        )


@pytest.mark.parametrize("name", ["lstm", "treelstm"])
def test_recursive_example_models_keep_results(name: str) -> None:
    # Lets, matches and recursion stay; fusion happens inside each let-bound value.
    mod = relay.parse((EXAMPLES / f"{name}.relay").read_text())
    fused = fuse_ops_pass(mod)
    assert sum(len(groups(fn)) for fn in fused.functions.values()) > 0
    assert_same_results(mod, fused)
