"""What `relay opt` needs besides running a pipeline: loading files of user passes
(`--load`), the table of registered passes (`--list-passes`), and the bisector's report
(`--bisect`)."""

from __future__ import annotations

import importlib
import os
import runpy
import traceback
from collections.abc import Mapping
from typing import Any

from .lang.diagnostics import Error
from .lang.module import IRModule
from .passes import PASSES, Pass, PassContext, Sequential, bisect, register_pass


def _is_path(spec: str) -> bool:
    return spec.endswith(".py") or os.sep in spec or os.path.isfile(spec)


def _load_failure(spec: str, exc: BaseException, keep: str | None) -> Error:
    """A user error saying that loading `spec` failed: the frames of `keep` (the loaded
    file; every frame outside relay's own when None) and the exception."""
    frames = traceback.extract_tb(exc.__traceback__)
    here = os.path.dirname(os.path.abspath(__file__))
    shown = [
        f
        for f in frames
        if (f.filename == keep if keep else not os.path.abspath(f.filename).startswith(here))
        and "importlib" not in f.filename
        and not f.filename.endswith("runpy.py")
    ]
    lines = [f"--load {spec}: loading it failed:"]
    for f in shown:
        lines.append(f"  {f.filename}:{f.lineno}, in {f.name}")
        if f.line:
            lines.append(f"    {f.line.strip()}")
    if isinstance(exc, SyntaxError) and exc.lineno is not None:
        lines.append(f"  {exc.filename}:{exc.lineno}:{exc.offset or 0}")
        if exc.text:
            lines.append(f"    {exc.text.rstrip()}")
            lines.append("    " + " " * max(0, (exc.offset or 1) - 1) + "^")
        message = exc.msg
    else:
        message = exc.message if isinstance(exc, Error) else str(exc)
    lines.append(f"{type(exc).__name__}: {message}")
    return Error("\n".join(lines))


def _namespace(spec: str) -> dict[str, Any]:
    """Run the file `spec` (a `.py` path) or import the module `spec` (a dotted name);
    its global names."""
    if _is_path(spec):
        path = os.path.abspath(spec)
        if not os.path.isfile(path):
            raise Error(f"--load {spec}: no such file")
        try:
            return runpy.run_path(path, run_name=f"<relay --load {path}>")
        except SystemExit as exc:
            raise Error(f"--load {spec}: the file called exit({exc.code})") from None
        except Exception as exc:  # the user's code failed: show its frames, not ours
            raise _load_failure(spec, exc, path) from None
    try:
        module = importlib.import_module(spec)
    except ModuleNotFoundError as exc:
        if exc.name and spec.startswith(exc.name):
            raise Error(f"--load {spec}: no module named '{exc.name}'") from None
        raise _load_failure(spec, exc, None) from None
    except Exception as exc:
        raise _load_failure(spec, exc, None) from None
    return vars(module)


def load_passes(spec: str) -> list[Pass]:
    """Load a file or module of passes and register every pass it defines: those its
    decorators registered, and every `Pass` among its global names that is not registered
    yet (TVM's decorators do not register). Returns the passes it registered; a name
    clash with another pass, or any failure while loading, is an `Error`."""
    before = dict(PASSES)
    names = _namespace(spec)
    found: list[Pass] = []
    for value in names.values():
        if not isinstance(value, Pass):
            continue
        old = PASSES.get(value.name)
        if old is not None and old.transform is value.transform:
            continue  # a registered pass, perhaps with other options
        try:
            found.append(register_pass(value))
        except Error as exc:
            raise Error(f"--load {spec}: {exc.message}") from None
    added = [p for name, p in PASSES.items() if before.get(name) is not p]
    return list({p.name: p for p in (*added, *found)}.values())


def pass_table() -> str:
    """One line per registered pass: name, opt level, the passes it requires, its
    `relay.transform` spelling and the first sentence of its doc."""
    rows = [("PASS", "LEVEL", "REQUIRES", "TRANSFORM", "DESCRIPTION")]
    for name in sorted(PASSES):
        p = PASSES[name]
        rows.append(
            (
                name,
                str(p.opt_level),
                ",".join(p.required) or "-",
                f"{p.tvm_name}()",
                p.summary or "(no description)",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths)) + "  " + row[4]
        for row in rows
    )


def _difference(expected: Any, actual: Any) -> str:
    """Where two results of `@main` differ first (output key and largest difference)."""
    import numpy as np

    from .passes import values_close
    from .runio import flatten_outputs

    try:
        want, got = flatten_outputs(expected), flatten_outputs(actual)
    except Exception:  # not tensors (ADT values, closures): no finer account
        return "the results differ"
    for key, a in want.items():
        b = got.get(key)
        if b is None or a.shape != b.shape or a.dtype != b.dtype:
            shape = "missing" if b is None else f"{b.dtype}{list(b.shape)}"
            return f"{key}: expected {a.dtype}{list(a.shape)}, got {shape}"
        if not values_close(a, b):
            if a.dtype.kind in "fciub" and a.size:
                gap = np.abs(a.astype("float64") - b.astype("float64"))
                return f"{key}: largest difference {float(np.nanmax(gap)):g}"
            return f"{key}: the values differ"
    return "the results differ"


def bisect_report(
    module: IRModule, pipeline: Sequential, inputs: Mapping[str, Any], ctx: PassContext
) -> tuple[str, bool]:
    """Run `pipeline` pass by pass under `ctx`, comparing `@main`'s results on `inputs`
    with the interpreter; the report, and whether some pass changed the results."""
    from .grammar.prelude import strip_prelude

    result = bisect(module, pipeline, inputs, ctx)
    if result is None:
        ran = sum(1 for planned in pipeline.plan(ctx) if planned.runs)
        return (
            f"bisect: every pass ({ran} run) keeps the results of @main on these inputs\n",
            False,
        )
    head = f"bisect: pass #{result.index} '{result.pass_}' "
    if result.error is not None:
        head += f"makes @main fail to run: {result.error.message.splitlines()[0]}"
    else:
        head += f"changes the results of @main ({_difference(result.expected, result.actual)})"
    text = (
        f"{head}\n\n-- the module before '{result.pass_.name}':\n"
        f"{strip_prelude(result.before).astext()}\n"
        f"-- the module after '{result.pass_.name}':\n{strip_prelude(result.after).astext()}"
    )
    return text, True
