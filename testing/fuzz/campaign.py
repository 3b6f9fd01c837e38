"""A fuzz campaign: run the stages on many inputs in worker processes, never hanging,
and write each distinct finding as a minimized `.relay` regression case.

`run_batch` runs consecutive inputs of one stage in this process (each under the stage's
time limit). `Campaign` spreads batches over worker processes for a given time, giving
each stage an equal share of the time by default; a worker stuck on one input past a
hard limit (or killed by a signal: a crash in native code) is replaced, and the input is
reported. The first time a signature is seen, the program is saved at once, then
minimized by a worker and saved again. `replay(path)` runs a saved case again.
"""

from __future__ import annotations

import collections
import multiprocessing
import multiprocessing.connection
import os
import re
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from attrs import define, field, frozen

from .inputs import FuzzInput, make_input
from .minimize import minimize, same_finding
from .stages import (
    O3,
    STAGES,
    TIME_LIMITS,
    Outcome,
    builtin_passes,
    internal,
    run_stage,
    time_limit,
    worst,
)

MINIMIZED_KINDS = ("internal", "bad-diagnostic", "mismatch")
HEADER = "// relay fuzz finding:"


@frozen
class Finding:
    """A finding and the input that gave it."""

    input: FuzzInput
    outcome: Outcome


@frozen
class BatchResult:
    """What a batch of inputs of one stage gave: how many ran, outcome counts (one per
    input: its worst outcome), the first finding of each signature, and whether it
    stopped early on a timeout."""

    stage: str
    start: int
    completed: int
    counts: dict[str, int]
    findings: list[Finding]
    seconds: float
    timed_out: bool
    occurrences: dict[str, int]


def _options(stage: str, outcome: Outcome) -> dict[str, Any]:
    """Stage options that reproduce `outcome` faster: the one pass of an `opt` finding."""
    parts = outcome.signature.split(":")
    if stage == "opt" and len(parts) > 2 and parts[2] in (*builtin_passes(), O3):
        return {"passes": (parts[2],)}
    return {}


def run_batch(
    stage: str, seed: int, start: int, count: int, progress: Any | None = None
) -> BatchResult:
    """Run inputs `start` .. `start + count - 1` of `stage` in this process; `progress`
    (a shared array of two doubles) gets the index and start time of each input."""
    counts: collections.Counter[str] = collections.Counter()
    findings: dict[str, Finding] = {}
    occurrences: collections.Counter[str] = collections.Counter()
    began = time.monotonic()
    completed, timed_out = 0, False
    for index in range(start, start + count):
        if progress is not None:
            progress[0], progress[1] = index, time.time()
        try:
            with time_limit(TIME_LIMITS[stage]):
                made = make_input(stage, seed, index)
        except Exception as exc:
            outcome = internal(stage, exc, "generate")
            made = FuzzInput(stage, index, "", 0, False, "generator failed")
            outcomes = [outcome]
        else:
            outcomes = run_stage(stage, made.text, made.seed, made.valid)
        counts[worst(outcomes).kind] += 1
        for outcome in outcomes:
            if outcome.is_finding:
                occurrences[outcome.signature] += 1
                findings.setdefault(outcome.signature, Finding(made, outcome))
        completed += 1
        if any(o.kind == "timeout" for o in outcomes):
            timed_out = True  # the interrupted code may have left state behind: stop here
            break
    if progress is not None:
        progress[1] = 0.0
    elapsed = time.monotonic() - began
    return BatchResult(stage, start, completed, dict(counts), list(findings.values()),
                       elapsed, timed_out, dict(occurrences))  # fmt: skip


def minimize_finding(finding: Finding, seconds: float) -> str:
    """The smallest program found that gives `finding`'s signature again (the original
    text if the kind is not minimized or it does not reproduce)."""
    stage, outcome, made = finding.input.stage, finding.outcome, finding.input
    if outcome.kind not in MINIMIZED_KINDS or not made.text:
        return made.text
    test = same_finding(stage, outcome, made.seed, made.valid, **_options(stage, outcome))
    if not test(made.text):
        return made.text
    return minimize(made.text, test, seconds=seconds)


# ---------------------------------------------------------------------------- saving


def case_text(finding: Finding, text: str) -> str:
    """The `.relay` regression case: a header line saying how to run it, then `text`."""
    made, outcome = finding.input, finding.outcome
    options = _options(made.stage, outcome)
    passes = f" passes={','.join(options['passes'])}" if options else ""
    return (
        f"{HEADER} stage={made.stage} kind={outcome.kind} seed={made.seed} "
        f"valid={int(made.valid)}{passes}\n{text}"
    )


def report_text(
    finding: Finding,
    original: str,
    minimized: str | None,
    run_seed: int,
    detail: str | None = None,
) -> str:
    """The `.txt` beside a case: signature, origin, sizes and the traceback or details
    (`detail`: those of the minimized program)."""
    made, outcome = finding.input, finding.outcome
    size = f"{len(original)} characters"
    if minimized is not None:
        size += f", minimized to {len(minimized)}"
    return "\n".join(
        [
            f"signature: {outcome.signature}",
            f"stage: {made.stage}   kind: {outcome.kind}",
            f"input: number {made.index} of the run with --seed {run_seed} ({made.origin})",
            f"program: {size}",
            "replay: .venv/bin/python bench/fuzz.py --replay THIS.relay",
            "",
            outcome.detail if detail is None else detail,
            "",
            "original program:",
            original,
        ]
    )


def read_case(path: str | os.PathLike[str]) -> tuple[dict[str, str], str]:
    """The settings in a case's header line and the program after it."""
    text = Path(path).read_text(encoding="utf-8")
    first, _, program = text.partition("\n")
    if not first.startswith(HEADER):
        raise ValueError(f"{path}: not a fuzz case (no `{HEADER}` line)")
    settings = dict(re.findall(r"(\w+)=(\S+)", first[len(HEADER) :]))
    return settings, program


def replay(path: str | os.PathLike[str]) -> list[Outcome]:
    """Run a saved case again: the outcomes of its stage on its program."""
    settings, program = read_case(path)
    options: dict[str, Any] = {}
    if "passes" in settings:
        options["passes"] = tuple(settings["passes"].split(","))
    seed, valid = int(settings.get("seed", 0)), settings.get("valid") == "1"
    return run_stage(settings["stage"], program, seed, valid, **options)


# ---------------------------------------------------------------------------- workers


def _worker_main(conn: multiprocessing.connection.Connection, progress: Any) -> None:
    """A worker: run the batches and minimizations the parent sends, until told to stop
    (or after a timeout, which may have left state behind: the parent starts another)."""
    warnings.simplefilter("ignore")  # warnings about fuzzed programs are expected
    run_stage("check", '#[version = "0.0.5"]\ndef @main() { Nil }\n')  # load the prelude
    while True:
        message = conn.recv()
        if message[0] == "stop":
            return
        if message[0] == "batch":
            _, stage, seed, start, count = message
            result = run_batch(stage, seed, start, count, progress)
            conn.send(("batch", result))
            if result.timed_out:
                return
        elif message[0] == "minimize":
            _, key, finding, seconds = message
            progress[0], progress[1] = -1, time.time()
            detail = finding.outcome.detail
            try:
                text = minimize_finding(finding, seconds)
                made, outcome = finding.input, finding.outcome
                options = _options(made.stage, outcome)
                again = run_stage(made.stage, text, made.seed, made.valid, **options)
                detail = next((o.detail for o in again if o.signature == outcome.signature), detail)
            except Exception:  # a bug of the minimizer: keep the original
                text = finding.input.text
                traceback.print_exc()
            progress[1] = 0.0
            conn.send(("minimized", key, text, detail))


@define
class _Worker:
    process: Any
    conn: multiprocessing.connection.Connection
    progress: Any
    task: tuple[Any, ...] | None = None
    estimate: float = 0.0
    retired: bool = False


@define
class StageStats:
    """Per stage: inputs tried, outcome counts, worker seconds and distinct findings."""

    tried: int = 0
    counts: collections.Counter[str] = field(factory=collections.Counter)
    seconds: float = 0.0
    findings: int = 0


@define
class Campaign:
    """A time-limited fuzz run of `stages` over `jobs` worker processes, writing findings
    into `out`. `run()` returns the per-stage statistics."""

    stages: Sequence[str] = STAGES
    seed: int = 0
    seconds: float = 60.0
    jobs: int = 1
    out: Path = Path("fuzz-findings")
    minimize_seconds: float = 60.0
    log: Callable[[str], None] = print
    weights: dict[str, float] = field(factory=dict)
    stats: dict[str, StageStats] = field(factory=dict)
    saved: dict[str, tuple[Finding, Path]] = field(factory=dict)
    occurrences: collections.Counter[str] = field(factory=collections.Counter)
    _next: dict[str, int] = field(factory=dict)
    _requeued: collections.deque[tuple[str, int, int]] = field(factory=collections.deque)
    _per_input: dict[str, float] = field(factory=dict)
    _to_minimize: collections.deque[str] = field(factory=collections.deque)

    def run(self) -> dict[str, StageStats]:
        """Fuzz until the time is up, then finish the minimizations (for at most
        `minimize_seconds` more); returns the statistics per stage."""
        for stage in self.stages:
            if stage not in STAGES:
                raise ValueError(f"unknown stage `{stage}` (stages: {', '.join(STAGES)})")
            self.stats[stage] = StageStats()
            self._next[stage] = 0
            self._per_input[stage] = {"parse": 0.005, "check": 0.02}.get(stage, 0.5)
        self.out.mkdir(parents=True, exist_ok=True)
        context = multiprocessing.get_context("fork")
        workers = [self._spawn(context) for _ in range(max(1, self.jobs))]
        start = time.monotonic()
        deadline = start + self.seconds
        grace = deadline + self.minimize_seconds + 30
        last_log = start
        try:
            while True:
                now = time.monotonic()
                for i, worker in enumerate(workers):
                    if worker.retired:
                        worker.process.join(timeout=10)
                        workers[i] = self._replace(worker, context)
                    if workers[i].task is None:
                        self._assign(workers[i], now < deadline, now < grace)
                busy = [w for w in workers if w.task is not None]
                if not busy:
                    break
                ready = multiprocessing.connection.wait([w.conn for w in busy], timeout=0.5)
                for worker in busy:
                    if worker.conn in ready:
                        self._receive(worker)
                for i, worker in enumerate(workers):
                    if not worker.process.is_alive() or self._stuck(worker):
                        workers[i] = self._replace(worker, context)
                if time.monotonic() - last_log > 30:
                    last_log = time.monotonic()
                    self.log(self.progress_line(last_log - start))
        finally:
            for worker in workers:
                self._stop(worker)
        return self.stats

    # -- scheduling

    def _spawn(self, context: Any) -> _Worker:
        parent, child = context.Pipe()
        progress = context.Array("d", [0.0, 0.0], lock=False)
        process = context.Process(target=_worker_main, args=(child, progress), daemon=True)
        process.start()
        child.close()
        return _Worker(process, parent, progress)

    def _stop(self, worker: _Worker) -> None:
        if worker.process.is_alive():
            try:
                if worker.task is None:
                    worker.conn.send(("stop",))
                    worker.process.join(timeout=5)
            except OSError:
                pass
            if worker.process.is_alive():
                worker.process.kill()
        worker.process.join(timeout=5)

    def _assign(self, worker: _Worker, fuzzing: bool, minimizing: bool) -> None:
        if self._to_minimize and minimizing:
            key = self._to_minimize.popleft()
            finding, _ = self.saved[key]
            worker.task = ("minimize", key, finding, self.minimize_seconds)
        elif fuzzing:
            stage, start, count = self._next_batch()
            worker.task = ("batch", stage, self.seed, start, count)
            worker.estimate = count * self._per_input[stage]
            self.stats[stage].seconds += worker.estimate  # corrected when it returns
        else:
            return
        worker.conn.send(worker.task)

    def _next_batch(self) -> tuple[str, int, int]:
        if self._requeued:
            return self._requeued.popleft()
        stage = min(self.stages, key=lambda s: self.stats[s].seconds / self.weights.get(s, 1.0))
        count = int(min(500, max(1, 2.0 / self._per_input[stage])))
        start = self._next[stage]
        self._next[stage] += count
        return stage, start, count

    def _stuck(self, worker: _Worker) -> bool:
        started = worker.progress[1]
        if worker.task is None or not started:
            return False
        if worker.task[0] == "minimize":
            limit = self.minimize_seconds * 2 + 60
        else:
            limit = TIME_LIMITS[worker.task[1]] * 2 + 30
        return time.time() - started > limit

    def _replace(self, worker: _Worker, context: Any) -> _Worker:
        """Kill `worker` (stuck or dead) and report what it was doing."""
        task, index = worker.task, int(worker.progress[0])
        alive = worker.process.is_alive()
        if alive:
            worker.process.kill()
        worker.process.join(timeout=5)
        code = worker.process.exitcode
        if task is not None and task[0] == "batch":
            _, stage, seed, start, count = task
            self.stats[stage].seconds -= worker.estimate
            if not start <= index < start + count:  # it died before starting the batch
                self._requeued.append((stage, start, count))
            else:
                kind = "timeout" if alive else "internal"
                what = "killed after the hard time limit" if alive else f"exit code {code}"
                signature = f"{stage}:{kind}:worker {'stuck' if alive else 'died'}"
                made = make_input(stage, seed, index)
                self._record(Finding(made, Outcome(stage, kind, signature, what)))
                self.occurrences[signature] += 1
                self.stats[stage].tried += 1
                self.stats[stage].counts[kind] += 1
                rest = start + count - index - 1
                if rest > 0:
                    self._requeued.append((stage, index + 1, rest))
        elif task is not None and task[0] == "minimize":
            self.log(f"minimizing {task[1]} did not finish; the original program is kept")
        return self._spawn(context)

    def _receive(self, worker: _Worker) -> None:
        try:
            message = worker.conn.recv()
        except (EOFError, OSError):
            return  # the worker died: `_replace` reports it
        task, worker.task = worker.task, None
        if message[0] == "batch":
            result: BatchResult = message[1]
            stats = self.stats[result.stage]
            stats.seconds += result.seconds - worker.estimate
            stats.tried += result.completed
            stats.counts.update(result.counts)
            if result.completed:
                measured = result.seconds / result.completed
                self._per_input[result.stage] = 0.7 * self._per_input[result.stage] + 0.3 * measured
            rest = (task[4] if task else 0) - result.completed
            if result.timed_out:  # the worker exits: replace it, run the rest elsewhere
                worker.retired = True
                if rest > 0:
                    self._requeued.append((result.stage, result.start + result.completed, rest))
            for finding in result.findings:
                self._record(finding)
            self.occurrences.update(result.occurrences)
        elif message[0] == "minimized":
            _, key, text, detail = message
            finding, path = self.saved[key]
            self._write(finding, path, text, detail)

    # -- findings

    def _record(self, finding: Finding) -> None:
        signature = finding.outcome.signature
        if signature in self.saved:
            return
        stage = finding.input.stage
        self.stats[stage].findings += 1
        number = sum(1 for f, _ in self.saved.values() if f.input.stage == stage) + 1
        path = self.out / f"{stage}-{number:02d}-{finding.outcome.kind}.relay"
        self.saved[signature] = (finding, path)
        self._write(finding, path, None)
        self.log(f"finding {path.name}: {signature}")
        if finding.outcome.kind in MINIMIZED_KINDS and finding.input.text:
            self._to_minimize.append(signature)

    def _write(
        self, finding: Finding, path: Path, minimized: str | None, detail: str | None = None
    ) -> None:
        text = finding.input.text if minimized is None else minimized
        path.write_text(case_text(finding, text), encoding="utf-8")
        report = report_text(finding, finding.input.text, minimized, self.seed, detail)
        path.with_suffix(".txt").write_text(report, encoding="utf-8")

    # -- reporting

    def progress_line(self, elapsed: float) -> str:
        """One line: elapsed time, then inputs tried and findings per stage."""
        parts = [f"{s} {st.tried} tried, {st.findings} findings" for s, st in self.stats.items()]
        return f"[{elapsed:6.0f} s] " + "; ".join(parts)

    def summary(self) -> str:
        """A table of inputs tried, outcomes and findings per stage, then the findings."""
        kinds = ("ok", "diagnostic", "internal", "bad-diagnostic", "mismatch", "rejected",
                 "timeout")  # fmt: skip
        head = f"{'stage':<6} {'tried':>9} {'per s':>8} " + " ".join(f"{k:>14}" for k in kinds)
        lines = [head, "-" * len(head)]
        for stage, stats in self.stats.items():
            rate = stats.tried / stats.seconds if stats.seconds > 0 else 0.0
            cells = " ".join(f"{stats.counts.get(k, 0):>14}" for k in kinds)
            lines.append(f"{stage:<6} {stats.tried:>9} {rate:>8.1f} {cells}")
        lines.append("")
        lines.append(f"{len(self.saved)} distinct findings (in {self.out}):")
        for signature, (_, path) in self.saved.items():
            lines.append(f"  {path.name}: {signature} (seen {self.occurrences[signature]}x)")
        return "\n".join(lines)
