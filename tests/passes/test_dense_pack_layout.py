"""`alter-op-layout` on dense layers: `nn.dense` becomes `nn.contrib_dense_pack` on a weight
packed `NC{b}n` by the dense micro-kernel's column block, the constant weights packed at
compile time, and the values do not change (the interpreter is the oracle)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import relay
from hypothesis import given, settings
from hypothesis import strategies as st
from relay import transform
from relay.backend.lower.schedules import dense as dense_schedule
from relay.backend.runtime import interpret
from relay.backend.target import Target
from relay.driver import build
from relay.lang import Constant, IRModule, Var
from relay.lang.types import TensorType
from relay.passes import PassContext
from relay.passes.dense_pack import GEMV_MAX_ROWS, dense_pack_block
from relay.testing import check_pass

from .ir_build import call, calls_of, main, ops_of

RNG = np.random.default_rng(0)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype("float32")


def layer(rows: int, units: int, k: int, dtype: str = "float32") -> tuple[IRModule, np.ndarray]:
    x = Var("x", TensorType((rows, k), dtype))
    weight = rand(units, k).astype(dtype)
    body = call("nn.relu", call("nn.bias_add", call("nn.dense", x, Constant(weight)),
                                Constant(rand(units).astype(dtype))))  # fmt: skip
    return main((x,), body), weight


def test_a_dense_layer_gets_a_weight_packed_at_compile_time() -> None:
    mod, weight = layer(16, 48, 10)
    after = transform.AlterOpLayout(8)(mod)
    assert ops_of(after)["nn.dense"] == 0 and ops_of(after)["layout_transform"] == 0
    (packed,) = calls_of(after, "nn.contrib_dense_pack")
    assert str(packed.attrs.weight_layout) == "NC16n"
    w = packed.args[1]
    assert isinstance(w, Constant) and w.data.shape == (3, 10, 16)
    np.testing.assert_array_equal(w.data[1, :, 5], weight[16 + 5])
    x = rand(16, 10)
    np.testing.assert_allclose(interpret(after, x=x), interpret(mod, x=x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("units", "lanes", "block"),
    [(512, 8, 16), (48, 8, 16), (8, 8, 8), (24, 8, 8), (12, 8, 0), (512, 16, 64), (32, 16, 32),
     (48, 16, 48), (80, 16, 16), (100, 4, 4)],
)  # fmt: skip
def test_the_block_is_the_micro_kernels_column_block(units: int, lanes: int, block: int) -> None:
    assert dense_pack_block(units, lanes) == block


def test_the_block_rule_agrees_with_the_dense_schedule() -> None:
    assert GEMV_MAX_ROWS == dense_schedule.GEMV_MAX_ROWS
    for mattr, lanes in (("+avx2,+fma,-avx512f", 8), ("+avx512f,+avx2,+fma", 16)):
        target = Target.parse(f"llvm -mcpu=x86-64 -mattr={mattr}")
        assert target.lanes("float32") == lanes
        for units in (16, 32, 48, 64, 256, 512, 1536, 2048):
            chosen = dense_schedule.choose_blocking(128, units, lanes, target)
            block = dense_pack_block(units, lanes)
            if units % chosen.nb == 0:
                assert block == chosen.nb
            assert dense_schedule.fits_registers(block, lanes, target)


@pytest.mark.parametrize(
    "case",
    ["few rows", "few columns", "no block divides", "float64", "rank 3"],
)
def test_layers_the_schedule_runs_otherwise_stay_dense(case: str) -> None:
    if case == "rank 3":
        x = Var("x", TensorType((2, 8, 16), "float32"))
        mod = main((x,), call("nn.dense", x, Constant(rand(16, 16))))
    else:
        rows, units, dtype = {
            "few rows": (GEMV_MAX_ROWS, 64, "float32"),
            "few columns": (32, 4, "float32"),
            "no block divides": (32, 12, "float32"),
            "float64": (32, 64, "float64"),
        }[case]
        mod, _ = layer(rows, units, 8, dtype)
    after = transform.AlterOpLayout(8)(mod)
    assert ops_of(after)["nn.contrib_dense_pack"] == 0 and ops_of(after)["nn.dense"] == 1


def test_a_weight_that_is_not_constant_stays_a_dense_operand() -> None:
    x = Var("x", TensorType((8, 6), "float32"))
    w = Var("w", TensorType((32, 6), "float32"))
    mod = main((x, w), call("nn.dense", x, w))
    after = transform.AlterOpLayout(8)(mod)
    assert ops_of(after) == Counter({"nn.dense": 1})


@st.composite
def dense_layers(draw) -> IRModule:
    """A dense layer with a constant weight (sometimes a parameter), bias and activation, of
    shapes around the blocks (rows around GEMV_MAX_ROWS, units multiples of 4 or not)."""
    rows = draw(st.integers(1, 12))
    k = draw(st.integers(1, 9))
    units = draw(st.sampled_from([3, 4, 8, 12, 16, 24, 32, 40]))
    x = Var("x", TensorType((rows, k), "float32"))
    params = [x]
    if draw(st.booleans()):
        weight: object = Constant(rand(units, k))
    else:
        weight = Var("w", TensorType((units, k), "float32"))
        params.append(weight)
    out = call("nn.dense", x, weight)
    if draw(st.booleans()):
        out = call("nn.bias_add", out, Constant(rand(units)))
    if draw(st.booleans()):
        out = call("nn.relu", out)
    return main(tuple(params), out)


def test_generated_dense_layers_compute_the_same_values() -> None:
    report = check_pass(transform.AlterOpLayout(4), dense_layers(), rtol=1e-5, atol=1e-5)
    assert report.changed > 0  # the layers with a constant weight and enough rows


@settings(max_examples=20, deadline=None)
@given(dense_layers())
def test_generated_dense_layers_compile_to_the_interpreters_values(mod: IRModule) -> None:
    inputs = {p.name_hint: rand(*p.type_annotation.shape) for p in mod["main"].params}
    with PassContext(opt_level=3, config={"alter-op-layout": {"block": 4}}):
        model = relay.build(mod, target="llvm -num-threads=1 -mattr=+avx2,+fma")
    np.testing.assert_allclose(model.run(**inputs), interpret(mod, **inputs), rtol=1e-4, atol=1e-4)


def test_built_layer_with_a_bound_weight_has_no_transform_and_matches() -> None:
    mod, _ = layer(64, 256, 96)
    dump: dict[str, str] = {}
    model = build(mod, target="llvm -num-threads=2", dump=dump)
    assert "nn.contrib_dense_pack" in dump["relay"] and "layout_transform" not in dump["relay"]
    assert "_packed" not in dump["te"]  # the kernel reads the weight as packed: no pack stage
    x = rand(64, 96)
    np.testing.assert_allclose(model.run(x=x), interpret(mod, x=x), rtol=1e-4, atol=1e-4)
