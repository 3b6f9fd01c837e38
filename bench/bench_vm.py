"""Programs with control flow: partial evaluation + fusion + the static executor, the VM,
and the interpreter, in one run (issue 13's figures).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python bench/bench_vm.py \\
        [--steps 32] [--repeat 30] [--threads 2] [--loop 20000]

(a) examples/lstm.relay over a static list of `--steps` inputs built in `@main`: built
    with `partial_evaluate=True` (the recursion unfolds, fusion and the static executor
    follow), against the same LSTM written out step by step (straight-line `@main`, no
    list, no recursion), the VM without partial evaluation, and the interpreter; plus the
    time of the `partial-evaluate` pass alone.
(b) examples/treelstm.relay: on its static tree built in `@main` (partial evaluation,
    static executor) and on the same tree given at run time (the VM), against the
    interpreter, and PyTorch eager running the same recursion with the same weights (the
    `.[bench]` extra; the rows are skipped without it), on 1 thread and on `--threads`.
(c) The VM's dispatch cost: a recursive loop of three tiny kernels per iteration over a
    counter, run for `--loop` iterations; the time per executed instruction (instructions
    counted in a separate run over the same bytecode).

Weights are bound as constants (`params=`), as in bench_vs_ort.py. Timings alternate the
variants in blocks and report medians (the machine is shared; see `uptime`).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers
import relay
from relay.backend.runtime import ConstructorValue
from relay.backend.runtime.vm import VMModel
from relay.backend.runtime.vm.executor import Executor

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

LSTM_WEIGHTS = """\
  %weight_ih: Tensor[(512, 64), float32],
  %bias_ih: Tensor[(512), float32],
  %weight_hh: Tensor[(512, 128), float32],
  %bias_hh: Tensor[(512), float32],
"""


def _without_main(text: str) -> str:
    """The program text up to its `def @main` (type definitions and other globals)."""
    return text[: text.index("def @main(")]


def _step_inputs(steps: int) -> str:
    return "".join(f"  %x{i}: Tensor[(1, 64), float32],\n" for i in range(steps))


def lstm_over_list_source(steps: int) -> str:
    """examples/lstm.relay with `@main` building a list of `steps` inputs `%x0`.."""
    items = "".join(f"Cons(%x{i}, " for i in range(steps)) + "Nil" + ")" * steps
    return (
        _without_main((EXAMPLES / "lstm.relay").read_text())
        + f"""def @main(
{_step_inputs(steps)}{LSTM_WEIGHTS}) -> Tensor[(1, 128), float32] {{
  let %sequence = {items};
  let %zeros = zeros(shape=[1, 128], dtype="float32");
  let %final = @lstm(%sequence, (%zeros, %zeros), %weight_ih, %bias_ih, %weight_hh, %bias_hh);
  %final.0
}}
"""
    )


def straight_lstm_source(steps: int) -> str:
    """The same LSTM as `lstm_over_list_source(steps)`, written out step by step in one
    `@main` (no list, no recursion, no globals)."""
    lines = ['#[version = "0.0.5"]', "def @main(", _step_inputs(steps) + LSTM_WEIGHTS.rstrip()]
    lines.append(") -> Tensor[(1, 128), float32] {")
    lines.append('  let %h_0 = zeros(shape=[1, 128], dtype="float32");')
    lines.append("  let %c_0 = %h_0;")
    for i in range(steps):
        h, c, n = f"%h_{i}", f"%c_{i}", i + 1
        lines += [
            f"  let %gates_{i} = split(nn.bias_add(nn.dense(%x{i}, %weight_ih, units=512),"
            f" %bias_ih) + nn.bias_add(nn.dense({h}, %weight_hh, units=512), %bias_hh),"
            " indices_or_sections=4, axis=1);",
            f"  let %c_{n} = sigmoid(%gates_{i}.1) * {c}"
            f" + sigmoid(%gates_{i}.0) * tanh(%gates_{i}.2);",
            f"  let %h_{n} = sigmoid(%gates_{i}.3) * tanh(%c_{n});",
        ]
    lines += [f"  %h_{steps}", "}", ""]
    return "\n".join(lines)


def treelstm_dynamic_source() -> str:
    """examples/treelstm.relay with a `@main` that takes the tree as its input."""
    return (
        _without_main((EXAMPLES / "treelstm.relay").read_text())
        + """def @main(
  %tree: Tree[Tensor[(1, 64), float32]],
  %iou_input_weight: Tensor[(384, 64), float32],
  %iou_hidden_weight: Tensor[(384, 128), float32],
  %iou_bias: Tensor[(384), float32],
  %forget_input_weight: Tensor[(128, 64), float32],
  %forget_hidden_weight: Tensor[(128, 128), float32],
  %forget_bias: Tensor[(128), float32],
) -> Tensor[(1, 128), float32] {
  let %state = @tree_lstm(
    %tree,
    %iou_input_weight, %iou_hidden_weight, %iou_bias,
    %forget_input_weight, %forget_hidden_weight, %forget_bias,
  );
  %state.0
}
"""
    )


TREE_SHAPE: tuple[int, tuple[Any, ...]] = (
    0,
    ((1, ()), (2, ((3, ()), (4, ())))),
)
"""The tree of examples/treelstm.relay's `@main`: (input index, children)."""


def build_tree(mod: relay.IRModule, xs: dict[str, np.ndarray], shape: Any = TREE_SHAPE) -> Any:
    """`shape` as a `Tree` value of `mod` over the inputs `xs["x<i>"]`."""
    cons = {c.name_hint: c for d in mod.type_definitions.values() for c in d.constructors}
    index, children = shape
    items = ConstructorValue(cons["Nil"], ())
    for child in reversed(children):
        items = ConstructorValue(cons["Cons"], (build_tree(mod, xs, child), items))
    return ConstructorValue(cons["Rose"], (xs[f"x{index}"], items))


LOOP_SOURCE = """#[version = "0.0.5"]
def @loop(%n: int32, %acc: Tensor[(1), float32]) -> Tensor[(1), float32] {
  if (equal(%n, 0)) { %acc } else { @loop(subtract(%n, 1), add(%acc, 1f)) }
}
def @main(%n: int32, %acc: Tensor[(1), float32]) -> Tensor[(1), float32] {
  @loop(%n, %acc)
}
"""
"""A loop of three tiny kernels an iteration (compare, decrement, add) and a tail call."""


# ------------------------------------------------------------------------------ timing


def median_ms(runs: dict[str, Callable[[], Any]], repeat: int, block: int = 5) -> dict[str, float]:
    """Median milliseconds per call of each function, calls alternating in blocks."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for fn in runs.values():
        fn()  # warm up
    rounds = max(1, repeat // block)
    for _ in range(rounds):
        for name, fn in runs.items():
            for _ in range(block):
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    return {name: float(np.median(t)) * 1e3 for name, t in times.items()}


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """`fn()` and the seconds it took."""
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def executor_kind(model: Any) -> str:
    """ "aot", "vm" or "interp" for a built model."""
    if isinstance(model, VMModel):
        return "vm"
    return "interp" if type(model).__name__ == "InterpretedModel" else "aot"


def check_close(name: str, expected: Any, got: Any) -> None:
    """Stop the benchmark if a variant disagrees with the interpreter."""
    if not np.allclose(np.asarray(expected), np.asarray(got), rtol=2e-4, atol=2e-5):
        raise SystemExit(f"{name} disagrees with the interpreter")


def weights_for(mod: relay.IRModule, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded inputs of every tensor parameter of `mod`'s `@main` (make_weights.py)."""
    make = peers.load_make_weights()
    return make.make_weights(make.main_parameters(mod), seed=seed)


# ----------------------------------------------------------------------------- part (a)


def bench_lstm(steps: int, repeat: int, target: str) -> None:
    """Part (a): see the module docstring."""
    print(f"(a) LSTM over a static {steps}-step list (hidden 128, input 64, batch 1)")
    listed = relay.parse(lstm_over_list_source(steps))
    straight = relay.parse(straight_lstm_source(steps))
    values = weights_for(listed)
    xs = {k: v for k, v in values.items() if re.fullmatch(r"x\d+", k)}
    weights = {k: v for k, v in values.items() if k not in xs}

    from relay.driver import bind_params, inline_into_main
    from relay.passes.partial_eval import partial_evaluate_module

    bound = inline_into_main(bind_params(listed, weights))
    _, pe_seconds = timed(lambda: partial_evaluate_module(bound))
    pe_model, pe_build = timed(
        lambda: relay.build(listed, target, params=weights, partial_evaluate=True)
    )
    line_model, line_build = timed(lambda: relay.build(straight, target, params=weights))
    vm_model, vm_build = timed(lambda: relay.build(listed, target, params=weights))
    interp = relay.build(listed, "interp", params=weights)
    expected = interp.run(**xs)
    for name, model in (("pe", pe_model), ("straight", line_model), ("vm", vm_model)):
        check_close(name, expected, model.run(**xs))
    ms = median_ms(
        {
            "pe": lambda: pe_model.run(**xs),
            "straight": lambda: line_model.run(**xs),
            "vm": lambda: vm_model.run(**xs),
            "interp": lambda: interp.run(**xs),
        },
        repeat,
    )
    rows = [
        ("PE + fusion", pe_model, ms["pe"], pe_build),
        ("straight-line", line_model, ms["straight"], line_build),
        ("VM (no PE)", vm_model, ms["vm"], vm_build),
        ("interpreter", interp, ms["interp"], 0.0),
    ]
    print(f"  {'variant':<15} {'executor':<8} {'ms':>9} {'build s':>8}")
    for name, model, t, b in rows:
        print(f"  {name:<15} {executor_kind(model):<8} {t:9.3f} {b:8.2f}")
    print(f"  partial-evaluate pass alone: {pe_seconds:.3f} s")
    print(
        f"  PE / straight-line: {ms['pe'] / ms['straight']:.2f}x (goal <= 1.5);  "
        f"interpreter / PE: {ms['interp'] / ms['pe']:.1f}x (goal >= 10)"
    )


# ----------------------------------------------------------------------------- part (b)


def torch_tree_lstm(torch: Any, w: dict[str, Any], tree: Any) -> Any:
    """@tree_lstm of examples/treelstm.relay in PyTorch eager: (h, c) of `tree`, given
    as (input tensor, children)."""
    f = torch.nn.functional
    x, children = tree
    forget_from_input = f.linear(x, w["forget_input_weight"], w["forget_bias"])
    h_sum = torch.zeros(1, 128)
    forgotten_c = torch.zeros(1, 128)
    for child in children:
        child_h, child_c = torch_tree_lstm(torch, w, child)
        forget = torch.sigmoid(forget_from_input + f.linear(child_h, w["forget_hidden_weight"]))
        h_sum = h_sum + child_h
        forgotten_c = forgotten_c + forget * child_c
    iou = f.linear(x, w["iou_input_weight"], w["iou_bias"]) + f.linear(
        h_sum, w["iou_hidden_weight"]
    )
    i, o, u = torch.split(iou, 128, dim=1)
    c = torch.sigmoid(i) * torch.tanh(u) + forgotten_c
    return torch.sigmoid(o) * torch.tanh(c), c


def _torch_tree(torch: Any, xs: dict[str, np.ndarray], shape: Any = TREE_SHAPE) -> Any:
    index, children = shape
    return torch.from_numpy(xs[f"x{index}"]), [_torch_tree(torch, xs, c) for c in children]


def bench_treelstm(repeat: int, target: str, threads: int) -> None:
    """Part (b): see the module docstring."""
    print("(b) TreeLSTM (hidden 128, input 64, the 5-node tree of examples/treelstm.relay)")
    static = relay.parse((EXAMPLES / "treelstm.relay").read_text())
    dynamic = relay.parse(treelstm_dynamic_source())
    values = weights_for(static)
    xs = {k: v for k, v in values.items() if re.fullmatch(r"x\d+", k)}
    weights = {k: v for k, v in values.items() if k not in xs}
    tree = build_tree(dynamic, xs)

    pe_model, pe_build = timed(
        lambda: relay.build(static, target, params=weights, partial_evaluate=True)
    )
    vm_model, vm_build = timed(lambda: relay.build(dynamic, target, params=weights))
    interp_static = relay.build(static, "interp", params=weights)
    interp_dynamic = relay.build(dynamic, "interp", params=weights)
    expected = interp_static.run(**xs)
    check_close("static tree", expected, pe_model.run(**xs))
    check_close("tree at run time", expected, vm_model.run(tree))
    check_close("interpreter on a tree at run time", expected, interp_dynamic.run(tree))
    runs: dict[str, Callable[[], Any]] = {
        "pe": lambda: pe_model.run(**xs),
        "vm": lambda: vm_model.run(tree),
        "interp_static": lambda: interp_static.run(**xs),
        "interp_dynamic": lambda: interp_dynamic.run(tree),
    }
    torch = peers.import_torch()
    torch_threads = sorted({1, threads})
    if torch is not None:
        tw = {k: torch.from_numpy(v) for k, v in weights.items()}
        ttree = _torch_tree(torch, xs)

        def torch_run(count: int) -> Callable[[], Any]:
            def run() -> Any:
                torch.set_num_threads(count)
                with torch.no_grad():
                    return torch_tree_lstm(torch, tw, ttree)[0]

            return run

        for count in torch_threads:
            runs[f"torch{count}"] = torch_run(count)
            check_close("PyTorch", expected, runs[f"torch{count}"]().numpy())
    ms = median_ms(runs, repeat)
    print(f"  {'variant':<24} {'executor':<8} {'ms':>9} {'build s':>8} {'interp/x':>9}")
    rows = [
        ("static tree, PE", executor_kind(pe_model), ms["pe"], pe_build, ms["interp_static"]),
        ("tree at run time", executor_kind(vm_model), ms["vm"], vm_build, ms["interp_dynamic"]),
        ("interpreter, static", "interp", ms["interp_static"], 0.0, ms["interp_static"]),
        ("interpreter, run time", "interp", ms["interp_dynamic"], 0.0, ms["interp_dynamic"]),
    ]
    for count in torch_threads:
        if f"torch{count}" in ms:
            label = f"PyTorch eager, {count} thr"
            rows.append((label, "torch", ms[f"torch{count}"], 0.0, ms["interp_dynamic"]))
    for name, kind, t, b, base in rows:
        print(f"  {name:<24} {kind:<8} {t:9.3f} {b:8.2f} {base / t:9.1f}")
    print("  goal: static and run-time trees >= 5x faster than the interpreter")


# ----------------------------------------------------------------------------- part (c)


class _CountingCode(list):  # type: ignore[type-arg]
    """A function's code that counts the instructions read from it."""

    count = 0

    def __getitem__(self, index: Any) -> Any:
        _CountingCode.count += 1
        return super().__getitem__(index)


class _CountingExecutor(Executor):
    """An executor running the bytecode as compiled (no fused kernel calls), counting
    each instruction it executes."""

    def _code(self, func: int) -> list[Any]:
        code = self._codes[func] = _CountingCode(self.program.functions[func].code)
        return code


def executed_instructions(model: VMModel, args: list[Any]) -> int:
    """How many bytecode instructions `model`'s program executes on `args` (counted in a
    separate run; the executor's fused kernel calls count as the instructions they
    replace)."""
    _CountingCode.count = 0
    _CountingExecutor(model.program, model.library, fuse=False).run(args)
    return _CountingCode.count


def bench_dispatch(iterations: int, repeat: int, target: str) -> None:
    """Part (c): see the module docstring."""
    print(f"(c) VM dispatch: a loop of 3 tiny kernels and a tail call, {iterations} iterations")
    model = relay.build(relay.parse(LOOP_SOURCE), target)
    assert isinstance(model, VMModel), getattr(model, "reason", "")
    n = np.array(iterations, dtype="int32")
    acc = np.zeros(1, dtype="float32")
    got = model.run(n, acc)
    if float(np.asarray(got)[0]) != float(iterations):
        raise SystemExit(f"the loop computed {got}, not {iterations}")
    instructions = executed_instructions(model, [n, acc])
    kernels = model.stats.native_calls
    unfused = Executor(model.program, model.library, fuse=False)
    ms = median_ms(
        {"fused": lambda: model.run(n, acc), "as compiled": lambda: unfused.run([n, acc])},
        max(3, repeat // 3),
        block=1,
    )
    print(f"  {instructions} instructions ({kernels} kernel calls) a run")
    for name, t in (
        ("fused kernel calls", ms["fused"]),
        ("bytecode as compiled", ms["as compiled"]),
    ):
        print(
            f"  {name:<21} {t:8.2f} ms  {t * 1e3 / instructions:.3f} us per instruction, "
            f"{t * 1e3 / iterations:.2f} us per iteration"
        )


def main(argv: list[str] | None = None) -> None:
    """Run the three parts and print their tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=32, help="LSTM steps (default 32)")
    parser.add_argument("--repeat", type=int, default=30, help="timed calls per variant")
    parser.add_argument("--threads", type=int, default=2, help="native threads (default 2)")
    parser.add_argument("--loop", type=int, default=20000, help="iterations of part (c)")
    parser.add_argument("--parts", default="a,b,c", help="which parts to run (default a,b,c)")
    args = parser.parse_args(argv)
    target = f"llvm -num-threads={args.threads}"
    load = os.getloadavg()
    print(f"target {target}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    parts = set(args.parts.split(","))
    if "a" in parts:
        bench_lstm(args.steps, args.repeat, target)
    if "b" in parts:
        bench_treelstm(args.repeat, target, args.threads)
    if "c" in parts:
        bench_dispatch(args.loop, args.repeat, target)


if __name__ == "__main__":
    main()
