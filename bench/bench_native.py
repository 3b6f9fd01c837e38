"""Compiled relay against numpy, PyTorch and ONNX Runtime: kernels, models, compile times.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_native.py [--quick]
        [--only NAME[,NAME...]] [--repeat N] [--list]

One run measures, in this order:

1. machine peaks: numpy GEMM (2048^3 float32, GFLOP/s) and numpy copy bandwidth (64 MB
   arrays, GB/s counting the bytes read and written);
2. single kernels, each a one-operator .relay program built with
   `relay.build(mod, target="llvm", opt_level=3)`: dense 1024^3, every distinct conv2d of
   ResNet-18 at batch 1, a depthwise conv2d, softmax, a fused elementwise chain, max and
   average pooling, against numpy and PyTorch (GFLOP/s for compute-bound kernels, GB/s for
   memory-bound ones, and the fraction of the machine peak);
3. the example models (MLP, ResNet-18, MobileNet-v2, transformer layer; batch 1, float32,
   weights of examples/make_weights.py with seed 0): relay against PyTorch eager and ONNX
   Runtime (the PyTorch versions of bench/peers.py exported with the TorchScript exporter),
   with the largest absolute difference of each peer's output from relay's;
4. compile times of the models (wall time of relay.build and its seconds per stage);
5. relay on 1 and 2 threads for dense 1024^3 and a large conv2d;
6. the speed floors of issue 5, reached or not.

Ratios are relay time / peer time: below 1 relay is faster. Single kernels are timed on
relay's native entry point with preallocated outputs (as a kernel benchmark should; the
header says when `.run` had to be used instead); models are timed through `.run(**inputs)`,
which also checks the arguments. Each time is the median of `--repeat` samples, a sample
being enough back-to-back calls to take at least 2 ms. PyTorch and ONNX Runtime are
optional (`pip install -e '.[bench]'`): without them their columns are skipped.
`--quick` measures a smaller set with fewer repeats; `--only` keeps the items whose name
contains one of the given words (`--list` prints the names).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent


def _load_peers() -> ModuleType:
    import importlib.util

    loaded = sys.modules.get("peers")
    if loaded is not None and getattr(loaded, "__file__", None) == str(BENCH_DIR / "peers.py"):
        return loaded
    spec = importlib.util.spec_from_file_location("peers", BENCH_DIR / "peers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["peers"] = module
    spec.loader.exec_module(module)
    return module


peers = _load_peers()
numpy_models = peers.load_sibling("numpy_models")

F32 = np.float32
ALIGNMENT = 64
RTOL = 1e-3
"""Outputs agree when the largest absolute difference is at most RTOL * max |value|."""
MIN_SAMPLE_SECONDS = 0.002
GEMM_PEAK_SIZE = 2048
COPY_BYTES = 64 * 2**20
MODELS = ("mlp", "resnet18", "mobilenet_v2", "transformer_layer")
QUICK_MODELS = ("mlp", "resnet18")
THREAD_KERNELS = ("dense 1024x1024x1024", "conv2d 64x56x56 -> 64 k3/1")
"""The kernels timed on 1 and 2 threads: dense 1024^3 and ResNet-18's largest 3x3 conv."""


# ---------------------------------------------------------------------------- helpers


def aligned(array: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of `array` starting on a 64-byte boundary (relay's kernels are
    compiled for aligned buffers; `.run` copies unaligned inputs, which we do not want to
    time)."""
    array = np.ascontiguousarray(array)
    if array.ctypes.data % ALIGNMENT == 0:
        return array
    raw = np.empty(array.nbytes + ALIGNMENT, dtype=np.uint8)
    start = (-raw.ctypes.data) % ALIGNMENT
    out = raw[start : start + array.nbytes].view(array.dtype).reshape(array.shape)
    out[...] = array
    return out


def median_seconds(fn: Callable[[], Any], repeat: int, warmup: int = 1) -> float:
    """Median time of one call of `fn` over `repeat` samples (after `warmup` calls); a sample
    runs `fn` back to back enough times to last at least MIN_SAMPLE_SECONDS."""
    for _ in range(warmup):
        fn()
    number = 1
    while True:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= MIN_SAMPLE_SECONDS or number >= 1000:
            break
        number *= 10 if elapsed < MIN_SAMPLE_SECONDS / 10 else 2
    samples = [elapsed / number]
    for _ in range(repeat - 1):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def max_abs_err(ours: Any, reference: Any) -> float:
    """The largest absolute difference (inf when the shapes differ)."""
    a, b = np.asarray(ours, np.float64), np.asarray(reference, np.float64)
    if a.shape != b.shape:
        return math.inf
    return float(np.abs(a - b).max()) if a.size else 0.0


def agrees(err: float, reference: Any) -> bool:
    """Whether an error is within RTOL of the reference's largest magnitude."""
    scale = float(np.abs(np.asarray(reference, np.float64)).max()) if np.size(reference) else 1.0
    return err <= RTOL * max(scale, 1e-30)


def cpu_name() -> str:
    """The processor's model name (from /proc/cpuinfo), or the platform's machine name."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    import platform

    return platform.machine()


def blas_info() -> str:
    """Which BLAS numpy runs (threadpoolctl when installed, else numpy's build config)."""
    with contextlib.suppress(ImportError):
        from threadpoolctl import threadpool_info

        parts = [
            f"{i.get('internal_api')} {i.get('version')} {i.get('architecture', '')} "
            f"{i.get('num_threads')} threads"
            for i in threadpool_info()
            if i.get("user_api") == "blas"
        ]
        if parts:
            return "; ".join(parts)
    with contextlib.suppress(Exception):
        config = np.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
        return f"{blas.get('name')} {blas.get('version', '')}".strip()
    return "unknown"


# ---------------------------------------------------------------------------- tables


@dataclass
class Table:
    """Rows of text cells printed with aligned columns (numbers right-aligned)."""

    headers: tuple[str, ...]
    rows: list[tuple[str, ...]] = field(default_factory=list)

    def add(self, *cells: object) -> None:
        """Append a row; None prints as an empty cell."""
        self.rows.append(tuple("" if c is None else str(c) for c in cells))

    def render(self) -> str:
        """The table as text, one line per row under a header and a rule."""
        widths = [len(h) for h in self.headers]
        for row in self.rows:
            widths = [max(w, len(c)) for w, c in zip(widths, row)]

        def line(cells: Sequence[str], header: bool = False) -> str:
            out = []
            for k, (cell, width) in enumerate(zip(cells, widths)):
                left = k == 0 or header or not _numeric(cell)
                out.append(cell.ljust(width) if left else cell.rjust(width))
            return "  ".join(out).rstrip()

        rule = "  ".join("-" * w for w in widths)
        return "\n".join([line(self.headers, True), rule, *(line(r) for r in self.rows)])


def _numeric(cell: str) -> bool:
    head = cell.split(" ", 1)[0].rstrip("x%")
    try:
        float(head)
    except ValueError:
        return False
    return True


def ms(seconds: float | None) -> str | None:
    """Seconds as milliseconds text."""
    if seconds is None:
        return None
    value = seconds * 1e3
    return f"{value:.3f}" if value < 1 else f"{value:.2f}" if value < 100 else f"{value:.0f}"


def ratio(ours: float | None, theirs: float | None) -> str | None:
    """`ours / theirs` as text (relay time over peer time)."""
    if ours is None or theirs is None or theirs <= 0:
        return None
    return f"{ours / theirs:.2f}"


def rate(work: float, seconds: float | None, unit: str) -> str | None:
    """GFLOP/s or GB/s of `work` (FLOPs or bytes) done in `seconds`."""
    if seconds is None or seconds <= 0 or work <= 0:
        return None
    return f"{work / seconds / 1e9:.1f} {unit}"


def error_text(err: float | None, reference: Any) -> str | None:
    """A max-abs-error cell, flagged when the outputs disagree."""
    if err is None:
        return None
    return f"{err:.1e}" + ("" if agrees(err, reference) else " DISAGREE")


# ---------------------------------------------------------------------------- relay side


def relay_build() -> Callable[..., Any]:
    """`relay.build` (imported lazily: the compiler may be missing parts)."""
    import relay

    build = getattr(relay, "build", None)
    if not callable(build):  # `relay.build` was shadowed by a module of that name
        from relay.driver import build
    return build


def parse_program(text: str, name: str) -> Any:
    """A module from Relay text."""
    from relay.grammar import parse

    return parse(text, name)


def interpret(module: Any, inputs: Mapping[str, np.ndarray]) -> Any:
    """`@main` of `module` run by the reference interpreter."""
    from relay.backend.runtime import interpret as run

    return run(module, **inputs)


@dataclass
class Built:
    """The result of building one program: the model (or why there is none) and timings."""

    model: Any | None
    seconds: float
    error: str | None = None

    @property
    def native(self) -> bool:
        """Whether the whole program runs as native code."""
        return self.model is not None and bool(getattr(self.model, "native", False))

    def note(self) -> str | None:
        """Why the program is not (entirely) native code, if it is not."""
        if self.model is None:
            return f"build failed: {self.error}"
        if not getattr(self.model, "native", False):
            reason = getattr(self.model, "reason", None)
            stats = getattr(self.model, "stats", None)
            if reason:
                return f"runs in the interpreter: {reason}"
            if stats is not None and getattr(stats, "fallback_kernels", 0):
                return f"{stats.fallback_kernels} of {stats.kernels} kernels interpreted"
            return "not native code"
        return None


def build_program(module: Any) -> Built:
    """`relay.build(module, target="llvm", opt_level=3)`, timed; errors are recorded."""
    start = time.perf_counter()
    try:
        model = relay_build()(module, target="llvm", opt_level=3)
    except Exception as exc:  # the compiler is still being finished: report, go on
        message = str(exc).strip().splitlines()
        first = message[0] if message else ""
        return Built(None, time.perf_counter() - start, f"{type(exc).__name__}: {first}")
    return Built(model, time.perf_counter() - start)


def native_entry(model: Any, inputs: Mapping[str, np.ndarray]) -> Callable[[], Any] | None:
    """A call of the model's native entry point on fixed, preallocated buffers, returning
    its outputs; None when the model has no single native entry (then time `.run`).

    Mirrors `CompiledModel.run` without the argument checks and the output allocation.
    """
    from relay.lang.dtype import numpy_dtype

    try:
        if not model.native or model.entry_name is None:
            return None
        arrays = [aligned(inputs[name]) for name in model.input_names]
        outputs = []
        for s in model.output_slots:
            slot = model.plan.slots[s]
            outputs.append(aligned(np.zeros(slot.shape, numpy_dtype(slot.dtype))))
        fn = model.library.get(model.entry_name)
        in_ptrs = (ctypes.c_void_p * max(1, len(arrays)))(*[a.ctypes.data for a in arrays])
        out_ptrs = (ctypes.c_void_p * max(1, len(outputs)))(*[o.ctypes.data for o in outputs])
        params = model._param_ptrs
        workspace = ctypes.c_void_p(model._workspace.ctypes.data)
    except (AttributeError, KeyError, TypeError, IndexError):
        return None

    def call() -> list[np.ndarray]:
        fn(in_ptrs, out_ptrs, params, workspace)
        _ = arrays  # keep the input buffers alive as long as the call
        return outputs

    return call


def relay_runner(model: Any, inputs: Mapping[str, np.ndarray]) -> tuple[Callable[[], Any], str]:
    """The fastest faithful way to call `model` on `inputs`: its native entry when it gives
    the same result as `.run`, else `.run`. Returns (function, "entry" | "run")."""
    args = {name: aligned(value) for name, value in inputs.items()}

    def run() -> Any:
        return model.run(**args)

    entry = native_entry(model, args)
    if entry is not None:
        expected = run()
        got = entry()
        single = not isinstance(expected, tuple) and len(got) == 1
        if single and np.array_equal(got[0], expected, equal_nan=True):
            return (lambda: entry()[0]), "entry"
    return run, "run"


# ---------------------------------------------------------------------------- kernels


@dataclass(frozen=True)
class Kernel:
    """One single-operator benchmark: a .relay program, its inputs and its peers.

    `numpy` and `torch` compute the same output (numpy arrays in; torch tensors in, with
    the torch module first). `flops` (compute-bound) or `nbytes` (memory-bound, bytes read
    plus written) gives the rate column.
    """

    name: str
    program: str
    make_inputs: Callable[[np.random.Generator], dict[str, np.ndarray]]
    numpy: Callable[..., np.ndarray] | None
    torch: Callable[..., Any] | None
    flops: float = 0.0
    nbytes: float = 0.0
    quick: bool = False

    @property
    def memory_bound(self) -> bool:
        """Whether the kernel's rate is in GB/s."""
        return self.flops == 0.0


def _program(params: Sequence[tuple[str, tuple[int, ...]]], body: str) -> str:
    decl = ", ".join(f"%{n}: Tensor[({', '.join(map(str, s))}), float32]" for n, s in params)
    return f'#[version = "0.0.5"]\ndef @main({decl}) {{\n  {body}\n}}\n'


def _normal(rng: np.random.Generator, shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(F32)


def dense_kernel(m: int, n: int, k: int, quick: bool = False) -> Kernel:
    """nn.dense of an (m, k) matrix with an (n, k) weight: x W^T."""

    def make(rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": _normal(rng, (m, k)), "w": _normal(rng, (n, k), 1 / math.sqrt(k))}

    return Kernel(
        f"dense {m}x{n}x{k}",
        _program([("x", (m, k)), ("w", (n, k))], f"nn.dense(%x, %w, units={n})"),
        make,
        lambda x, w: x @ w.T,
        lambda torch, x, w: torch.nn.functional.linear(x, w),
        flops=2.0 * m * n * k,
        quick=quick,
    )


def out_size(size: int, kernel: int, stride: int, pad: int) -> int:
    """Output extent of a window of `kernel` with `stride` over `size` padded by `pad`."""
    return (size + 2 * pad - kernel) // stride + 1


def numpy_depthwise(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """Depthwise NCHW convolution (weight (C, 1, K, K)) as K*K shifted multiply-adds."""
    n, c, h, wd = x.shape
    k = w.shape[2]
    xp = np.pad(x, [(0, 0), (0, 0), (pad, pad), (pad, pad)])
    oh, ow = out_size(h, k, stride, pad), out_size(wd, k, stride, pad)
    out = np.zeros((n, c, oh, ow), F32)
    for i in range(k):
        for j in range(k):
            window = xp[
                :, :, i : i + stride * (oh - 1) + 1 : stride, j : j + stride * (ow - 1) + 1 : stride
            ]
            out += window * w[:, 0, i, j][None, :, None, None]
    return out


def conv2d_kernel(
    c: int, o: int, hw: int, k: int, stride: int, pad: int, groups: int = 1, quick: bool = False
) -> Kernel:
    """nn.conv2d (NCHW, OIHW) of a 1 x c x hw x hw input to o channels, k x k windows."""
    oh = out_size(hw, k, stride, pad)
    wshape = (o, c // groups, k, k)

    def make(rng: np.random.Generator) -> dict[str, np.ndarray]:
        fan_in = c // groups * k * k
        return {"x": _normal(rng, (1, c, hw, hw)), "w": _normal(rng, wshape, math.sqrt(2 / fan_in))}

    body = (
        f"nn.conv2d(%x, %w, strides=[{stride}, {stride}], padding=[{pad}, {pad}, {pad}, {pad}], "
        f"groups={groups}, channels={o}, kernel_size=[{k}, {k}])"
    )
    if groups != 1 and not groups == c == o:
        raise ValueError("only dense (groups=1) and depthwise convolutions are benchmarked")
    depthwise = groups != 1
    if depthwise:
        name = f"depthwise conv2d {c}x{hw}x{hw} k{k}/{stride}"
    else:
        name = f"conv2d {c}x{hw}x{hw} -> {o} k{k}/{stride}"

    def numpy_fn(x: np.ndarray, w: np.ndarray) -> np.ndarray:
        if depthwise:
            return numpy_depthwise(x, w, stride, pad)
        return numpy_models.conv2d(x, w, stride, pad)

    def torch_fn(torch: Any, x: Any, w: Any) -> Any:
        return torch.nn.functional.conv2d(x, w, stride=stride, padding=pad, groups=groups)

    return Kernel(
        name,
        _program([("x", (1, c, hw, hw)), ("w", wshape)], body),
        make,
        numpy_fn,
        torch_fn,
        flops=2.0 * o * oh * oh * (c // groups) * k * k,
        quick=quick,
    )


def softmax_kernel(rows: int, cols: int, quick: bool = False) -> Kernel:
    """nn.softmax over the rows of a (rows, cols) matrix."""
    return Kernel(
        f"softmax {rows}x{cols}",
        _program([("x", (rows, cols))], "nn.softmax(%x, axis=1)"),
        lambda rng: {"x": _normal(rng, (rows, cols))},
        lambda x: numpy_models.softmax(x, axis=1),
        lambda torch, x: torch.softmax(x, dim=1),
        nbytes=2.0 * rows * cols * 4,
        quick=quick,
    )


ELEMENTWISE_SCALE = 1.5
ELEMENTWISE_SHIFT = 0.25


def elementwise_kernel(shape: tuple[int, ...], quick: bool = False) -> Kernel:
    """relu(x * 1.5 + 0.25): one fused kernel reading x once and writing once."""
    a, b = F32(ELEMENTWISE_SCALE), F32(ELEMENTWISE_SHIFT)
    count = math.prod(shape)
    return Kernel(
        f"relu(x*a+b) {count / 2**20:g}M floats"
        if count >= 2**20
        else f"relu(x*a+b) {count} floats",
        _program(
            [("x", shape)],
            f"nn.relu(add(multiply(%x, {ELEMENTWISE_SCALE}f), {ELEMENTWISE_SHIFT}f))",
        ),
        lambda rng: {"x": _normal(rng, shape)},
        lambda x: np.maximum(x * a + b, F32(0)),
        lambda torch, x: torch.relu(x * ELEMENTWISE_SCALE + ELEMENTWISE_SHIFT),
        nbytes=2.0 * count * 4,
        quick=quick,
    )


def numpy_avg_pool(x: np.ndarray, size: int, stride: int, pad: int) -> np.ndarray:
    """NCHW average pooling over the window's in-bounds elements (count_include_pad=False)."""
    spec = [(0, 0), (0, 0), (pad, pad), (pad, pad)]
    sums = sliding_window_view(np.pad(x, spec), (size, size), axis=(2, 3))[:, :, ::stride, ::stride]
    ones = np.pad(np.ones(x.shape[2:], F32), pad)
    counts = sliding_window_view(ones, (size, size))[::stride, ::stride].sum(axis=(2, 3))
    return (sums.sum(axis=(4, 5)) / counts).astype(F32)


def pool_kernel(
    kind: str, c: int, hw: int, size: int, stride: int, pad: int, quick: bool = False
) -> Kernel:
    """nn.max_pool2d or nn.avg_pool2d (count_include_pad=False) of a 1 x c x hw x hw input."""
    oh = out_size(hw, size, stride, pad)
    attrs = f"pool_size=[{size}, {size}], strides=[{stride}, {stride}], padding=[{pad}, {pad}, {pad}, {pad}]"
    if kind not in ("max", "avg"):
        raise ValueError(f"unknown pooling {kind!r}")
    if kind == "max":
        body = f"nn.max_pool2d(%x, {attrs})"
    else:
        body = f"nn.avg_pool2d(%x, {attrs}, count_include_pad=False)"

    def numpy_fn(x: np.ndarray) -> np.ndarray:
        if kind == "max":
            return numpy_models.max_pool(x, size, stride, pad)
        return numpy_avg_pool(x, size, stride, pad)

    def torch_fn(torch: Any, x: Any) -> Any:
        f = torch.nn.functional
        if kind == "max":
            return f.max_pool2d(x, size, stride, pad)
        return f.avg_pool2d(x, size, stride, pad, count_include_pad=False)

    return Kernel(
        f"{kind}_pool2d {c}x{hw}x{hw} {size}x{size}/{stride}",
        _program([("x", (1, c, hw, hw))], body),
        lambda rng: {"x": _normal(rng, (1, c, hw, hw))},
        numpy_fn,
        torch_fn,
        nbytes=4.0 * c * (hw * hw + oh * oh),
        quick=quick,
    )


RESNET18_CONVS: tuple[tuple[int, int, int, int, int, int], ...] = (
    # (input channels, output channels, input size, kernel, stride, padding)
    (3, 64, 224, 7, 2, 3),
    (64, 64, 56, 3, 1, 1),
    (64, 128, 56, 3, 2, 1),
    (64, 128, 56, 1, 2, 0),
    (128, 128, 28, 3, 1, 1),
    (128, 256, 28, 3, 2, 1),
    (128, 256, 28, 1, 2, 0),
    (256, 256, 14, 3, 1, 1),
    (256, 512, 14, 3, 2, 1),
    (256, 512, 14, 1, 2, 0),
    (512, 512, 7, 3, 1, 1),
)
"""Every distinct conv2d of examples/resnet18.relay at batch 1 (the tests check the list)."""
QUICK_CONVS = {(3, 64, 224, 7, 2, 3), (64, 64, 56, 3, 1, 1), (256, 256, 14, 3, 1, 1)}


def kernels() -> list[Kernel]:
    """The single-kernel benchmarks, in the order they run."""
    out = [dense_kernel(1024, 1024, 1024, quick=True)]
    out += [conv2d_kernel(*shape, quick=shape in QUICK_CONVS) for shape in RESNET18_CONVS]
    out.append(conv2d_kernel(32, 32, 112, 3, 1, 1, groups=32, quick=True))
    out.append(softmax_kernel(1000, 1000, quick=True))
    out.append(elementwise_kernel((4096, 4096), quick=True))
    out.append(pool_kernel("max", 64, 112, 3, 2, 1, quick=True))
    out.append(pool_kernel("avg", 64, 112, 3, 2, 1))
    return out


# ---------------------------------------------------------------------------- measuring


@dataclass
class Peers:
    """The optional peers that are installed (None for a missing one)."""

    torch: Any | None
    ort: Any | None


@dataclass
class Machine:
    """The measured peaks."""

    gemm_seconds: float
    copy_seconds: float

    @property
    def gemm_flops(self) -> float:
        """numpy GEMM FLOP/s at GEMM_PEAK_SIZE^3."""
        return 2.0 * GEMM_PEAK_SIZE**3 / self.gemm_seconds

    @property
    def copy_bandwidth(self) -> float:
        """numpy copy bytes/s (read + write)."""
        return 2.0 * COPY_BYTES / self.copy_seconds


def measure_machine(repeat: int) -> Machine:
    """numpy's GEMM speed and copy bandwidth."""
    rng = np.random.default_rng(0)
    a = _normal(rng, (GEMM_PEAK_SIZE, GEMM_PEAK_SIZE))
    b = _normal(rng, (GEMM_PEAK_SIZE, GEMM_PEAK_SIZE))
    c = np.empty_like(a)
    gemm = median_seconds(lambda: np.matmul(a, b, out=c), repeat)
    src = _normal(rng, (COPY_BYTES // 4,))
    dst = np.empty_like(src)
    copy = median_seconds(lambda: np.copyto(dst, src), repeat)
    return Machine(gemm, copy)


@dataclass
class KernelResult:
    """What was measured for one kernel."""

    kernel: Kernel
    built: Built
    relay_seconds: float | None = None
    mode: str | None = None
    relay_err: float | None = None
    peer_seconds: dict[str, float] = field(default_factory=dict)
    peer_err: dict[str, float] = field(default_factory=dict)
    reference: Any = None


def measure_kernel(kernel: Kernel, peers_: Peers, repeat: int, seed: int = 0) -> KernelResult:
    """Build and time one kernel, and time its peers; errors are against numpy's output."""
    inputs = kernel.make_inputs(np.random.default_rng(seed))
    built = build_program(parse_program(kernel.program, f"<{kernel.name}>"))
    result = KernelResult(kernel, built)
    reference = kernel.numpy(**inputs) if kernel.numpy is not None else None
    result.reference = reference
    if built.model is not None:
        try:
            fn, mode = relay_runner(built.model, inputs)
            out = fn()
            # an interpreted kernel is slow: time it, but only once or twice
            result.relay_seconds = median_seconds(fn, repeat if built.native else min(repeat, 2))
            result.mode = mode
            if reference is not None:
                result.relay_err = max_abs_err(out, reference)
        except Exception as exc:
            built.error = f"{type(exc).__name__}: {str(exc).strip()[:200]}"
            built.model = None
    if kernel.numpy is not None:
        result.peer_seconds["numpy"] = median_seconds(lambda: kernel.numpy(**inputs), repeat)
    if peers_.torch is not None and kernel.torch is not None:
        torch = peers_.torch
        tensors = {k: torch.from_numpy(v) for k, v in inputs.items()}
        with torch.inference_mode():
            out = kernel.torch(torch, **tensors)
            result.peer_seconds["torch"] = median_seconds(
                lambda: kernel.torch(torch, **tensors), repeat
            )
        if reference is not None:
            result.peer_err["torch"] = max_abs_err(out.numpy(), reference)
    return result


def kernel_table(results: Sequence[KernelResult], machine: Machine) -> Table:
    """The kernels' table: one row per (kernel, peer)."""
    table = Table(
        (
            "kernel",
            "relay ms",
            "relay rate",
            "of peak",
            "err vs numpy",
            "peer",
            "peer ms",
            "ratio",
            "peer rate",
            "peer err",
        )
    )
    for r in results:
        k = r.kernel
        unit, work, peak = (
            ("GB/s", k.nbytes, machine.copy_bandwidth)
            if k.memory_bound
            else ("GFLOP/s", k.flops, machine.gemm_flops)
        )
        of_peak = (
            f"{work / r.relay_seconds / peak:.0%}" if r.relay_seconds and r.built.native else None
        )
        relay_ms = ms(r.relay_seconds)
        if relay_ms is not None and not r.built.native:
            relay_ms += " (interp)"
        if r.built.model is None:
            relay_ms = "failed"
        peers_seen = list(r.peer_seconds) or [""]
        for i, peer in enumerate(peers_seen):
            first = i == 0
            secs = r.peer_seconds.get(peer)
            table.add(
                k.name if first else "",
                relay_ms if first else "",
                rate(work, r.relay_seconds, unit) if first else "",
                of_peak if first else "",
                error_text(r.relay_err, r.reference) if first else "",
                peer,
                ms(secs),
                ratio(r.relay_seconds, secs),
                rate(work, secs, unit),
                error_text(r.peer_err.get(peer), r.reference) if peer != "numpy" else "(ref)",
            )
    return table


@dataclass
class ModelResult:
    """What was measured for one example model."""

    name: str
    built: Built
    relay_seconds: float | None = None
    entry_seconds: float | None = None
    reference_label: str = "relay"
    peer_seconds: dict[str, float] = field(default_factory=dict)
    peer_err: dict[str, float] = field(default_factory=dict)
    reference: Any = None
    notes: list[str] = field(default_factory=list)


def measure_model(name: str, peers_: Peers, repeat: int, workdir: Path) -> ModelResult:
    """Build and time one example model and its PyTorch and ONNX Runtime versions; peers'
    errors are against relay's output (the interpreter's when relay could not build it)."""
    make_weights = peers.load_make_weights()
    path = make_weights.model_path(name)
    module = make_weights.load_model(path)
    weights = make_weights.make_weights(make_weights.main_parameters(module), seed=0)
    built = build_program(module)
    result = ModelResult(name, built)
    if built.model is not None:
        try:
            args = {k: aligned(v) for k, v in weights.items()}
            result.reference = built.model.run(**args)
            result.relay_seconds = median_seconds(
                lambda: built.model.run(**args), repeat if built.native else min(repeat, 2)
            )
            entry = native_entry(built.model, args)
            if entry is not None and not isinstance(result.reference, tuple):
                got = entry()
                if len(got) == 1 and np.array_equal(got[0], result.reference, equal_nan=True):
                    result.entry_seconds = median_seconds(entry, repeat)
        except Exception as exc:
            built.error = f"{type(exc).__name__}: {str(exc).strip()[:200]}"
            built.model = None
            result.relay_seconds = None
    if result.reference is None:
        result.reference = interpret(module, weights)
        result.reference_label = "interpreter"
    torch = peers_.torch
    if torch is not None:
        forward = peers.TORCH_MODELS[name]
        tensors = peers.torch_tensors(torch, weights)
        with torch.inference_mode():
            out = forward(torch, tensors)
            result.peer_seconds["torch eager"] = median_seconds(
                lambda: forward(torch, tensors), repeat
            )
        result.peer_err["torch eager"] = max_abs_err(out.numpy(), result.reference)
        if peers_.ort is not None:
            try:
                onnx_path = peers.export_onnx(
                    torch,
                    peers.torch_module(torch, name, weights),
                    torch.from_numpy(weights["data"]),
                    workdir / f"{name}.onnx",
                )
                session = peers.onnxruntime_session(peers_.ort, onnx_path)
                data = weights["data"]
                out = peers.run_onnxruntime(session, data)
                result.peer_seconds["onnxruntime"] = median_seconds(
                    lambda: peers.run_onnxruntime(session, data), repeat
                )
                result.peer_err["onnxruntime"] = max_abs_err(out, result.reference)
            except Exception as exc:
                result.notes.append(f"onnxruntime failed: {type(exc).__name__}: {str(exc)[:200]}")
    return result


def model_table(results: Sequence[ModelResult]) -> Table:
    """The models' table: one row per (model, peer)."""
    table = Table(
        ("model", "relay ms", "entry ms", "peer", "peer ms", "ratio", "peer err vs relay")
    )
    for r in results:
        relay_ms = ms(r.relay_seconds)
        if r.built.model is None:
            relay_ms = "failed"
        elif not r.built.native and relay_ms is not None:
            relay_ms += " (interp)"
        peers_seen = list(r.peer_seconds) or [""]
        for i, peer in enumerate(peers_seen):
            first = i == 0
            secs = r.peer_seconds.get(peer)
            err = error_text(r.peer_err.get(peer), r.reference)
            if err is not None and r.reference_label != "relay":
                err += f" (vs {r.reference_label})"
            table.add(
                r.name if first else "",
                relay_ms if first else "",
                ms(r.entry_seconds) if first else "",
                peer,
                ms(secs),
                ratio(r.relay_seconds, secs),
                err,
            )
    return table


def compile_table(results: Sequence[ModelResult]) -> Table:
    """Build times of the models: wall time and relay's own seconds per stage."""
    table = Table(
        ("model", "build s", "stages (s)", "kernels", "interpreted", "workspace", "saved")
    )
    for r in results:
        model = r.built.model
        stats = getattr(model, "stats", None)
        if stats is None:
            table.add(r.name, f"{r.built.seconds:.2f}", r.built.note() or "no stats")
            continue
        stages = " ".join(f"{k}={v:.2f}" for k, v in stats.seconds.items())
        table.add(
            r.name,
            f"{r.built.seconds:.2f}",
            stages,
            stats.kernels,
            stats.fallback_kernels,
            f"{stats.workspace_bytes / 2**20:.1f} MB",
            f"{stats.saved_bytes / 2**20:.1f} MB",
        )
    return table


@contextlib.contextmanager
def relay_threads(n: int) -> Iterator[None]:
    """Run relay's parallel loops on `n` threads inside the block."""
    from relay.backend.codegen.threadpool import get_num_threads, set_num_threads

    before = get_num_threads()
    set_num_threads(n)
    try:
        yield
    finally:
        set_num_threads(before)


def time_threads_in_process(kernel: Kernel, model: Any, repeat: int) -> dict[int, float]:
    """Relay's time for `kernel` on 1 and 2 threads (set_num_threads)."""
    fn, _ = relay_runner(model, kernel.make_inputs(np.random.default_rng(0)))
    times = {}
    for n in (1, 2):
        with relay_threads(n):
            times[n] = median_seconds(fn, repeat)
    return times


def time_threads_subprocess(kernel: Kernel, repeat: int) -> dict[int, float]:
    """Relay's time for `kernel` on 1 and 2 threads, each in a child process with
    RELAY_NUM_THREADS set (when the thread pool has no set_num_threads)."""
    times = {}
    for n in (1, 2):
        env = dict(os.environ, RELAY_NUM_THREADS=str(n))
        command = [sys.executable, __file__, "--time-kernel", kernel.name, "--repeat", str(repeat)]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
        times[n] = float(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])
    return times


def measure_threads(
    names: Sequence[str], built: Mapping[str, KernelResult], repeat: int
) -> list[tuple[str, dict[int, float] | str]]:
    """1 vs 2 threads for the kernels `names` (reusing models built for the kernel table)."""
    by_name = {k.name: k for k in kernels()}
    rows: list[tuple[str, dict[int, float] | str]] = []
    for name in names:
        kernel = by_name[name]
        done = built.get(name)
        model = done.built.model if done is not None and done.built.native else None
        if model is None:
            b = build_program(parse_program(kernel.program, f"<{name}>"))
            if b.model is None or not b.native:
                rows.append((name, b.note() or "not native"))
                continue
            model = b.model
        try:
            times = time_threads_in_process(kernel, model, repeat)
        except ImportError:
            times = time_threads_subprocess(kernel, repeat)
        rows.append((name, times))
    return rows


# ---------------------------------------------------------------------------- report


def floors(
    machine: Machine,
    kernel_results: Mapping[str, KernelResult],
    model_results: Mapping[str, ModelResult],
    thread_rows: Sequence[tuple[str, dict[int, float] | str]],
) -> list[str]:
    """One line per floor of issue 5 that this run measured: the figure and the verdict."""
    lines = []

    def verdict(ok: bool) -> str:
        return "reached" if ok else "NOT reached"

    dense = kernel_results.get("dense 1024x1024x1024")
    if dense is not None and dense.relay_seconds and dense.built.native:
        gflops = dense.kernel.flops / dense.relay_seconds
        numpy_s = dense.peer_seconds.get("numpy")
        same = dense.kernel.flops / numpy_s if numpy_s else None
        against = same if same is not None else machine.gemm_flops
        lines.append(
            f"dense 1024^3 >= 0.5 x numpy GFLOP/s: {gflops / 1e9:.1f} GFLOP/s = "
            f"{gflops / against:.2f} x numpy 1024^3"
            + f", {gflops / machine.gemm_flops:.2f} x numpy {GEMM_PEAK_SIZE}^3 peak: "
            + verdict(gflops >= 0.5 * against)
        )
    chain = next((r for n, r in kernel_results.items() if n.startswith("relu(x*a+b)")), None)
    if chain is not None and chain.relay_seconds and chain.built.native:
        bandwidth = chain.kernel.nbytes / chain.relay_seconds
        lines.append(
            f"elementwise chain >= 0.7 x numpy copy bandwidth: {bandwidth / 1e9:.1f} GB/s = "
            f"{bandwidth / machine.copy_bandwidth:.2f} x: "
            + verdict(bandwidth >= 0.7 * machine.copy_bandwidth)
        )
    resnet = model_results.get("resnet18")
    if resnet is not None:
        ort_s = resnet.peer_seconds.get("onnxruntime")
        if resnet.relay_seconds and resnet.built.native and ort_s:
            lines.append(
                f"ResNet-18 latency <= 2 x ONNX Runtime: {resnet.relay_seconds / ort_s:.2f} x: "
                + verdict(resnet.relay_seconds <= 2 * ort_s)
            )
        if resnet.built.model is not None and resnet.built.native:
            lines.append(
                f"ResNet-18 compiles in < 30 s: {resnet.built.seconds:.1f} s: "
                + verdict(resnet.built.seconds < 30)
            )
    for name, times in thread_rows:
        if isinstance(times, dict):
            speedup = times[1] / times[2]
            lines.append(
                f"2 threads >= 1.7 x 1 thread ({name}): {speedup:.2f} x: " + verdict(speedup >= 1.7)
            )
    return lines


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(
        description="Compiled relay against numpy, PyTorch and ONNX Runtime."
    )
    parser.add_argument("--quick", action="store_true", help="a smaller set, fewer repeats")
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated words: keep the kernels, models and thread runs whose name "
        "contains one of them (e.g. dense,resnet18; also the groups kernels, models, threads)",
    )
    parser.add_argument("--repeat", type=int, help="samples per measurement (default 10, quick 3)")
    parser.add_argument("--list", action="store_true", help="print the benchmark names and exit")
    parser.add_argument("--time-kernel", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.repeat is None:
        args.repeat = 3 if args.quick else 10
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def only_words(only: str) -> list[str]:
    """The lower-cased words of `--only`."""
    return [w.strip().lower() for w in only.split(",") if w.strip()]


def selected(name: str, group: str, words: Sequence[str]) -> bool:
    """Whether an item named `name` in `group` (kernels, models, threads) is kept."""
    if not words:
        return True
    lowered = name.lower()
    return any(w == group or w in lowered for w in words)


@dataclass
class Selection:
    """What one run measures."""

    kernels: list[Kernel]
    models: list[str]
    threads: list[str]


def select(args: argparse.Namespace) -> Selection:
    """The kernels, models and thread runs that `--quick` and `--only` keep."""
    words = only_words(args.only)
    ks = [
        k for k in kernels() if (k.quick or not args.quick) and selected(k.name, "kernels", words)
    ]
    ms_ = [m for m in (QUICK_MODELS if args.quick else MODELS) if selected(m, "models", words)]
    ts = [t for t in THREAD_KERNELS if selected(t, "threads", words)]
    return Selection(ks, ms_, ts)


def print_header(machine: Machine | None, peers_: Peers) -> None:
    """The machine and the versions of everything measured."""
    print(f"CPU: {cpu_name()}, {len(os.sched_getaffinity(0))} cores available")
    print(f"numpy {np.__version__} ({blas_info()})")
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if var in os.environ:
            print(
                f"warning: {var}={os.environ[var]} slows numpy; run with "
                "`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_native.py`"
            )
    if peers_.torch is not None:
        print(f"torch {peers_.torch.__version__}, {peers_.torch.get_num_threads()} threads")
    if peers_.ort is not None:
        print(f"onnxruntime {peers_.ort.__version__}, CPU provider, default threads")
    with contextlib.suppress(Exception):
        from relay.backend.codegen.threadpool import get_num_threads

        print(f"relay: {get_num_threads()} threads")
    if machine is not None:
        print(
            f"numpy GEMM {GEMM_PEAK_SIZE}^3 float32: {machine.gemm_seconds * 1e3:.1f} ms, "
            f"{machine.gemm_flops / 1e9:.1f} GFLOP/s (the compute peak)"
        )
        print(
            f"numpy copy {COPY_BYTES // 2**20} MB: {machine.copy_seconds * 1e3:.2f} ms, "
            f"{machine.copy_bandwidth / 1e9:.1f} GB/s read+write (the memory peak)"
        )


def time_kernel_child(name: str, repeat: int) -> int:
    """`--time-kernel NAME`: print relay's median seconds for one kernel as JSON."""
    kernel = {k.name: k for k in kernels()}[name]
    b = build_program(parse_program(kernel.program, f"<{name}>"))
    if b.model is None:
        print(b.note(), file=sys.stderr)
        return 1
    fn, _ = relay_runner(b.model, kernel.make_inputs(np.random.default_rng(0)))
    print(json.dumps({"seconds": median_seconds(fn, repeat)}))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Measure and print; returns the exit status."""
    args = parse_args(argv)
    if args.time_kernel:
        return time_kernel_child(args.time_kernel, args.repeat)
    selection = select(args)
    if args.list:
        print(
            "kernels:\n"
            + "\n".join(f"  {k.name}" + (" (quick)" if k.quick else "") for k in kernels())
        )
        print(
            "models:\n"
            + "\n".join(f"  {m}" + (" (quick)" if m in QUICK_MODELS else "") for m in MODELS)
        )
        print("threads:\n" + "\n".join(f"  {t}" for t in THREAD_KERNELS))
        return 0
    if not (selection.kernels or selection.models or selection.threads):
        print(f"--only {args.only!r} matches no benchmark (see --list)", file=sys.stderr)
        return 2
    torch = peers.import_torch()
    ort = peers.import_onnxruntime() if torch is not None else None
    if torch is None:
        print("ONNX Runtime is skipped too: its models are exported from the PyTorch versions.")
    peers_ = Peers(torch, ort)
    machine = measure_machine(min(args.repeat, 5))
    print_header(machine, peers_)
    print(f"repeat {args.repeat}{', quick set' if args.quick else ''}")

    kernel_results: dict[str, KernelResult] = {}
    if selection.kernels:
        print("\n== single kernels (ratio = relay ms / peer ms: below 1 relay is faster)")
        for kernel in selection.kernels:
            kernel_results[kernel.name] = measure_kernel(kernel, peers_, args.repeat)
        print(kernel_table(list(kernel_results.values()), machine).render())
        builds = sorted((r.built.seconds, name) for name, r in kernel_results.items())
        print(
            f"kernel builds: {len(builds)} programs in {sum(b for b, _ in builds):.1f} s, "
            f"slowest {builds[-1][1]} ({builds[-1][0]:.2f} s)"
        )
        modes = {r.mode for r in kernel_results.values() if r.mode}
        if "run" in modes:
            print("note: some kernels were timed through .run (no single native entry to call)")
        for r in kernel_results.values():
            note = r.built.note()
            if note:
                print(f"note: {r.kernel.name}: {note}")

    model_results: dict[str, ModelResult] = {}
    if selection.models:
        print(
            "\n== example models, batch 1, float32 (relay ms through .run; entry ms: native entry only)"
        )
        with tempfile.TemporaryDirectory() as tmp:
            for name in selection.models:
                model_results[name] = measure_model(name, peers_, args.repeat, Path(tmp))
        print(model_table(list(model_results.values())).render())
        for r in model_results.values():
            for note in ([r.built.note()] if r.built.note() else []) + r.notes:
                print(f"note: {r.name}: {note}")
        print("\n== compile times (relay.build wall time; relay's own seconds per stage)")
        print(compile_table(list(model_results.values())).render())

    thread_rows: list[tuple[str, dict[int, float] | str]] = []
    if selection.threads:
        print("\n== relay on 1 and 2 threads")
        thread_rows = measure_threads(selection.threads, kernel_results, args.repeat)
        table = Table(("kernel", "1 thread ms", "2 threads ms", "speedup"))
        for name, times in thread_rows:
            if isinstance(times, dict):
                table.add(name, ms(times[1]), ms(times[2]), f"{times[1] / times[2]:.2f}")
            else:
                table.add(name, times)
        print(table.render())

    lines = floors(machine, kernel_results, model_results, thread_rows)
    if lines:
        print("\n== floors of issue 5")
        for line in lines:
            print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
