"""int8 kernels against fp32 and the machine's int8 peak, and quantized ResNet-18 and
MobileNet-v2.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_int8.py \\
        [--size 1024] [--repeat 20] [--threads 2] [--models resnet18,mobilenet_v2]
        [--no-dense] [--no-ort] [--calib 4]
    ... bench/bench_int8.py --accuracy [--models ...] [--images 64] [--modes kl_divergence]
        [--calibrated-bn [--bn-shift 2]]
    quantization options (both parts): [--per-channel] [--bias-mode int32|weight]
        [--bias-correction]

1. Dense `size`^3: int8 x int8 -> int32 (the tensorized schedule, weights bound so they are
   packed at build time) against fp32 of the same shape, timed in alternating blocks; GOP/s
   count 2 operations per multiply-add. Beside them the machine's int8 peak measured in this
   run: a small loop of the instruction the int8 plan uses (`vpmaddwd` on AVX2, `vpdpbusd`
   with VNNI) on 12 independent accumulators, compiled with llvmlite and run on 1 and on
   `threads` threads at once.
2. Each model (examples/NAME.relay, make_weights seed 0): our fp32 build, the model
   quantized by `relay.quantize` (global_scale, calibrated on `calib` seeded images) and
   built, and ONNX Runtime's statically quantized int8 model (`quantize_static`, QDQ,
   int8 weights and activations, same calibration images) of the fp32 export; medians of
   alternating blocks, and the int8 outputs' cosine to fp32.
3. `--accuracy`: issue 14's table instead of timings: per model and calibration mode, the
   int8 build's top-1 agreement with the fp32 build over `images` seeded images (other
   than the calibration ones), the cosine of the logits (final softmax removed) and of the
   probabilities, and the count of interpreted kernels (0: all compiled natively).
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers
import relay
from bench_vs_ort import alternate_samples
from relay.backend.lower.schedules.int8 import choose_plan
from relay.backend.target import Target

CHAINS = 12
"""Independent accumulators of the peak loop (enough to hide the instruction's latency)."""


def alternate(runs: dict[str, Callable[[], Any]], repeat: int) -> dict[str, tuple[float, float]]:
    """(median, fastest) seconds of each callable, timed in alternating blocks of 5 calls
    after `bench_vs_ort.SETTLE` seconds of untimed calls each (so ONNX Runtime's threads,
    still spinning after its calls, do not slow the next callable's timed calls)."""
    samples = alternate_samples(runs, repeat)
    return {k: (statistics.median(v), min(v)) for k, v in samples.items()}


# ------------------------------------------------------------------------------ the peak


def _peak_ir(kind: str) -> tuple[str, int]:
    """LLVM IR of `peak(i64 n, ptr seed)`: `n` iterations of CHAINS dependent-free
    instruction chains; returns (text, multiply-adds per iteration)."""
    if kind == "avx2":
        vec, half, call = "<8 x i32>", "<16 x i16>", "llvm.x86.avx2.pmadd.wd"
        decl = f"declare {vec} @{call}({half}, {half})"
        macs = 16
    elif kind == "avx512bw":
        vec, half, call = "<16 x i32>", "<32 x i16>", "llvm.x86.avx512.pmaddw.d.512"
        decl = f"declare {vec} @{call}({half}, {half})"
        macs = 32
    else:
        bits = 512 if kind == "avx512_vnni" else 256
        lanes = bits // 32
        vec = half = f"<{lanes} x i32>"
        call = f"llvm.x86.avx512.vpdpbusd.{bits}"
        decl = f"declare {vec} @{call}({vec}, {vec}, {vec})"
        macs = 4 * lanes
    lines = [
        decl,
        "define void @peak(i64 %n, ptr %seed) {",
        "entry:",
        f"  %b = load {half}, ptr %seed, align 1",
        "  br label %loop",
        "loop:",
        "  %i = phi i64 [0, %entry], [%i.next, %loop]",
    ]
    for k in range(CHAINS):
        lines.append(f"  %acc{k} = phi {vec} [zeroinitializer, %entry], [%acc{k}.next, %loop]")
    for k in range(CHAINS):
        if kind in ("avx2", "avx512bw"):
            lines.append(f"  %x{k} = bitcast {vec} %acc{k} to {half}")
            lines.append(f"  %p{k} = call {vec} @{call}({half} %x{k}, {half} %b)")
            lines.append(f"  %acc{k}.next = add {vec} %acc{k}, %p{k}")
        else:
            lines.append(
                f"  %acc{k}.next = call {vec} @{call}({vec} %acc{k}, {vec} %acc{k}, {vec} %b)"
            )
    lines += [
        "  %i.next = add i64 %i, 1",
        "  %more = icmp slt i64 %i.next, %n",
        "  br i1 %more, label %loop, label %done",
        "done:",
    ]
    total = f"%acc{CHAINS - 1}.next"
    lines += [f"  store {vec} {total}, ptr %seed, align 1", "  ret void", "}"]
    return "\n".join(lines), CHAINS * macs


def measure_peak(kind: str, threads: int, seconds: float = 0.3) -> float:
    """GOP/s (2 per multiply-add) of the peak loop on `threads` threads at once."""
    import llvmlite.binding as llvm
    from relay.backend.codegen import llvm_target

    llvm_target.initialize()
    text, macs = _peak_ir(kind)
    module = llvm.parse_assembly(text)
    module.verify()
    engine = llvm.create_mcjit_compiler(module, llvm_target.new_target_machine())
    engine.finalize_object()
    fn = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p)(
        engine.get_function_address("peak")
    )
    seeds = [np.ones(64, np.int32) for _ in range(threads)]
    fn(1000, seeds[0].ctypes.data)
    n = 200_000
    start = time.perf_counter()
    fn(n, seeds[0].ctypes.data)
    n = max(n, int(n * seconds / max(time.perf_counter() - start, 1e-6)))
    best = 0.0
    for _ in range(5):  # the best of five: other processes share the cores
        workers = [
            threading.Thread(target=fn, args=(n, seeds[t].ctypes.data)) for t in range(threads)
        ]
        start = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - start
        best = max(best, 2 * macs * n * threads / elapsed / 1e9)
    return best


# ------------------------------------------------------------------------------ dense


def dense_text(size: int, dtype: str, out_dtype: str) -> str:
    """`nn.dense` of `size`^3 in `dtype`."""
    return f"""#[version = "0.0.5"]
def @main(%x: Tensor[({size}, {size}), {dtype}], %w: Tensor[({size}, {size}), {dtype}]) {{
  nn.dense(%x, %w, units={size}, out_dtype="{out_dtype}")
}}"""


def bench_dense(size: int, repeat: int, threads: int) -> None:
    rng = np.random.default_rng(0)
    target = f"llvm -num-threads={threads}"
    runs: dict[str, Callable[[], Any]] = {}
    for dtype, out_dtype in (("int8", "int32"), ("float32", "float32")):
        if dtype == "int8":
            x = rng.integers(-128, 128, (size, size)).astype(np.int8)
            w = rng.integers(-128, 128, (size, size)).astype(np.int8)
        else:
            x = rng.normal(size=(size, size)).astype(np.float32)
            w = rng.normal(size=(size, size)).astype(np.float32)
        start = time.perf_counter()
        model = relay.build(relay.parse(dense_text(size, dtype, out_dtype)), target=target,
                            params={"w": w})  # fmt: skip
        print(f"dense {dtype}: built in {time.perf_counter() - start:.1f} s")
        if dtype == "int8":
            got = np.asarray(model.run(x=x))
            exact = np.array_equal(got, x.astype(np.int64) @ w.astype(np.int64).T)
            print(f"dense int8 exact: {exact}")
        runs[dtype] = lambda m=model, a=x: m.run(x=a)
    times = alternate(runs, repeat)
    ops = 2 * size**3
    plan = choose_plan(Target.parse(target), "int8", "int8")
    kind = plan.kind if plan is not None else "avx2"
    peak1, peak_n = measure_peak(kind, 1), measure_peak(kind, threads)
    print(f"int8 peak ({kind} loop): {peak1:.1f} GOP/s on 1 thread, {peak_n:.1f} on {threads}")
    print(f"{'dense ' + str(size) + '^3':<16} {'median ms':>10} {'best ms':>9} {'GOP/s':>7} "
          f"{'% int8 peak':>12}")  # fmt: skip
    for key, (med, best) in times.items():
        gops = ops / best / 1e9
        print(f"{key:<16} {med * 1e3:10.2f} {best * 1e3:9.2f} {gops:7.1f} "
              f"{100 * gops / peak_n:11.0f}%")  # fmt: skip
    ratio = times["float32"][0] / times["int8"][0]
    print(f"int8 / fp32 speed (medians): {ratio:.2f}x")


# ------------------------------------------------------------------------------ models

MODES = ("global_scale", "kl_divergence", "percentile")
"""The calibration modes of `relay.quantize`."""


def load_model(
    name: str, calibrated_bn: bool = False, bn_shift: float = 0.0
) -> tuple[Any, np.ndarray, dict[str, np.ndarray]]:
    """Example `name` (examples/NAME.relay), its input `data` and its weights (make_weights
    seed 0; with `calibrated_bn`, its `--calibrated-bn --bn-shift bn_shift` weights: batch
    norms fitted to 16 seeded images, the classifier bias centring the logits)."""
    make_weights = peers.load_make_weights()
    module = relay.parse(Path(make_weights.model_path(name)).read_text())
    specs = make_weights.main_parameters(module)
    weights = make_weights.make_weights(specs, seed=0)
    if calibrated_bn:
        weights = make_weights.calibrated_weights(module, specs, weights, seed=0, shift=bn_shift)
    data = np.ascontiguousarray(weights["data"])
    return module, data, {k: v for k, v in weights.items() if k != "data"}


def images(shape: tuple[int, ...], count: int, seed: int) -> list[np.ndarray]:
    """`count` seeded standard-normal images of `shape`."""
    rng = np.random.default_rng(seed)
    return [rng.normal(size=shape).astype(np.float32) for _ in range(count)]


QUANTIZE_OPTIONS: dict[str, Any] = {}
"""qconfig options beside the calibration mode (`--per-channel`, `--bias-mode`,
`--bias-correction`)."""


def quantize_model(module: Any, params: dict[str, np.ndarray], calib: list[np.ndarray],
                   mode: str) -> Any:  # fmt: skip
    """`module` quantized by `relay.quantize` in calibration `mode` over `calib` (with
    `QUANTIZE_OPTIONS`)."""
    from relay.quantize import qconfig, quantize

    with qconfig(calibrate_mode=mode, **QUANTIZE_OPTIONS):
        return quantize(module, params, [{"data": x} for x in calib])


def bench_model(name: str, repeat: int, threads: int, calib: int, use_ort: bool) -> None:
    """Our fp32 build, our int8 build (global_scale) and ORT's QDQ int8 model of `name`,
    timed in alternating blocks."""
    module, data, params = load_model(name)
    calib_images = images(data.shape, calib, 7)
    target = f"llvm -num-threads={threads}"
    start = time.perf_counter()
    fp32 = relay.build(module, target=target, params=params)
    print(f"{name} fp32: built in {time.perf_counter() - start:.1f} s")
    start = time.perf_counter()
    realized = quantize_model(module, params, calib_images, "global_scale")
    print(f"{name} quantized in {time.perf_counter() - start:.1f} s")
    start = time.perf_counter()
    int8 = relay.build(realized, target=target)
    print(f"{name} int8: built in {time.perf_counter() - start:.1f} s, "
          f"{int8.stats.kernels} kernels, {int8.stats.fallback_kernels} interpreted")  # fmt: skip
    want = np.asarray(fp32.run(data=data)).ravel()
    got = np.asarray(int8.run(data=data)).ravel()
    print(f"{name} int8 vs fp32 output cosine: {cosine(got, want):.4f}")
    runs: dict[str, Callable[[], Any]] = {
        "relay fp32": lambda: fp32.run(data=data),
        "relay int8": lambda: int8.run(data=data),
    }
    if use_ort:
        session = _ort_int8(name, params, data, calib_images)
        if session is not None:
            runs["onnxruntime int8 (QDQ)"] = lambda: session.run(None, {"data": data})
    times = alternate(runs, repeat)
    base = times["relay fp32"][0]
    print(f"{name:<24} {'median ms':>10} {'best ms':>9} {'fp32/this':>10}")
    for key, (med, best) in times.items():
        print(f"{key:<24} {med * 1e3:10.2f} {best * 1e3:9.2f} {base / med:10.2f}")


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two flat arrays."""
    return float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b))


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return np.asarray(e / e.sum())


def logits_module(module: Any) -> Any:
    """`module` inlined into `@main` (graph form) without its final `nn.softmax`: the
    logits. The examples apply the softmax inside `@head`, so the globals are inlined
    first; a module whose result is not a softmax is an error (the table would compare
    probabilities)."""
    from relay.driver import inline_into_main
    from relay.lang.expr import Call
    from relay.lang.module import IRModule
    from relay.passes import get_pass

    main = get_pass("to-graph-normal-form")(inline_into_main(module))["main"]
    body = main.body
    if not (isinstance(body, Call) and getattr(body.op, "name", "") == "nn.softmax"):
        raise SystemExit("the model's result is not an nn.softmax: no logits to compare")
    return IRModule.from_expr(main.replace(body=body.args[0], ret_type=None))


def accuracy(
    name: str,
    modes: list[str],
    count: int,
    calib: int,
    threads: int,
    calibrated_bn: bool,
    bn_shift: float = 0.0,
) -> None:
    """Issue 14's table for `name`: over `count` seeded images (not the calibration ones),
    each mode's int8 top-1 agreement with fp32, the cosine of the logits (softmax removed)
    and of the probabilities, mean and minimum over the images."""
    module, data, params = load_model(name, calibrated_bn, bn_shift)
    module = logits_module(module)
    target = f"llvm -num-threads={threads}"
    fp32 = relay.build(module, target=target, params=params)
    test = images(data.shape, count, 11)
    want = [np.asarray(fp32.run(data=x)).ravel() for x in test]
    calib_images = images(data.shape, calib, 7)
    stacked = np.stack(want)
    top = np.sort(stacked, axis=1)
    gap = float(np.median(top[:, -1] - top[:, -2]))
    classes = len({int(np.argmax(w)) for w in want})
    across = float(np.mean(np.std(stacked, axis=0)))
    within = float(np.mean(np.std(stacked, axis=1)))
    weights = (
        f"batch norms calibrated, shift {bn_shift:g}" if calibrated_bn else "random batch norms"
    )
    print(f"quantize options: {QUANTIZE_OPTIONS or 'defaults'}")
    print(f"{name} ({weights}): fp32 picks {classes} classes over {count} images, median"
          f" top-2 logit gap {gap:.4f}, logit std across images {across:.4f} (per logit,"
          f" mean), across classes {within:.4f} (per image, mean)")  # fmt: skip
    print("| model | mode | top-1 agree | logit cosine mean / min | softmax cosine mean / min |"
          " interpreted kernels |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- |")
    for mode in modes:
        realized = quantize_model(module, params, calib_images, mode)
        int8 = relay.build(realized, target=target)
        got = [np.asarray(int8.run(data=x)).ravel() for x in test]
        agree = sum(int(np.argmax(g) == np.argmax(w)) for g, w in zip(got, want))
        logit = [cosine(g, w) for g, w in zip(got, want)]
        soft = [cosine(_softmax(g), _softmax(w)) for g, w in zip(got, want)]
        print(f"| {name} | {mode} | {agree}/{count} ({100 * agree / count:.0f}%) |"
              f" {np.mean(logit):.4f} / {np.min(logit):.4f} |"
              f" {np.mean(soft):.4f} / {np.min(soft):.4f} | {int8.stats.fallback_kernels} |",
              flush=True)  # fmt: skip


def _ort_int8(
    name: str, weights: dict[str, np.ndarray], data: np.ndarray, images: list[np.ndarray]
) -> Any:
    torch, ort = peers.import_torch(quiet=True), peers.import_onnxruntime(quiet=True)
    if torch is None or ort is None:
        print("onnxruntime int8: skipped (torch or onnxruntime missing)")
        return None
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self.items = iter([{"data": x} for x in images])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.items, None)

    tmp = Path(tempfile.mkdtemp())
    model = peers.torch_module(torch, name, weights)
    fp32_path = peers.export_onnx(torch, model, torch.from_numpy(data), tmp / f"{name}.onnx")
    int8_path = tmp / f"{name}_int8.onnx"
    start = time.perf_counter()
    quantize_static(
        str(fp32_path),
        str(int8_path),
        Reader(),
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QInt8,
        weight_type=QuantType.QInt8,
    )
    print(f"onnxruntime quantize_static (QDQ, int8): {time.perf_counter() - start:.1f} s")
    ort.set_default_logger_severity(3)  # not the unused-initializer warning per constant
    return peers.onnxruntime_session(ort, int8_path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--calib", type=int, default=4)
    parser.add_argument("--models", default="resnet18,mobilenet_v2",
                        help="comma-separated examples to time ('' for none)")  # fmt: skip
    parser.add_argument("--no-dense", action="store_true")
    parser.add_argument("--no-ort", action="store_true")
    parser.add_argument("--accuracy", action="store_true",
                        help="print the accuracy table of each model instead of timing")  # fmt: skip
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--calibrated-bn", action="store_true",
                        help="weights from make_weights --calibrated-bn (batch norms fitted"
                        " to seeded images) instead of random batch-norm statistics")  # fmt: skip
    parser.add_argument("--bn-shift", type=float, default=0.0,
                        help="with --calibrated-bn: make_weights --bn-shift")  # fmt: skip
    parser.add_argument("--per-channel", action="store_true",
                        help="qconfig(per_channel=True): a scale per output channel")  # fmt: skip
    parser.add_argument("--bias-mode", choices=("int32", "weight"), default=None,
                        help="qconfig(bias_mode=...) (default: qconfig's)")  # fmt: skip
    parser.add_argument("--bias-correction", action="store_true",
                        help="qconfig(bias_correction=True)")  # fmt: skip
    args = parser.parse_args()
    models = [m for m in args.models.split(",") if m]
    if args.per_channel:
        QUANTIZE_OPTIONS["per_channel"] = True
    if args.bias_mode is not None:
        QUANTIZE_OPTIONS["bias_mode"] = args.bias_mode
    if args.bias_correction:
        QUANTIZE_OPTIONS["bias_correction"] = True
    if args.accuracy:
        for name in models:
            accuracy(name, args.modes.split(","), args.images, args.calib, args.threads,
                     args.calibrated_bn, args.bn_shift)  # fmt: skip
        return 0
    if not args.no_dense:
        bench_dense(args.size, args.repeat, args.threads)
    for name in models:
        bench_model(name, args.repeat, args.threads, args.calib, not args.no_ort)
    return 0


if __name__ == "__main__":
    sys.exit(main())
