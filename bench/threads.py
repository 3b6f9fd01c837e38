"""How the example models scale with threads, and how each kernel's parallel plan balances.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/threads.py \\
        [--models resnet18,mobilenet_v2,transformer_layer,mlp1,mlp64] [--threads 1,2,4] \\
        [--repeat 20]
    python bench/threads.py --balance [--models ...] [--threads 1,2,4,8,16,32,64] [--all]
    python bench/threads.py --grain

Default: each model (weights bound with `params=`; `mlp1`/`mlp64` are the MLP at batch 1 and
64) is built for `llvm -num-threads=N` at N = 1, 2, 4, ... up to the CPUs this process may
use, and timed beside ONNX Runtime with `intra_op_num_threads=N` in one run (blocks of every
thread count of both runtimes alternating, medians): relay ms, ORT ms, their ratio, and
each one's speedup over one thread. Without torch or onnxruntime only relay is timed.

`--balance` needs no big machine and is deterministic: it lowers every kernel of the models
for `-num-threads=N` (no native code) and prints, per kernel with a parallel loop, its work
(weighted inner iterations, `parallel_plan.work_of`) and parallel extent (after fusion) as planned for the most threads, and
at each N the threads used, the tasks and the imbalance (the slowest thread's share over
the mean, worst claiming order); `!` marks a plan above the grain with imbalance over 1/8,
`no loop` a kernel whose schedule made no parallel loop at that N (it runs on one thread).
A kernel with several parallel loops has a row per loop (`name.2`, ...), matched by
position. `--all` also lists loops below the grain at every N.

`--grain [--rounds R]` times an elementwise kernel at sizes around the grain on one and on
two threads (plans forced parallel), R rounds, and prints where two threads start to win in
each round, to check `parallel_plan.GRAIN_WORK / ELEMENT_WEIGHT` (the elementwise grain) on this machine (run it when the machine is
quiet: the load average is printed before and after).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers
import relay
from bench_vs_ort import alternate
from relay.backend.lower import parallel_plan
from relay.backend.target import Target, cpu_count

INPUT = "data"
MODELS = "resnet18,mobilenet_v2,transformer_layer,mlp1,mlp64"


def load(name: str) -> tuple[Any, dict[str, np.ndarray]]:
    """The module and its seed-0 arrays; `mlpB` is the MLP at batch B."""
    make_weights = peers.load_make_weights()
    base = "mlp" if name.startswith("mlp") else name
    text = Path(make_weights.model_path(base)).read_text()
    if base == "mlp":
        batch = int(name[3:] or 1)
        text = text.replace("Tensor[(1, 784), float32]", f"Tensor[({batch}, 784), float32]")
        text = text.replace("Tensor[(1, 10), float32]", f"Tensor[({batch}, 10), float32]")
    module = relay.parse(text)
    return module, make_weights.make_weights(make_weights.main_parameters(module), seed=0)


def thread_counts(text: str | None, top: int) -> list[int]:
    """`1,2,4,...` up to `top` (and `top` itself), or the given list."""
    if text:
        return [int(t) for t in text.split(",")]
    counts = [1]
    while counts[-1] * 2 <= top:
        counts.append(counts[-1] * 2)
    if counts[-1] != top:
        counts.append(top)
    return counts


# ----------------------------------------------------------------------------- balance


def kernel_plans(module: Any, weights: dict[str, np.ndarray], threads: int) -> list[Any]:
    """`(name, ParallelLoop)` for each parallel loop of each kernel of `module` lowered for
    `-num-threads=threads` (weights bound), in kernel order."""
    from relay.backend.build import plan_graph
    from relay.backend.build.compile_plan import lower_kernel
    from relay.backend.build.fold_plan import constant_params
    from relay.backend.lower.cost import describe_kernel
    from relay.driver import bind_params, optimize

    target = Target.parse(f"llvm -num-threads={threads}")
    mod = bind_params(module, {k: v for k, v in weights.items() if k != INPUT})
    optimized = optimize(mod, None, None, target.lanes("float32"))
    plan = plan_graph(optimized.module["main"], optimized.types)
    constants = constant_params(plan)
    found = []
    for k, fn in enumerate(plan.kernels):
        lowered = lower_kernel(fn, optimized.types, k, target, constants.get(k))
        if lowered is None:
            continue
        name = describe_kernel(fn, lowered).name
        for loop in parallel_plan.kernel_plans(lowered.func):
            found.append((f"{name}#{k}", loop))
    return found


def balance(models: list[str], counts: list[int], show_all: bool) -> int:
    """Print the balance report; returns how many (kernel, N) were unbalanced above the
    grain."""
    bad = 0
    print(f"grain {parallel_plan.GRAIN_WORK} (work: weighted inner iterations, "
          f"parallel_plan.work_of); imbalance limit "
          f"{parallel_plan.MAX_IMBALANCE}")  # fmt: skip
    for name in models:
        module, weights = load(name)
        table: dict[str, dict[int, Any]] = {}
        for n in counts:
            seen: dict[str, int] = {}
            for kernel, loop in kernel_plans(module, weights, n):
                seen[kernel] = seen.get(kernel, 0) + 1
                key = kernel if seen[kernel] == 1 else f"{kernel}.{seen[kernel]}"
                table.setdefault(key, {})[n] = loop
        print(f"\n{name}")
        head = "".join(f" {f'N={n}':>18}" for n in counts)
        print(f"{'kernel':<44} {'work':>11} {'extent':>7}{head}")
        for kernel, by_n in table.items():
            last = by_n[max(by_n)]  # work and extent as planned for the most threads
            if all(loop.work < parallel_plan.GRAIN_WORK for loop in by_n.values()) and not show_all:
                continue
            cells = []
            for n in counts:
                loop = by_n.get(n)
                if loop is None:
                    cells.append(f" {'no loop':>18}")
                    continue
                flag = " "
                if loop.work >= parallel_plan.GRAIN_WORK and loop.imbalance > 1.125 + 1e-9:
                    flag, bad = "!", bad + 1
                cells.append(f" {loop.threads:>3}t {loop.tasks:>4}k {loop.imbalance:5.3f}{flag}")
            print(f"{kernel[:44]:<44} {last.work:>11} {last.extent:>7}{''.join(cells)}")
    print(f"\n{bad} kernel plans above the grain with imbalance over 1/8 "
          "(cells: threads t, tasks k, imbalance)")  # fmt: skip
    return bad


# ----------------------------------------------------------------------------- speed


def speed(models: list[str], counts: list[int], repeat: int) -> None:
    """Time each model at each thread count beside ONNX Runtime (module docstring)."""
    torch, ort = peers.import_torch(quiet=True), peers.import_onnxruntime(quiet=True)
    with_ort = torch is not None and ort is not None
    print(f"CPUs {cpu_count()}; threads {counts}; onnxruntime "
          f"{ort.__version__ if with_ort else 'not installed'}")  # fmt: skip
    print(f"{'model':<18} {'N':>3} {'relay ms':>9} {'ORT ms':>8} {'ratio':>6} "
          f"{'relay x':>8} {'ORT x':>6}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for name in models:
            module, weights = load(name)
            data = np.ascontiguousarray(weights[INPUT])
            params = {k: v for k, v in weights.items() if k != INPUT}
            path = None
            if with_ort:
                base = "mlp" if name.startswith("mlp") else name
                tm = peers.torch_module(torch, base, weights)
                path = peers.export_onnx(torch, tm, torch.from_numpy(data), Path(tmp) / "m.onnx")
            runs: dict[str, Callable[[], Any]] = {}
            for n in counts:
                model = relay.build(module, target=f"llvm -num-threads={n}", params=params)
                runs[f"relay{n}"] = lambda m=model, x=data: m.run(data=x)
                if path is not None:
                    options = ort.SessionOptions()
                    options.intra_op_num_threads = n
                    session = ort.InferenceSession(
                        str(path), options, providers=["CPUExecutionProvider"]
                    )
                    runs[f"ort{n}"] = lambda s=session, x=data: peers.run_onnxruntime(s, x)
            # every thread count of both runtimes in one alternation: the ratios at
            # different counts are taken under the same load
            got = alternate(runs, repeat, settle_s=0.05)
            for n in counts:
                r, o = got[f"relay{n}"], got.get(f"ort{n}")
                ort_ms = f"{o * 1e3:8.3f}" if o else f"{'-':>8}"
                ratio = f"{r / o:6.2f}" if o else f"{'-':>6}"
                ort_x = f"{got[f'ort{counts[0]}'] / o:6.2f}" if o else f"{'-':>6}"
                print(f"{name:<18} {n:>3} {r * 1e3:9.3f} {ort_ms} {ratio} "
                      f"{got[f'relay{counts[0]}'] / r:8.2f} {ort_x}", flush=True)  # fmt: skip
            print(f"  load average {os.getloadavg()[0]:.2f}", flush=True)


# ----------------------------------------------------------------------------- grain


def grain(repeat: int, rounds: int) -> None:
    """Time `(x + y) * x` over n elements on one and two threads, plans forced parallel,
    `rounds` times; print each round's speedups and where two threads start to win (the
    least size from which every larger size is at least 5% faster on two threads)."""
    from relay.backend.lower.schedules import injective

    modelled = parallel_plan._grain()
    # every loop parallel on two threads in two tasks (the cheapest parallel plan): no grain,
    # and a model in which threads and tasks cost nothing
    parallel_plan.GRAIN_WORK = 1
    injective.MIN_ELEMENTS = 1  # type: ignore[attr-defined]
    for name in ("SYNC_NS", "THREAD_NS", "TASK_NS", "LATE_TASK"):
        setattr(parallel_plan, name, 0.0)
    sizes = [4096 * 2**k for k in range(9)]
    models, data = {}, {}
    for n in sizes:
        text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[({n},), float32], %y: Tensor[({n},), float32]) {{
  multiply(add(%x, %y), %x)
}}"""
        module = relay.parse(text)
        data[n] = (np.random.rand(n).astype("float32"), np.random.rand(n).astype("float32"))
        models[n] = {t: relay.build(module, target=f"llvm -num-threads={t}") for t in (1, 2)}
        for t, model in models[n].items():
            print(f"{n:>9} elements, {t} thread(s): "
                  + "; ".join(k.cost.describe_parallel() for k in model.kernels if k.cost))  # fmt: skip
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print(f"{'elements':>9} " + " ".join(f"{'round ' + str(r + 1):>16}" for r in range(rounds)))
    speedups: dict[int, list[float]] = {n: [] for n in sizes}
    times: dict[int, list[tuple[float, float]]] = {n: [] for n in sizes}
    for _ in range(rounds):
        for n in sizes:
            x, y = data[n]
            runs = {t: (lambda m=m, x=x, y=y: m.run(x, y)) for t, m in models[n].items()}
            got = alternate(runs, repeat, settle_s=0.05)
            times[n].append((got[1], got[2]))
            speedups[n].append(got[1] / got[2])
    for n in sizes:
        cells = " ".join(f"{a * 1e6:7.1f}/{b * 1e6:6.1f}us" for a, b in times[n])
        print(f"{n:>9} {cells}   speedup " + " ".join(f"{v:.2f}" for v in speedups[n]))
    for r in range(rounds):
        wins = [speedups[n][r] >= 1.05 for n in sizes]
        crossing = next((n for k, n in enumerate(sizes) if all(wins[k:])), None)
        print(f"round {r + 1}: two threads win from {crossing} elements")
    weight = parallel_plan.ELEMENT_WEIGHT
    print(f"load average after: {os.getloadavg()[0]:.2f}; the model's grain: {modelled} "
          f"(elementwise, weight {weight}: {-(-modelled // weight)} elements)")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=MODELS)
    parser.add_argument("--threads", help="comma-separated thread counts")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--balance", action="store_true", help="the balance report")
    parser.add_argument("--all", action="store_true", help="--balance: kernels below the grain")
    parser.add_argument("--grain", action="store_true", help="measure the grain")
    parser.add_argument("--rounds", type=int, default=3, help="--grain: measurement rounds")
    args = parser.parse_args()
    models = args.models.split(",")
    if args.grain:
        grain(args.repeat, args.rounds)
        return 0
    if args.balance:
        balance(models, thread_counts(args.threads, 64), args.all)
        return 0
    speed(models, thread_counts(args.threads, len(os.sched_getaffinity(0))), args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
