"""The int8 dense and conv2d schedules (tensorized dot products): exact against the
interpreter on shapes no vector width divides and at the 8-bit extremes, for the AVX2 plan
this host runs and for the VNNI plans run with their portable bodies; the requantize tail
fused in; the VNNI plans compile to `vpdpbusd` for CPUs that have it."""

from __future__ import annotations

import contextlib
import re

import llvmlite.binding as llvm
import numpy as np
import pytest
import relay
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend.codegen import llvm_target
from relay.backend.codegen.compile import build_ir
from relay.backend.lower.schedules.int8 import (
    choose_plan,
    force_plan,
    schedule_conv2d_int8,
    schedule_dense_int8,
)
from relay.backend.target import Target
from relay.backend.te import create_schedule, lower, placeholder
from relay.backend.tir.printer import astext
from relay.backend.tir.transform import lower_pipeline
from relay.testing.compute_check import apply_compute

PLANS = ["host", "avx512_vnni", "avx_vnni", "avx512bw"]

HOST_INSTRUCTION = {
    "avx2": "pmadd.wd",
    "avx512bw": "pmaddw.d.512",
    "avx512_vnni": "vpdpbusd",
    "avx_vnni": "vpdpbusd",
}[choose_plan(Target.host(), "int8", "int8").kind]
"""What the host plan's products compile to in LLVM IR (the intrinsic's name)."""


def plan_context(plan):
    return contextlib.nullcontext() if plan == "host" else force_plan(plan)


def extremes(rng, shape, dtype):
    """Random 8-bit values with the extremes of the dtype in the first rows."""
    lo, hi = (0, 256) if dtype == "uint8" else (-128, 128)
    a = rng.integers(lo, hi, shape).astype(dtype)
    flat = a.reshape(shape[0], -1)
    flat[0] = lo
    if shape[0] > 1:
        flat[1] = hi - 1
    if shape[0] > 2:
        flat[2, ::2] = lo
        flat[2, 1::2] = hi - 1
    return a


DENSE_TAIL = """#[version = "0.0.5"]
def @main(%x: Tensor[({m}, {k}), {dt}], %w: Tensor[({n}, {k}), {wt}], %b: Tensor[({n}), int32]) {{
  %0 = nn.dense(%x, %w, units={n}, out_dtype="int32");
  %1 = add(%0, %b);
  %2 = add(%1, 8);
  %3 = right_shift(%2, 4);
  %4 = clip(%3, a_min=-127f, a_max=127f);
  cast(%4, dtype="int8")
}}"""

DENSE = """#[version = "0.0.5"]
def @main(%x: Tensor[({m}, {k}), {dt}], %w: Tensor[({n}, {k}), {wt}]) {{
  nn.dense(%x, %w, units={n}, out_dtype="int32")
}}"""

CONV_TAIL = """#[version = "0.0.5"]
def @main(%x: Tensor[({b}, {c}, {h}, {w}), {dt}], %k: Tensor[({o}, {c}, {kh}, {kw}), int8],
          %bias: Tensor[({o}, 1, 1), int32]) {{
  %0 = nn.conv2d(%x, %k, strides=[{s}, {s}], padding=[{p}, {p}, {p}, {p}], out_dtype="int32");
  %1 = add(%0, %bias);
  %2 = nn.relu(%1);
  %3 = right_shift(%2, 5);
  %4 = clip(%3, a_min=-127f, a_max=127f);
  cast(%4, dtype="int8")
}}"""


def build_and_compare(text, inputs, params, plan):
    mod = relay.parse(text)
    with plan_context(plan):
        model = relay.build(mod, params=params)
    got = np.asarray(model.run(**inputs))
    want = np.asarray(relay.interpret(mod, **inputs, **params))
    np.testing.assert_array_equal(got, want)
    return model


@pytest.mark.parametrize("plan", PLANS)
def test_dense_with_requantize_tail_is_exact(plan):
    rng = np.random.default_rng(1)
    m, n, k = 13, 37, 29
    x = extremes(rng, (m, k), "int8")
    w = extremes(rng, (n, k), "int8")
    b = rng.integers(-5000, 5000, n).astype(np.int32)
    text = DENSE_TAIL.format(m=m, n=n, k=k, dt="int8", wt="int8")
    model = build_and_compare(text, {"x": x}, {"w": w, "b": b}, plan)
    code = model.library.llvm_ir_unoptimized
    body = HOST_INSTRUCTION if plan == "host" else "shufflevector"
    assert body in code
    assert len(model.kernels) == 1  # product and requantize in one kernel


@pytest.mark.parametrize("plan", PLANS)
def test_dense_weights_as_inputs_and_uint8_data(plan):
    rng = np.random.default_rng(2)
    m, n, k = 5, 19, 11
    x = extremes(rng, (m, k), "uint8")
    w = extremes(rng, (n, k), "int8")
    mod = relay.parse(DENSE.format(m=m, n=n, k=k, dt="uint8", wt="int8"))
    with plan_context(plan):
        model = relay.build(mod)
    got = np.asarray(model.run(x=x, w=w))
    np.testing.assert_array_equal(got, x.astype(np.int64) @ w.astype(np.int64).T)


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize(
    "shape",
    [
        (1, 5, 9, 11, 13, 3, 1, 1),
        (2, 7, 10, 9, 19, 3, 2, 1),
        (1, 3, 6, 7, 10, 1, 1, 0),
        (2, 7, 10, 9, 19, 1, 2, 0),
        (1, 5, 7, 7, 20, 3, 1, 1),
    ],
    ids=["3x3", "strided-batch2", "1x1", "1x1-strided-batch2", "3x3-short-rows"],
)
def test_conv2d_with_requantize_tail_is_exact(plan, shape):
    b, c, h, w, o, kk, s, p = shape
    rng = np.random.default_rng(3)
    x = extremes(rng, (b, c, h, w), "int8")
    k = extremes(rng, (o, c, kk, kk), "int8")
    bias = rng.integers(-3000, 3000, (o, 1, 1)).astype(np.int32)
    text = CONV_TAIL.format(b=b, c=c, h=h, w=w, o=o, kh=kk, kw=kk, s=s, p=p, dt="int8")
    model = build_and_compare(text, {"x": x}, {"k": k, "bias": bias}, plan)
    body = HOST_INSTRUCTION if plan == "host" else "shufflevector"
    assert body in model.library.llvm_ir_unoptimized


@settings(max_examples=6)
@given(
    m=st.integers(1, 9),
    n=st.integers(1, 40),
    k=st.integers(1, 37),
    plan=st.sampled_from(PLANS),
    data=st.sampled_from(["int8", "uint8"]),
)
def test_dense_any_shape(m, n, k, plan, data):
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    x = extremes(rng, (m, k), data)
    w = extremes(rng, (n, k), "int8")
    text = DENSE.format(m=m, n=n, k=k, dt=data, wt="int8")
    build_and_compare(text, {"x": x}, {"w": w}, plan)


def test_plan_follows_the_target_features():
    host = Target.parse("llvm -mattr=+avx2,-avx512f")
    vnni = Target.parse("llvm -mattr=+avx512f,+avx512bw,+avx512vl,+avx512vnni")
    avx_vnni = Target.parse("llvm -mattr=+avx2,+avxvnni,-avx512f")
    bw = Target.parse("llvm -mattr=+avx512f,+avx512bw,-avx512vnni,-avxvnni")
    bare = Target.parse("llvm -mattr=-avx2,-avx512f,-avxvnni,-avx512vnni")
    assert choose_plan(host, "int8", "int8").kind == "avx2"
    assert choose_plan(vnni, "int8", "int8").kind == "avx512_vnni"
    assert choose_plan(vnni, "int8", "int8").shift == 128
    assert choose_plan(vnni, "uint8", "int8").shift == 0
    assert choose_plan(vnni, "int8", "uint8").kind == "avx512bw"  # vpdpbusd needs s8 weights
    assert choose_plan(avx_vnni, "int8", "int8").kind == "avx_vnni"
    assert choose_plan(bw, "int8", "int8").kind == "avx512bw"
    assert choose_plan(bw, "int8", "int8").lanes == 16
    assert choose_plan(bare, "int8", "int8") is None
    assert choose_plan(host, "float32", "int8") is None


def _assembly(target, schedule_fn, make):
    inputs, out = make()
    s = create_schedule(out)
    assert schedule_fn(s, [out], out, target)
    func = lower_pipeline(lower(s, [*inputs, out], "int8_kernel"))
    module, _ = build_ir([func], None, "vnni", profiled=False)
    ref = llvm.parse_assembly(str(module))
    ref.verify()
    llvm_target.optimize(ref, target=target)
    return llvm_target.target_machine(target).emit_assembly(ref)


def _dense():
    x, w = placeholder((6, 40), "int8", "x"), placeholder((20, 40), "int8", "w")
    out, _ = apply_compute("nn.dense", [x, w], units=20, out_dtype="int32")
    return [x, w], out


def _conv():
    x, k = placeholder((1, 8, 7, 7), "int8", "x"), placeholder((16, 8, 3, 3), "int8", "k")
    out, _ = apply_compute("nn.conv2d", [x, k], padding=[1, 1, 1, 1], out_dtype="int32")
    return [x, k], out


def _depthwise():
    x, k = placeholder((1, 8, 14, 14), "int8", "x"), placeholder((8, 1, 3, 3), "int8", "k")
    out, _ = apply_compute(
        "nn.conv2d", [x, k], padding=[1, 1, 1, 1], groups=8, channels=8, out_dtype="int32"
    )
    return [x, k], out


KERNELS = {
    "dense": (schedule_dense_int8, _dense),
    "conv2d": (schedule_conv2d_int8, _conv),
    "depthwise": (schedule_conv2d_int8, _depthwise),
}
"""Each kernel kind's schedule and the placeholders and compute it schedules."""


@pytest.mark.parametrize(
    "mattr,register",
    [("+avx512f,+avx512bw,+avx512vl,+avx512vnni", "zmm"), ("+avx2,+avxvnni,-avx512f", "ymm")],
    ids=["avx512-vnni", "avx-vnni"],
)
@pytest.mark.parametrize("kind", ["dense", "conv2d", "depthwise"])
def test_vnni_plans_compile_to_vpdpbusd(mattr, register, kind):
    cpu = "icelake-server" if "avx512f," in mattr else "alderlake"
    target = Target.parse(f"llvm -mcpu={cpu} -mattr={mattr}", num_threads=1)
    fn, make = KERNELS[kind]
    asm = _assembly(target, fn, make)
    lines = [ln for ln in asm.splitlines() if "vpdpbusd" in ln]
    assert lines and all(register in ln for ln in lines)
    assert "vpmaddwd" not in asm


@pytest.mark.parametrize("kind", ["dense", "conv2d", "depthwise"])
def test_avx512bw_plan_compiles_to_vpmaddwd_on_zmm(kind):
    """AVX-512 without VNNI (Skylake-X): int16 pairs on 16 lanes, `vpmaddwd` on zmm; the
    depthwise conv's 14-column rows take one 16-lane vector instead of two of 8."""
    target = Target.parse("llvm -mcpu=skylake-avx512 -mattr=-avx512vnni", num_threads=1)
    assert choose_plan(target, "int8", "int8").kind == "avx512bw"
    fn, make = KERNELS[kind]
    asm = _assembly(target, fn, make)
    lines = [ln for ln in asm.splitlines() if "vpmaddwd" in ln]
    assert lines and all("zmm" in ln for ln in lines)
    assert "vpdpbusd" not in asm


DEPTHWISE_TAIL = """#[version = "0.0.5"]
def @main(%x: Tensor[({b}, {c}, {h}, {w}), {dt}], %k: Tensor[({o}, 1, {kk}, {kk}), int8],
          %bias: Tensor[({o}, 1, 1), int32]) {{
  %0 = nn.conv2d(%x, %k, strides=[{s}, {s}], padding=[{p}, {p}, {p}, {p}], groups={c},
                 channels={o}, kernel_size=[{kk}, {kk}], out_dtype="int32");
  %1 = add(%0, %bias);
  %2 = clip(%1, a_min=0f, a_max=6144f);
  %3 = add(%2, 32);
  %4 = right_shift(%3, 6);
  %5 = clip(%4, a_min=-127f, a_max=127f);
  cast(%5, dtype="int8")
}}"""


@pytest.mark.parametrize(
    "shape",
    [
        (1, 5, 9, 11, 1, 3, 1, 1, "int8"),
        (2, 7, 10, 13, 1, 3, 2, 1, "int8"),
        (1, 3, 23, 21, 2, 3, 1, 1, "int8"),
        (1, 6, 7, 7, 1, 5, 2, 2, "uint8"),
        (1, 9, 37, 35, 1, 3, 1, 1, "uint8"),
        (1, 5, 6, 48, 1, 3, 1, 1, "int8"),
    ],
    ids=[
        "3x3",
        "strided-batch2",
        "multiplier2-wide",
        "5x5-strided-uint8",
        "wide-uint8",
        "whole-row-tiles",
    ],
)
@pytest.mark.parametrize("plan", ["host", "avx2", "avx512bw", "avx512_vnni", "avx_vnni"])
def test_depthwise_with_requantize_tail_is_exact(shape, plan):
    """MobileNet's depthwise conv + requantize (bias, relu6 in int32, rounding shift,
    clip, cast) in one native kernel, exact at -128/127/255 on sizes no vector divides;
    multiplier 1 runs on tap pairs (`vpmaddwd` on 8 or 16 lanes) or, with VNNI, on byte
    quads (`vpdpbusd`), or on the portable body of a forced plan; multiplier 2 on the
    widened depthwise schedule."""
    b, c, h, w, mult, kk, s, p, dt = shape
    rng = np.random.default_rng(5)
    x = extremes(rng, (b, c, h, w), dt)
    k = extremes(rng, (c * mult, 1, kk, kk), "int8")
    bias = rng.integers(-3000, 3000, (c * mult, 1, 1)).astype(np.int32)
    text = DEPTHWISE_TAIL.format(b=b, c=c, h=h, w=w, o=c * mult, kk=kk, s=s, p=p, dt=dt)
    context = force_plan(plan, portable=True) if plan != "host" else None
    with context or contextlib.nullcontext():
        model = build_and_compare(text, {"x": x}, {"k": k, "bias": bias}, "host")
    assert len(model.kernels) == 1 and model.stats.fallback_kernels == 0
    code = model.library.llvm_ir_unoptimized
    pairs = re.compile(r"pmadd\.?w\.?d|vpdpbusd")
    if mult > 1 or plan != "host":
        assert not pairs.search(code)
    else:
        host_vnni = choose_plan(Target.host(), dt, "int8").kind.endswith("vnni")
        assert ("vpdpbusd" if host_vnni else "pmadd") in code


def test_depthwise_saturates_both_ways():
    """All-extreme inputs drive the requantized output to both bounds of the relu6 clip
    (0 and (6144 + 32) >> 6 = 96)."""
    c, h, w = 4, 6, 9
    x = np.full((1, c, h, w), -128, np.int8)
    x[:, :, ::2] = 127
    k = np.full((c, 1, 3, 3), -128, np.int8)
    k[1::2] = 127
    bias = np.array([0, 0, -(2**20), 2**20], np.int32).reshape(c, 1, 1)
    text = DEPTHWISE_TAIL.format(b=1, c=c, h=h, w=w, o=c, kk=3, s=1, p=1, dt="int8")
    mod = relay.parse(text)
    got = np.asarray(relay.build(mod, params={"k": k, "bias": bias}).run(x=x))
    want = np.asarray(relay.interpret(mod, x=x, k=k, bias=bias))
    np.testing.assert_array_equal(got, want)
    assert got.min() == 0 and got.max() == 96 and len(np.unique(got)) > 2


def test_conv2d_data_is_interleaved_in_channel_groups():
    """The conv's data conversion writes `[N, C/G, H', W', G]`: the group of `G` channels
    innermost (unrolled) inside the column loop, so each input row is read contiguously
    (vectorized by LLVM) instead of gathering channels pixel by pixel; a stride-1 conv keeps
    output columns in the vector lanes, so its result is NCHW as the tail reads it (a 1x1
    conv's plane flattened into one row: each output row a run of it)."""
    target = Target.parse("llvm -mattr=+avx2,-avx512f", num_threads=1)
    x, k = placeholder((1, 6, 9, 10), "int8", "x"), placeholder((8, 6, 1, 1), "int8", "k")
    out, _ = apply_compute("nn.conv2d", [x, k], out_dtype="int32")
    s = create_schedule(out)
    assert schedule_conv2d_int8(s, [out], out, target)
    lines = [ln.strip() for ln in astext(lower(s, [x, k, out], "conv")).splitlines()]
    assert any(ln.startswith("allocate x_nc2hwc: int16[") for ln in lines)
    loops = [ln for ln in lines if ln.startswith("for ")]
    first_nest = loops[: next(i for i, ln in enumerate(loops) if "unrolled" in ln) + 1]
    assert re.fullmatch(r"for w_\w* in serial\(0, \d+\):", first_nest[-2])
    assert re.fullmatch(r"for g\w* in unrolled\(0, 2\):", first_nest[-1])
    # stride 1: output columns in the lanes, the result in NCHW (read as it is by the tail)
    product = next(ln for ln in lines if "tensor.x86.pmaddwd.256(" in ln)
    assert re.search(r"x_nc2hwc\[[^\]]*ramp\(0, 1, 16\)\]", product)
    row = r"conv2d\[\w+, (\w+), (\w+), (\w+)\] = conv2d_res\[\w+, \1, 0, \2\*10 \+ \3\]"
    assert any(re.fullmatch(row, ln) for ln in lines)


def _kernel_tir(text, params, threads=1):
    """The loop IR of the one kernel `text` compiles to (after the loop passes) for an AVX2
    target (the plan and vector widths the layouts below are written for, on any host)."""
    from relay.driver import build

    dump = {}
    target = f"llvm -mattr=+avx2,-avx512f,-avxvnni -num-threads={threads}"
    build(relay.parse(text), target=target, params=params, dump=dump)
    return [ln.strip() for ln in dump["tir"].splitlines()]


@pytest.mark.parametrize("width", [7, 14])
def test_short_rows_are_exact_and_compile_to_plain_loops(width):
    """MobileNet's 7- and 14-column planes. A 1x1 conv runs over the flattened plane: its
    data conversion has no row loop, and its tail stores each channel's plane with vectors
    (8 lanes, then the rest) reading the result without `//` or `%`. A 14-column depthwise
    tail, reading a result padded to 16 columns, stores whole rows with vectors (8 + 6
    lanes) instead of a scalar loop indexing the padded result by `//` and `%`. Exact on
    both plans."""
    rng = np.random.default_rng(7)
    c, o = 9, 10
    x = extremes(rng, (1, c, width, width), "int8")
    k = extremes(rng, (o, c, 1, 1), "int8")
    bias = rng.integers(-3000, 3000, (o, 1, 1)).astype(np.int32)
    conv = CONV_TAIL.format(b=1, c=c, h=width, w=width, o=o, kh=1, kw=1, s=1, p=0, dt="int8")
    for plan in ("host", "avx_vnni"):
        build_and_compare(conv, {"x": x}, {"k": k, "bias": bias}, plan)
    dk = extremes(rng, (c, 1, 3, 3), "int8")
    depthwise = DEPTHWISE_TAIL.format(b=1, c=c, h=width, w=width, o=c, kk=3, s=1, p=1, dt="int8")
    build_and_compare(depthwise, {"x": x}, {"k": dk, "bias": bias[:c]}, "host")
    padded_read = re.compile(r"conv2d_res\[[^\]]*(//|%)")
    lines = _kernel_tir(conv, {"k": k, "bias": bias})
    tail = [ln for ln in lines if ln.startswith("cast[")]
    assert not any(padded_read.search(ln) for ln in tail)
    assert "int8x8(" in tail[0] and len(tail) == 2
    assert not any(re.fullmatch(r"for h\w* in serial\(.*", ln) for ln in lines)
    plane = rf"for w_\w* in serial\(0, {width * width}\):"
    assert any(re.fullmatch(plane, ln) for ln in lines)
    if width == 14:
        lines = _kernel_tir(depthwise, {"k": dk, "bias": bias[:c]})
        tail = [ln for ln in lines if ln.startswith("cast[")]
        assert len(tail) == 2
        assert not any(padded_read.search(ln) for ln in tail)
        assert "int8x8(" in tail[0] and "int8x6(" in tail[1]


def test_1x1_conv_computes_each_channel_block_inside_its_tail():
    """A 1x1 conv whose planes split into whole tiles and whose channels into whole blocks
    computes each block's result inside the tail's loop over the blocks (a buffer of one
    block, not of all channels); exact on every plan."""
    rng = np.random.default_rng(11)
    c, o, h = 9, 24, 8
    x = extremes(rng, (1, c, h, h), "int8")
    k = extremes(rng, (o, c, 1, 1), "int8")
    bias = rng.integers(-3000, 3000, (o, 1, 1)).astype(np.int32)
    conv = CONV_TAIL.format(b=1, c=c, h=h, w=h, o=o, kh=1, kw=1, s=1, p=0, dt="int8")
    for plan in PLANS:
        build_and_compare(conv, {"x": x}, {"k": k, "bias": bias}, plan)
    lines = _kernel_tir(conv, {"k": k, "bias": bias})
    assert any(re.fullmatch(r"allocate conv2d_res: int32\[\d+\] local", ln) for ln in lines)
    assert not any(re.fullmatch(r"allocate conv2d_res: .* global", ln) for ln in lines)


def test_depthwise_tap_groups_follow_the_target_features():
    """Quads (VNNI) on 16 lanes, and on 8 only where VNNI works on ymm; pairs otherwise
    (uint8 weights, or no VNNI), 16 lanes with AVX-512BW."""
    from relay.backend.lower.schedules.int8_depthwise import TapGroups, tap_groups

    vnni = Target.parse("llvm -mattr=+avx512f,+avx512bw,+avx512vl,+avx512vnni")
    no_vl = Target.parse("llvm -mattr=+avx512f,+avx512bw,+avx512vnni,-avx512vl,-avxvnni")
    bw = Target.parse("llvm -mattr=+avx512f,+avx512bw,-avx512vnni,-avxvnni")
    avx2 = Target.parse("llvm -mattr=+avx2,-avx512f,-avxvnni")
    assert tap_groups(vnni, "int8", "int8") == TapGroups(4, 128, (16, 8))
    assert tap_groups(vnni, "uint8", "int8") == TapGroups(4, 0, (16, 8))
    assert tap_groups(no_vl, "int8", "int8") == TapGroups(4, 128, (16,))
    assert tap_groups(vnni, "int8", "uint8") == TapGroups(2, 0, (16, 8))
    assert tap_groups(bw, "int8", "int8") == TapGroups(2, 0, (16, 8))
    assert tap_groups(avx2, "int8", "int8") == TapGroups(2, 0, (8,))
