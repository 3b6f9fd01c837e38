"""Dynamic shapes: a `?` or symbolic dimension in `@main`'s signature compiles once, to
native kernels that take their extents at run time; the model runs on inputs of any size
(including sizes no vector width divides) and agrees with the interpreter; a kernel whose
sizes the relations cannot express in its inputs' dimensions runs in the interpreter; an
input breaking a symbolic constraint is a clear error; the model saves and loads."""

from __future__ import annotations

import numpy as np
import pytest
import relay
from hypothesis import given
from hypothesis import strategies as st
from relay.backend.runtime import interpret
from relay.backend.runtime.vm import VMModel
from relay.grammar import parse
from relay.lang.diagnostics import InputError
from relay.lang.metadata import write_metadata
from relay.lang.types import ShapeVar
from relay.passes import values_close

HEADER = '#[version = "0.0.5"]\n'


def build(text: str, symbolic: int = 0) -> tuple[relay.IRModule, VMModel]:
    """The module of `text` (`$0`, `$1`, ... stand for `symbolic` shape variables) and its
    VM model."""
    meta = ""
    if symbolic:
        names = [ShapeVar(f"n{k}") for k in range(symbolic)]
        for k in range(symbolic):
            text = text.replace(f"${k}", f"meta[tir.SizeVar][{k}]")
        meta = "\n#[metadata]\n" + write_metadata({"tir.SizeVar": names})
    mod = parse(HEADER + text + meta)
    model = relay.build(mod, target="llvm -num-threads=2")
    assert isinstance(model, VMModel), getattr(model, "reason", model)
    return mod, model


def rand(*shape: int) -> np.ndarray:
    return np.random.default_rng(sum(shape) + len(shape)).standard_normal(shape).astype("float32")


def agrees(mod: relay.IRModule, model: VMModel, **inputs: object) -> object:
    expected = interpret(mod, **inputs)
    got = model.run(**inputs)
    assert values_close(expected, got, 1e-4, 1e-5), (expected, got)
    return got


DENSE = """
def @main(%x: Tensor[(?, 16), float32], %w: Tensor[(8, 16), float32]) {
  %0 = nn.dense(%x, %w); nn.relu(%0) }"""


def test_a_dynamic_batch_compiles_once_to_one_native_kernel():
    mod, model = build(DENSE)
    assert model.native and len(model.program.kernels) == 1
    assert model.program.kernels[0].dynamic is not None
    w = rand(8, 16)
    for n in (1, 7, 64, 0, 13):
        got = agrees(mod, model, x=rand(n, 16), w=w)
        assert got.shape == (n, 8)  # type: ignore[attr-defined]
        stats = model.stats
        assert (stats.executor, stats.native_calls, stats.interpreted_calls) == ("vm", 1, 0)


SYMBOLIC = """
def @main(%x: Tensor[($0, 16), float32], %y: Tensor[($0, 16), float32],
          %w: Tensor[(8, 16), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = add(%x, %y);
  %2 = reshape(%1, newshape=[-1, 4, 4]);
  %3 = reshape(%1, newshape=[0, 2, 8]);
  %4 = concatenate((%x, %y), axis=1);
  %5 = nn.softmax(%x);
  %6 = sum(%1, axis=[0]);
  %7 = max(%4, axis=[1], keepdims=True);
  %8 = add(%0, 1f);
  (%8, %2, %3, %4, %5, %6, %7)
}"""


@pytest.mark.parametrize("n", [1, 5, 13, 128])
def test_operators_with_a_symbolic_dimension_agree_with_the_interpreter(n):
    mod, model = build(SYMBOLIC, symbolic=1)
    assert model.native, model.program.astext()
    agrees(mod, model, x=rand(n, 16), y=rand(n, 16) + 1, w=rand(8, 16))
    assert model.stats.interpreted_calls == 0


def test_sequence_lengths_through_attention_like_kernels():
    text = """
def @main(%q: Tensor[(2, ?, 8), float32], %k: Tensor[(2, ?, 8), float32]) {
  %0 = nn.batch_matmul(%q, %k, transpose_b=True);
  nn.softmax(%0)
}"""
    mod, model = build(text)
    for length in (5, 128, 9):
        got = agrees(mod, model, q=rand(2, length, 8), k=rand(2, length, 8))
        assert got.shape == (2, length, length)  # type: ignore[attr-defined]


def test_conv2d_with_a_dynamic_batch():
    text = """
def @main(%x: Tensor[(?, 3, 9, 9), float32], %w: Tensor[(4, 3, 3, 3), float32],
          %b: Tensor[(4), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
  %1 = nn.bias_add(%0, %b);
  nn.relu(%1)
}"""
    mod, model = build(text)
    assert model.native
    for n in (1, 3, 6):
        agrees(mod, model, x=rand(n, 3, 9, 9), w=rand(4, 3, 3, 3), b=rand(4))


def test_a_kernel_whose_sizes_its_inputs_do_not_give_runs_in_the_interpreter():
    # concatenating two `?` axes: the result's size is no dimension of an input
    text = """
def @main(%x: Tensor[(?, 4), float32], %y: Tensor[(?, 4), float32]) {
  %0 = concatenate((%x, %y));
  %1 = nn.relu(%0);
  multiply(%1, 2f)
}"""
    mod, model = build(text)
    agrees(mod, model, x=rand(3, 4), y=rand(5, 4))
    assert model.stats.interpreted_calls >= 1


def test_a_broadcast_the_kernel_did_not_assume_runs_in_the_interpreter():
    # the kernel assumes both `?` batch sizes are one variable; a 1 broadcasts instead
    text = """
def @main(%x: Tensor[(?, 16), float32], %y: Tensor[(?, 16), float32]) { add(%x, %y) }"""
    mod, model = build(text)
    assert model.native
    agrees(mod, model, x=rand(6, 16), y=rand(6, 16))
    assert (model.stats.native_calls, model.stats.interpreted_calls) == (1, 0)
    got = agrees(mod, model, x=rand(1, 16), y=rand(6, 16))
    assert got.shape == (6, 16)  # type: ignore[attr-defined]
    assert (model.stats.native_calls, model.stats.interpreted_calls) == (0, 1)


def test_an_input_breaking_a_symbolic_constraint_names_both_sizes():
    _mod, model = build(SYMBOLIC, symbolic=1)
    with pytest.raises(InputError) as info:
        model.run(x=rand(3, 16), y=rand(4, 16), w=rand(8, 16))
    message = str(info.value)
    assert "n0 = 3" in message and "(4, 16)" in message and "argument `y`" in message


def test_a_dynamic_model_saves_and_loads(tmp_path):
    _mod, model = build(SYMBOLIC, symbolic=1)
    model.save(tmp_path / "dynamic.relaymod")
    again = relay.load(tmp_path / "dynamic.relaymod")
    for n in (2, 11):
        inputs = {"x": rand(n, 16), "y": rand(n, 16), "w": rand(8, 16)}
        for got, want in zip(again.run(**inputs), model.run(**inputs)):  # type: ignore[call-overload]
            np.testing.assert_array_equal(got, want)
    assert again.stats.native_calls == model.stats.native_calls > 0


ELEMENTWISE = """
def @main(%x: Tensor[(?, ?), float32], %b: Tensor[(?), float32]) {
  %0 = add(%x, %b);
  %1 = exp(%0);
  %2 = sum(%1, axis=[1], keepdims=True);
  %3 = divide(%1, %2);
  (%3, mean(%0, axis=[0]))
}"""


@pytest.fixture(scope="module")
def elementwise() -> tuple[relay.IRModule, VMModel]:
    return build(ELEMENTWISE)


@given(rows=st.integers(1, 40), cols=st.integers(1, 70))
def test_generated_sizes_agree_with_the_interpreter(elementwise, rows, cols):
    mod, model = elementwise
    agrees(mod, model, x=rand(rows, cols), b=rand(cols))
