"""The fuzz stages and how their outcomes are classified.

Each stage takes a program's text (and a seed for its inputs) and returns `Outcome`s:

* `parse`: `relay.parse`;
* `check`: parse, then type-check;
* `opt`: parse and type-check, then every registered pass and the `-O3` build pipeline
  through the pass checker (`check_once`: well-formed, well-typed, same `@main` type,
  same values as the interpreter), one outcome per pass;
* `build`: parse and type-check, then `relay.build` at opt level 3 for this CPU, run,
  and compare with the interpreter.

An outcome is `ok`, a `diagnostic` (a `relay.lang.diagnostics.Error`, the only way
relay reports a user's mistake), or a finding: `internal` (any other exception, or a
parse error that only wraps one), `bad-diagnostic` (a parse error with no location or
one outside the text), `mismatch` (the pass checker or the compiled model disagrees with
the interpreter), `rejected` (a diagnostic for a generated program that is valid by
construction) or `timeout`. A finding's `signature` (stage, kind, exception type and the
innermost relay function it came from) names the bug: the minimizer keeps it, the
campaign reports each signature once.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

from attrs import frozen

from ...lang.diagnostics import Error, ParseError
from ...lang.module import IRModule

STAGES = ("parse", "check", "opt", "build")
FINDINGS = ("internal", "bad-diagnostic", "mismatch", "rejected", "timeout")
TIME_LIMITS = {"parse": 10.0, "check": 20.0, "opt": 60.0, "build": 120.0}
SOURCE_NAME = "<fuzz>"
O3 = "O3"
BUILD_TARGET = "llvm -num-threads=1"
RTOL, ATOL = 1e-4, 1e-4

_PACKAGE = Path(__file__).resolve().parents[2]
_HARNESS = Path(__file__).resolve().parent


@frozen
class Outcome:
    """What one stage (or one pass of the `opt` stage) did with one program."""

    stage: str
    kind: str
    signature: str = ""
    detail: str = ""

    @property
    def is_finding(self) -> bool:
        """Whether this outcome is a bug to report."""
        return self.kind in FINDINGS


class StageTimeout(BaseException):
    """Raised in the main thread when a stage runs past its time limit (a BaseException,
    so the code under test cannot swallow it with `except Exception`)."""


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise `StageTimeout` in the block after `seconds` (main thread only: elsewhere, and
    with None, no limit)."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise StageTimeout(f"took more than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _origin(tb: TracebackType | None) -> str:
    """`path:function` of the innermost frame of `tb` in relay (outside this harness)."""
    found = "?"
    for frame, _ in traceback.walk_tb(tb):
        path = Path(frame.f_code.co_filename)
        if path.is_relative_to(_PACKAGE) and not path.is_relative_to(_HARNESS):
            found = f"{path.relative_to(_PACKAGE)}:{frame.f_code.co_name}"
    return found


def internal(stage: str, exc: BaseException, label: str = "") -> Outcome:
    """The outcome of an unexpected exception `exc` (its cause, for a wrapping parse error)."""
    root = exc.__cause__ if isinstance(exc, ParseError) and exc.__cause__ else exc
    where = f"{label}:" if label else ""
    signature = f"{stage}:internal:{where}{type(root).__name__}:{_origin(root.__traceback__)}"
    detail = "".join(traceback.format_exception(type(root), root, root.__traceback__))
    return Outcome(stage, "internal", signature, detail)


def _located(err: Error, text: str) -> str | None:
    """Why the location of a parse error is wrong, or None if it is inside `text`."""
    span = err.span
    if span is None:
        return "a parse error without a location"
    if span.source is None or span.source.name != SOURCE_NAME:
        return None  # it points into another file (the prelude)
    lines = text.split("\n")
    if not 1 <= span.line <= len(lines) + 1:
        return f"line {span.line} outside the text ({len(lines)} lines)"
    width = len(lines[span.line - 1]) if span.line <= len(lines) else 0
    if not 1 <= span.column <= width + 2:
        return f"column {span.column} outside line {span.line} ({width} characters)"
    return None


def diagnosed(stage: str, err: Error, text: str, valid: bool = False) -> Outcome:
    """The outcome of a diagnostic `err` about `text` (`valid`: the program is valid by
    construction, so any diagnostic is a bug)."""
    if isinstance(err, ParseError) and err.message.startswith("internal parser error"):
        return internal(stage, err)
    try:
        rendered = err.render()
    except Exception as exc:
        return internal(stage, exc, "render")
    if isinstance(err, ParseError):
        problem = _located(err, text)
        if problem is not None:
            signature = f"{stage}:bad-diagnostic:{problem.split(' ')[0]}:{err.message[:40]}"
            return Outcome(stage, "bad-diagnostic", signature, f"{problem}\n{rendered}")
    if valid:
        signature = f"{stage}:rejected:{type(err).__name__}:{_first_words(err.message)}"
        return Outcome(stage, "rejected", signature, rendered)
    return Outcome(stage, "diagnostic", "", rendered)


def _first_words(message: str) -> str:
    """The start of a message, without the parts that name the program's variables."""
    words = message.split()[:6]
    return " ".join(w for w in words if not w.startswith(("%", "@", "`")))


def _front(stage: str, text: str, valid: bool) -> IRModule | Outcome:
    """Parse and type-check `text`: the module, or the outcome that stopped it."""
    from ...grammar import parse
    from ...typecheck import check_module

    try:
        mod = parse(text, SOURCE_NAME)
        types = check_module(mod)
        for warning in types.warnings:
            warning.render()
    except Error as err:
        return diagnosed(stage, err, text, valid)
    except Exception as exc:
        return internal(stage, exc)
    return mod


def run_parse(text: str, seed: int = 0, valid: bool = False) -> list[Outcome]:
    """Parse `text`."""
    from ...grammar import parse

    try:
        parse(text, SOURCE_NAME)
    except Error as err:
        return [diagnosed("parse", err, text, valid)]
    except Exception as exc:
        return [internal("parse", exc)]
    return [Outcome("parse", "ok")]


def run_check(text: str, seed: int = 0, valid: bool = False) -> list[Outcome]:
    """Parse and type-check `text`."""
    found = _front("check", text, valid)
    return [found if isinstance(found, Outcome) else Outcome("check", "ok")]


def builtin_passes() -> tuple[str, ...]:
    """The names of the passes relay registers (not those a test or a user adds)."""
    return _BUILTIN_PASSES


def _transform(name: str) -> Callable[[IRModule], IRModule]:
    from ...driver import optimize
    from ...passes import PassContext, get_pass

    if name == O3:
        return lambda mod: optimize(mod, 3).module
    the_pass = get_pass(name)
    return lambda mod: the_pass(mod, PassContext(opt_level=3))


def run_opt(
    text: str, seed: int = 0, valid: bool = False, passes: tuple[str, ...] | None = None
) -> list[Outcome]:
    """Parse and type-check `text`, then check each of `passes` (default: every built-in
    pass and `O3`, the build's pipeline) with the pass checker on inputs from `seed`."""
    from ..check_pass import check_once
    from .programs import make_inputs

    found = _front("opt", text, valid)
    if isinstance(found, Outcome):
        return [found]
    mod = found
    try:
        inputs = make_inputs(mod, seed)
    except (ValueError, KeyError):
        return [Outcome("opt", "diagnostic", "", "no inputs can be made for @main")]
    outcomes = []
    for name in passes if passes is not None else (*builtin_passes(), O3):
        try:
            check_once(_transform(name), name, mod, inputs, rtol=RTOL, atol=ATOL)
        except AssertionError as failed:
            message = str(failed)
            first = message.split("\n", 1)[0].split(" (rtol")[0]
            outcomes.append(Outcome("opt", "mismatch", f"opt:mismatch:{name}:{first}", message))
        except Error as err:  # the interpreter rejected the program before the pass ran
            outcomes.append(diagnosed("opt", err, text, valid))
        except Exception as exc:
            outcomes.append(internal("opt", exc, name))
        else:
            outcomes.append(Outcome("opt", "ok"))
    return outcomes


def run_build(text: str, seed: int = 0, valid: bool = False) -> list[Outcome]:
    """Parse and type-check `text`, build it at opt level 3 for this CPU (one thread),
    run it on inputs from `seed` and compare with the interpreter."""
    from ...backend.runtime import interpret
    from ...driver import build
    from ...passes import values_close
    from .programs import make_inputs

    found = _front("build", text, valid)
    if isinstance(found, Outcome):
        return [found]
    mod = found
    try:
        inputs = make_inputs(mod, seed)
    except (ValueError, KeyError):
        return [Outcome("build", "diagnostic", "", "no inputs can be made for @main")]
    try:
        expected = interpret(mod, **inputs)
    except Error as err:
        return [diagnosed("build", err, text, valid)]
    except Exception as exc:
        return [internal("build", exc, "interpret")]
    try:
        model = build(mod, target=BUILD_TARGET, opt_level=3)
        actual = model.run(**inputs)
    except Error as err:
        return [diagnosed("build", err, text, valid)]
    except Exception as exc:
        return [internal("build", exc)]
    if not values_close(expected, actual, RTOL, ATOL):
        how = "native" if getattr(model, "native", False) else "interpreted"
        detail = f"expected {expected!r}\ngot {actual!r}\ninputs (seed {seed}): {inputs!r}"
        return [Outcome("build", "mismatch", f"build:mismatch:{how}", detail)]
    return [Outcome("build", "ok")]


RUNNERS: dict[str, Callable[..., list[Outcome]]] = {
    "parse": run_parse,
    "check": run_check,
    "opt": run_opt,
    "build": run_build,
}


def run_stage(
    stage: str,
    text: str,
    seed: int = 0,
    valid: bool = False,
    limit: float | None = None,
    **options: object,
) -> list[Outcome]:
    """Run `stage` on `text` within `limit` seconds (default `TIME_LIMITS[stage]`); a
    timeout is an outcome too."""
    seconds = TIME_LIMITS[stage] if limit is None else limit
    try:
        with time_limit(seconds), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # warnings about fuzzed programs are expected
            return RUNNERS[stage](text, seed, valid, **options)
    except StageTimeout as exc:
        return [Outcome(stage, "timeout", f"{stage}:timeout", str(exc))]
    except RecursionError as exc:  # raised while classifying a deep failure
        return [internal(stage, exc)]


def worst(outcomes: list[Outcome]) -> Outcome:
    """The outcome that counts for the whole input: its first finding, else its first."""
    return next((o for o in outcomes if o.is_finding), outcomes[0])


def _registered() -> tuple[str, ...]:
    from ...passes import PASSES

    return tuple(sorted(name for name in PASSES if name != "identity"))


_BUILTIN_PASSES = _registered()
