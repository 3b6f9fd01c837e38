"""What one call of a compiled model costs beyond its kernels, and MLP batch 1 against ORT.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_call_overhead.py \\
        [--calls 20000] [--repeat 30]

A one-kernel model (`add` of 16 floats) is called several ways: its native entry function
through ctypes with arguments built once (the floor), `model.run(x)`, `model.run(x=x)` and
`model.run(x, out=buffer)` (all three take `run`'s fast path: numpy arrays exactly as the
model takes them), and the checked path every other call takes (foreign tensors, copies,
diagnostics); the difference is the Python path of a call (argument checks, output
allocation, pointer tables, workspace, the thread count) in microseconds, best of 5 rounds.
Then
examples/mlp.relay at batch 1 with its weights bound runs beside ONNX Runtime (the
`.[bench]` extras) in alternating blocks, as bench_vs_ort.py does; without onnxruntime
that part says how to install it and is skipped.

`--spin [--windows 0,10000,...] [--gaps 0,20,...]` times MLP batch 1 on two threads with
each spin window of the pool's workers (`threadpool.set_spin_ns`, ns) and each gap of caller
work between calls (us), to choose `threadpool.SPIN_NS`. `--gaps-inside
resnet18,transformer_layer,...` traces calls of the example models on two threads and
prints the gaps between consecutive parallel loops of one call (what the window must cover).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_vs_ort
import peers
import relay
from relay.backend.codegen import threadpool
from relay.backend.runtime.native import data_address

TINY = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 16), float32]) { add(%x, 1f) }"""


def per_call_us(fn: Callable[[], Any], calls: int) -> float:
    """Microseconds per call of `fn`: the best of 5 rounds of `calls` calls."""
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def raw_entry(model: Any, x: np.ndarray, out: np.ndarray) -> Callable[[], Any]:
    """The model's native entry called with its four pointer arguments built once."""
    fn = model.library.get(model.entry_name)
    ins = (ctypes.c_void_p * 1)(data_address(x))
    outs = (ctypes.c_void_p * 1)(data_address(out))
    workspace = ctypes.c_void_p(data_address(model._workspace))
    params = model._param_ptrs
    return lambda: fn(ins, outs, params, workspace)


def overhead(calls: int) -> None:
    """Print the floor, `run` and `run(out=)` per call, and the difference."""
    model = relay.build(relay.parse(TINY))
    x = np.ones((1, 16), np.float32)
    out = np.empty((1, 16), np.float32)
    floor = per_call_us(raw_entry(model, x, out), calls)
    plain = per_call_us(lambda: model.run(x), calls)
    named = per_call_us(lambda: model.run(x=x), calls)
    into = per_call_us(lambda: model.run(x, out=out), calls)
    checked = per_call_us(lambda: model._execute((x,), {}, None, None), calls)
    print(f"one-kernel model, {calls} calls, best of 5 (us per call)")
    print(f"  native entry (arguments built once) {floor:8.2f}")
    rows = [
        ("run(x)", plain),
        ("run(x=x)", named),
        ("run(x, out=buffer)", into),
        ("checked path (any other call)", checked),
    ]
    for label, value in rows:
        print(f"  {label:<34} {value:8.2f}   overhead {value - floor:6.2f}")


def mlp_batch1(repeat: int) -> None:
    """MLP batch 1, weights bound, beside ONNX Runtime."""
    torch, ort = peers.import_torch(), peers.import_onnxruntime()
    if torch is None or ort is None:
        return
    import tempfile

    module, weights = bench_vs_ort.load("mlp", 1)
    data = np.ascontiguousarray(weights[bench_vs_ort.INPUT])
    model, _ = bench_vs_ort.build(module, weights, [])
    with tempfile.TemporaryDirectory() as tmp:
        torch_model = peers.torch_module(torch, "mlp", weights)
        path = peers.export_onnx(torch, torch_model, torch.from_numpy(data), Path(tmp) / "m.onnx")
        session = peers.onnxruntime_session(ort, path)
        runs = {
            "relay": lambda: model.run(data=data),
            "onnxruntime": lambda: peers.run_onnxruntime(session, data),
        }
        medians = bench_vs_ort.alternate(runs, repeat * 20)
    relay_us, ort_us = medians["relay"] * 1e6, medians["onnxruntime"] * 1e6
    print(
        f"mlp b1 (threads {threadpool.get_num_threads()}): relay {relay_us:.1f} us, "
        f"onnxruntime {ort_us:.1f} us, ratio {relay_us / ort_us:.2f}"
    )


def spin_window(repeat: int, windows: list[int], gaps: list[int]) -> None:
    """MLP batch 1 (weights bound, two threads: two parallel kernels per call) called with
    `gap` microseconds of caller work between calls, for each spin window of the pool's
    workers: median us per call over `repeat` calls per block, blocks alternating between
    the windows (a window of 0 makes every parallel loop wake its worker)."""
    module, weights = bench_vs_ort.load("mlp", 1)
    data = np.ascontiguousarray(weights[bench_vs_ort.INPUT])
    params = {k: v for k, v in weights.items() if k != bench_vs_ort.INPUT}
    model = relay.build(module, target="llvm -num-threads=2", params=params)
    print("mlp b1, 2 threads: " + "; ".join(k.cost.describe_parallel() for k in model.kernels))
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print(f"{'gap us':>7} " + " ".join(f"{f'spin {w // 1000}us':>12}" for w in windows))
    for gap in gaps:
        times: dict[int, list[float]] = {w: [] for w in windows}
        for _ in range(max(1, repeat // 10)):
            for w in windows:
                threadpool.set_spin_ns(w)
                for k in range(12):
                    until = time.perf_counter() + gap * 1e-6
                    while time.perf_counter() < until:
                        pass
                    start = time.perf_counter()
                    model.run(data=data)
                    if k >= 2:  # the first calls after a change of window settle it
                        times[w].append(time.perf_counter() - start)
        cells = " ".join(f"{statistics.median(times[w]) * 1e6:12.1f}" for w in windows)
        print(f"{gap:>7} {cells}", flush=True)
    threadpool.set_spin_ns(threadpool.SPIN_NS)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def loop_gaps(names: list[str], calls: int) -> None:
    """For each example model built for two threads (weights bound), the pool's trace of
    `calls` calls, one at a time: the gaps between one parallel loop's end and the next
    one's start within a call (what a worker waits there: the spin window must cover it
    for the call not to pay a wake-up per loop), and between calls."""
    import threads as bench_threads

    for name in names:
        module, weights = bench_threads.load(name)
        data = np.ascontiguousarray(weights[bench_vs_ort.INPUT])
        params = {k: v for k, v in weights.items() if k != bench_vs_ort.INPUT}
        model = relay.build(module, target="llvm -num-threads=2", params=params)
        inside: list[float] = []
        between: list[float] = []
        last_end = None
        for _ in range(calls):
            threadpool.start_trace(1 << 16)
            model.run(data=data)
            records, _ = threadpool.stop_trace()
            loops = np.sort(records[records["worker"] < 0], order="start")
            if len(loops) == 0:
                continue
            if last_end is not None:
                between.append((loops["start"][0] - last_end) / 1e3)
            last_end = int(loops["end"][-1])
            inside += ((loops["start"][1:] - loops["end"][:-1]) / 1e3).tolist()
        if not inside:
            print(f"{name:<18} no parallel loops")
            continue
        q = np.percentile(inside, [50, 90, 99, 100])
        print(f"{name:<18} loops/call {len(inside) // calls + 1:>3}; gap inside a call us: "
              f"median {q[0]:.1f} p90 {q[1]:.1f} p99 {q[2]:.1f} max {q[3]:.1f}; "
              f"between calls median {statistics.median(between or [0]):.1f}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--spin", action="store_true", help="measure the spin window")
    parser.add_argument("--windows", default="0,10000,50000,200000,1000000", help="--spin: ns")
    parser.add_argument("--gaps", default="0,20,100,500,2000", help="--spin: us between calls")
    parser.add_argument("--gaps-inside", help="models whose in-call loop gaps to trace")
    args = parser.parse_args()
    if args.gaps_inside:
        loop_gaps(args.gaps_inside.split(","), 20)
        return 0
    if args.spin:
        windows = [int(w) for w in args.windows.split(",")]
        spin_window(args.repeat * 10, windows, [int(g) for g in args.gaps.split(",")])
        return 0
    overhead(args.calls)
    mlp_batch1(args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
