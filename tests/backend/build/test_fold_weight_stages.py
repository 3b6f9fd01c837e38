"""Weight-only stages computed at build time (`lower.fold_constants`, `build.fold_plan`).

With weights bound (`params=`), the packed copies the dense, batch_matmul and conv2d
schedules make of a weight are computed once by the build: the kernels read them as inputs,
no store of a kernel computes from weights alone, and the plan holds the packed arrays
instead of the raw weights. Results are compared with the interpreter; the same programs
without bound weights still pack inside the kernel.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import relay
from relay.backend.build import compile_plan, plan_graph
from relay.backend.build.artifact import load_artifact
from relay.backend.build.fold_plan import constant_params
from relay.backend.codegen import compile_module
from relay.backend.lower.lower_func import LoweredKernel, lower_primitive
from relay.backend.runtime.native import aligned_copy, aligned_empty
from relay.backend.tir.expr import BufferLoad
from relay.backend.tir.stmt import BufferStore, PrimFunc
from relay.backend.tir.transform import lower_pipeline
from relay.backend.tir.visitor import sub_expressions
from relay.driver import bind_params, optimize
from relay.lang.attrs import FuncAttrs
from relay.lang.expr import Constant, Function, Var
from relay.lang.types import TensorType
from relay.transform import PassContext

rng = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _nchw_convolutions() -> Any:
    """These tests are about folding the stages of NCHW kernels (the conv schedules pack
    their weights inside the kernel, and the build folds that stage): alter-op-layout,
    which packs convolution weights in the program instead, is off."""
    with PassContext(opt_level=3, disabled_pass=["alter-op-layout"]):
        yield


def rand(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype("float32")


def program(params: str, body: str) -> relay.IRModule:
    return relay.parse(f'#[version = "0.0.5"]\ndef @main({params}) {{ {body} }}')


def lowered_kernels(
    mod: relay.IRModule, weights: dict[str, np.ndarray], fold: bool
) -> list[tuple[LoweredKernel, tuple[int, ...]]]:
    """Each kernel of the built plan lowered as `compile_plan` lowers it (folding or not),
    with the positions of its parameters that are weights."""
    optimized = optimize(bind_params(mod, weights) if weights else mod, None, None)
    plan = plan_graph(optimized.module["main"], optimized.types)
    positions = constant_params(plan)
    return [
        (
            lower_primitive(fn, optimized.types, f"k{k}", None, positions[k] if fold else None),
            positions[k],
        )
        for k, fn in enumerate(plan.kernels)
    ]


def weight_buffers(kernel: LoweredKernel, weights: tuple[int, ...]) -> set[str]:
    """Names of the kernel's buffers that hold weights: raw ones and folded ones."""
    prim = kernel.func
    names = {prim.params[i].name for i, p in enumerate(kernel.inputs) if p in weights}
    start = len(kernel.inputs)
    names |= {prim.params[start + j].name for j in range(len(kernel.folded))}
    return names


def weight_only_stores(prim: PrimFunc, weights: set[str]) -> list[str]:
    """The buffers the kernel stores values into that it computes from weights alone (a
    packed copy of a weight), after the TIR passes."""
    found = []
    for node in sub_expressions(lower_pipeline(prim).body):
        if not isinstance(node, BufferStore):
            continue
        loads = [e for e in sub_expressions(node.value) if isinstance(e, BufferLoad)]
        if loads and all(e.buffer.name in weights for e in loads):
            found.append(node.buffer.name)
    return found


def check_folds(mod: relay.IRModule, weights: dict[str, np.ndarray]) -> list[LoweredKernel]:
    """Without folding some kernel packs a weight; with it none does, and the kernels that
    folded take a folded input in place of each weight they no longer read. Returns the
    folded kernels."""
    unfolded = lowered_kernels(mod, weights, fold=False)
    packing = [k for k, w in unfolded if weight_only_stores(k.func, weight_buffers(k, w))]
    assert packing, "the schedule packs no weight: the test checks nothing"
    folded = []
    for kernel, w in lowered_kernels(mod, weights, fold=True):
        assert weight_only_stores(kernel.func, weight_buffers(kernel, w)) == []
        if kernel.folded:
            folded.append(kernel)
            dropped = set(range(len(kernel.param_types))) - set(kernel.inputs)
            assert dropped and dropped <= set(w)
    assert len(folded) == len(packing)
    return folded


def check_model(
    mod: relay.IRModule, weights: dict[str, np.ndarray], inputs: dict[str, np.ndarray]
) -> Any:
    """The model built with `weights` bound agrees with the interpreter; returns it."""
    model = relay.build(mod, params=weights)
    want = relay.interpret(mod, **inputs, **weights)
    np.testing.assert_allclose(model.run(**inputs), want, rtol=2e-5, atol=2e-5)
    return model


def param_shapes(model: Any) -> list[tuple[int, ...]]:
    return [tuple(p.shape) for p in model.params]


# ------------------------------------------------------------------------------- dense


def dense_pack(w: np.ndarray, nb: int) -> np.ndarray:
    """`w` (N, K) as `[ceil(N / nb), K, nb]`, zero past N."""
    n, k = w.shape
    blocks = -(-n // nb)
    padded = np.zeros((blocks * nb, k), w.dtype)
    padded[:n] = w
    return padded.reshape(blocks, nb, k).transpose(0, 2, 1)


@pytest.mark.parametrize(("rows", "units", "depth"), [(20, 19, 30), (64, 70, 100), (9, 32, 7)])
def test_dense_weight_is_packed_at_build_time(rows: int, units: int, depth: int) -> None:
    mod = program(
        f"%x: Tensor[({rows}, {depth}), float32], %w: Tensor[({units}, {depth}), float32], "
        f"%b: Tensor[({units}), float32]",
        f"nn.relu(nn.bias_add(nn.dense(%x, %w, units={units}), %b))",
    )
    w, b, x = rand(units, depth), rand(units), rand(rows, depth)
    (kernel,) = check_folds(mod, {"w": w, "b": b})
    (item,) = kernel.folded
    shape = tuple(int(d.value) for d in item.input.shape)
    assert shape[1] == depth and shape[0] == -(-units // shape[2])
    model = check_model(mod, {"w": w, "b": b}, {"x": x})
    assert (units, depth) not in param_shapes(model)
    (packed,) = [p for p in model.params if p.shape == shape]
    np.testing.assert_array_equal(packed, dense_pack(w, shape[2]))


def test_without_params_the_kernel_packs() -> None:
    mod = program(
        "%x: Tensor[(20, 30), float32], %w: Tensor[(19, 30), float32]",
        "nn.dense(%x, %w, units=19)",
    )
    ((kernel, weights),) = lowered_kernels(mod, {}, fold=True)
    assert weights == () and kernel.folded == () and kernel.param_positions is None
    stores = weight_only_stores(kernel.func, {"p1"})
    assert stores, "the kernel should pack its rhs itself"
    x, w = rand(20, 30), rand(19, 30)
    model = relay.build(mod)
    assert model.params == ()
    np.testing.assert_allclose(model.run(x=x, w=w), x @ w.T, rtol=2e-5, atol=2e-5)


# ------------------------------------------------------------------------------ conv2d


def conv_pack(w: np.ndarray, lanes: int) -> np.ndarray:
    """`w` (OC, C, KH, KW) as `[ceil(OC / lanes), C, KH, KW, lanes]`, zero past OC."""
    oc = w.shape[0]
    blocks = -(-oc // lanes)
    padded = np.zeros((blocks * lanes, *w.shape[1:]), w.dtype)
    padded[:oc] = w
    return padded.reshape(blocks, lanes, *w.shape[1:]).transpose(0, 2, 3, 4, 1)


@pytest.mark.parametrize(
    ("channels", "out", "groups", "hw", "stride"),
    [(16, 20, 1, (12, 11), 1), (16, 24, 1, (13, 9), 2), (32, 32, 2, (10, 10), 1)],
)
def test_conv2d_weight_is_packed_at_build_time(
    channels: int, out: int, groups: int, hw: tuple[int, int], stride: int
) -> None:
    h, w_ = hw
    cg = channels // groups
    mod = program(
        f"%x: Tensor[(1, {channels}, {h}, {w_}), float32], "
        f"%w: Tensor[({out}, {cg}, 3, 3), float32], %b: Tensor[({out}), float32]",
        f"nn.relu(nn.bias_add(nn.conv2d(%x, %w, strides=[{stride}, {stride}], "
        f"padding=[1, 1, 1, 1], groups={groups}, channels={out}, kernel_size=[3, 3]), %b))",
    )
    w, b, x = rand(out, cg, 3, 3), rand(out), rand(1, channels, h, w_)
    (kernel,) = check_folds(mod, {"w": w, "b": b})
    (item,) = kernel.folded
    shape = tuple(int(d.value) for d in item.input.shape)
    lanes = shape[-1]
    assert shape == (-(-out // lanes), cg, 3, 3, lanes)
    model = check_model(mod, {"w": w, "b": b}, {"x": x})
    assert (out, cg, 3, 3) not in param_shapes(model)
    (packed,) = [p for p in model.params if p.shape == shape]
    np.testing.assert_array_equal(packed, conv_pack(w, lanes))


@pytest.mark.parametrize(("channels", "hw", "stride"), [(24, (14, 14), 1), (13, (9, 11), 2)])
def test_depthwise_conv2d_with_bound_weights(
    channels: int, hw: tuple[int, int], stride: int
) -> None:
    h, w_ = hw
    mod = program(
        f"%x: Tensor[(1, {channels}, {h}, {w_}), float32], "
        f"%w: Tensor[({channels}, 1, 3, 3), float32]",
        f"nn.conv2d(%x, %w, strides=[{stride}, {stride}], padding=[1, 1, 1, 1], "
        f"groups={channels}, channels={channels}, kernel_size=[3, 3])",
    )
    w, x = rand(channels, 1, 3, 3), rand(1, channels, h, w_)
    for kernel, weights in lowered_kernels(mod, {"w": w}, fold=True):
        assert weight_only_stores(kernel.func, weight_buffers(kernel, weights)) == []
    check_model(mod, {"w": w}, {"x": x})


# ------------------------------------------------------------------------ batch_matmul


def test_batch_matmul_constant_operand_is_packed_at_build_time() -> None:
    mod = program(
        "%x: Tensor[(3, 20, 30), float32], %w: Tensor[(3, 19, 30), float32]",
        "nn.batch_matmul(%x, %w, transpose_b=True)",
    )
    w, x = rand(3, 19, 30), rand(3, 20, 30)
    (kernel,) = check_folds(mod, {"w": w})
    (item,) = kernel.folded
    shape = tuple(int(d.value) for d in item.input.shape)
    assert shape[0] == 3 and shape[2] == 30 and shape[1] == -(-19 // shape[3])
    model = check_model(mod, {"w": w}, {"x": x})
    (packed,) = [p for p in model.params if p.shape == shape]
    for k in range(3):
        np.testing.assert_array_equal(packed[k], dense_pack(w[k], shape[3]))


# ---------------------------------------------------------------------------- the plan

TWO_LAYERS = (
    "%x: Tensor[(10, 24), float32], %w1: Tensor[(24, 24), float32], %w2: Tensor[(24, 24), float32]"
)


def test_one_kernel_with_two_weights_gets_a_packed_weight_per_step() -> None:
    mod = program(TWO_LAYERS, "nn.relu(nn.dense(nn.relu(nn.dense(%x, %w1)), %w2))")
    weights = {"w1": rand(24, 24), "w2": rand(24, 24)}
    model = check_model(mod, weights, {"x": rand(10, 24)})
    assert len(model.plan.steps) == 2 and len({s.kernel for s in model.plan.steps}) == 1
    packed = [p for p in model.params if p.shape != (24, 24)]
    assert len(packed) == 2 and not np.array_equal(packed[0], packed[1])
    assert all(p.ndim == 3 for p in model.params)


def test_a_weight_two_steps_share_is_packed_once() -> None:
    mod = program(
        "%x: Tensor[(10, 24), float32], %w: Tensor[(24, 24), float32]",
        "nn.relu(nn.dense(nn.relu(nn.dense(%x, %w)), %w))",
    )
    model = check_model(mod, {"w": rand(24, 24)}, {"x": rand(10, 24)})
    assert len(model.plan.steps) == 2
    assert len(model.params) == 1 and model.params[0].ndim == 3


def test_a_weight_read_raw_elsewhere_stays() -> None:
    mod = program(
        "%x: Tensor[(10, 24), float32], %w: Tensor[(20, 24), float32]",
        "(nn.relu(nn.dense(%x, %w)), sum(%w, axis=[1]), %w)",
    )
    w, x = rand(20, 24), rand(10, 24)
    model = relay.build(mod, params={"w": w})
    got = model.run(x=x)
    want = relay.interpret(mod, x=x, w=w)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-5)
    shapes = param_shapes(model)
    assert (20, 24) in shapes and any(len(s) == 3 for s in shapes)


def test_a_kernel_given_a_weight_at_one_step_only_does_not_fold() -> None:
    mod = program(
        "%x: Tensor[(10, 24), float32], %y: Tensor[(24, 24), float32], "
        "%w: Tensor[(24, 24), float32]",
        "(nn.relu(nn.dense(%x, %w)), nn.relu(nn.dense(%x, %y)))",
    )
    w, x, y = rand(24, 24), rand(10, 24), rand(24, 24)
    optimized = optimize(bind_params(mod, {"w": w}), None, None)
    plan = plan_graph(optimized.module["main"], optimized.types)
    assert len(plan.kernels) == 1 and constant_params(plan) == {0: ()}
    model = relay.build(mod, params={"w": w})
    assert param_shapes(model) == [(24, 24)]
    for g, e in zip(model.run(x=x, y=y), relay.interpret(mod, x=x, y=y, w=w)):
        np.testing.assert_allclose(g, e, rtol=2e-5, atol=2e-5)


def test_folded_model_artifact_round_trips(tmp_path: Any) -> None:
    mod = program(
        "%x: Tensor[(1, 16, 12, 11), float32], %w: Tensor[(20, 16, 3, 3), float32], "
        "%v: Tensor[(19, 2640), float32]",
        "nn.dense(nn.batch_flatten(nn.relu(nn.conv2d(%x, %w, padding=[1, 1, 1, 1], "
        "channels=20, kernel_size=[3, 3]))), %v)",
    )
    weights = {"w": rand(20, 16, 3, 3), "v": rand(19, 2640) * 0.05}
    x = rand(1, 16, 12, 11)
    model = check_model(mod, weights, {"x": x})
    assert any(len(s) == 5 for s in param_shapes(model))
    path = tmp_path / "folded.relaymod"
    model.save(path)
    loaded = load_artifact(path)
    np.testing.assert_array_equal(loaded.run(x=x), model.run(x=x))
    assert param_shapes(loaded) == param_shapes(model)


def test_folding_can_be_turned_off() -> None:
    mod = program(
        "%x: Tensor[(20, 30), float32], %w: Tensor[(19, 30), float32]",
        "nn.dense(%x, %w, units=19)",
    )
    w, x = rand(19, 30), rand(20, 30)
    optimized = optimize(bind_params(mod, {"w": w}), None, None)
    plan = plan_graph(optimized.module["main"], optimized.types)
    plain = compile_plan(plan, types=optimized.types, fold_weights=False)
    folded = compile_plan(plan, types=optimized.types)
    assert param_shapes(plain) == [(19, 30)] and param_shapes(folded) != [(19, 30)]
    np.testing.assert_array_equal(plain.run(x=x), folded.run(x=x))


# --------------------------------------------------------------------- lifted constants


def test_a_lifted_constant_is_packed_into_a_lifted_constant() -> None:
    w, x = rand(19, 30), rand(20, 30)
    arg = Var("x", TensorType((20, 30), "float32"))
    body = relay.nn.dense(arg, Constant(w), units=19)
    fn = Function([arg], body, attrs=FuncAttrs({"Primitive": 1}))
    kernel = lower_primitive(fn, None, "k", constant_params=())
    (packed,) = kernel.constants
    assert packed.ndim == 3 and math.prod(packed.shape) >= w.size
    np.testing.assert_array_equal(packed, dense_pack(w, packed.shape[2]))
    names = {kernel.func.params[1].name}
    assert weight_only_stores(kernel.func, names) == []
    lib = compile_module([lower_pipeline(kernel.func)])
    out = aligned_empty((20, 19), "float32")
    lib.run(kernel.name, aligned_copy(x), aligned_copy(packed), out)
    np.testing.assert_allclose(out, x @ w.T, rtol=2e-5, atol=2e-5)
