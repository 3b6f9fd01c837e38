"""Winograd convolution (`computes.winograd`, `schedules.winograd`): the A/B/G matrices, and
compiled kernels against the reference implementation (exact math on the transformed
weight) and against the direct convolution within the documented tolerance, on ResNet-18's
stride-1 3x3 layers and on shapes no tile divides."""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from relay.backend.lower.computes import lowering_for
from relay.backend.lower.computes.winograd import WINOGRAD_RTOL, tile_grid
from relay.backend.lower.lower_func import schedule_outputs
from relay.backend.lower.schedules import stage_order
from relay.backend.runtime.op_impls import implementation_for
from relay.backend.target import Target
from relay.backend.te import lower, placeholder
from relay.backend.tir.expr import Ramp, Select
from relay.backend.tir.stmt import BufferStore
from relay.backend.tir.transform import lower_pipeline, simplify, unroll
from relay.backend.tir.visitor import sub_expressions
from relay.lang import get_op
from relay.lang.opdefs.semantics import (
    pack_winograd_weight,
    unpack_winograd_weight,
    winograd_matrices,
)
from relay.testing.compute_check import apply_compute, assert_matches, run_default_schedule

RNG = np.random.default_rng(12)
TRANSFORM = get_op("nn.contrib_conv2d_winograd_weight_transform")
WINOGRAD = "nn.contrib_conv2d_winograd_without_weight_transform"


def transformed(w: np.ndarray, tile: int) -> np.ndarray:
    """The reference weight transform of an OIHW weight."""
    return implementation_for(TRANSFORM)([w], TRANSFORM.make_attrs(tile_size=tile))


def direct(x: np.ndarray, w: np.ndarray, pads: tuple[int, int, int, int]) -> np.ndarray:
    """The reference conv2d (stride 1) with `[top, left, bottom, right]` padding."""
    op = get_op("nn.conv2d")
    attrs = op.make_attrs(padding=list(pads), channels=w.shape[0], kernel_size=[3, 3])
    return implementation_for(op)([x, w], attrs)


def run_winograd(x, u, tile, pads=(1, 1, 1, 1), channels=None, tail=None):
    """Compile and run the Winograd operator (optionally + bias + relu); returns (got,
    the reference implementation's result, the schedule)."""
    xt, ut = placeholder(x.shape, "float32", "x"), placeholder(u.shape, "float32", "u")
    k = channels if channels is not None else u.shape[2]
    out, attrs = apply_compute(
        WINOGRAD, [xt, ut], tile_size=tile, padding=list(pads), channels=k, kernel_size=[3, 3]
    )
    want = implementation_for(get_op(WINOGRAD))([x, u], attrs)
    inputs, arrays = [xt, ut], [x, u]
    if tail is not None:
        bt = placeholder(tail.shape, "float32", "b")
        biased, _ = apply_compute("nn.bias_add", [out, bt], axis=1)
        out, _ = apply_compute("nn.relu", [biased])
        inputs, arrays = [*inputs, bt], [*arrays, tail]
        want = np.maximum(want + tail.reshape(1, -1, 1, 1), 0)
    (got,), s = run_default_schedule(inputs, [out], arrays)
    return got, want, s


@pytest.mark.parametrize("tile", [2, 3, 4, 6])
def test_matrices_compute_the_correlation(tile):
    at, bt, g = winograd_matrices(tile, 3)
    d = RNG.normal(size=(tile + 2, tile + 2))
    k = RNG.normal(size=(3, 3))
    y = at @ ((g @ k @ g.T) * (bt @ d @ bt.T)) @ at.T
    want = [[np.sum(d[i : i + 3, j : j + 3] * k) for j in range(tile)] for i in range(tile)]
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-12)


# (n, c, h, w, k, tile, pads): sizes no tile divides, channels not multiples of 8 or 16
ODD_CASES = [
    (1, 5, 7, 9, 11, 4, (1, 1, 1, 1)),
    (2, 3, 11, 6, 13, 2, (1, 1, 1, 1)),
    (1, 17, 9, 9, 9, 4, (0, 0, 0, 0)),
    (1, 6, 5, 13, 7, 2, (1, 2, 0, 1)),  # asymmetric padding
    (3, 4, 3, 3, 5, 4, (1, 1, 1, 1)),  # one partial tile per image
    (2, 4, 4, 8, 6, 4, (1, 1, 1, 1)),  # two tile columns; padding rows repeat the last image
    (1, 3, 5, 46, 4, 4, (1, 1, 1, 1)),  # 12 tile columns: vectors of 4
    (1, 3, 6, 62, 5, 4, (1, 1, 1, 1)),  # 16 tile columns: two vectors of 8 per row
]


@pytest.mark.parametrize("case", ODD_CASES)
def test_odd_shapes_match_the_reference(case):
    n, c, h, w, k, tile, pads = case
    x = RNG.normal(size=(n, c, h, w)).astype("float32")
    wt = RNG.normal(size=(k, c, 3, 3)).astype("float32")
    got, want, s = run_winograd(x, transformed(wt, tile), tile, pads)
    assert "winograd_gemm" in str(s.trace)  # the Winograd stages, not the fallback
    assert_matches(got, want, atol_scale=WINOGRAD_RTOL[tile])
    assert_matches(got, direct(x, wt, pads), atol_scale=WINOGRAD_RTOL[tile])


def test_transposed_weight_and_tail():
    x = RNG.normal(size=(1, 3, 10, 10)).astype("float32")
    wt = RNG.normal(size=(12, 3, 3, 3)).astype("float32")
    u = np.ascontiguousarray(transformed(wt, 4).transpose(0, 1, 3, 2))  # (6, 6, CI, CO)
    b = RNG.normal(size=(12,)).astype("float32")
    got, want, s = run_winograd(x, u, 4, channels=12, tail=b)
    assert 'compute_at("winograd_output", "relu"' in str(s.trace)
    assert_matches(got, want, atol_scale=WINOGRAD_RTOL[4])


def test_strided_call_uses_the_direct_fallback():
    x = RNG.normal(size=(1, 4, 9, 9)).astype("float32")
    wt = RNG.normal(size=(6, 4, 3, 3)).astype("float32")
    u = transformed(wt, 2)
    xt, ut = placeholder(x.shape, "float32", "x"), placeholder(u.shape, "float32", "u")
    out, attrs = apply_compute(
        WINOGRAD, [xt, ut], tile_size=2, strides=[2, 2], padding=[1, 1], channels=6,
        kernel_size=[3, 3],
    )  # fmt: skip
    want = implementation_for(get_op(WINOGRAD))([x, u], attrs)
    (got,), s = run_default_schedule([xt, ut], [out], [x, u])
    assert "winograd_gemm" not in str(s.trace)
    assert_matches(got, want)


@pytest.mark.parametrize("tile", [2, 4])
def test_weight_transform_kernel(tile):
    w = RNG.normal(size=(24, 10, 3, 3)).astype("float32")
    wt = placeholder(w.shape, "float32", "w")
    out, _ = apply_compute(TRANSFORM.name, [wt], tile_size=tile)
    (got,), _ = run_default_schedule([wt], [out], [w])
    assert_matches(got, transformed(w, tile))


# ResNet-18's stride-1 3x3 layers (batch 1), with the tile the rewrite rule picks for them
RESNET = [(64, 56, 4), (128, 28, 4), (256, 14, 4), (512, 7, 2)]


@pytest.mark.parametrize(("c", "h", "tile"), RESNET)
def test_resnet18_layers_match_direct_convolution(c, h, tile):
    x = RNG.normal(size=(1, c, h, h)).astype("float32")
    wt = RNG.normal(size=(c, c, 3, 3)).astype("float32")
    got, want, _ = run_winograd(x, transformed(wt, tile), tile)
    assert_matches(got, want, atol_scale=WINOGRAD_RTOL[tile])
    assert_matches(got, direct(x, wt, (1, 1, 1, 1)), atol_scale=WINOGRAD_RTOL[tile])


@pytest.mark.parametrize(("batch", "oh", "ow", "tile"), [(1, 28, 28, 4), (1, 7, 7, 2), (2, 5, 9, 4),
                                                         (3, 3, 3, 4), (1, 56, 56, 4)])  # fmt: skip
@pytest.mark.parametrize("block", [4, 8, 16])
def test_tile_grid_makes_whole_vectors(batch, oh, ow, tile, block):
    th, tw, tw_p, rows = tile_grid(batch, oh, ow, tile, block)
    assert (th - 1) * tile < oh <= th * tile and (tw - 1) * tile < ow <= tw * tile
    assert tw <= tw_p and (tw_p % 4 == 0 or tw < 3)
    assert batch * th <= rows and rows * tw_p % block == 0
    assert (rows - 1) * tw_p % block != 0 or rows == batch * th  # no more rows than needed


def test_tile_padding_follows_the_target_vector():
    """A 28x28 F(4x4) layer has 7 x 7 tiles in rows of 8: 56 tiles make whole 8-float
    vectors (AVX2), 64 whole 16-float ones (AVX-512)."""
    xt = placeholder((1, 8, 28, 28), "float32", "x")
    ut = placeholder((6, 6, 8, 8), "float32", "u")
    for bits, tiles in ((256, 56), (512, 64)):
        with lowering_for(attrs.evolve(Target.host(), vector_bits=bits)):
            out, _ = apply_compute(
                WINOGRAD,
                [xt, ut],
                tile_size=4,
                padding=[1, 1, 1, 1],
                channels=8,
                kernel_size=[3, 3],
            )
        gemm = next(op for op in stage_order([out]) if op.name == "winograd_gemm")
        assert int(gemm.output(0).shape[-1].value) == tiles


def _lowered_stores(c, h, tile):
    """The stores of the lowered Winograd kernel of a `c`-channel `h x h` layer, by buffer,
    its unrolled loops unrolled and simplified (as LLVM unrolls and folds them)."""
    xt = placeholder((1, c, h, h), "float32", "x")
    ut = placeholder((tile + 2, tile + 2, c, c), "float32", "u")
    out, _ = apply_compute(
        WINOGRAD, [xt, ut], tile_size=tile, padding=[1, 1, 1, 1], channels=c, kernel_size=[3, 3]
    )
    s, _ = schedule_outputs([out], None)
    func = simplify(unroll(lower_pipeline(lower(s, [xt, ut, out], "kernel"))))
    stores: dict[str, list[BufferStore]] = {}
    stack = [func.body]
    while stack:
        node = stack.pop()
        if isinstance(node, BufferStore):
            stores.setdefault(node.buffer.name, []).append(node)
        stack.extend(getattr(node, name) for name in ("body", "then_case", "else_case")
                     if getattr(node, name, None) is not None)  # fmt: skip
        stack.extend(getattr(node, "stmts", ()))
    return stores, out.op.name


@pytest.mark.parametrize(("c", "h", "tile"), [(128, 28, 4), (512, 7, 2)])
def test_gather_transforms_and_crop_are_vectors_without_position_selects(c, h, tile):
    stores, out_name = _lowered_stores(c, h, tile)
    for name in ("winograd_tiles", "winograd_input_rows", "winograd_input",
                 "winograd_output_rows", "winograd_output", out_name):  # fmt: skip
        vectors = [any(isinstance(i, Ramp) for i in st.indices) for st in stores[name]]
        if name == "winograd_output":  # a partial last tile of a row (odd widths) is scalar
            assert any(vectors), name
            continue  # its coefficients are selects of constant vectors
        assert vectors and all(vectors), f"scalar store to {name}"
        for st in stores[name]:
            assert not any(isinstance(n, Select) for n in sub_expressions(st.value)), name


@pytest.mark.parametrize(
    ("shape", "channels", "tile", "pad"),
    [
        ((2, 2, 2, 2), 1, 2, 1),
        ((1, 1, 2, 2), 1, 2, 1),
        ((1, 3, 5, 7), 2, 2, 1),
        ((1, 2, 6, 5), 3, 4, 0),
    ],
)
def test_any_transformed_weight_means_the_same_to_the_interpreter_and_the_kernel(
    shape, channels, tile, pad
):
    # A weight that is not the transform of any 3x3 weight (random alpha x alpha values):
    # both compute AT [U * (BT d BT^T)] AT^T with the same matrices.
    import relay

    n, c, h, w = shape
    alpha = tile + 2
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[({n}, {c}, {h}, {w}), float32], %u: Tensor[({alpha}, {alpha}, {channels}, {c}), float32]) {{
  {WINOGRAD}(%x, %u, tile_size={tile}, padding=[{pad}, {pad}], channels={channels}, kernel_size=[3, 3])
}}"""
    mod = relay.parse(text)
    x = RNG.standard_normal(shape).astype("float32")
    u = RNG.standard_normal((alpha, alpha, channels, c)).astype("float32")
    expected = relay.interpret(mod, x=x, u=u)
    got = relay.build(mod).run(x=x, u=u)
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(got, expected, rtol=0, atol=WINOGRAD_RTOL[tile] * scale)


@pytest.mark.parametrize(("co", "block"), [(12, 6), (13, 6), (8, 4), (5, 8)])
def test_packed_weight_round_trips(co, block):
    u = RNG.normal(size=(4, 4, co, 7)).astype("float32")
    packed = pack_winograd_weight(u, block)
    assert packed.shape == (4, 4, -(-co // block), 7, block)
    last = packed.shape[2] - 1  # the last block, partly padding when block does not divide co
    for j in range(block):
        want = u[:, :, last * block + j, 3] if last * block + j < co else np.zeros((4, 4))
        np.testing.assert_array_equal(packed[:, :, last, 3, j], want)
    np.testing.assert_array_equal(unpack_winograd_weight(packed, co), u)


@pytest.mark.parametrize(
    ("case", "block"), [(ODD_CASES[0], 6), (ODD_CASES[1], 4), (ODD_CASES[6], 3)]
)
def test_packed_weight_computes_what_the_unpacked_one_does(case, block):
    """A weight packed by output channels (rows past CO zero) gives the unpacked weight's
    result: the reference implementation exactly, the kernel within the tolerance."""
    n, c, h, w, k, tile, pads = case
    x = RNG.normal(size=(n, c, h, w)).astype("float32")
    u = transformed(RNG.normal(size=(k, c, 3, 3)).astype("float32"), tile)
    got, want, s = run_winograd(x, pack_winograd_weight(u, block), tile, pads, channels=k)
    _, unpacked, _ = run_winograd(x, u, tile, pads)
    np.testing.assert_array_equal(want, unpacked)
    assert "winograd_gemm" in str(s.trace)
    assert_matches(got, want, atol_scale=WINOGRAD_RTOL[tile])


def test_packed_weight_of_a_strided_call_is_unpacked_for_the_fallback():
    x = RNG.normal(size=(1, 4, 9, 9)).astype("float32")
    u = pack_winograd_weight(transformed(RNG.normal(size=(7, 4, 3, 3)).astype("float32"), 2), 4)
    xt, ut = placeholder(x.shape, "float32", "x"), placeholder(u.shape, "float32", "u")
    out, attrs = apply_compute(
        WINOGRAD, [xt, ut], tile_size=2, strides=[2, 2], padding=[1, 1], channels=7,
        kernel_size=[3, 3],
    )  # fmt: skip
    want = implementation_for(get_op(WINOGRAD))([x, u], attrs)
    (got,), _ = run_default_schedule([xt, ut], [out], [x, u])
    assert want.shape == (1, 7, 5, 5)
    assert_matches(got, want)
