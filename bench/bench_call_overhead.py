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
"""

from __future__ import annotations

import argparse
import ctypes
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    overhead(args.calls)
    mlp_batch1(args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
