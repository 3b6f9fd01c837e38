"""The softmax kernel: the exponentials are a stage of their own, computed once per element
inside each row and vectorized, then summed and scaled by the reciprocal of the sum. Each
kernel is compiled to native code and compared with the interpreter, on row lengths no
vector width divides (1, 7, 129), other axes, an element-wise tail, infinities, and
hypothesis-drawn shapes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import relay
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend.codegen import compile_module
from relay.backend.lower.lower_func import LoweredKernel, lower_primitive
from relay.backend.runtime import evaluate
from relay.backend.runtime.native import aligned_copy, aligned_empty
from relay.backend.target import Target
from relay.backend.tir.printer import astext
from relay.backend.tir.transform import lower_pipeline
from relay.lang.expr import Call, Function, Var

AVX2_TWO_THREADS = Target(vector_bits=256, num_threads=2)
AVX512_ONE_THREAD = Target(vector_bits=512, num_threads=1)


def parse_fn(params: str, body: str) -> Function:
    return relay.parse(f'#[version = "0.0.5"]\ndef @main({params}, Primitive=1) {{ {body} }}')[
        "main"
    ]


def check(fn: Function, values: list[np.ndarray], target: Target) -> LoweredKernel:
    """Lower, compile and run `fn` on `values`; compare with the interpreter."""
    kernel = lower_primitive(fn, None, "kernel", target)
    lib = compile_module([lower_pipeline(kernel.func)])
    outs = [aligned_empty(tuple(int(d) for d in t.shape), t.dtype) for t in kernel.output_types]
    lib.run("kernel", *(aligned_copy(v) for v in values), *outs)
    args = [Var(f"a{k}", p.type_annotation) for k, p in enumerate(fn.params)]
    want: Any = evaluate(Call(fn, args), dict(zip(args, values)))
    np.testing.assert_allclose(outs[0], np.asarray(want), rtol=2e-6, atol=1e-6, equal_nan=True)
    return kernel


def softmax_fn(shape: tuple[int, ...], axis: int, op: str = "nn.softmax") -> Function:
    dims = ", ".join(map(str, shape))
    return parse_fn(f"%x: Tensor[({dims}), float32]", f"{op}(%x, axis={axis})")


rng = np.random.default_rng(3)


def rand(*shape: int, scale: float = 3.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype("float32")


@pytest.mark.parametrize("target", [AVX2_TWO_THREADS, AVX512_ONE_THREAD])
@pytest.mark.parametrize("n", [1, 7, 129])
def test_rows_of_any_length(n: int, target: Target) -> None:
    check(softmax_fn((300, n), -1), [rand(300, n)], target)
    check(softmax_fn((1, n), -1), [rand(1, n)], target)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_other_axes(axis: int) -> None:
    check(softmax_fn((3, 7, 129), axis), [rand(3, 7, 129)], AVX2_TWO_THREADS)


def test_each_exponential_is_computed_once_and_vectorized() -> None:
    kernel = check(softmax_fn((8, 32, 129), -1), [rand(8, 32, 129)], AVX2_TWO_THREADS)
    text = astext(kernel.func)
    assert text.count("exp(") == 1  # the exponentials' stage, read by the sum and the scale
    trace = str(kernel.trace)
    assert 'compute_at("softmax_exp", "softmax"' in trace
    assert "parallel" in trace
    assert 'vectorize("softmax_exp"' in trace
    assert "*(1.0/softmax_expsum" in text  # scaled by the reciprocal of the sum


def test_log_softmax_still_matches() -> None:
    for n in (1, 7, 129):
        check(softmax_fn((5, n), -1, "nn.log_softmax"), [rand(5, n)], AVX2_TWO_THREADS)


def test_elementwise_tail_is_fused() -> None:
    fn = parse_fn(
        "%x: Tensor[(4, 9, 129), float32], %y: Tensor[(129), float32]",
        "add(multiply(nn.softmax(%x), 2f), %y)",
    )
    kernel = check(fn, [rand(4, 9, 129), rand(129)], AVX2_TWO_THREADS)
    assert kernel.anchor_tag == "softmax"


def test_infinities_and_large_values() -> None:
    x = rand(6, 7)
    x[0, 3] = np.inf  # a row with +inf: NaN where the interpreter gives NaN
    x[1, :] = -np.inf  # a row of -inf: NaN everywhere (max is -inf)
    x[2, 2] = -np.inf  # one -inf: its probability is 0
    x[3, :] = 1e30  # huge equal values: uniform
    x[4, 0] = 1e4  # one dominant value: 1 there, 0 elsewhere
    check(softmax_fn((6, 7), -1), [x], AVX2_TWO_THREADS)


@settings(max_examples=10)
@given(
    shape=st.lists(st.integers(1, 40), min_size=1, max_size=3).map(tuple),
    axis_seed=st.integers(0, 5),
    log_form=st.booleans(),
    scale=st.sampled_from([0.1, 3.0, 60.0]),
)
def test_random_shapes_match_the_interpreter(
    shape: tuple[int, ...], axis_seed: int, log_form: bool, scale: float
) -> None:
    axis = axis_seed % len(shape) - (len(shape) if axis_seed % 2 else 0)
    op = "nn.log_softmax" if log_form else "nn.softmax"
    x = (np.random.default_rng(axis_seed).standard_normal(shape) * scale).astype("float32")
    check(softmax_fn(shape, axis, op), [x], AVX2_TWO_THREADS)


@pytest.mark.parametrize("shape", [(5, 16), (3, 4, 128), (2, 40), (1, 1024)])
def test_row_max_by_vector_lanes(shape: tuple[int, ...]) -> None:
    """A last axis that is a multiple of the lanes (at least two vectors) takes its maximum
    per lane first (a vector max per step), then across the lanes."""
    for op in ("nn.softmax", "nn.log_softmax"):
        kernel = check(softmax_fn(shape, -1, op), [rand(*shape)], AVX2_TWO_THREADS)
        text = astext(kernel.func)
        assert "softmax_maxpart" in text
        lines = text.splitlines()
        step = next(i for i, ln in enumerate(lines) if "softmax_maxpart[" in ln and "select(" in ln)
        assert any("in vectorized(0, 8)" in ln for ln in lines[step - 2 : step])  # a vector a step


@pytest.mark.parametrize(("shape", "axis"), [((5, 8), -1), ((5, 20), -1), ((16, 3), 0)])
def test_other_rows_keep_one_max(shape: tuple[int, ...], axis: int) -> None:
    """Rows shorter than two vectors, not a multiple of one, or not the last axis: one max."""
    kernel = check(softmax_fn(shape, axis), [rand(*shape)], AVX2_TWO_THREADS)
    assert "maxpart" not in astext(kernel.func)


@pytest.mark.parametrize("op", ["nn.softmax", "nn.log_softmax"])
def test_plain_max_keeps_nan_and_infinite_rows(op: str) -> None:
    """The lanes' plain max may skip a NaN, but a row with a NaN anywhere is NaN everywhere,
    as the interpreter's NaN-propagating max makes it; infinities and signed zeros give the
    interpreter's values."""
    x = rand(10, 128)
    x[0, 5] = np.nan  # a NaN in the first lane block
    x[1, 127] = np.nan  # in the last step of a lane
    x[2, 64] = np.nan
    x[2, 3] = np.inf  # NaN and +inf
    x[3, :] = np.nan
    x[4, 9] = np.inf  # +inf alone: NaN where the interpreter gives NaN
    x[5, :] = -np.inf  # all -inf
    x[6, :] = 0.0
    x[6, ::3] = -0.0  # signed zeros
    x[7, 17] = -np.inf  # one -inf
    x[8, 0] = np.nan
    x[8, 1:] = -np.inf
    kernel = check(softmax_fn((10, 128), -1, op), [x], AVX2_TWO_THREADS)
    assert "softmax_maxpart" in astext(kernel.func)
    lib = compile_module([lower_pipeline(kernel.func)])
    out = aligned_empty((10, 128), "float32")
    lib.run("kernel", aligned_copy(x), out)
    for row in (0, 1, 2, 3, 8):
        assert np.isnan(out[row]).all(), row
    assert np.isfinite(out[6]).all()
    assert np.isfinite(np.delete(out[7], 17)).all()  # (log-softmax is -inf at the -inf)


def _blocked_nan_rows(rows: int, n: int) -> np.ndarray:
    x = rand(rows, n)
    x[0, 5] = np.nan
    x[3, :] = -np.inf
    x[9, n - 1] = np.inf
    x[10, :] = 1e30
    x[12, 2] = -np.inf
    return x


@pytest.mark.parametrize("target", [AVX2_TWO_THREADS, AVX512_ONE_THREAD])
@pytest.mark.parametrize("op", ["nn.softmax", "nn.log_softmax"])
def test_rows_in_blocks_with_interleaved_exponentials(op: str, target: Target) -> None:
    """Row counts the block divides: the statistics are computed for `ROW_BLOCK` rows at a
    time, the exponentials `EXP_INTERLEAVE` machine vectors per operation; NaN and infinite
    rows still match the interpreter."""
    from relay.backend.lower.schedules.softmax import EXP_INTERLEAVE, ROW_BLOCK

    x = _blocked_nan_rows(2 * ROW_BLOCK, 128)
    kernel = check(softmax_fn((2 * ROW_BLOCK, 128), -1, op), [x], target)
    text = astext(kernel.func)
    lanes = target.lanes("float32")
    assert f"softmax_maxelem: float32[{ROW_BLOCK}]" in text  # one statistic per block row
    if op == "nn.softmax":
        lines = text.splitlines()
        step = next(i for i, ln in enumerate(lines) if "softmax_exp[" in ln and "exp(" in ln)
        assert f"in vectorized(0, {lanes * EXP_INTERLEAVE})" in lines[step - 1]
    out = aligned_empty(x.shape, "float32")
    compile_module([lower_pipeline(kernel.func)]).run("kernel", aligned_copy(x), out)
    assert np.isnan(out[0]).all() and np.isnan(out[3]).all() and np.isnan(out[9]).all()


@pytest.mark.parametrize(
    "shape", [(3, 16, 36), (2, 8, 129), (24, 7), (4, 24, 96), (17, 128), (2, 8, 1)]
)
def test_blocks_and_wide_vectors_on_sizes_they_do_not_divide(shape: tuple[int, ...]) -> None:
    """Rows the block does not divide stay one at a time; a row the wide vector does not
    divide keeps the machine vector (with a guarded tail where needed)."""
    for op in ("nn.softmax", "nn.log_softmax"):
        for target in (AVX2_TWO_THREADS, AVX512_ONE_THREAD):
            check(softmax_fn(shape, -1, op), [rand(*shape)], target)
    check(softmax_fn(shape, 0, "nn.softmax"), [rand(*shape)], AVX2_TWO_THREADS)
