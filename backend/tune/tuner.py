"""The tuning loop: which task to measure next, which configs, measured, logged, learned.

    summary = tune(tasks, "tune.jsonl", trials=64, model="xgb")
    summary.best[task.key]         # (config, seconds) of the best working config
    plot_log("tune.jsonl", "curve.png")

Only tasks whose space has more than one point are tuned. The budget is `trials` per tuned
task on average (`trials x tasks` measurements in all), handed out in batches by the task
scheduler (`search.TaskScheduler`: round robin once, then to the task with the largest
estimated gain in time per model run). A task's first batch holds its default config, so
the default is always a measured baseline. Each batch comes from `search.propose` guided by
the cost model (`xgb`: `cost_model.XGBoostModel`, refitted on every record after each
batch; `random`: `cost_model.RandomModel`, i.e. random search); configs already in the log
are never measured again, and the log's records count against the budget, so a killed run
resumes where it stopped. Every measurement is appended to the log as it completes.
A proposed config whose loop IR equals a measured one's is not measured: it is logged as
a duplicate of it (`search.duplicate_records`), and the budget counts measured kernels.
`executor` says where configs are measured (`executors`: a local worker process by
default, or a Ray cluster: `tune(..., executor="ray://HOST:PORT")`).

Scoring a config lowers it (~0.05 s for a conv2d_NCHWc config, ~0.3 s for a Winograd one),
which cost more than the measurements when the search was free to lower what it liked
(80% of a ResNet-18 run). Each `propose` may lower at most `LOWERING_SHARE` of the batch's
expected measurement time worth of new configs (from the mean lowering time of the task and
the mean wall time of a measurement so far), and at least `2 x batch`.

`time_budget` (seconds) stops the run once that much time has passed, between batches: the
task scheduler has by then spent the trials where it expected the most gain. The log is
complete (every measurement appended as it came), so a later run resumes from it.

`progress` shows a live display (tqdm, on stderr): one bar per task with its trials, best
GFLOP/s and errors.

With `confirm` (the default), each task's default and best configs are measured once more at
the end, one right after the other (`summary.confirmed`, not logged): the default's first
measurement, taken in the run's first batch, can be slowed by whatever ran before it, and
the best config against it then overstates the gain (a ResNet-18 run said "2.1x the default"
for kernels that did not move the model).
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from attrs import define, field

from .executors import Executor, LocalExecutor, make_executor
from .log import TuningLog, read_log, record_of
from .measure import MeasureOptions, MeasureResult
from .space import Config
from .task import Task

try:  # the cost model and the search (written alongside; optional while they land)
    from .cost_model import RandomModel, XGBoostModel
    from .search import (
        FeatureCache,
        TaskScheduler,
        duplicate_records,
        propose,
        training_data,
    )

    GUIDED = True
except ImportError:  # pragma: no cover - only before those modules exist
    GUIDED = False

LOWERING_SHARE = 0.25
"""A search may spend on lowering configs this share of its batch's measurement time."""


def lowering_limit(batch: int, lower_seconds: float | None, measure_seconds: float | None) -> int:
    """How many new configs one `propose` for a batch of `batch` may lower: lowering time
    at most `LOWERING_SHARE` of the batch's measurement time, at least `2 x batch` (and
    `4 x batch` before either time is known)."""
    if not lower_seconds or not measure_seconds:
        return 4 * batch
    afford = LOWERING_SHARE * batch * measure_seconds / lower_seconds
    return max(2 * batch, int(afford))


@define
class TaskProgress:
    """One task's state during tuning: measured configs (cost None for errors), the errors
    seen, and its best-so-far curve (seconds after each trial, in order)."""

    task: Task
    measured: dict[Config, float | None] = field(factory=dict)
    errors: int = 0
    curve: list[float] = field(factory=list)
    new_trials: int = 0

    def best(self) -> tuple[Config, float] | None:
        """The best working config and its cost."""
        ok = [(c, v) for c, v in self.measured.items() if v is not None]
        return min(ok, key=lambda cv: cv[1]) if ok else None

    def gflops(self) -> float:
        """The best config's GFLOP/s (0 before one works)."""
        b = self.best()
        return self.task.flops() / b[1] / 1e9 if b is not None and b[1] > 0 else 0.0


@define
class TuneSummary:
    """What a tuning run did: per task key its progress, the measurements made, the
    records read from the log, and notes (log problems, the search used); the wall
    seconds in all, waiting for measurements and proposing configs; whether the time
    budget stopped it."""

    tasks: dict[str, TaskProgress] = field(factory=dict)
    measured: int = 0
    resumed: int = 0
    seconds: float = 0.0
    notes: list[str] = field(factory=list)
    measure_seconds: float = 0.0
    search_seconds: float = 0.0
    out_of_time: bool = False
    confirmed: dict[str, tuple[float, float]] = field(factory=dict)
    """Per task key, the default's and the best config's seconds measured side by side at
    the end (module docstring), when the best is not the default."""

    @property
    def best(self) -> dict[str, tuple[Config, float]]:
        """Per task key, the best working config and its seconds per call."""
        out = {}
        for key, p in self.tasks.items():
            b = p.best()
            if b is not None:
                out[key] = b
        return out


def _random_batch(
    task: Task, measured: Mapping[Config, float | None], batch: int, rng: np.random.Generator
) -> list[Config]:
    """Up to `batch` distinct unmeasured configs drawn at random."""
    picks: list[Config] = []
    left = task.space.size - len(measured)
    tries = 0
    while len(picks) < min(batch, left) and tries < 50 * batch:
        tries += 1
        c = task.space.random(rng)
        if c not in measured and c not in picks:
            picks.append(c)
    return picks


class _Display:
    """The live progress display: one tqdm bar per task (nothing when off)."""

    def __init__(self, progress: list[TaskProgress], trials: int, enabled: bool) -> None:
        self.bars: dict[str, Any] = {}
        if not enabled:
            return
        from tqdm import tqdm

        for i, p in enumerate(progress):
            bar = tqdm(
                total=trials,
                initial=min(len(p.measured), trials),
                position=i,
                desc=p.task.key[:44].ljust(44),
                file=sys.stderr,
                leave=True,
                dynamic_ncols=True,
                bar_format="{desc} {n_fmt:>4}/{total_fmt} {bar:20} {postfix}",
            )
            self.bars[p.task.key] = bar
            self.update(p)

    def update(self, p: TaskProgress, advanced: int = 0) -> None:
        bar = self.bars.get(p.task.key)
        if bar is None:
            return
        if advanced:
            bar.update(advanced)
        bar.set_postfix_str(f"best {p.gflops():7.2f} GFLOP/s, errors {p.errors}", refresh=True)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


def tune(
    tasks: Sequence[Task],
    log_path: str | os.PathLike[str],
    trials: int,
    model: str = "xgb",
    batch: int = 8,
    options: MeasureOptions | None = None,
    seed: int = 0,
    progress: bool = False,
    faults: Mapping[Config, str] | None = None,
    on_result: Callable[[Task, MeasureResult], None] | None = None,
    executor: Executor | str | None = None,
    time_budget: float | None = None,
    confirm: bool = True,
) -> TuneSummary:
    """Tune `tasks` for `trials` measurements per tuned task on average, appending to the
    log at `log_path` and resuming from it (module docstring). `model` is `xgb` or
    `random`; `executor` measures the configs: an `executors.Executor` (left open), a spec
    such as `"ray://HOST:PORT"` (`executors.make_executor`) or None for a local worker
    process; `time_budget` stops the run after that many seconds (between batches);
    `confirm` measures each task's default and best again side by side at the end;
    `faults` is for tests (`measure.measure`)."""
    if model not in ("xgb", "random"):
        raise ValueError(f"unknown cost model {model!r} (xgb or random)")
    if time_budget is not None and time_budget <= 0:
        raise ValueError(f"the time budget must be positive, not {time_budget!r}")
    start = time.perf_counter()
    opts = options or MeasureOptions()
    rng = np.random.default_rng(seed)
    summary = TuneSummary()
    contents = read_log(log_path)
    summary.notes.extend(contents.messages())
    previous = contents.by_task()
    tuned = [t for t in tasks if t.space.size > 1]
    skipped = len(tasks) - len(tuned)
    if skipped:
        summary.notes.append(f"{skipped} task(s) have no knobs and keep the default schedule")
    if not tuned:
        return summary
    progress_of: list[TaskProgress] = []
    for t in tuned:
        p = TaskProgress(t)
        for stored, cost in previous.get(t.key, {}).items():
            config = t.space.normalize(stored)
            if config is not None:
                p.measured[config] = cost
                p.errors += cost is None
                best = p.best()
                p.curve.append(best[1] if best is not None else math.inf)
        summary.resumed += len(p.measured)
        summary.tasks[t.key] = p
        progress_of.append(p)
    if summary.resumed:
        summary.notes.append(f"resumed: {summary.resumed} record(s) of these tasks in the log")
    skipped_before = sum(r.get("duplicate_of") is not None and r["task"] in summary.tasks
                         for r in contents.records)  # fmt: skip
    budget = trials * len(tuned) - summary.resumed + skipped_before  # distinct kernels only
    if not GUIDED:
        summary.notes.append("the cost model and search are not available: random proposals")
    cost_model: Any = None
    caches: dict[str, Any] = {}
    scheduler: Any = None
    if GUIDED:
        cost_model = XGBoostModel(seed=seed) if model == "xgb" else RandomModel(seed=seed)
        scheduler = TaskScheduler([float(t.weight) for t in tuned])
        for i, p in enumerate(progress_of):
            if p.measured:
                best = p.best()
                scheduler.update(i, best[1] if best is not None else None)
    trained = _refit(cost_model, progress_of, caches) if GUIDED else False
    log = TuningLog(log_path)
    own_executor = not isinstance(executor, Executor)
    measurer: Executor
    if isinstance(executor, Executor):
        measurer = executor
    else:
        measurer = LocalExecutor() if executor is None else make_executor(executor)
    display = _Display(progress_of, trials, progress)
    turn = 0
    try:
        while budget > 0:
            if time_budget is not None and time.perf_counter() - start >= time_budget:
                summary.out_of_time = True
                summary.notes.append(
                    f"stopped by the time budget ({time_budget / 60:g} min) with "
                    f"{budget} trial(s) of the budget left"
                )
                break
            if scheduler is not None:
                index = scheduler.next()
                if index is None:
                    break
            else:
                open_ = [
                    i for i, p in enumerate(progress_of) if p.task.space.size > len(p.measured)
                ]
                if not open_:
                    break
                index = open_[turn % len(open_)]
                turn += 1
            p = progress_of[index]
            size = min(batch, budget)
            configs: list[Config] = []
            default = p.task.space.default()
            if default not in p.measured:
                configs.append(default)
            measured_and_new = {**p.measured, **dict.fromkeys(configs)}
            want = size - len(configs)
            duplicates: dict[Config, Config] = {}  # same loop IR as a measured/picked config
            searched = time.perf_counter()
            if want > 0:
                if GUIDED:
                    cache = caches.setdefault(p.task.key, FeatureCache(p.task))
                    done = summary.measured
                    per_measure = summary.measure_seconds / done if done else None
                    configs += propose(
                        p.task, cost_model, measured_and_new, want, rng, cache=cache,
                        trained=trained and model == "xgb", duplicates=duplicates,
                        max_lowerings=lowering_limit(want, cache.mean_lower_seconds(), per_measure),
                    )  # fmt: skip
                else:
                    configs += _random_batch(p.task, measured_and_new, want, rng)
            summary.search_seconds += time.perf_counter() - searched
            for record in duplicate_records(p.task, duplicates, p.measured):
                log.append({**record, "model": model})  # originals measured before
            if not configs:
                if scheduler is not None:
                    scheduler.mark_done(index)
                    continue
                break
            waited = time.perf_counter()
            for result in measurer.submit(p.task, configs, opts, faults):
                summary.measure_seconds += time.perf_counter() - waited
                config = result.config
                log.append({**record_of(p.task, result), "model": model})
                p.measured[config] = result.cost
                p.errors += result.error is not None
                best = p.best()
                p.curve.append(best[1] if best is not None else math.inf)
                p.new_trials += 1
                summary.measured += 1
                budget -= 1
                display.update(p, 1)
                if on_result is not None:
                    on_result(p.task, result)
                waited = time.perf_counter()
            for record in duplicate_records(p.task, duplicates, p.measured):
                log.append({**record, "model": model})  # originals measured just now
            if scheduler is not None:
                best = p.best()
                scheduler.update(index, best[1] if best is not None else None)
                if len(p.measured) >= p.task.space.size:
                    scheduler.mark_done(index)
            if GUIDED:
                searched = time.perf_counter()
                trained = _refit(cost_model, progress_of, caches)
                summary.search_seconds += time.perf_counter() - searched
        if confirm:
            waited = time.perf_counter()
            _confirm(progress_of, measurer, opts, summary)
            summary.measure_seconds += time.perf_counter() - waited
    finally:
        display.close()
        if own_executor:
            measurer.close()
    summary.seconds = time.perf_counter() - start
    return summary


def _confirm(
    progress: Sequence[TaskProgress], measurer: Executor, opts: MeasureOptions, summary: TuneSummary
) -> None:
    """Measure each task's default and best configs again, one right after the other, into
    `summary.confirmed` (module docstring)."""
    for p in progress:
        best = p.best()
        default = p.task.space.default()
        if best is None or best[0] == default or p.measured.get(default) is None:
            continue
        costs = {r.config: r.cost for r in measurer.submit(p.task, [default, best[0]], opts)}
        again = costs.get(default), costs.get(best[0])
        if again[0] is not None and again[1] is not None:
            summary.confirmed[p.task.key] = (again[0], again[1])


def _refit(cost_model: Any, progress: Sequence[TaskProgress], caches: dict[str, Any]) -> bool:
    """Fit the cost model on every measured config; whether it learned anything."""
    records: list[Any] = [(p.task, p.measured) for p in progress if p.measured]
    if not records:
        return False
    x, costs, groups = training_data(records, caches)
    if len(x) < 2:
        return False
    cost_model.fit(x, costs, groups)
    return int(getattr(cost_model, "trained_records", 1)) > 0


def log_curves(path: str | os.PathLike[str]) -> dict[tuple[str, str], list[float]]:
    """Per (task key, model) in the log at `path`, the best GFLOP/s after each trial."""
    curves: dict[tuple[str, str], list[float]] = {}
    best: dict[tuple[str, str], float] = {}
    for r in read_log(path).records:
        if r.get("duplicate_of") is not None:
            continue  # not measured: the same kernel as a measured config
        key = (r["task"], str(r.get("model", "?")))
        cost, flops = r.get("cost"), r.get("flops") or 0.0
        if r.get("error") is None and isinstance(cost, int | float) and cost > 0:
            best[key] = max(best.get(key, 0.0), flops / cost / 1e9)
        curves.setdefault(key, []).append(best.get(key, 0.0))
    return curves


def plot_log(path: str | os.PathLike[str], out: str | os.PathLike[str]) -> int:
    """Plot best-so-far GFLOP/s against trials for each task (one line per search model, so
    xgboost and random search compare when both ran into the log) to the image `out`;
    returns the number of curves. ImportError when matplotlib is missing."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = log_curves(path)
    keys = sorted({k for k, _ in curves})
    cols = min(3, max(1, len(keys)))
    rows = max(1, -(-len(keys) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.4 * rows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        for (task, model), ys in sorted(curves.items()):
            if task == key:
                ax.plot(range(1, len(ys) + 1), ys, label=model)
        ax.set_title(key[:48], fontsize=8)
        ax.set_xlabel("trials")
        ax.set_ylabel("best GFLOP/s")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(keys) :]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return len(curves)


__all__ = [
    "GUIDED",
    "LOWERING_SHARE",
    "TaskProgress",
    "TuneSummary",
    "log_curves",
    "lowering_limit",
    "plot_log",
    "tune",
]
