"""Time of the opt-level-3 pipeline, pass by pass, on a ResNet-50-sized program and on a
100,000-binding chain.

    python bench/bench_passes.py [--chain 100000] [--form let|graph|both] [--repeat 5]

* ResNet-50 (the generator of `bench_typecheck.py`: graph form, batch norms, 268 weights
  as parameters of @main, 211 bindings); the median of `--repeat` runs per pass.
* A chain of `--chain` bindings on Tensor[(4, 4), float32] cycling through eight steps
  that give every pass of the pipeline work: `add(x, %b)`, `multiply(x, 0.5 + 0.25)`
  (fold-constant), `nn.relu`, `exp`, `multiply(x, 1f)` (simplify-expr), `add(x, %w * %w)`
  (cse shares `%w * %w`), `add(x, zeros)` (simplify-expr), `negative`; written with `let`
  (`--form let`, the default), as one nested dataflow graph (`graph`), or both. One run.

For each program: a table of pass, seconds and share of the total (from
`TimingInstrument`), then the pipeline's wall and CPU time. Absolute figures: there is no
peer to compare against in the same run (TVM is not installable here).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType

import numpy as np
import relay
from relay.lang import (
    Call,
    Expr,
    Function,
    GlobalVar,
    IRModule,
    TensorType,
    Var,
    const,
    get_op,
    let_chain,
)
from relay.passes import PassContext, TimingInstrument, standard_pipeline


def _sibling(name: str) -> ModuleType:
    """Load `bench/<name>.py` (the bench folder is not a package)."""
    path = Path(__file__).with_name(f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


CHAIN_TYPE = TensorType((4, 4), "float32")


def chain_module(n: int, let: bool) -> IRModule:
    """The `n`-binding chain described in the module docstring."""
    x, b, w = Var("x", CHAIN_TYPE), Var("b", CHAIN_TYPE), Var("w", CHAIN_TYPE)
    add, mul = get_op("add"), get_op("multiply")
    relu, exp, neg = get_op("nn.relu"), get_op("exp"), get_op("negative")

    def full(value: float) -> Expr:
        return const(np.full((4, 4), value, "float32"))

    def step(i: int, prev: Expr) -> Expr:
        k = i % 8
        if k == 0:
            return Call(add, (prev, b))
        if k == 1:
            return Call(mul, (prev, Call(add, (full(0.5), full(0.25)))))
        if k == 2:
            return Call(relu, (prev,))
        if k == 3:
            return Call(exp, (prev,))
        if k == 4:
            return Call(mul, (prev, const(np.float32(1.0))))
        if k == 5:
            return Call(add, (prev, Call(mul, (w, w))))
        if k == 6:
            return Call(add, (prev, full(0.0)))
        return Call(neg, (prev,))

    prev: Expr = x
    bindings: list[tuple[Var, Expr]] = []
    for i in range(n):
        value = step(i, prev)
        if let:
            var = Var(f"v{i}")
            bindings.append((var, value))
            prev = var
        else:
            prev = value
    body = let_chain(bindings, prev) if let else prev
    return IRModule({GlobalVar("main"): Function((x, b, w), body, CHAIN_TYPE)})


def run_o3(mod: IRModule) -> tuple[list[tuple[str, float]], float, float]:
    """Run the O3 pipeline on `mod`: per-pass seconds, wall and CPU seconds in total."""
    timing = TimingInstrument()
    wall, cpu = time.perf_counter(), time.process_time()
    with PassContext(opt_level=3, instruments=(timing,)) as ctx:
        standard_pipeline(3)(mod, ctx)
    return timing.times, time.perf_counter() - wall, time.process_time() - cpu


def print_table(label: str, times: list[tuple[str, float]], wall: float, cpu: float) -> None:
    """Pass, seconds, share of the total; then the whole pipeline's wall and CPU time."""
    total = sum(t for _, t in times) or 1.0
    width = max(len("pass"), *(len(name) for name, _ in times))
    print(label)
    print(f"  {'pass':<{width}}  {'seconds':>9}  {'share':>6}")
    for name, t in times:
        print(f"  {name:<{width}}  {t:9.4f}  {100 * t / total:5.1f}%")
    print(f"  {'total':<{width}}  {total:9.4f}  100.0%")
    print(f"  pipeline: {wall:.3f} s wall, {cpu:.3f} s CPU\n")


def median_times(runs: list[list[tuple[str, float]]]) -> list[tuple[str, float]]:
    """Per pass (position), the median over `runs` of its seconds."""
    return [
        (name, statistics.median(run[i][1] for run in runs)) for i, (name, _) in enumerate(runs[0])
    ]


def main() -> None:
    """Run the benchmark and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chain", type=int, default=100_000, help="bindings of the chain")
    parser.add_argument("--form", choices=("let", "graph", "both"), default="let")
    parser.add_argument("--repeat", type=int, default=5, help="runs for ResNet-50 (median)")
    args = parser.parse_args()
    typecheck_bench = _sibling("bench_typecheck")
    resnet = relay.parse(typecheck_bench.resnet50_text(), "resnet50.relay")
    run_o3(chain_module(64, let=True))  # warm up (operator tables, caches) untimed
    runs = [run_o3(resnet) for _ in range(args.repeat)]
    print_table(
        f"resnet50 ({args.repeat} runs, median per pass)",
        median_times([r[0] for r in runs]),
        statistics.median(r[1] for r in runs),
        statistics.median(r[2] for r in runs),
    )
    forms = ("let", "graph") if args.form == "both" else (args.form,)
    for form in forms:
        mod = chain_module(args.chain, let=form == "let")
        print_table(f"chain of {args.chain:,} bindings ({form} form)", *run_o3(mod))


if __name__ == "__main__":
    main()
