"""Transcendental element-wise stages computed several machine vectors at a time (so the
functions' dependent chains overlap): element-wise kernels (`injective.INTERLEAVED_CALLS`)
and the expensive tail of a register-blocked product (`dense.tail_interleave`). Each kernel
is compiled, compared with the interpreter (or the reference implementation), and with the
same kernel one machine vector at a time bit for bit, on sizes the wide vector divides and
sizes it does not."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import relay
from relay.backend.codegen import compile_module
from relay.backend.lower.lower_func import LoweredKernel, lower_primitive
from relay.backend.lower.schedules import dense as dense_schedules
from relay.backend.lower.schedules import injective
from relay.backend.lower.schedules.dense import tail_interleave
from relay.backend.runtime import evaluate
from relay.backend.runtime.native import aligned_copy, aligned_empty
from relay.backend.runtime.op_impls import implementation_for
from relay.backend.target import Target
from relay.backend.te import compute, create_schedule, placeholder
from relay.backend.tir import op as tir_op
from relay.backend.tir.printer import astext
from relay.backend.tir.transform import lower_pipeline
from relay.lang import get_op
from relay.lang.expr import Call, Function, Var
from relay.testing.compute_check import apply_compute, assert_matches, run_default_schedule

AVX2_TWO_THREADS = Target(vector_bits=256, num_threads=2)
AVX2_ONE_THREAD = Target(vector_bits=256, num_threads=1)
AVX512_ONE_THREAD = Target(vector_bits=512, num_threads=1)

rng = np.random.default_rng(5)


def rand(*shape: int, scale: float = 4.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype("float32")


def with_specials(x: np.ndarray) -> np.ndarray:
    flat = x.reshape(-1)
    flat[[0, 3, 7, 11, 12]] = [np.nan, np.inf, -np.inf, 100.0, -0.0]
    return x


def parse_fn(shape: tuple[int, ...], body: str) -> Function:
    dims = ", ".join(map(str, shape))
    src = (
        f'#[version = "0.0.5"]\ndef @main(%x: Tensor[({dims}), float32], Primitive=1) {{ {body} }}'
    )
    return relay.parse(src)["main"]


def run_kernel(fn: Function, x: np.ndarray, target: Target) -> tuple[np.ndarray, LoweredKernel]:
    kernel = lower_primitive(fn, None, "kernel", target)
    lib = compile_module([lower_pipeline(kernel.func)])
    (out_type,) = kernel.output_types
    out = aligned_empty(tuple(int(d) for d in out_type.shape), out_type.dtype)
    lib.run("kernel", aligned_copy(x), out)
    return out, kernel


def interpreted(fn: Function, x: np.ndarray) -> np.ndarray:
    arg = Var("a0", fn.params[0].type_annotation)
    want: Any = evaluate(Call(fn, [arg]), {arg: x})
    return np.asarray(want)


def one_vector_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(injective, "INTERLEAVED_CALLS", {})


BODIES = {
    "exp": "exp(%x)",
    "sigmoid": "sigmoid(%x)",
    "erf": "erf(%x)",
    "tanh": "tanh(%x)",
    "silu": "multiply(%x, sigmoid(%x))",  # the call in a stage inlined into the output
    "gelu": "multiply(multiply(%x, 0.5f), add(erf(multiply(%x, 0.7071f)), 1f))",
}
CALL = {"silu": "sigmoid", "gelu": "erf"}


@pytest.mark.parametrize("name", sorted(BODIES))
@pytest.mark.parametrize(
    ("shape", "target"),
    [
        ((3, 64), AVX2_ONE_THREAD),  # 64 = 2 x (4 x 8): wide vectors
        ((130, 96), AVX2_TWO_THREADS),  # wide vectors, parallel rows
        ((5, 40), AVX2_ONE_THREAD),  # no wide vector divides 40: machine vectors
        ((3, 7, 5), AVX512_ONE_THREAD),  # a short row: the trailing axes fused
        ((2, 256), AVX512_ONE_THREAD),
        ((4, 100), AVX512_ONE_THREAD),  # 100: a guarded machine vector
    ],
)
def test_transcendental_stage_matches_and_is_bit_identical(
    name: str, shape: tuple[int, ...], target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    fn = parse_fn(shape, BODIES[name])
    x = with_specials(rand(*shape))
    got, kernel = run_kernel(fn, x, target)
    np.testing.assert_allclose(got, interpreted(fn, x), rtol=1e-5, atol=1e-6, equal_nan=True)
    lanes = target.lanes("float32")
    wide = lanes * injective.INTERLEAVED_CALLS[CALL.get(name, name)]
    text = astext(kernel.func)
    if shape[-1] % wide == 0:
        assert f"in vectorized(0, {wide})" in text  # one wide vector per operation
    else:
        assert f"in vectorized(0, {wide})" not in text
    one_vector_at_a_time(monkeypatch)
    plain, plain_kernel = run_kernel(fn, x, target)
    np.testing.assert_array_equal(got, plain)  # NaN in the same places too
    if shape[-1] % wide == 0:
        assert f"in vectorized(0, {wide})" not in astext(plain_kernel.func)


def test_cheap_stage_keeps_the_machine_vector() -> None:
    fn = parse_fn((4, 128), "nn.relu(add(multiply(%x, %x), 1f))")
    _, kernel = run_kernel(fn, rand(4, 128), AVX2_ONE_THREAD)
    text = astext(kernel.func)
    assert "in vectorized(0, 8)" in text and "in vectorized(0, 32)" not in text


@pytest.mark.parametrize("inline", [True, False])
def test_only_inlined_producers_count(inline: bool) -> None:
    """`interleave_of` looks at the stage and the stages inlined into it: an exponential
    computed in a stage of its own leaves its cheap consumer at one machine vector."""
    x = placeholder((4, 64), "float32", "x")
    e = compute((4, 64), lambda i, j: tir_op.exp(x[i, j]), name="e")
    out = compute((4, 64), lambda i, j: e[i, j] * 2.0, name="out")
    s = create_schedule([out.op])
    if inline:
        s[e].compute_inline()
    assert injective.interleave_of(s, out) == (4 if inline else 1)
    assert injective.interleave_of(s, e) == 4


# ---------------------------------------------------------------------- dense expensive tail


@pytest.mark.parametrize(
    ("block_vectors", "rows", "interleave", "want"),
    [
        (2, 128, 4, (2, 2)),
        (4, 128, 4, (4, 1)),
        (1, 128, 4, (1, 4)),
        (3, 128, 4, (3, 1)),
        (2, 13, 4, (2, 1)),  # the rows are not a multiple of the unrolled rows
        (2, 2, 4, (2, 1)),  # only one block of rows: nothing to unroll
        (2, 128, 1, (1, 1)),
    ],
)
def test_tail_interleave_rule(block_vectors, rows, interleave, want) -> None:
    assert tail_interleave(block_vectors, rows, interleave) == want


def _dense_with_tail(arrays, tail, target):
    (m, k), (n, _) = arrays[0].shape, arrays[1].shape
    a, b = placeholder((m, k), "float32", "a"), placeholder((n, k), "float32", "b")
    prod, attrs = apply_compute("nn.dense", [a, b], units=n)
    out, _ = apply_compute(tail, [prod])
    (got,), s = run_default_schedule([a, b], [out], arrays, target)
    plain = implementation_for(get_op("nn.dense"))(arrays, attrs)
    want = implementation_for(get_op(tail))([plain], None)
    return got, want, str(s.trace)


@pytest.mark.parametrize(
    ("m", "n", "k", "tail", "target", "unrolled"),
    [
        (64, 144, 19, "erf", AVX2_ONE_THREAD, True),  # 2 vectors wide x 2 rows unrolled
        (13, 130, 7, "sigmoid", AVX2_TWO_THREADS, False),  # odd rows, columns past a block
        (30, 256, 5, "erf", AVX512_ONE_THREAD, False),  # 4 vectors wide, no rows unrolled
        (20, 300, 9, "tanh", AVX512_ONE_THREAD, False),
    ],
)
def test_dense_tail_interleaved_is_bit_identical(
    m, n, k, tail, target, unrolled, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tail loop of a column block: the whole block per vector operation and, when the
    block has fewer than `TAIL_INTERLEAVE` machine vectors, rows unrolled in pairs; the same
    values as one machine vector at a time, bit for bit."""
    arrays = [rand(m, k, scale=0.5), rand(n, k, scale=0.5)]
    got, want, trace = _dense_with_tail(arrays, tail, target)
    assert_matches(got, want, atol_scale=2e-6)
    assert f'compute_at("dense", "{tail}"' in trace  # the per-column-block tail
    assert (f'unroll("{tail}", "ax0.inner")' in trace) == unrolled
    lanes = target.lanes("float32")
    assert f'split("{tail}", "ax1.inner", factor={lanes})' not in trace  # the block is wide
    monkeypatch.setattr(dense_schedules, "TAIL_INTERLEAVE", 1)
    plain, _, plain_trace = _dense_with_tail(arrays, tail, target)
    assert f'split("{tail}", "ax1.inner", factor={lanes})' in plain_trace
    np.testing.assert_array_equal(got, plain)
