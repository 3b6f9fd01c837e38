"""The `relay` command line: `relay check FILE`, `relay fmt FILE`, `relay run FILE`,
`relay build FILE`, `relay opt FILE`.

Exit status: 0 on success, 1 on a diagnosed user error (message on stderr), 2 on bad
usage, 3 on an internal error (a bug: please report it; set RELAY_DEBUG=1 for the
traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .lang.diagnostics import Error

EXIT_OK, EXIT_USER_ERROR, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class _UsageError(Exception):
    """Bad command-line usage detected after argument parsing."""


def _read_source(path: str) -> tuple[str, str]:
    """The text of `path` ('-' is standard input) and the name diagnostics use for it."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read(), path
    except FileNotFoundError:
        raise Error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise Error(f"{path}: is a directory, not a .relay file") from None
    except UnicodeDecodeError as exc:
        raise Error(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise Error(f"{path}: cannot read ({exc.strerror})") from None


def _parse_module(path: str, strict: bool = False):  # type: ignore[no-untyped-def]
    """The module in `path` and its text; warnings (a missing version header) go to stderr,
    or are errors with `strict` (`--strict`)."""
    from .grammar import parse

    text, name = _read_source(path)
    return parse(text, name, strict=strict, on_warning=_print_warning), text


def _print_warning(diagnostic: Any) -> None:
    """A warning diagnostic on stderr (`file:line:col: warning: ...`, the line, notes)."""
    print(diagnostic.render(), file=sys.stderr)


STRICT_HELP = 'treat warnings as errors (e.g. a missing #[version = "0.0.5"] header)'


def cmd_check(args: argparse.Namespace) -> int:
    """Parse (and, where available, type-check) a file; print each global's signature."""
    module, _ = _parse_module(args.file, args.strict)
    from .lang.printer import print_type

    signatures = _global_signatures(module)
    for name in sorted(signatures):
        print(f"@{name}: {print_type(signatures[name]) if signatures[name] else 'fn'}")
    for adt in sorted(g.name_hint for g in module.type_definitions):
        print(f"type {adt}")
    print(f"{args.file}: ok", file=sys.stderr)
    return EXIT_OK


def _global_signatures(module):  # type: ignore[no-untyped-def]
    """Each global's type: inferred when the type checker is available, else annotated."""
    try:
        from .typecheck import check_module
    except ImportError:
        check_module = None
    if check_module is not None:
        types = check_module(module)
        for warning in types.warnings:
            print(warning.render(), file=sys.stderr)
        return dict(types.global_types)
    from .lang.types import FuncType

    result = {}
    for gv, fn in module.functions.items():
        annotated = all(p.type_annotation is not None for p in fn.params) and fn.ret_type
        result[gv.name_hint] = (
            FuncType([p.type_annotation for p in fn.params], fn.ret_type, fn.type_params)
            if annotated
            else None
        )
    return result


def cmd_fmt(args: argparse.Namespace) -> int:
    """Print the canonical form of a file (or check / rewrite it in place)."""
    from .grammar.prelude import strip_prelude

    module, original = _parse_module(args.file, args.strict)
    text = strip_prelude(module).astext()  # the program as written, not the prelude it uses
    if args.check:
        if text != original:
            print(f"{args.file}: not in canonical form", file=sys.stderr)
            return EXIT_USER_ERROR
        return EXIT_OK
    if args.in_place:
        if args.file == "-":
            raise _UsageError("--in-place needs a file, not standard input")
        with open(args.file, "w", encoding="utf-8") as handle:
            handle.write(text)
        return EXIT_OK
    sys.stdout.write(text)
    return EXIT_OK


def _load_runnable(args: argparse.Namespace) -> tuple[Any, dict[str, Any], str]:
    """The model to run (built from a .relay file for `--target`, or a saved .relaymod), its
    inputs, and a line saying how it was built."""
    import time

    from .driver import default_target, threads_from_environment
    from .runio import complete_inputs, load_inputs, random_inputs_for_slots

    given = load_inputs(args.inputs) if args.inputs else {}
    fill: dict[str, Any] = {"seed": args.seed, "strict": args.strict_inputs}
    fill["warn"] = _print_warning  # each parameter filled with random data: a warning
    if args.file.endswith(".relaymod"):
        from .backend.build.vm_artifact import load_model

        threads = threads_from_environment()
        if "-num-threads=" in args.target:
            threads = default_target(args.target).num_threads
        start = time.perf_counter()
        model = load_model(args.file, num_threads=threads)
        took = (time.perf_counter() - start) * 1e3
        if getattr(model, "plan", None) is None:  # a VM model: inputs named by @main
            loaded_inputs = complete_inputs(model.main, given, **fill)
            return model, loaded_inputs, f"loaded {args.file} in {took:.1f} ms, run by the VM"
        loaded_inputs = random_inputs_for_slots(model, given, **fill)
        return model, loaded_inputs, f"loaded {args.file} in {took:.1f} ms"
    from .driver import build

    target = default_target(args.target)
    module, _ = _parse_module(args.file, args.strict)
    signatures = _global_signatures(module)  # type errors are reported before running
    if "main" not in module:
        raise Error(f"{args.file}: the module has no @main function to run")
    signature = signatures.get("main")
    types = getattr(signature, "arg_types", None)
    inputs: dict[str, Any] = complete_inputs(module["main"], given, types=types, **fill)
    start = time.perf_counter()
    built = build(module, target=target)
    took = time.perf_counter() - start
    stats = getattr(built, "stats", None)
    if target.kind == "interp":
        how = "target interp"
    elif getattr(stats, "executor", None) == "vm":
        dynamic = "dynamic shape" in getattr(built, "reason", "")
        why = "dynamic shapes" if dynamic else "control flow"
        how = f"target {target}, compiled in {took:.2f} s, run by the VM ({why})"
    elif built.native:
        how = f"target {target}, compiled in {took:.2f} s"
    else:
        how = f"target {target}, running in the interpreter: {getattr(built, 'reason', '')}"
    return built, inputs, how


def cmd_run(args: argparse.Namespace) -> int:
    """Run `@main` on inputs from `--inputs` (the rest seeded random), print and save the result."""
    import time

    import numpy as np

    from .backend.runtime import format_value
    from .runio import flatten_outputs, scalar_text, summarize

    model, inputs, how = _load_runnable(args)
    start = time.perf_counter()
    result = model.run(**inputs)
    timings = [time.perf_counter() - start]
    for _ in range(max(0, args.repeat - 1) if args.bench else 0):
        start = time.perf_counter()
        model.run(**inputs)
        timings.append(time.perf_counter() - start)
    try:
        outputs = flatten_outputs(result)
    except Error:
        if args.output:  # only tensors and tuples of tensors can be saved
            raise
        outputs = {}
        print(f"out: {format_value(result)}")
    for key, array in outputs.items():
        if array.ndim == 0:
            print(f"{key}: {scalar_text(array)}")
            continue
        print(f"{key}: {format_value(array)}")
        print(f"  {summarize(array)}")
    median = float(np.median(timings)) * 1e3
    runs = f" (median of {len(timings)} runs)" if len(timings) > 1 else ""
    print(f"time: {median:.2f} ms{runs}; {how}")
    if args.output:
        np.savez(args.output, **outputs)  # type: ignore[arg-type]
    if args.profile or args.trace or args.profile_json:
        _profile(args, model, inputs)
    return EXIT_OK


def _profile(args: argparse.Namespace, model: Any, inputs: dict[str, Any]) -> None:
    """`relay run --profile`: profile the model on the same inputs and print the report."""
    import json
    import os

    from .backend.profile.run import profile_model

    if args.repeat < 1:
        raise _UsageError(f"--repeat must be at least 1, got {args.repeat}")
    if args.top is not None and args.top < 1:
        raise _UsageError(f"--top must be at least 1, got {args.top}")
    if not hasattr(model, "run_profiled"):
        reason = getattr(model, "reason", "") or "the target is the interpreter"
        vm = getattr(getattr(model, "stats", None), "executor", None) == "vm"
        runs = "the VM" if vm else "the interpreter"
        raise Error(
            f"--profile needs a statically planned model; this one runs in {runs} ({reason})"
        )
    name = os.path.splitext(os.path.basename(args.file))[0] or "model"
    profile = profile_model(model, (), inputs, repeat=args.repeat, name=name)
    print()
    print(profile.table(sort=args.sort, top=args.top))
    if args.profile_json:
        with open(args.profile_json, "w", encoding="utf-8") as handle:
            json.dump(profile.json(sort=args.sort), handle, indent=1)
        print(f"profile written to {args.profile_json}")
    if args.trace:
        profile.write_trace(args.trace)
        print(f"trace written to {args.trace} (open it in https://ui.perfetto.dev)")


DUMP_STAGES = ("relay", "te", "tir", "llvm", "asm")


def _target_text(text: str) -> str:
    """`--target`'s value, checked: a malformed target string is bad usage (exit 2)."""
    from .backend.target import Target

    try:
        Target.parse(text)
    except Error as error:
        raise argparse.ArgumentTypeError(error.message) from None
    return text


TARGET_ARGUMENT = {
    "type": _target_text,
    "default": "llvm",
    "metavar": "TARGET",
    "help": "target string: `llvm` (default; options such as -mcpu=NAME, -mattr=+f,-g, "
    "-num-threads=N) or `interp`",
}


def cmd_build(args: argparse.Namespace) -> int:
    """Compile a file to a `.relaymod` artifact that `relay run` loads without recompiling."""
    import time

    from .driver import InterpretedModel, build, default_target

    target = default_target(args.target)
    module, _ = _parse_module(args.file, args.strict)
    _global_signatures(module)
    from .runio import load_inputs

    params = load_inputs(args.params) if args.params else None
    # recording the stages' text compiles in this process: only when --dump asks for it
    dump: dict[str, Any] | None = {} if args.dump else None
    start = time.perf_counter()
    model = build(
        module, target=target, opt_level=args.opt_level, params=params, dump=dump,
        tuning_log=args.tuning_log,
    )  # fmt: skip
    took = time.perf_counter() - start
    if isinstance(model, InterpretedModel):
        raise Error(f"{args.file}: cannot be compiled to native code: {model.reason}")
    output = args.output or os.path.splitext(args.file)[0] + ".relaymod"
    model.save(output)
    stats = model.stats
    print(
        f"wrote {output}: {stats.kernels} kernels ({stats.fallback_kernels} interpreted), "
        f"workspace {stats.workspace_bytes / 1e6:.2f} MB ({stats.saved_bytes / 1e6:.2f} MB saved "
        f"by memory planning), compiled in {took:.2f} s"
    )
    if args.verbose:
        print(f"target: {model.target}")
        for kernel in getattr(model, "kernels", ()):
            if kernel.cost is not None:
                print(f"  {kernel.cost.name}: {kernel.cost.describe_parallel()}")
    if args.timings:
        from .driver import stage_report

        print(stage_report(stats.seconds, took))
    for stage in args.dump or []:
        text = dump.get(stage) if dump is not None else None
        if text is None:
            raise Error(f"--dump {stage}: nothing was recorded for this stage")
        path = f"{output}.{stage}.txt"
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        print(f"wrote {path}")
    return EXIT_OK


def cmd_tune(args: argparse.Namespace) -> int:
    """Tune the schedules of a model's kernels, appending measurements to a log (`relay
    build --tuning-log LOG` applies the best); `--executor` says where configs are measured."""
    from .backend.tune.executors import make_executor
    from .driver import default_target
    from .runio import load_inputs

    if args.trials < 0:
        raise _UsageError("--trials must be at least 0")
    if args.time_budget is not None and not args.time_budget > 0:
        raise _UsageError("--time-budget must be a positive number of minutes")
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise Error(
                "--plot needs matplotlib, which is not installed: "
                "pip install 'relay-lang[tune]' (or matplotlib)"
            ) from None
    target = default_target(args.target)
    module, _ = _parse_module(args.file, args.strict)
    _global_signatures(module)
    params = load_inputs(args.params) if args.params else None
    # One worker by default: with local:2 on 2 cores the first config of many tasks (the
    # default) was timed 2-4x slower than it runs in a model (the lock protocol leaks).
    spec = args.executor or "local"
    with make_executor(spec) as executor:
        return _tune_with(args, module, params, target, executor)


def _tune_with(
    args: argparse.Namespace, module: Any, params: Any, target: Any, executor: Any
) -> int:
    """`relay tune`'s work once the model is read and the executor connected."""
    from .backend.tune.measure import MeasureOptions
    from .backend.tune.tuner import GUIDED, plot_log, tune
    from .tuning import extract_tasks

    tasks = extract_tasks(module, params, target)
    tuned = [t for t in tasks if t.space.size > 1]
    print(f"{len(tasks)} kernels, {len(tuned)} with knobs to tune", file=sys.stderr)
    if not GUIDED:
        print("the cost model and search are missing: proposing random configs", file=sys.stderr)
    options = MeasureOptions(
        number=args.number, repeat=args.repeat, min_repeat_ms=args.min_repeat_ms,
        warmup_ms=args.warmup_ms, timeout=args.timeout, clock=args.clock,
    )  # fmt: skip
    summary = tune(
        tasks, args.log, args.trials, model=args.model, batch=args.batch, options=options,
        seed=args.seed, progress=not args.no_progress, executor=executor,
        time_budget=args.time_budget * 60 if args.time_budget is not None else None,
    )  # fmt: skip
    for note in summary.notes:
        print(note, file=sys.stderr)
    for key, p in summary.tasks.items():
        default = p.measured.get(p.task.space.default())
        best = p.best()
        if not p.measured:
            print(f"{key}: not measured (the trials went to the other kernels)")
            continue
        if best is None:
            print(f"{key}: no working config ({p.errors} errors)")
            continue
        again = summary.confirmed.get(key)
        if again is not None:
            speedup = f", {again[0] / again[1]:.2f}x the default (both timed again side by side)"
        else:
            speedup = f", {default / best[1]:.2f}x the default" if default else ""
        print(
            f"{key} x{p.task.weight}: {best[1] * 1e6:.1f} us, {p.gflops():.1f} GFLOP/s{speedup} "
            f"[{best[0]}] ({len(p.measured)} trials, {p.errors} errors)"
        )
    print(
        f"measured {summary.measured} configs in {summary.seconds:.1f} s (measuring "
        f"{summary.measure_seconds:.1f} s, searching {summary.search_seconds:.1f} s); "
        f"log: {args.log} (apply with: relay build {args.file} --tuning-log {args.log})"
    )
    if args.plot:
        curves = plot_log(args.log, args.plot)
        print(f"wrote {args.plot} ({curves} curves)")
    return EXIT_OK


CALIBRATE_MODES = {"global_scale": "global_scale", "kl": "kl_divergence",
                   "kl_divergence": "kl_divergence", "percentile": "percentile"}  # fmt: skip
"""`relay quantize --mode` values and the `calibrate_mode` each one means."""


def _read_npz(path: str, what: str) -> dict[str, Any]:
    """The arrays of an `.npz` file (an Error naming `what` if it cannot be read)."""
    import zipfile

    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except FileNotFoundError:
        raise Error(f"{path}: no such {what} file") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise Error(f"{path}: not a readable .npz {what} file ({exc})") from None


def calibration_batches(path: str, main: Any, bound: bool = True) -> list[dict[str, Any]]:
    """The batches of a calibration `.npz`: one key per input of `main` (its parameters),
    each array either one batch (the input's shape) or a stack of batches (one more
    leading axis); every key must give the same number of batches. `bound`: whether
    weights were bound (else a missing key hints at --params)."""
    from .lang.types import TensorType

    arrays = _read_npz(path, "calibration")
    names = [p.name_hint for p in main.params]
    missing = [n for n in names if n not in arrays]
    unexpected = [k for k in arrays if k not in names]
    if missing or unexpected:
        parts = [f"missing {', '.join(missing)}"] if missing else []
        parts += [f"unexpected {', '.join(unexpected)}"] if unexpected else []
        hint = "; weights must come from --params W.npz" if missing and not bound else ""
        raise Error(
            f"{path}: {'; '.join(parts)} (the model's inputs are "
            f"{', '.join(names) or 'none'}{hint})"
        )
    stacks: dict[str, Any] = {}
    for param in main.params:
        array, ty = arrays[param.name_hint], param.type_annotation
        shape = tuple(ty.shape) if isinstance(ty, TensorType) else None
        if shape is not None and array.shape == shape:
            stacks[param.name_hint] = array[None]
        elif shape is None or array.shape[1:] == shape:
            stacks[param.name_hint] = array
        else:
            raise Error(
                f"{path}: `{param.name_hint}` has shape {array.shape}; the input's shape is "
                f"{shape} (one batch) or (N, {', '.join(map(str, shape))}) for N batches"
            )
    counts = {len(v) for v in stacks.values()}
    if len(counts) > 1:
        raise Error(f"{path}: the arrays hold different numbers of batches ({sorted(counts)})")
    if counts == {0}:
        raise Error(f"{path}: the calibration set is empty")
    count = counts.pop() if counts else 0
    return [{k: v[i] for k, v in stacks.items()} for i in range(count)]


def cmd_quantize(args: argparse.Namespace) -> int:
    """Quantize a model to int8 and write the realized (or simulated) program."""
    import numpy as np

    from .quantize import prerequisite_optimize, qconfig, quantize_with_report, split_params

    module, _ = _parse_module(args.file, args.strict)
    params = _read_npz(args.params, "params") if args.params else None
    mode = CALIBRATE_MODES[args.mode]
    dataset = None
    if args.calib:
        main = prerequisite_optimize(module, params)["main"]
        dataset = calibration_batches(args.calib, main, bound=params is not None)
    elif mode != "global_scale":
        raise _UsageError(f"--mode {args.mode} needs calibration data (--calib data.npz)")
    total = len(dataset) if dataset is not None else 0

    def progress(done: int) -> None:
        end = "\n" if done == total else ""
        print(f"\rcalibrating: batch {done}/{total}", end=end, file=sys.stderr, flush=True)

    options: dict[str, Any] = {"calibrate_mode": mode, "weight_scale": args.weight_scale}
    options["do_simulation"] = args.simulate
    if args.skip_conv_layers is not None:
        options["skip_conv_layers"] = [int(v) for v in args.skip_conv_layers.split(",") if v]
    if args.quantize_dense:
        options["skip_dense_layer"] = False
    options["per_channel"] = args.per_channel
    options["bias_mode"] = args.bias_mode
    if args.bias_correction:
        if dataset is None:
            raise _UsageError("--bias-correction needs calibration data (--calib data.npz)")
        options["bias_correction"] = True
    with qconfig(**options):
        quantized, report = quantize_with_report(module, params, dataset, progress=progress)
    if args.params_out:
        quantized, weights = split_params(quantized)
        np.savez(args.params_out, **weights)  # type: ignore[arg-type]
    text = quantized.astext()
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
    points = ", ".join(f"{n} {k}" for k, n in sorted(report.points.items())) or "none"
    print(f"quantize points: {points}", file=sys.stderr)
    if report.float_ops:
        left = ", ".join(f"{k} ({n})" for k, n in sorted(report.float_ops.items()))
        print(f"left in float (no quantize rule): {left}", file=sys.stderr)
    return EXIT_OK


def cmd_opt(args: argparse.Namespace) -> int:
    """Optimize a file with a standard pipeline (`-O N`) or `--passes`; print the result."""
    from .grammar.prelude import strip_prelude
    from .opttools import bisect_report, load_passes, pass_table
    from .passes import (
        PASSES,
        STANDARD_PIPELINES,
        PassContext,
        PassInstrument,
        PrintIR,
        TimingInstrument,
        get_pass,
        parse_pipeline,
        standard_pipeline,
    )

    for spec in args.load:
        load_passes(spec)
    if args.list_passes:
        print(pass_table())
        return EXIT_OK
    if args.file is None:
        raise _UsageError("opt needs a file (or --list-passes)")
    module, _ = _parse_module(args.file, args.strict)
    _global_signatures(module)  # type errors are reported before any pass runs
    if args.explain_pattern is not None:
        from .passes.pattern import explain_report
        from .pattern_text import parse_pattern

        print(explain_report(parse_pattern(args.explain_pattern), strip_prelude(module)))
        return EXIT_OK
    level = args.opt_level if args.opt_level is not None else (3 if args.passes else 2)
    if args.passes is not None:
        pipeline = parse_pipeline(args.passes)
        chosen = tuple(dict.fromkeys(p.name for p in pipeline.passes))  # run what was asked
    else:
        missing = [n for n in _pipeline_names(STANDARD_PIPELINES[level]) if n not in PASSES]
        if missing:
            raise Error(
                f"the opt level {level} pipeline needs passes that are not available yet: "
                + ", ".join(dict.fromkeys(missing))
            )
        pipeline, chosen = standard_pipeline(level), ()
    instruments: list[PassInstrument] = []
    if args.print_after:
        for name in args.print_after:
            get_pass(name)  # an unknown name is an error, not silence
        instruments.append(PrintIR(args.print_after, after=True))
    timing = TimingInstrument() if args.timing else None
    if timing is not None:
        instruments.append(timing)
    ctx = PassContext(
        opt_level=level,
        required_pass=chosen,
        instruments=instruments,  # type: ignore[arg-type]  # attrs converter=tuple
        debug=args.debug,
    )
    if args.bisect:
        from .runio import complete_inputs, load_inputs

        if "main" not in module:
            raise Error(f"{args.file}: --bisect runs @main, and the module has none")
        given = load_inputs(args.inputs) if args.inputs else {}
        inputs = complete_inputs(module["main"], given, seed=args.seed)
        with ctx:
            report, found = bisect_report(module, pipeline, inputs, ctx)
        sys.stdout.write(report)
        return EXIT_USER_ERROR if found else EXIT_OK
    with ctx, _pass_notes(args.debug):
        result = pipeline(module, ctx)
    if timing is not None:
        print(timing.report(), file=sys.stderr)
    sys.stdout.write(strip_prelude(result).astext())
    return EXIT_OK


@contextlib.contextmanager
def _pass_notes(show: bool) -> Iterator[None]:
    """While active (if `show`), what passes log about their choices (e.g. operators
    `alter-op-layout` left unpacked for lack of a layout rule) goes to stderr as
    `note: ...` lines."""
    if not show:
        yield
        return
    import logging

    class Notes(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            print(f"note: {record.getMessage()}", file=sys.stderr)

    logger = logging.getLogger("relay.passes")
    handler, level = Notes(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _pipeline_names(text: str) -> list[str]:
    """The pass names in pipeline text without options (like the standard pipelines)."""
    return [item.strip() for item in text.split(",") if item.strip()]


def version() -> str:
    """The installed version of relay (the package's metadata, else `relay.__version__`)."""
    from importlib import metadata

    try:
        return metadata.version("relay-lang")
    except metadata.PackageNotFoundError:  # running from a source tree that is not installed
        from . import __version__

        return __version__


EXAMPLES = {
    "check": """\
  relay check model.relay              parse and type-check, print each global's type
  relay check --strict model.relay     also fail on warnings (a missing version header)
  relay check - < model.relay          read the program from standard input""",
    "fmt": """\
  relay fmt model.relay                print the canonical form
  relay fmt --check model.relay        exit 1 if the file is not in canonical form
  relay fmt -i model.relay             rewrite the file in canonical form""",
    "run": """\
  relay run model.relay                random inputs (seed 0), compiled for this CPU
  relay run model.relay --inputs x.npz --output y.npz
  relay run model.relay --inputs x.npz --strict-inputs
                                       fail instead of filling missing inputs at random
  relay run model.relay --target interp
                                       run in the reference interpreter
  relay run model.relaymod --bench --repeat 20
                                       time a saved artifact (median of 20 runs)
  relay run model.relaymod --profile --trace trace.json
                                       time per kernel and thread, and a Chrome trace""",
    "build": """\
  relay build model.relay              write model.relaymod (opt level 3, this CPU)
  relay build model.relay --params weights.npz -o model.relaymod
                                       bind the weights as constants
  relay build model.relay -O 2 --dump llvm --target "llvm -num-threads=4"
                                       also write the LLVM IR beside the artifact
  relay build model.relay --params w.npz --tuning-log tune.jsonl
                                       use the best configs `relay tune` measured""",
    "tune": """\
  relay tune model.relay --params w.npz --trials 64 --log tune.jsonl
                                       tune each kernel's schedule (resumes from the log)
  relay tune model.relay --params w.npz --trials 64 --log r.jsonl --model random --plot c.png
                                       random search, and plot best GFLOP/s per trial
  relay tune model.relay --params w.npz --log tune.jsonl --executor ray://head:10001
                                       measure on a Ray cluster (pip install 'relay-lang[ray]')""",
    "quantize": """\
  relay quantize model.relay --params w.npz -o model_int8.relay --params-out w_int8.npz
                                       int8 with the default global scale (8.0)
  relay quantize model.relay --params w.npz --calib data.npz --mode kl -o model_int8.relay
                                       calibrate with KL divergence on data.npz's batches""",
    "opt": """\
  relay opt model.relay                optimize with the opt level 2 pipeline
  relay opt -O 3 --timing model.relay  the opt level 3 pipeline, with pass timings
  relay opt model.relay --passes fold-constant,dce --print-after fold-constant
                                       run these passes, show the module after one""",
}


def _subcommand(commands: Any, name: str, help: str) -> argparse.ArgumentParser:
    """A subcommand's parser, with its usage examples after the options in `--help`."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help=help,
        description=help[0].upper() + help[1:] + ".",
        epilog="examples:\n" + EXAMPLES[name],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(command_parser=parser)  # usage errors show the command's usage
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `relay` program."""
    parser = argparse.ArgumentParser(
        prog="relay",
        description="Relay: parse, check, format, optimize and run .relay programs.",
        epilog="`relay COMMAND --help` shows the options of a command, with examples.",
    )
    parser.add_argument("--version", action="version", version=f"relay {version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    check = _subcommand(
        commands, "check", "parse and type-check a file, print the type of each global"
    )
    check.add_argument("file", help="a .relay file ('-' for standard input)")
    check.add_argument("--strict", action="store_true", help=STRICT_HELP)
    check.set_defaults(run=cmd_check)

    fmt = _subcommand(commands, "fmt", "print a file in canonical form")
    fmt.add_argument("file", help="a .relay file ('-' for standard input)")
    mode = fmt.add_mutually_exclusive_group()
    mode.add_argument(
        "--check", action="store_true", help="exit 1 if the file is not in canonical form"
    )
    mode.add_argument("-i", "--in-place", action="store_true", help="rewrite the file")
    fmt.add_argument("--strict", action="store_true", help=STRICT_HELP)
    fmt.set_defaults(run=cmd_fmt)

    run = _subcommand(commands, "run", "run @main on inputs and print the result")
    run.add_argument("file", help="a .relay file ('-' for standard input) or a .relaymod")
    run.add_argument(
        "--inputs",
        metavar="X.npz",
        help="inputs by parameter name; missing ones are filled with seeded random data "
        "(a warning names each)",
    )
    run.add_argument(
        "--strict-inputs",
        action="store_true",
        help="a parameter missing from --inputs is an error instead of random data",
    )
    run.add_argument("--output", metavar="Y.npz", help="write the result (`out` or `out0`...)")
    run.add_argument("--target", **TARGET_ARGUMENT)  # type: ignore[arg-type]
    run.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    run.add_argument(
        "--bench", action="store_true", help="run repeatedly and print the median time"
    )
    run.add_argument(
        "--repeat",
        type=int,
        default=10,
        metavar="N",
        help="runs for --bench and --profile (default 10)",
    )
    run.add_argument(
        "--profile",
        action="store_true",
        help="print where the time goes: per kernel (fused operators, time, share, FLOPs, "
        "bytes, percent of the machine's peak, thread imbalance), per operator kind, and "
        "outside the kernels",
    )
    run.add_argument(
        "--sort",
        choices=("time", "order"),
        default="time",
        help="--profile's kernel order: by total time (default) or call order",
    )
    run.add_argument("--top", type=int, metavar="N", help="--profile: only the N first kernels")
    run.add_argument(
        "--trace", metavar="OUT.json", help="--profile: write a Chrome trace (Perfetto)"
    )
    run.add_argument(
        "--profile-json", metavar="OUT.json", help="--profile: write the report as JSON"
    )
    run.add_argument("--strict", action="store_true", help=STRICT_HELP)
    run.set_defaults(run=cmd_run)

    build = _subcommand(commands, "build", "compile a file to a .relaymod artifact")
    build.add_argument("file", help="a .relay file")
    build.add_argument("-o", "--output", metavar="MODEL.relaymod", help="the artifact to write")
    build.add_argument(
        "--params",
        metavar="W.npz",
        help="bind these @main parameters (weights) as constants; the rest stay inputs",
    )
    build.add_argument(
        "-O", dest="opt_level", type=int, choices=range(4), default=3, metavar="LEVEL",
        help="opt level 0-3 (default 3)",
    )  # fmt: skip
    build.add_argument("--target", **TARGET_ARGUMENT)  # type: ignore[arg-type]
    build.add_argument(
        "--dump", action="append", choices=DUMP_STAGES, metavar="STAGE",
        help="also write what a stage produced (relay, te, tir, llvm, asm) beside the artifact",
    )  # fmt: skip
    build.add_argument(
        "-v", "--verbose", action="store_true",
        help="print the target and each kernel's parallel plan (tasks, threads)",
    )  # fmt: skip
    build.add_argument(
        "--timings", action="store_true",
        help="print the seconds of each compilation stage (passes, lowering, loop IR, LLVM)",
    )  # fmt: skip
    build.add_argument(
        "--tuning-log", metavar="LOG",
        help="apply the best config of each kernel in this `relay tune` log (this host's records)",
    )  # fmt: skip
    build.add_argument("--strict", action="store_true", help=STRICT_HELP)
    build.set_defaults(run=cmd_build)

    tune = _subcommand(commands, "tune", "tune the kernels' schedules, logging measurements")
    tune.add_argument("file", help="a .relay file")
    tune.add_argument("--params", metavar="W.npz", help="the weights (@main parameters)")
    tune.add_argument(
        "--trials", type=int, default=64, metavar="N",
        help="measurements per tunable kernel on average (default 64); a resumed log's count",
    )  # fmt: skip
    tune.add_argument("--log", required=True, metavar="LOG", help="the JSON-lines log to append")
    tune.add_argument(
        "--model", choices=("xgb", "random"), default="xgb",
        help="the search's cost model: xgboost ranking (default) or random search",
    )  # fmt: skip
    tune.add_argument("--target", **TARGET_ARGUMENT)  # type: ignore[arg-type]
    tune.add_argument("--batch", type=int, default=8, help="configs measured per batch")
    tune.add_argument("--number", type=int, default=3, help="calls per timing round")
    tune.add_argument("--repeat", type=int, default=3, help="timing rounds (fastest kept)")
    tune.add_argument(
        "--min-repeat-ms", type=float, default=0.0, metavar="MS",
        help="grow --number until a round takes this long",
    )  # fmt: skip
    tune.add_argument(
        "--warmup-ms", type=float, default=10.0, metavar="MS",
        help="untimed calls for this long before the timing rounds (at least one)",
    )  # fmt: skip
    tune.add_argument(
        "--timeout", type=float, default=60.0, metavar="S",
        help="seconds per config (build, check, timing) before the worker is killed",
    )  # fmt: skip
    tune.add_argument(
        "--executor", metavar="SPEC",
        help="where configs are measured: local:N (N worker processes building side by side, "
        "timing in turn: faster, timings less reliable), local (one; the default), ray://HOST:PORT "
        "(a Ray cluster's client port), ray:auto, ray:HOST:PORT, ray:local (a new local Ray), "
        "ray (ray.init's choice); needs relay-lang[ray]",
    )  # fmt: skip
    tune.add_argument(
        "--clock", choices=("wall", "cpu"), default="wall",
        help="time kernels by elapsed time (default) or by CPU time (steadier on a shared "
        "machine for one-thread targets: -num-threads=1)",
    )  # fmt: skip
    tune.add_argument(
        "--time-budget", type=float, metavar="MINUTES",
        help="stop after this many minutes (between batches; the log resumes later)",
    )  # fmt: skip
    tune.add_argument("--seed", type=int, default=0, help="seed of the search")
    tune.add_argument(
        "--plot", metavar="CURVE.png",
        help="plot best GFLOP/s against trials per kernel (needs matplotlib: relay-lang[tune])",
    )  # fmt: skip
    tune.add_argument("--no-progress", action="store_true", help="no live progress display")
    tune.add_argument("--strict", action="store_true", help=STRICT_HELP)
    tune.set_defaults(run=cmd_tune)

    quant = _subcommand(commands, "quantize", "quantize a float model to int8")
    quant.add_argument("file", help="a .relay file ('-' for standard input)")
    quant.add_argument("--params", metavar="W.npz", help="the weights (@main parameters)")
    quant.add_argument(
        "--calib", metavar="DATA.npz",
        help="calibration inputs by name: each the input's shape (one batch) or a stack",
    )  # fmt: skip
    quant.add_argument(
        "--mode", choices=sorted(CALIBRATE_MODES), default="global_scale",
        help="calibration: global_scale (default), kl (KL divergence) or percentile",
    )  # fmt: skip
    quant.add_argument(
        "--weight-scale", choices=("power2", "max"), default="power2",
        help="weight scales: power2 (default) or max",
    )  # fmt: skip
    quant.add_argument(
        "--per-channel", action="store_true",
        help="one weight scale per output channel (default: one per weight tensor, as TVM)",
    )  # fmt: skip
    quant.add_argument(
        "--bias-mode", choices=("int32", "weight"), default="int32",
        help="biases as int32 at the accumulator's scale (default) or 8-bit as weights (TVM)",
    )  # fmt: skip
    quant.add_argument(
        "--bias-correction", action="store_true",
        help="take the mean accumulator error measured on --calib out of each bias",
    )  # fmt: skip
    quant.add_argument(
        "--skip-conv-layers", metavar="I,J",
        help="indices of conv2d calls to leave in float (default 0: the first)",
    )  # fmt: skip
    quant.add_argument(
        "--quantize-dense", action="store_true", help="also quantize nn.dense (skipped by default)"
    )
    quant.add_argument(
        "--simulate", action="store_true", help="write the simulated (fake-quantized) program"
    )
    quant.add_argument("-o", "--output", metavar="OUT.relay", help="write here, not stdout")
    quant.add_argument(
        "--params-out", metavar="W_INT8.npz",
        help="write the quantized weights here; the program takes them as parameters",
    )  # fmt: skip
    quant.add_argument("--strict", action="store_true", help=STRICT_HELP)
    quant.set_defaults(run=cmd_quantize)

    opt = _subcommand(commands, "opt", "optimize a file and print the result")
    opt.add_argument("file", nargs="?", help="a .relay file ('-' for standard input)")
    opt.add_argument(
        "-O",
        dest="opt_level",
        type=int,
        choices=range(4),
        metavar="LEVEL",
        help="opt level 0-3: the standard pipeline of that level (default 2)",
    )
    opt.add_argument(
        "--passes", metavar="A,B,C", help="run this pipeline text instead (e.g. 'dce,fuse-ops')"
    )
    opt.add_argument(
        "--print-after",
        action="append",
        default=[],
        metavar="NAME",
        help="print the module to stderr after pass NAME (repeatable)",
    )
    opt.add_argument("--timing", action="store_true", help="print pass timings to stderr")
    opt.add_argument(
        "--debug",
        action="store_true",
        help="check well-formedness and types after every pass, print the passes' notes",
    )
    opt.add_argument("--strict", action="store_true", help=STRICT_HELP)
    opt.add_argument(
        "--list-passes",
        action="store_true",
        help="list the registered passes (name, opt level, requirements, description)",
    )
    opt.add_argument(
        "--load",
        action="append",
        default=[],
        metavar="FILE_OR_MODULE",
        help="load passes from a .py file or a module before anything else (repeatable)",
    )
    opt.add_argument(
        "--bisect",
        action="store_true",
        help="run the pipeline pass by pass and report the first pass that changes the "
        "results of @main (exit 1 if one does)",
    )
    opt.add_argument(
        "--inputs", metavar="X.npz", help="inputs of @main for --bisect (the rest: random)"
    )
    opt.add_argument("--seed", type=int, default=0, help="seed of --bisect's random inputs")
    opt.add_argument(
        "--explain-pattern",
        metavar="PATTERN",
        help="print where the dataflow pattern PATTERN (pattern text) matches in the file, "
        "and why it does not match elsewhere; runs no pass",
    )
    opt.set_defaults(run=cmd_opt)
    _add_save_crash(parser, commands)
    return parser


REPORT_TO = "the issue tracker of the relay repository you installed from"


def _add_save_crash(parser: argparse.ArgumentParser, commands: Any) -> None:
    """`--save-crash DIR`, before or after the command: on an internal error, save the
    program and the traceback into DIR."""
    text = "on an internal error (exit 3), save the input program and the traceback in DIR"
    parser.add_argument("--save-crash", metavar="DIR", help=text)
    for sub in commands.choices.values():  # SUPPRESS: do not override the global one
        sub.add_argument("--save-crash", metavar="DIR", default=argparse.SUPPRESS, help=text)


def _save_crash(folder: str, argv: Sequence[str], path: str | None, source: str | None) -> str:
    """Write the program (`source`, else the file `path`) and the current traceback into
    `folder`; returns a phrase naming both files."""
    import platform
    import time

    os.makedirs(folder, exist_ok=True)
    base = os.path.join(folder, time.strftime("crash-%Y%m%d-%H%M%S-") + str(os.getpid()))
    stem, count = base, 1
    while os.path.exists(stem + ".txt"):  # several crashes in one process and second
        stem, count = f"{base}-{count}", count + 1
    extension = ".relaymod" if path and path.endswith(".relaymod") else ".relay"
    program = stem + extension
    if source is None and path is not None and path != "-":
        with open(path, "rb") as original, open(program, "wb") as copy:
            copy.write(original.read())
    else:
        with open(program, "w", encoding="utf-8") as copy:
            copy.write(source or "")
    with open(stem + ".txt", "w", encoding="utf-8") as report:
        report.write(f"command: relay {' '.join(argv)}\n")
        report.write(f"program: {program} (copied from {path})\n")
        report.write(f"python {platform.python_version()} on {platform.platform()}\n\n")
        report.write(traceback.format_exc())
    return f"the program is saved in {program}, the traceback in {stem}.txt"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    save_crash: str | None = args.save_crash
    stdin_text, stdin = None, sys.stdin
    if save_crash and getattr(args, "file", None) == "-":  # keep standard input to save it
        import io

        stdin_text = sys.stdin.read()
        sys.stdin = io.StringIO(stdin_text)
    try:
        return run(args)
    except Error as error:
        print(error.render(), file=sys.stderr)
        return EXIT_USER_ERROR
    except _UsageError as error:
        getattr(args, "command_parser", parser).error(str(error))
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as error:  # a bug in relay, not in the user's input
        if os.environ.get("RELAY_DEBUG"):
            traceback.print_exc()
        saved = "rerun with --save-crash DIR to save both"
        if save_crash:
            try:
                file = getattr(args, "file", None)
                words = sys.argv[1:] if argv is None else argv
                saved = _save_crash(save_crash, words, file, stdin_text)
            except OSError as exc:
                saved = f"could not save it in {save_crash}: {exc.strerror}"
        print(
            f"internal error: {type(error).__name__}: {error}\n"
            f"This is a bug in relay, not in your program; please report it to {REPORT_TO} "
            f"with the program that caused it ({saved}). Set RELAY_DEBUG=1 to see the traceback.",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    finally:
        sys.stdin = stdin


if __name__ == "__main__":
    sys.exit(main())
