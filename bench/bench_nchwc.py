"""The channel-blocked convolution kernels (`nn.contrib_conv2d_NCHWc`,
`nn.contrib_depthwise_conv2d_NCHWc`) against today's NCHW `nn.conv2d` kernel on the same
convolution, in GFLOP/s and as a fraction of the machine's FMA peak.

    python bench/bench_nchwc.py                    # MobileNet-v2's and ResNet-18's layers
    python bench/bench_nchwc.py mb2 --repeat 30    # only layers whose name contains "mb2"
    python bench/bench_nchwc.py --threads 1

Every layer is one fused kernel with the tail its model has: conv + bias + clip(0, 6)
(MobileNet-v2's expansions and depthwise layers), conv + bias (its projections) or conv +
bias + relu (ResNet-18), the bias a `[C/b, 1, 1, b]` constant added in the packed layout.
Both kernels are checked against each other, then timed alternately in this process (NCHW,
NCHWc, NCHW, ...; medians), with the FMA peak probed in the same run
(`backend.codegen.probe`). The block `b` is the host's fp32 vector width (8 with AVX2),
the stem's input block its 3 channels. The table ends with each model's totals, weighted
by how often the model runs each layer.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

# (name, in channels, size, out channels, kernel, stride, pad, depthwise, tail, uses)
MOBILENET_V2 = [
    ("mb2 stem 3>32 3x3/2 @224", 3, 224, 32, 3, 2, 1, False, "clip", 1),
    ("mb2 dw 32 @112", 32, 112, 32, 3, 1, 1, True, "clip", 1),
    ("mb2 pw 32>16 @112", 32, 112, 16, 1, 1, 0, False, "bias", 1),
    ("mb2 pw 16>96 @112", 16, 112, 96, 1, 1, 0, False, "clip", 1),
    ("mb2 dw 96 /2 @112", 96, 112, 96, 3, 2, 1, True, "clip", 1),
    ("mb2 pw 96>24 @56", 96, 56, 24, 1, 1, 0, False, "bias", 1),
    ("mb2 pw 24>144 @56", 24, 56, 144, 1, 1, 0, False, "clip", 2),
    ("mb2 dw 144 @56", 144, 56, 144, 3, 1, 1, True, "clip", 1),
    ("mb2 pw 144>24 @56", 144, 56, 24, 1, 1, 0, False, "bias", 1),
    ("mb2 dw 144 /2 @56", 144, 56, 144, 3, 2, 1, True, "clip", 1),
    ("mb2 pw 144>32 @28", 144, 28, 32, 1, 1, 0, False, "bias", 1),
    ("mb2 pw 32>192 @28", 32, 28, 192, 1, 1, 0, False, "clip", 3),
    ("mb2 dw 192 @28", 192, 28, 192, 3, 1, 1, True, "clip", 2),
    ("mb2 pw 192>32 @28", 192, 28, 32, 1, 1, 0, False, "bias", 2),
    ("mb2 dw 192 /2 @28", 192, 28, 192, 3, 2, 1, True, "clip", 1),
    ("mb2 pw 192>64 @14", 192, 14, 64, 1, 1, 0, False, "bias", 1),
    ("mb2 pw 64>384 @14", 64, 14, 384, 1, 1, 0, False, "clip", 4),
    ("mb2 dw 384 @14", 384, 14, 384, 3, 1, 1, True, "clip", 4),
    ("mb2 pw 384>64 @14", 384, 14, 64, 1, 1, 0, False, "bias", 3),
    ("mb2 pw 384>96 @14", 384, 14, 96, 1, 1, 0, False, "bias", 1),
    ("mb2 pw 96>576 @14", 96, 14, 576, 1, 1, 0, False, "clip", 3),
    ("mb2 dw 576 @14", 576, 14, 576, 3, 1, 1, True, "clip", 2),
    ("mb2 pw 576>96 @14", 576, 14, 96, 1, 1, 0, False, "bias", 2),
    ("mb2 dw 576 /2 @14", 576, 14, 576, 3, 2, 1, True, "clip", 1),
    ("mb2 pw 576>160 @7", 576, 7, 160, 1, 1, 0, False, "bias", 1),
    ("mb2 pw 160>960 @7", 160, 7, 960, 1, 1, 0, False, "clip", 3),
    ("mb2 dw 960 @7", 960, 7, 960, 3, 1, 1, True, "clip", 3),
    ("mb2 pw 960>160 @7", 960, 7, 160, 1, 1, 0, False, "bias", 2),
    ("mb2 pw 960>320 @7", 960, 7, 320, 1, 1, 0, False, "bias", 1),
    ("mb2 pw 320>1280 @7", 320, 7, 1280, 1, 1, 0, False, "clip", 1),
]
"""MobileNet-v2's convolutions (examples/mobilenet_v2.relay, 224x224, batch 1)."""

RESNET18 = [
    ("r18 conv1 3>64 7x7/2 @224", 3, 224, 64, 7, 2, 3, False, "relu", 1),
    ("r18 l2 64>128 3x3/2 @56", 64, 56, 128, 3, 2, 1, False, "relu", 1),
    ("r18 l2 ds 64>128 1x1/2", 64, 56, 128, 1, 2, 0, False, "bias", 1),
    ("r18 l3 128>256 3x3/2 @28", 128, 28, 256, 3, 2, 1, False, "relu", 1),
    ("r18 l3 ds 128>256 1x1/2", 128, 28, 256, 1, 2, 0, False, "bias", 1),
    ("r18 l4 256>512 3x3/2 @14", 256, 14, 512, 3, 2, 1, False, "relu", 1),
    ("r18 l4 ds 256>512 1x1/2", 256, 14, 512, 1, 2, 0, False, "bias", 1),
    ("r18 l1 64>64 3x3 @56", 64, 56, 64, 3, 1, 1, False, "relu", 4),
    ("r18 l4 512>512 3x3 @7", 512, 7, 512, 3, 1, 1, False, "relu", 3),
]
"""ResNet-18's direct convolutions (stride 2 and 1x1), and two stride-1 3x3 layers for
comparison (those may go to Winograd in the model)."""


class Kernel:
    """A compiled kernel with its argument arrays (64-byte aligned)."""

    def __init__(self, inputs: list[Any], outputs: list[Any], arrays: list[np.ndarray]) -> None:
        from relay.backend.codegen import compile_module
        from relay.backend.lower.lower_func import schedule_outputs
        from relay.backend.runtime.native import aligned_copy
        from relay.backend.te import lower
        from relay.backend.tir.transform import lower_pipeline

        s, _ = schedule_outputs(outputs)
        func = lower_pipeline(lower(s, inputs + outputs, "kernel"))
        self.library = compile_module([func])
        fn = self.library.get("kernel")
        self.arrays = [aligned_copy(a) for a in arrays]
        self.outputs = [
            aligned_copy(np.zeros([int(d.value) for d in o.shape], o.dtype)) for o in outputs
        ]
        ptrs = [ctypes.c_void_p(a.ctypes.data) for a in self.arrays + self.outputs]
        self.run: Callable[[], Any] = lambda: fn(*ptrs)


def _apply(name: str, inputs: list[Any], **attrs: Any) -> Any:
    from relay.testing.compute_check import apply_compute

    out, _ = apply_compute(name, inputs, **attrs)
    return out


def _tail(conv: Any, bias: Any, tail: str) -> Any:
    out = _apply("add", [conv, bias])
    if tail == "relu":
        return _apply("nn.relu", [out])
    if tail == "clip":
        return _apply("clip", [out], a_min=0.0, a_max=6.0)
    return out


def pack_data(x: np.ndarray, b: int) -> np.ndarray:
    """NCHW -> NCHW{b}c."""
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // b, b, h, w).transpose(0, 1, 3, 4, 2))


def unpack_data(x: np.ndarray) -> np.ndarray:
    """NCHW{b}c -> NCHW."""
    n, co, h, w, b = x.shape
    return x.transpose(0, 1, 4, 2, 3).reshape(n, co * b, h, w)


def pack_weight(w: np.ndarray, bi: int, bo: int) -> np.ndarray:
    """OIHW -> OIHW{bi}i{bo}o."""
    o, i, kh, kw = w.shape
    return np.ascontiguousarray(
        w.reshape(o // bo, bo, i // bi, bi, kh, kw).transpose(0, 2, 4, 5, 3, 1)
    )


def build_pair(layer: tuple[Any, ...], lanes: int) -> tuple[Kernel, Kernel, float]:
    """(the NCHW kernel, the NCHWc kernel, the direct convolution's FLOPs) of a layer; the
    two kernels' outputs agree."""
    from relay.backend.te import placeholder

    _, ic, size, oc, k, stride, pad, depthwise, tail, _ = layer
    groups = ic if depthwise else 1
    bi = ic if ic < lanes else lanes
    bo = lanes
    rng = np.random.default_rng(0)
    xa = rng.normal(size=(1, ic, size, size)).astype("f4")
    scale = 1.0 / float(np.sqrt(ic // groups * k * k))
    wa = (rng.normal(size=(oc, ic // groups, k, k)) * scale).astype("f4")
    ba = rng.normal(size=(oc,)).astype("f4")
    conv_attrs = dict(strides=(stride, stride), padding=(pad, pad), channels=oc,
                      kernel_size=(k, k), groups=groups)  # fmt: skip
    x = placeholder(xa.shape, "float32", "x")
    w = placeholder(wa.shape, "float32", "w")
    b = placeholder((oc, 1, 1), "float32", "b")
    out = _tail(_apply("nn.conv2d", [x, w], **conv_attrs), b, tail)
    nchw = Kernel([x, w, b], [out], [xa, wa, ba.reshape(oc, 1, 1)])
    if depthwise:
        wp = pack_weight(wa, 1, bo)
        layouts = dict(data_layout=f"NCHW{bo}c", kernel_layout=f"OIHW1i{bo}o")
        op, xp = "nn.contrib_depthwise_conv2d_NCHWc", pack_data(xa, bo)
    else:
        wp = pack_weight(wa, bi, bo)
        layouts = dict(data_layout=f"NCHW{bi}c", kernel_layout=f"OIHW{bi}i{bo}o")
        op, xp = "nn.contrib_conv2d_NCHWc", pack_data(xa, bi)
    xc = placeholder(xp.shape, "float32", "x")
    wc = placeholder(wp.shape, "float32", "w")
    bc = placeholder((oc // bo, 1, 1, bo), "float32", "b")
    conv = _apply(op, [xc, wc], **conv_attrs, **layouts, out_layout=f"NCHW{bo}c")
    packed = Kernel([xc, wc, bc], [_tail(conv, bc, tail)], [xp, wp, ba.reshape(oc // bo, 1, 1, bo)])
    nchw.run()
    packed.run()
    want, got = nchw.outputs[0], unpack_data(packed.outputs[0])
    err = np.abs(got - want).max() / max(1.0, float(np.abs(want).max()))
    assert err < 1e-4, (layer[0], err)
    oh = (size + 2 * pad - k) // stride + 1
    flops = 2.0 * oc * (ic // groups) * k * k * oh * oh
    return nchw, packed, flops


def alternate(a: Callable[[], Any], b: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """Median seconds of `a` and `b`, called alternately `repeat` times each (after a
    warm-up call of each)."""
    a()
    b()
    ta, tb = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        a()
        ta.append(time.perf_counter() - t)
        t = time.perf_counter()
        b()
        tb.append(time.perf_counter() - t)
    return statistics.median(ta), statistics.median(tb)


def main() -> None:
    """Build, check and time every selected layer; print the table."""
    from relay.backend.codegen import probe, set_num_threads
    from relay.backend.target import Target

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("filters", nargs="*", help="only layers whose name contains one of these")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    set_num_threads(args.threads)
    lanes = Target.host().lanes("float32")
    peak = probe.measure_fp32_peak(args.threads) * 1e9
    print(f"fp32 FMA peak {peak / 1e9:.1f} GFLOP/s on {args.threads} threads, block {lanes}")
    header = f"{'layer':28s} {'x':>2s} {'NCHW ms':>8s} {'GF/s':>6s} {'peak':>5s}"
    header += f" {'NCHWc ms':>9s} {'GF/s':>6s} {'peak':>5s} {'speedup':>7s}"
    print(header)
    totals: dict[str, list[float]] = {}
    for layer in MOBILENET_V2 + RESNET18:
        name, uses = layer[0], layer[-1]
        if args.filters and not any(f in name for f in args.filters):
            continue
        nchw, packed, flops = build_pair(layer, lanes)
        t_old, t_new = alternate(nchw.run, packed.run, args.repeat)
        g_old, g_new = flops / t_old, flops / t_new
        print(
            f"{name:28s} {uses:2d} {t_old * 1e3:8.3f} {g_old / 1e9:6.1f} {g_old / peak:5.0%}"
            f" {t_new * 1e3:9.3f} {g_new / 1e9:6.1f} {g_new / peak:5.0%} {t_old / t_new:6.2f}x"
        )
        total = totals.setdefault(name.split()[0], [0.0, 0.0, 0.0])
        total[0] += uses * t_old
        total[1] += uses * t_new
        total[2] += uses * flops
    for model, (t_old, t_new, flops) in totals.items():
        print(
            f"{model + ' total (weighted)':28s} {'':2s} {t_old * 1e3:8.3f} "
            f"{flops / t_old / 1e9:6.1f} {flops / t_old / peak:5.0%} {t_new * 1e3:9.3f} "
            f"{flops / t_new / 1e9:6.1f} {flops / t_new / peak:5.0%} {t_old / t_new:6.2f}x"
        )


if __name__ == "__main__":
    main()
