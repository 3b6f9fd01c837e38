"""The channel-blocked convolution schedules (`schedules/conv2d_nchwc.py`): compiled
`nn.contrib_conv2d_NCHWc` and `nn.contrib_depthwise_conv2d_NCHWc` kernels, with fused
tails (bias add in the packed layout, relu, clip, residual add), against the reference
implementations, on fixed cases and hypothesis-drawn shapes (blocks 1, 3, 4, 8, 16,
strides, 1x1/3x3/5x5 windows, uneven padding, dilation, odd sizes, batch 2)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend.lower.schedules import conv2d_nchwc
from relay.backend.runtime.op_impls import implementation_for
from relay.backend.target import Target
from relay.backend.te import placeholder
from relay.lang import get_op
from relay.testing.compute_check import apply_compute, assert_matches, run_default_schedule

RNG = np.random.default_rng(7)
CONV = "nn.contrib_conv2d_NCHWc"
DEPTHWISE = "nn.contrib_depthwise_conv2d_NCHWc"


def _ref(name, arrays, attrs=None):
    return implementation_for(get_op(name))(arrays, attrs)


def nchwc_case(
    n, c_outer, h, w, bi, o_outer, bo, k, stride=1, pad=0, dil=1, tail="bias_relu",
    depthwise=False, target=None,
):  # fmt: skip
    """Build, compile (default schedules) and run one convolution with its tail; returns
    (got, want, schedule trace text)."""
    kh, kw = k if isinstance(k, tuple) else (k, k)
    if depthwise:
        bo, o_outer = bi, c_outer
        wshape = (c_outer, 1, kh, kw, 1, bi)
        op, kernel_layout, groups = DEPTHWISE, f"OIHW1i{bi}o", c_outer * bi
    else:
        wshape = (o_outer, c_outer, kh, kw, bi, bo)
        op, kernel_layout, groups = CONV, f"OIHW{bi}i{bo}o", 1
    x = placeholder((n, c_outer, h, w, bi), "float32", "x")
    wt = placeholder(wshape, "float32", "w")
    conv, attrs = apply_compute(
        op, [x, wt], strides=(stride, stride), padding=pad, dilation=(dil, dil), groups=groups,
        channels=o_outer * bo, kernel_size=(kh, kw), data_layout=f"NCHW{bi}c",
        kernel_layout=kernel_layout, out_layout=f"NCHW{bo}c",
    )  # fmt: skip
    xa = RNG.normal(size=(n, c_outer, h, w, bi)).astype("float32")
    wa = RNG.normal(size=wshape).astype("float32")
    want = _ref(op, [xa, wa], attrs)
    inputs, arrays, out = [x, wt], [xa, wa], conv
    if tail != "none":
        b = placeholder((o_outer, 1, 1, bo), "float32", "b")
        ba = RNG.normal(size=(o_outer, 1, 1, bo)).astype("float32")
        out, _ = apply_compute("add", [conv, b])
        want = _ref("add", [want, ba])
        inputs, arrays = [*inputs, b], [*arrays, ba]
    if tail == "bias_relu":
        out, _ = apply_compute("nn.relu", [out])
        want = _ref("nn.relu", [want])
    elif tail == "bias_clip":
        out, clip = apply_compute("clip", [out], a_min=0.0, a_max=6.0)
        want = _ref("clip", [want], clip)
    elif tail == "bias_residual":
        shape = want.shape
        r = placeholder(shape, "float32", "r")
        ra = RNG.normal(size=shape).astype("float32")
        out, _ = apply_compute("add", [out, r])
        out, _ = apply_compute("nn.relu", [out])
        want = _ref("nn.relu", [_ref("add", [want, ra])])
        inputs, arrays = [*inputs, r], [*arrays, ra]
    (got,), s = run_default_schedule(inputs, [out], arrays, target)
    return got, want, str(s.trace)


def assert_close(got, want):
    assert_matches(got, want, atol=1e-4)  # sums of up to a few hundred O(1) products


def assert_blocked(trace: str, depthwise: bool, block: int) -> None:
    """The kernel got the channel-vector nest (not the generic fallback), vectorized over
    the output channel block when it has several lanes."""
    main = "conv2d_dw" if depthwise else "conv2d_blocked"
    assert main in trace
    assert (f'vectorize("{main}"' in trace) == (block > 1)


CONV_CASES = [
    # n, c.outer, h, w, bi, oc.outer, bo, k, stride, pad, dil, tail
    (1, 4, 14, 14, 8, 4, 8, 1, 1, 0, 1, "none"),  # a pointwise layer: a GEMM over channels
    (1, 4, 14, 14, 8, 4, 8, 1, 1, 0, 1, "bias_clip"),
    (1, 2, 15, 15, 8, 6, 8, 3, 1, 1, 1, "bias_relu"),  # 3x3, odd size, 6 output blocks
    (1, 1, 23, 23, 3, 4, 8, 3, 2, 1, 1, "bias_clip"),  # the stem: NCHW3c data, OIHW3i8o
    (1, 1, 20, 20, 3, 2, 8, 7, 2, 3, 1, "bias_relu"),  # ResNet's 7x7 stride-2 stem
    (2, 3, 9, 11, 4, 5, 4, 5, 2, 2, 1, "bias_residual"),  # 5x5 /2, batch 2, odd blocks
    (1, 2, 13, 17, 16, 2, 16, 3, 1, (0, 1, 2, 0), 1, "bias_relu"),  # 16-blocks, uneven pad
    (1, 3, 12, 12, 8, 2, 8, 3, 1, 2, 2, "none"),  # dilation 2
    (1, 5, 7, 7, 1, 3, 1, 3, 1, 1, 1, "bias_relu"),  # blocks of one channel
    (1, 40, 7, 7, 8, 4, 8, 1, 1, 0, 1, "bias_residual"),  # 320 channels: weight blocks
    (1, 8, 28, 28, 8, 2, 8, 3, 2, 1, 1, "bias_residual"),  # stride 2, input channel blocks
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_nchwc_fixed(case):
    n, co, h, w, bi, oo, bo, k, stride, pad, dil, tail = case
    got, want, trace = nchwc_case(n, co, h, w, bi, oo, bo, k, stride, pad, dil, tail)
    assert_close(got, want)
    assert_blocked(trace, depthwise=False, block=bo)


DEPTHWISE_CASES = [
    # n, c.outer, h, w, b, k, stride, pad, dil, tail
    (1, 4, 28, 28, 8, 3, 1, 1, 1, "bias_clip"),  # MobileNet-v2 28x28: channel-block planes
    (1, 6, 7, 7, 8, 3, 1, 1, 1, "bias_clip"),  # 7x7: parallel rows
    (2, 3, 15, 13, 8, 3, 2, 1, 1, "bias_residual"),  # stride 2, odd sizes, batch 2
    (1, 2, 19, 19, 4, 5, 2, 2, 1, "none"),  # 5x5 stride 2
    (1, 3, 11, 9, 3, 3, 1, 1, 1, "bias_clip"),  # blocks of 3 channels
    (1, 2, 12, 20, 16, 3, 1, (1, 0, 0, 2), 1, "bias_residual"),  # 16-blocks, uneven pad
    (1, 2, 14, 14, 8, 3, 1, 2, 2, "none"),  # dilation 2
    (1, 3, 8, 8, 1, 3, 2, 0, 1, "bias_clip"),  # blocks of one channel, no padding
    (1, 2, 9, 9, 8, 1, 2, 0, 1, "none"),  # 1x1 stride 2
    # channel-block planes, padding as guards split off by loop partitioning:
    (1, 4, 29, 29, 8, 3, 1, 1, 1, "bias_clip"),  # no column block divides 29
    (1, 4, 20, 22, 8, 3, 1, 3, 1, "bias_relu"),  # padding past the window: all-zero rows
    (1, 4, 24, 23, 8, 3, 2, (2, 0, 1, 3), 1, "bias_residual"),  # stride 2, uneven pad
    (1, 4, 36, 36, 8, 3, 1, 2, 2, "bias_clip"),  # dilation 2 at 36 wide
    (1, 4, 33, 34, 8, 5, 1, (0, 2, 2, 1), 1, "none"),  # 5x5, uneven pad
    (1, 4, 30, 30, 8, 3, 1, 0, 1, "bias_clip"),  # no padding at all
]


@pytest.mark.parametrize("case", DEPTHWISE_CASES)
def test_depthwise_nchwc_fixed(case):
    n, co, h, w, b, k, stride, pad, dil, tail = case
    got, want, trace = nchwc_case(n, co, h, w, b, co, b, k, stride, pad, dil, tail, depthwise=True)
    assert_close(got, want)
    assert_blocked(trace, depthwise=True, block=b)


@pytest.mark.parametrize(
    "target",
    [Target(vector_bits=256, num_threads=2), Target(vector_bits=512, num_threads=1)],
    ids=["avx2-2threads", "avx512-1thread"],
)
def test_other_targets(target):
    if target.vector_bits > Target.host().vector_bits:
        target = Target(vector_bits=Target.host().vector_bits, num_threads=1)
    got, want, _ = nchwc_case(1, 4, 16, 16, 8, 4, 8, 3, 1, 1, target=target)
    assert_close(got, want)
    got, want, _ = nchwc_case(1, 4, 16, 16, 8, 4, 8, 3, 1, 1, depthwise=True, target=target)
    assert_close(got, want)


def test_parallel_on_a_real_layer():
    """A MobileNet-v2 pointwise layer runs parallel over (n, oc.outer, oh)."""
    got, want, trace = nchwc_case(1, 4, 28, 28, 8, 12, 8, 1, target=Target.host(2))
    assert_close(got, want)
    assert "parallel" in trace


def test_blocking_divides_channel_blocks_and_fits_registers():
    """The register block never splits the output channel blocks with a tail, and its
    accumulators stay within the budget, for every layer shape of the benchmark."""
    for oc_outer in (2, 3, 4, 12, 18, 40, 120):
        for ow in (7, 14, 28, 56, 112):
            for target in (Target(vector_bits=256), Target(vector_bits=512)):
                b = _blocked(oc_outer, ow, target.lanes("float32"))
                blk = conv2d_nchwc.choose_nchwc_blocking(b, target)
                assert oc_outer % blk.ocv == 0
                budget = conv2d_nchwc.ACCUMULATOR_BUDGET[32 if target.vector_bits == 512 else 16]
                assert blk.ocv * blk.owb <= budget
                assert blk.icb >= 1


@pytest.mark.parametrize("ow", [28, 56, 112])
def test_blocking_avoids_a_column_tail_for_two_channel_blocks(ow):
    """With two output channel blocks (MobileNet-v2's 16-channel layers, AVX2) the block is
    2x4, which divides the width, rather than 2x6 with a column tail (measured 10% faster at
    112 wide); the result matches the interpreter."""
    target = Target(vector_bits=256, num_threads=1)
    blk = conv2d_nchwc.choose_nchwc_blocking(_blocked(2, ow, 8), target)
    assert (blk.ocv, blk.owb) == (2, 4)
    got, want, trace = nchwc_case(1, 4, 3, ow, 8, 2, 8, 1, tail="bias_clip", target=target)
    assert_close(got, want)
    assert re.search(r'split\("\w+", "ax3", factor=4\)', trace)


def _blocked(oc_outer: int, ow: int, lanes: int):
    x = placeholder((1, 4, ow, ow, lanes), "float32", "x")
    wt = placeholder((oc_outer, 4, 1, 1, lanes, lanes), "float32", "w")
    conv, _ = apply_compute(
        CONV, [x, wt], channels=oc_outer * lanes, kernel_size=(1, 1),
        data_layout=f"NCHW{lanes}c", kernel_layout=f"OIHW{lanes}i{lanes}o",
        out_layout=f"NCHW{lanes}c",
    )  # fmt: skip
    b = conv2d_nchwc.analyze_blocked(conv.op, depthwise=False)
    assert b is not None
    return b


def test_other_forms_fall_back_to_the_generic_schedule():
    """A kernel layout the nests do not handle (`OIHW8o8i`: output block before input
    block) still computes the right result, through the generic schedule."""
    x = placeholder((1, 2, 6, 6, 4), "float32", "x")
    wt = placeholder((2, 2, 3, 3, 4, 4), "float32", "w")
    conv, attrs = apply_compute(
        CONV, [x, wt], channels=8, kernel_size=(3, 3), padding=(1, 1), data_layout="NCHW4c",
        kernel_layout="OIHW4o4i", out_layout="NCHW4c",
    )  # fmt: skip
    assert conv2d_nchwc.analyze_blocked(conv.op, depthwise=False) is None
    xa = RNG.normal(size=(1, 2, 6, 6, 4)).astype("float32")
    wa = RNG.normal(size=(2, 2, 3, 3, 4, 4)).astype("float32")
    (got,), s = run_default_schedule([x, wt], [conv], [xa, wa])
    assert_close(got, _ref(CONV, [xa, wa], attrs))
    assert "conv2d_blocked" not in str(s.trace)


@st.composite
def blocked_convs(draw):
    """(depthwise, case args) of a random NCHWc convolution whose window fits."""
    depthwise = draw(st.booleans())
    bi = draw(st.sampled_from([1, 3, 4, 8, 16]))
    bo = bi if depthwise else draw(st.sampled_from([1, 3, 4, 8, 16]))
    n = draw(st.integers(1, 2))
    c_outer = draw(st.integers(1, 3))
    o_outer = c_outer if depthwise else draw(st.integers(1, 3))
    k = draw(st.sampled_from([1, 3, 5]))
    stride = draw(st.integers(1, 2))
    dil = draw(st.sampled_from([1, 1, 2]))
    pad = tuple(draw(st.integers(0, k // 2 + 1)) for _ in range(4))
    reach = (k - 1) * dil + 1
    h = draw(st.integers(max(1, reach - pad[0] - pad[2]), 13))
    w = draw(st.integers(max(1, reach - pad[1] - pad[3]), 13))
    tail = draw(st.sampled_from(["none", "bias_relu", "bias_clip", "bias_residual"]))
    return depthwise, (n, c_outer, h, w, bi, o_outer, bo, k, stride, pad, dil, tail)


@settings(max_examples=max(20, settings.default.max_examples // 3))
@given(blocked_convs())
def test_random_blocked_convolutions(drawn):
    depthwise, args = drawn
    got, want, trace = nchwc_case(*args, depthwise=depthwise)
    assert_close(got, want)
    assert_blocked(trace, depthwise, block=args[6])


def _lowered_depthwise(c_outer, size, k, stride, pad, target):
    """The lowered TIR text of a depthwise NCHW8c kernel with a bias + clip tail, its
    unrolled loops unrolled and simplified (as LLVM unrolls and folds them)."""
    from relay.backend.lower.lower_func import schedule_outputs
    from relay.backend.te import lower
    from relay.backend.tir.printer import astext
    from relay.backend.tir.transform import lower_pipeline, simplify, unroll

    x = placeholder((1, c_outer, size, size, 8), "float32", "x")
    wt = placeholder((c_outer, 1, k, k, 1, 8), "float32", "w")
    b = placeholder((c_outer, 1, 1, 8), "float32", "b")
    conv, _ = apply_compute(
        DEPTHWISE, [x, wt], strides=(stride, stride), padding=pad, groups=c_outer * 8,
        channels=c_outer * 8, kernel_size=(k, k), data_layout="NCHW8c",
        kernel_layout="OIHW1i8o", out_layout="NCHW8c",
    )  # fmt: skip
    out, _ = apply_compute("add", [conv, b])
    out, _ = apply_compute("clip", [out], a_min=0.0, a_max=6.0)
    s, _ = schedule_outputs([out], target)
    return astext(simplify(unroll(lower_pipeline(lower(s, [x, wt, b, out], "kernel")))))


@pytest.mark.parametrize("size,stride", [(56, 2), (59, 2), (36, 2)])
def test_depthwise_planes_read_the_input_unpadded(size, stride):
    """On channel-block planes (stride 2) the padding is no copy of the input but guards,
    and loop partitioning removes every guard (the border rows and column blocks are split
    off)."""
    text = _lowered_depthwise(4, size, 3, stride, 1, Target(vector_bits=256, num_threads=2))
    assert "conv2d_pad" not in text
    assert "if_then_else" not in text
    assert "parallel" in text


@pytest.mark.parametrize("size", [56, 29])
def test_stride_one_depthwise_runs_parallel_over_rows(size):
    """Stride-1 depthwise layers run parallel over output rows (batch, channel block and
    row fused), reading the input unpadded: only the row guards stay, the column guards
    are split off; the result matches the reference."""
    target = Target(vector_bits=256, num_threads=2)
    text = _lowered_depthwise(4, size, 3, 1, 1, target)
    assert "conv2d_pad" not in text
    assert "ax0_ax1_fused_ax2_fused in parallel" in text
    guards = re.findall(r"if_then_else\(([^,]*),", text)
    assert guards and all("ax0_ax1_fused_ax2_fused" in g for g in guards)
    got, want, _ = nchwc_case(1, 4, size, size, 8, 4, 8, 3, 1, 1, depthwise=True, target=target)
    assert_close(got, want)


def test_depthwise_columns():
    """Column blocks: at most 4 (AVX2) / 8 (AVX-512) on planes, 8 / 12 on row tasks; a
    divisor of the width when a big enough one exists, else the row split evenly."""
    avx2, avx512 = Target(vector_bits=256), Target(vector_bits=512)
    cols = conv2d_nchwc.depthwise_columns
    assert [cols(w, False, avx2) for w in (112, 56, 28, 29, 3)] == [4, 4, 4, 4, 3]
    assert [cols(w, True, avx2) for w in (14, 7, 15, 11, 2)] == [7, 7, 8, 6, 2]
    assert [cols(w, False, avx512) for w in (112, 56, 28, 30)] == [8, 8, 7, 6]
    assert [cols(w, True, avx512) for w in (14, 7, 24, 13)] == [7, 7, 12, 7]


ONE_CONV = """#[version = "0.0.5"]
def @main(%data: Tensor[(1, 32, 24, 24), float32], %weight: Tensor[(32, 32, 3, 3), float32],
          %bias: Tensor[(32), float32]) {
  nn.relu(nn.bias_add(nn.conv2d(%data, %weight, strides=[2, 2], padding=[1, 1, 1, 1],
                                channels=32, kernel_size=[3, 3]), %bias))
}"""


def _blocks_that_multiply_store(llvm_ir: str, lanes: int) -> tuple[int, int]:
    """(vector FMULs, vector stores in the basic blocks holding them) over the module."""
    fmul = re.compile(rf"= fmul [a-z ]*<{lanes} x float>")
    store = re.compile(rf"store <{lanes} x float>")
    muls = stores = 0
    for block in re.split(r"\n(?=[\w.\"-]+:)|\ndefine ", llvm_ir):
        n = len(fmul.findall(block))
        muls += n
        stores += len(store.findall(block)) if n else 0
    return muls, stores


@pytest.mark.parametrize("threads", [1, 2])
def test_built_model_keeps_the_accumulators_in_registers(threads):
    """A `relay.build` one-conv model (weights bound, opt level 3: alter-op-layout makes the
    conv NCHWc, with a packed bias add and relu fused) gets the register-blocked nest with
    the row of accumulators (input channels walked in blocks) over a padded input, and
    agrees with the interpreter. Its multiply-accumulate blocks store nothing: built for one
    thread, the nest in the kernel function itself (no parallel loop) stored every
    accumulator after each FMA (LLVM could not tell the heap-allocated padded input from
    the accumulators), 3x slower than the same nest in a task function. Built for AVX2 (8
    lanes) on any host: the form asserted below is the one for that width."""
    import relay
    from relay.driver import build
    from relay.transform import PassContext

    target = Target.parse(f"llvm -mattr=+avx2,+fma,-avx512f -num-threads={threads}")
    mod = relay.parse(ONE_CONV)
    params = {
        "weight": RNG.normal(size=(32, 32, 3, 3)).astype("float32"),
        "bias": RNG.normal(size=(32,)).astype("float32"),
    }
    x = RNG.normal(size=(1, 32, 24, 24)).astype("float32")
    dump: dict = {}
    with PassContext(opt_level=3):
        model = build(mod, target=target, params=params, dump=dump)
        oracle = build(mod, target="interp", params=params)
    assert_close(model.run(data=x), oracle.run(data=x))
    lanes = target.lanes("float32")
    assert "nn.contrib_conv2d_NCHWc" in dump["relay"]
    assert 'vectorize("conv2d_blocked", "oci")' in dump["te"]
    assert 'split("conv2d_blocked", "rco"' in dump["te"]  # the row-buffer form
    assert re.search(r"for ax0_ax1_outer_fused_ax2_fused\w* in parallel", dump["tir"])
    muls, stores = _blocks_that_multiply_store(dump["llvm"], lanes)
    assert muls >= 4 * 8  # the register block, unrolled over the input channel vector
    assert stores < muls // 4, (muls, stores)
