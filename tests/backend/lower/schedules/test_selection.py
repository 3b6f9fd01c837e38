"""The default schedules (injective, reduce, softmax, pool) on sizes no vector width or tile
divides, batch 1 and 3: each kernel is compiled to native code and compared with the
interpreter, and the schedule's trace shows the intended loop nest."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import relay
from relay.backend.codegen import compile_module
from relay.backend.lower.lower_func import LoweredKernel, lower_primitive
from relay.backend.lower.schedules import reduce as reduce_schedules
from relay.backend.runtime import evaluate
from relay.backend.runtime.native import aligned_copy, aligned_empty
from relay.backend.target import Target
from relay.backend.tir.transform import lower_pipeline
from relay.lang.expr import Call, Function, Var

TWO_THREADS = Target(vector_bits=512, num_threads=2)


def parse_fn(params: str, body: str) -> Function:
    return relay.parse(f'#[version = "0.0.5"]\ndef @main({params}, Primitive=1) {{ {body} }}')[
        "main"
    ]


def check(fn: Function, values: list[np.ndarray], target: Target = TWO_THREADS) -> LoweredKernel:
    """Lower, compile and run `fn` on `values`; compare with the interpreter."""
    kernel = lower_primitive(fn, None, "kernel", target)
    lib = compile_module([lower_pipeline(kernel.func)])
    outs = [aligned_empty(tuple(int(d) for d in t.shape), t.dtype) for t in kernel.output_types]
    lib.run("kernel", *(aligned_copy(v) for v in values), *outs)
    args = [Var(f"a{k}", p.type_annotation) for k, p in enumerate(fn.params)]
    want: Any = evaluate(Call(fn, args), dict(zip(args, values)))
    wants = list(want) if isinstance(want, tuple) else [want]
    for got, ref in zip(outs, wants):
        ref = np.asarray(ref)
        assert got.dtype == ref.dtype and got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=2e-5, atol=1e-5, equal_nan=True)
    return kernel


rng = np.random.default_rng(1)


def rand(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype("float32")


# ------------------------------------------------------------------------------- injective


@pytest.mark.parametrize("batch", [1, 3])
def test_elementwise_broadcast_chain(batch: int) -> None:
    fn = parse_fn(
        "%x: Tensor[(B, 17, 5, 7), float32], %y: Tensor[(17, 1, 1), float32]".replace(
            "B", str(batch)
        ),
        "%0 = add(exp(%x), %y); nn.relu(multiply(%0, %0))",
    )
    check(fn, [rand(batch, 17, 5, 7), rand(17, 1, 1)])


def test_large_injective_kernel_is_vectorized_and_parallel() -> None:
    fn = parse_fn(
        "%x: Tensor[(3, 64, 33, 35), float32], %b: Tensor[(64), float32]",
        "nn.relu(nn.bias_add(%x, %b))",
    )
    kernel = check(fn, [rand(3, 64, 33, 35), rand(64)])
    trace = str(kernel.trace)
    assert "vectorize" in trace and "parallel" in trace
    single = lower_primitive(fn, None, "k", Target(vector_bits=512, num_threads=1))
    assert "parallel" not in str(single.trace)


@pytest.mark.parametrize("shape", [(3, 17, 33), (1, 5, 3)])
def test_transpose_and_reshape(shape: tuple[int, int, int]) -> None:
    a, b, c = shape
    fn = parse_fn(
        f"%x: Tensor[({a}, {b}, {c}), float32]",
        f"%0 = transpose(%x, axes=[2, 0, 1]); reshape(%0, newshape=[{c * a}, {b}])",
    )
    check(fn, [rand(*shape)])


def test_concatenate_of_odd_pieces() -> None:
    fn = parse_fn(
        "%x: Tensor[(3, 5), float32], %y: Tensor[(3, 11), float32]",
        "%0 = (negative(%x), %y, %x); concatenate(%0, axis=1)",
    )
    check(fn, [rand(3, 5), rand(3, 11)])


def test_multi_output_injective_group() -> None:
    fn = parse_fn("%x: Tensor[(3, 19), float32]", "(exp(%x), sqrt(abs(%x)), %x)")
    check(fn, [rand(3, 19)])


# ------------------------------------------------------------------------------ reductions


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize(
    ("op", "axis"),
    [
        ("sum", "[-1]"),
        ("sum", "[1]"),
        ("sum", "[0]"),
        ("max", "[1, 2]"),
        ("mean", "[2]"),
        ("prod", "[1]"),
        ("min", "[0, 2]"),
    ],
)
def test_reductions(batch: int, op: str, axis: str) -> None:
    fn = parse_fn(
        f"%x: Tensor[({batch}, 23, 37), float32]",
        f"{op}(multiply(%x, 0.5f), axis={axis}, keepdims=True)",
    )
    check(fn, [rand(batch, 23, 37)])


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reductions(op: str) -> None:
    fn = parse_fn("%x: Tensor[(3, 19, 21), float32]", f"{op}(%x, axis=[1])")
    check(fn, [rand(3, 19, 21)])


def test_reduction_over_a_middle_axis_vectorizes_the_kept_inner_axis() -> None:
    fn = parse_fn("%x: Tensor[(3, 40, 67), float32]", "sum(%x, axis=[1])")
    kernel = check(fn, [rand(3, 40, 67)])
    assert "vectorize" in str(kernel.trace)


def test_mean_divides_inside_the_reduction_rows() -> None:
    fn = parse_fn("%x: Tensor[(70, 300), float32]", "mean(%x, axis=[1], keepdims=True)")
    kernel = check(fn, [rand(70, 300)])
    assert "compute_at" in str(kernel.trace)


@pytest.mark.parametrize("axis", [-1, 1])
def test_layer_norm(axis: int) -> None:
    fn = parse_fn(
        "%x: Tensor[(3, 17, 33), float32], %g: Tensor[(D), float32], %b: Tensor[(D), float32]".replace(
            "D", "33" if axis == -1 else "17"
        ),
        f"nn.layer_norm(%x, %g, %b, axis={axis})",
    )
    n = 33 if axis == -1 else 17
    check(fn, [rand(3, 17, 33), rand(n), rand(n)])


# --------------------------------------------------------------------------------- softmax


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("axis", [-1, 1, 0])
@pytest.mark.parametrize("op", ["nn.softmax", "nn.log_softmax"])
def test_softmax(batch: int, axis: int, op: str) -> None:
    fn = parse_fn(f"%x: Tensor[({batch}, 13, 37), float32]", f"{op}(%x, axis={axis})")
    kernel = check(fn, [rand(batch, 13, 37)])
    if axis == -1:
        assert "compute_at" in str(kernel.trace)


def test_softmax_with_an_elementwise_tail() -> None:
    fn = parse_fn(
        "%x: Tensor[(3, 8, 45), float32], %y: Tensor[(45), float32]",
        "add(multiply(nn.softmax(%x), 2f), %y)",
    )
    kernel = check(fn, [rand(3, 8, 45), rand(45)])
    assert kernel.anchor_tag == "softmax"


def test_rows_without_fused_attach(monkeypatch: pytest.MonkeyPatch) -> None:
    """When bound inference cannot shrink a stage computed at a fused loop, the rows stay
    separate loops (and the results are the same)."""
    monkeypatch.setattr(reduce_schedules, "fused_attach_is_exact", lambda: False)
    fn = parse_fn("%x: Tensor[(3, 8, 45), float32]", "nn.softmax(%x)")
    kernel = check(fn, [rand(3, 8, 45)])
    trace = str(kernel.trace)
    assert 'compute_at("softmax_maxelem", "softmax", "ax1")' in trace
    assert "fuse" not in trace
    fn = parse_fn(
        "%x: Tensor[(2, 9, 33), float32], %g: Tensor[(33), float32], %b: Tensor[(33), float32]",
        "nn.layer_norm(%x, %g, %b)",
    )
    check(fn, [rand(2, 9, 33), rand(33), rand(33)])


# ----------------------------------------------------------------------------------- pools


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize(
    "call",
    [
        "nn.max_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])",
        "nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2], ceil_mode=True)",
        "nn.avg_pool2d(%x, pool_size=[3, 3], strides=[1, 1], padding=[1, 1, 1, 1])",
        "nn.avg_pool2d(%x, pool_size=[3, 2], strides=[2, 1], padding=[1, 0, 1, 1],"
        " count_include_pad=True)",
        "nn.global_avg_pool2d(%x)",
        "nn.global_max_pool2d(%x)",
        "nn.adaptive_avg_pool2d(%x, output_size=[3, 4])",
    ],
)
def test_pools_nchw(batch: int, call: str) -> None:
    fn = parse_fn(f"%x: Tensor[({batch}, 5, 17, 19), float32]", call)
    check(fn, [rand(batch, 5, 17, 19)])


def test_pool_nhwc() -> None:
    fn = parse_fn(
        "%x: Tensor[(3, 11, 13, 20), float32]",
        'nn.max_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], layout="NHWC")',
    )
    check(fn, [rand(3, 11, 13, 20)])


def test_wide_max_pool_vectorizes_over_the_output_width() -> None:
    fn = parse_fn(
        "%x: Tensor[(1, 8, 64, 66), float32]",
        "nn.max_pool2d(%x, pool_size=[3, 3], strides=[1, 1], padding=[1, 1, 1, 1])",
    )
    kernel = check(fn, [rand(1, 8, 64, 66)])
    assert "vectorize" in str(kernel.trace)
