"""Throughput of `CompiledModel.run` called from several Python threads at once.

    python bench/bench_concurrency.py [--seconds S] [--batch N] [--threads 1,2]

An MLP (784 → 512 → 256 → 10, ReLU, softmax; weights bound as constants) is compiled with
`-num-threads=1`, so each call runs on the thread that makes it and parallelism comes only
from concurrent callers. For each caller count the script runs `.run` back to back from
that many Python threads for `--seconds` and prints calls per second, the speed-up over one
caller, and the same with every call behind one lock (how `run` behaved before calls got a
workspace each). Every result is checked against numpy. The machine's other load counts:
run it on an otherwise idle machine for numbers worth quoting.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from collections.abc import Callable

import numpy as np
import relay

MLP = """#[version = "0.0.5"]
def @main(%x: Tensor[({batch}, 784), float32], %w1: Tensor[(512, 784), float32],
          %w2: Tensor[(256, 512), float32], %w3: Tensor[(10, 256), float32]) {{
  %0 = nn.dense(%x, %w1);
  %1 = nn.relu(%0);
  %2 = nn.dense(%1, %w2);
  %3 = nn.relu(%2);
  %4 = nn.dense(%3, %w3);
  nn.softmax(%4)
}}
"""


def weights() -> dict[str, np.ndarray]:
    """Seeded weights of the MLP."""
    rng = np.random.default_rng(0)
    shapes = {"w1": (512, 784), "w2": (256, 512), "w3": (10, 256)}
    return {
        k: (rng.standard_normal(s) / np.sqrt(s[1])).astype("float32") for k, s in shapes.items()
    }


def numpy_mlp(x: np.ndarray, w: dict[str, np.ndarray]) -> np.ndarray:
    """The MLP in numpy (the reference)."""
    h = np.maximum(np.maximum(x @ w["w1"].T, 0) @ w["w2"].T, 0) @ w["w3"].T
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def throughput(
    call: Callable[[np.ndarray], np.ndarray], xs: list[np.ndarray], callers: int, seconds: float
) -> tuple[float, float]:
    """Calls per second of `call` made back to back by `callers` threads for `seconds`,
    and the CPUs the process kept busy meanwhile (CPU time / wall time)."""
    counts = [0] * callers
    stop = threading.Event()
    start = threading.Barrier(callers + 1)

    def worker(k: int) -> None:
        x = xs[k % len(xs)]
        start.wait()
        while not stop.is_set():
            call(x)
            counts[k] += 1

    pool = [threading.Thread(target=worker, args=(k,)) for k in range(callers)]
    for t in pool:
        t.start()
    start.wait()
    began, cpu = time.perf_counter(), time.process_time()
    time.sleep(seconds)
    stop.set()
    for t in pool:
        t.join()
    wall = time.perf_counter() - began
    return sum(counts) / wall, (time.process_time() - cpu) / wall


def main() -> None:
    """Build the MLP, check it, and print the throughput table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement")
    parser.add_argument("--batch", type=int, default=16, help="rows per call (default 16)")
    parser.add_argument("--threads", default="1,2", help="caller counts (default 1,2)")
    args = parser.parse_args()
    callers = [int(n) for n in args.threads.split(",")]
    w = weights()
    model = relay.build(
        relay.parse(MLP.format(batch=args.batch)), target="llvm -num-threads=1", params=w
    )
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((args.batch, 784)).astype("float32") for _ in range(max(callers))]
    for x in xs:
        np.testing.assert_allclose(model.run(x=x), numpy_mlp(x, w), rtol=1e-4, atol=1e-5)
    lock = threading.Lock()

    def serialized(x: np.ndarray) -> np.ndarray:
        with lock:
            return model.run(x=x)

    def concurrent(x: np.ndarray) -> np.ndarray:
        return model.run(x=x)

    print(f"MLP 784-512-256-10, batch {args.batch}, -num-threads=1; {os.cpu_count()} CPUs")
    print(
        f"{'callers':>8} {'calls/s':>10} {'speed-up':>9} {'CPUs busy':>10} "
        f"{'locked calls/s':>15} {'CPUs busy':>10}"
    )
    base = None
    for n in callers:
        rate, busy = throughput(concurrent, xs, n, args.seconds)
        locked, locked_busy = throughput(serialized, xs, n, args.seconds)
        base = base or rate
        print(
            f"{n:>8} {rate:>10.0f} {rate / base:>8.2f}x {busy:>10.2f} "
            f"{locked:>15.0f} {locked_busy:>10.2f}"
        )
    results: list[np.ndarray] = []

    def checked(k: int) -> None:
        for _ in range(50):
            results.append(model.run(x=xs[k]) - numpy_mlp(xs[k], w))

    pool = [threading.Thread(target=checked, args=(k,)) for k in range(max(callers))]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    print(
        f"largest difference from numpy under concurrency: {max(abs(r).max() for r in results):.2e}"
    )


if __name__ == "__main__":
    main()
