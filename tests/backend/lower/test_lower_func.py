"""Lowering one Primitive function: the kernel's calling convention (params, lifted
constants, outputs), tuples, copies, missing computes, type sources, the inlining depth
guard, and the schedule table. Kernels are compiled to native code and compared with the
interpreter."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import relay
from relay.backend.codegen import compile_module
from relay.backend.lower import computes
from relay.backend.lower.lower_func import (
    MAX_INLINE_DEPTH,
    LoweredKernel,
    LoweringError,
    MissingComputeError,
    choose_inlined,
    lower_primitive,
    lower_to_te,
)
from relay.backend.lower.schedules import (
    BY_PATTERN,
    SCHEDULES,
    is_injective_tag,
    pick_anchor,
    schedule_rule,
    stage_order,
    vector_factor,
)
from relay.backend.lower.schedules import conv2d as conv2d_schedules
from relay.backend.lower.schedules import reduce as reduce_schedules
from relay.backend.lower.schedules import softmax as softmax_schedules
from relay.backend.lower.schedules.dense import DENSE
from relay.backend.lower.schedules.generic import GENERIC, schedule_generic
from relay.backend.lower.schedules.injective import INJECTIVE
from relay.backend.runtime import evaluate
from relay.backend.runtime.native import aligned_copy, aligned_empty
from relay.backend.te.tensor import ComputeOp, PlaceholderOp, compute, placeholder
from relay.lang.attrs import FuncAttrs
from relay.lang.expr import Call, Constant, Function, Var
from relay.lang.op import OpPattern, get_op
from relay.lang.optable import DuplicateFacetError
from relay.lang.types import FuncType, TensorType
from relay.typecheck import infer_module

PRIMITIVE = FuncAttrs({"Primitive": 1})


def parse_fn(body: str) -> Function:
    """The `@main` of a one-function module (marked Primitive)."""
    return relay.parse('#[version = "0.0.5"]\n' + body)["main"]


def flatten(value: Any) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, tuple):
            stack.extend(reversed(v))
        else:
            out.append(np.asarray(v))
    return out


def run_kernel(kernel: LoweredKernel, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Compile `kernel` and run it on `inputs` (flattened parameters)."""
    from relay.backend.tir.transform import lower_pipeline

    lib = compile_module([lower_pipeline(kernel.func)])
    outs = [aligned_empty(tuple(int(d) for d in t.shape), t.dtype) for t in kernel.output_types]
    args = [aligned_copy(np.asarray(a)) for a in inputs]
    lib.run(kernel.name, *args, *(aligned_copy(c) for c in kernel.constants), *outs)
    return outs


def reference(fn: Function, values: list[Any]) -> list[np.ndarray]:
    """The interpreter's result of calling `fn` on `values`, flattened."""
    args = [Var(f"a{k}", p.type_annotation) for k, p in enumerate(fn.params)]
    return flatten(evaluate(Call(fn, args), dict(zip(args, values))))


def assert_matches(fn: Function, values: list[Any], name: str = "kernel") -> LoweredKernel:
    kernel = lower_primitive(fn, None, name)
    got = run_kernel(kernel, flatten(tuple(values)))
    want = reference(fn, values)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    return kernel


rng = np.random.default_rng(0)


def rand(*shape: int, dtype: str = "float32") -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


# ------------------------------------------------------------------------ calling convention


def test_params_then_constants_then_outputs() -> None:
    x = Var("x", TensorType((2, 5), "float32"))
    weights = np.arange(10, dtype="float32").reshape(2, 5)
    body = Call(get_op("multiply"), [Call(get_op("add"), [x, Constant(weights)]), relay.const(3.0)])
    fn = Function([x], body, attrs=PRIMITIVE)
    kernel = lower_primitive(fn, None, "k")
    assert kernel.func.params[0].name == "x"
    assert len(kernel.func.params) == 3  # x, the lifted constant, the output
    assert len(kernel.constants) == 1
    np.testing.assert_array_equal(kernel.constants[0], weights)
    assert kernel.param_types == (TensorType((2, 5), "float32"),)
    assert kernel.output_types == (TensorType((2, 5), "float32"),)
    a = rand(2, 5)
    (out,) = run_kernel(kernel, [a])
    np.testing.assert_allclose(out, (a + weights) * 3.0, rtol=1e-6)


def test_scalar_constants_become_immediates() -> None:
    fn = parse_fn(
        "def @main(%x: Tensor[(4, 7), float32], Primitive=1) { add(multiply(%x, 2f), 0.5f) }"
    )
    kernel = assert_matches(fn, [rand(4, 7)])
    assert kernel.constants == ()
    assert len(kernel.func.params) == 2
    graph = lower_to_te(fn)
    scalars = [op for op in choose_inlined(graph.outputs) if op.name == "scalar"]
    assert len(scalars) == 2  # both immediates are inlined


def test_tuple_result_gives_one_output_per_tensor() -> None:
    fn = parse_fn(
        "def @main(%x: Tensor[(3, 17), float32], %y: Tensor[(17), float32], Primitive=1) {"
        "  %0 = add(%x, %y); (exp(%0), (%0, negative(%x))) }"
    )
    kernel = assert_matches(fn, [rand(3, 17), rand(17)])
    assert len(kernel.output_types) == 3
    assert len(kernel.func.params) == 5


def test_identity_groups_copy_their_inputs() -> None:
    fn = parse_fn(
        "def @main(%a: Tensor[(5), float32], %b: Tensor[(2, 3), int32], Primitive=1) {"
        "  (%a, %b, %a) }"
    )
    a, b = rand(5), rng.integers(-9, 9, (2, 3)).astype("int32")
    kernel = assert_matches(fn, [a, b])
    assert all(isinstance(t.op, ComputeOp) for t in kernel.te.outputs)
    assert len({id(t) for t in kernel.te.outputs}) == 3


def test_same_tensor_returned_twice_is_written_twice() -> None:
    fn = parse_fn("def @main(%a: Tensor[(9), float32], Primitive=1) { %0 = exp(%a); (%0, %0) }")
    assert_matches(fn, [rand(9)])


def test_reshape_only_group() -> None:
    fn = parse_fn(
        "def @main(%a: Tensor[(6, 35), float32], Primitive=1) { reshape(%a, newshape=[3, 70]) }"
    )
    assert_matches(fn, [rand(6, 35)])


def test_tuple_parameters_are_flattened_and_unused_inputs_kept() -> None:
    fn = parse_fn(
        "def @main(%t: (Tensor[(4), float32], Tensor[(4), float32]), %unused: Tensor[(2), int8],"
        "  Primitive=1) { subtract(%t.1, %t.0) }"
    )
    kernel = assert_matches(fn, [(rand(4), rand(4)), np.zeros(2, "int8")])
    assert len(kernel.param_types) == 3
    assert [b.dtype for b in kernel.func.params] == ["float32", "float32", "int8", "float32"]


def test_let_bound_values() -> None:
    fn = parse_fn(
        "def @main(%x: Tensor[(10), float32], Primitive=1) {"
        "  let %y = exp(%x); let %z = add(%y, %y); multiply(%z, %x) }"
    )
    assert_matches(fn, [rand(10)])


def test_types_from_module_types_function_type_or_pairs() -> None:
    x = Var("x")  # no annotation: the types must come from outside
    fn = Function([x], Call(get_op("tanh"), [x]), attrs=PRIMITIVE)
    tt = TensorType((3, 33), "float32")
    a = rand(3, 33)
    for types in (FuncType([tt], tt), ([tt], tt)):
        kernel = lower_primitive(fn, types, "k")
        np.testing.assert_allclose(run_kernel(kernel, [a])[0], np.tanh(a), rtol=1e-5)
    annotated = parse_fn("def @main(%x: Tensor[(3, 33), float32]) { tanh(%x) }")
    mod = relay.IRModule.from_expr(annotated)
    table = infer_module(mod)
    kernel = lower_primitive(mod["main"], table, "k")
    np.testing.assert_allclose(run_kernel(kernel, [a])[0], np.tanh(a), rtol=1e-5)
    with pytest.raises(LoweringError, match="no types"):
        lower_primitive(fn, None, "k")


def test_missing_compute_names_the_operator(monkeypatch: pytest.MonkeyPatch) -> None:
    op = get_op("erf")
    monkeypatch.delitem(computes.COMPUTES, op)
    fn = parse_fn("def @main(%x: Tensor[(4), float32], Primitive=1) { erf(exp(%x)) }")
    with pytest.raises(MissingComputeError, match="`erf`") as info:
        lower_primitive(fn, None, "k")
    assert info.value.op is op


def test_dynamic_shapes_are_not_lowered() -> None:
    fn = parse_fn("def @main(%x: Tensor[(?, 3), float32], Primitive=1) { exp(%x) }")
    with pytest.raises(LoweringError, match="dynamic"):
        lower_primitive(fn, None, "k")


def test_non_tensor_values_are_not_lowered() -> None:
    f = Var("f")
    x = Var("x", TensorType((2,), "float32"))
    inner = Function([f], f)
    fn = Function([x], Call(inner, [x]), attrs=PRIMITIVE)
    with pytest.raises(LoweringError):
        lower_primitive(fn, None, "k")


# ----------------------------------------------------------------------------- inlining


def _chain(length: int) -> Function:
    x = Var("x", TensorType((5, 19), "float32"))
    y = Var("y", TensorType((19,), "float32"))
    e: Any = x
    for k in range(length):
        e = Call(get_op("add" if k % 2 else "multiply"), [e, y])
    return Function([x, y], Call(get_op("tanh"), [e]), attrs=PRIMITIVE)


def test_inlining_stops_before_expressions_get_too_deep() -> None:
    fn = _chain(200)
    graph = lower_to_te(fn)
    inlined = {id(op) for op in choose_inlined(graph.outputs)}
    stages = [
        op for op in _ops(graph.outputs) if isinstance(op, ComputeOp) and id(op) not in inlined
    ]
    assert 2 <= len(stages) <= 8  # a few stages at root, not 201
    x, y = rand(5, 19) * 0.1, rand(19) * 0.1 + 1.0
    kernel = lower_primitive(fn, None, "chain")
    (got,) = run_kernel(kernel, [x, y])
    (want,) = reference(fn, [x, y])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_short_chains_are_fully_inlined() -> None:
    graph = lower_to_te(_chain(MAX_INLINE_DEPTH // 10))
    n_compute = sum(isinstance(op, ComputeOp) for op in _ops(graph.outputs))
    assert len(choose_inlined(graph.outputs)) == n_compute - 1


def _ops(outputs: Any) -> list[Any]:
    from relay.backend.lower.schedules import stage_order

    return stage_order(outputs)


def test_deep_chain_lowers_without_recursion() -> None:
    # A long dataflow chain inside one function: lowering to TE is iterative.
    graph = lower_to_te(_chain(3000))
    assert len(graph.outputs) == 1
    assert isinstance(graph.params[0].op, PlaceholderOp)


# ----------------------------------------------------------------------- the schedule table


def test_operators_select_rules_then_their_pattern_kind() -> None:
    assert schedule_rule(get_op("nn.conv2d")) is conv2d_schedules.CONV2D
    assert schedule_rule(get_op("nn.matmul")) is DENSE
    assert schedule_rule(get_op("nn.layer_norm")) is reduce_schedules.REDUCE  # opaque, own rule
    assert schedule_rule(get_op("sum")) is reduce_schedules.REDUCE  # by its pattern kind
    assert get_op("sum") not in SCHEDULES
    assert BY_PATTERN[OpPattern.COMM_REDUCE] is reduce_schedules.REDUCE
    assert schedule_rule(get_op("add")) is schedule_rule(get_op("take")) is INJECTIVE
    assert schedule_rule(get_op("nn.conv1d")) is schedule_rule(get_op("sort")) is GENERIC
    assert INJECTIVE.anchor_stage is None and GENERIC.anchor_stage is None
    assert is_injective_tag("injective,pad") and is_injective_tag("broadcast")
    assert not is_injective_tag("comm_reduce") and not is_injective_tag("")


def test_registering_an_operator_twice_is_an_error() -> None:
    with pytest.raises(DuplicateFacetError, match=r"`nn\.softmax` already has a schedule"):
        softmax_schedules.SCHEDULES.add("nn.softmax", softmax_schedules.SOFTMAX)


def test_anchor_is_the_heaviest_operator_and_unknown_stages_get_the_generic_schedule() -> None:
    graph = lower_to_te(parse_fn("def @main(%x: Tensor[(4), float32], Primitive=1) { exp(%x) }"))
    order = stage_order(graph.outputs)
    assert pick_anchor(order, graph.outputs, set()) == (graph.outputs[0], schedule_generic)
    graph = lower_to_te(
        parse_fn(
            "def @main(%x: Tensor[(3, 8), float32], Primitive=1) {"
            "  exp(nn.softmax(sum(exp(%x), axis=[1], keepdims=True))) }"
        )
    )
    order = stage_order(graph.outputs)
    anchor, schedule = pick_anchor(order, graph.outputs, set())
    assert schedule is softmax_schedules.SOFTMAX.schedule  # out-elemwise-fusable over reduce
    assert computes.made_by(anchor.op) is get_op("nn.softmax")
    x = placeholder((4,), "float32", "x")
    mystery = compute((4,), lambda i: x[i], name="m", tag="mystery")  # made by no operator
    assert computes.made_by(mystery.op) is None
    assert pick_anchor([x.op, mystery.op], [mystery], set()) == (mystery, schedule_generic)


def test_vector_factor_prefers_divisors() -> None:
    assert vector_factor(64, 16) == 16
    assert vector_factor(56, 16) == 8
    assert vector_factor(12, 16) == 4
    assert vector_factor(17, 16) == 16
    assert vector_factor(7, 16) == 0
    assert vector_factor(3, 4) == 0


def test_anchor_with_tail_is_reported() -> None:
    fn = parse_fn(
        "def @main(%x: Tensor[(3, 40), float32], Primitive=1) {"
        "  multiply(nn.softmax(%x, axis=1), 3f) }"
    )
    kernel = assert_matches(fn, [rand(3, 40)])
    assert kernel.anchor_tag == "softmax"
    assert "compute_at" in str(kernel.trace)


def test_bool_and_integer_kernels() -> None:
    fn = parse_fn(
        "def @main(%a: Tensor[(3, 21), int32], %b: Tensor[(21), int32], Primitive=1) {"
        '  (less(%a, %b), add(%a, %b), cast(greater(%a, %b), dtype="int8")) }'
    )
    a = rng.integers(-50, 50, (3, 21)).astype("int32")
    b = rng.integers(-50, 50, (21,)).astype("int32")
    assert_matches(fn, [a, b])


def test_tuple_projection_inside_group() -> None:
    fn = parse_fn(
        "def @main(%x: Tensor[(6, 10), float32], Primitive=1) {"
        "  %0 = split(%x, indices_or_sections=3, axis=0); add(%0.0, %0.2) }"
    )
    assert_matches(fn, [rand(6, 10)])
