"""Measurement in worker processes (errors recorded, the tuner survives), tuning logs
(round trip, truncated and corrupt lines, other hosts, resuming) and applying the best."""

from __future__ import annotations

import json
import os
import signal
import time

import numpy as np
import relay
from relay.backend.target import Target
from relay.backend.tune.apply import BestConfigs
from relay.backend.tune.log import TuningLog, best_records, read_log, record_of
from relay.backend.tune.measure import MeasureOptions, Measurer, MeasureResult, measure
from relay.backend.tune.space import Config
from relay.backend.tune.tuner import tune
from relay.driver import build

from .tune_models import dense_model, only_task

TWO_THREADS = Target.host(num_threads=2)
FAST = MeasureOptions(number=1, repeat=1, timeout=30.0)


def _task():
    return only_task(*dense_model(), target=TWO_THREADS)


def _configs(task, count):
    return [task.space.config_at(i * 7 % task.space.size) for i in range(count)]


def test_crash_hang_and_wrong_results_are_errors_and_the_tuner_goes_on():
    task = _task()
    good, crash, hang, wrong, after = _configs(task, 5)
    faults = {crash: "crash", hang: "hang", wrong: "wrong"}
    # A fresh worker's first config takes ~3 s on a loaded 2-core machine: the timeout leaves
    # room for that, and the injected hang sleeps past any timeout.
    opts = MeasureOptions(number=1, repeat=2, timeout=10.0)
    with Measurer() as worker:
        results = measure(task, [good, crash, hang, wrong, after], opts, worker, faults)
        assert worker.restarts == 2  # after the crash and after the hang
    kinds = [r.error_kind for r in results]
    assert kinds == [None, "crash", "timeout", "wrong", None]
    assert results[0].cost is not None and results[0].cost > 0 and results[0].checked
    assert len(results[0].costs) == 2
    assert "signal" in (results[1].error or "")
    assert "differs from the interpreter" in (results[3].error or "")
    assert all(r.cost is None for r in results[1:4])
    assert results[4].cost is not None  # a fresh worker measured the next config
    assert "replace_compute" in results[0].trace


def test_a_killed_worker_is_an_error_not_a_crash_of_the_tuner():
    task = _task()
    (config,) = _configs(task, 1)
    worker = Measurer()
    try:
        first = worker.measure_one(task, config, FAST)
        assert first.error is None
        assert worker.process is not None
        os.kill(worker.process.pid, signal.SIGKILL)
        worker.process.wait()
        second = worker.measure_one(task, config, FAST)  # a new worker
        assert second.error is None and second.cost is not None
    finally:
        worker.close()


def _record(task, config, cost, error=None):
    result = MeasureResult(
        config, costs=() if cost is None else (cost,), error=error,
        error_kind="wrong" if error else None,
    )  # fmt: skip
    return record_of(task, result)


def test_log_round_trip_truncated_line_foreign_host(tmp_path):
    task = _task()
    path = tmp_path / "tune.jsonl"
    log = TuningLog(path)
    a, b, c = _configs(task, 3)
    log.append(_record(task, a, 3e-5))
    log.append(_record(task, b, 1e-5))
    log.append(_record(task, c, None, error="output 0 differs"))
    foreign = _record(task, a, 1e-9)
    foreign["host"] = {"cpu": "some-other-cpu", "features": "0", "cpus": 64}
    log.append(foreign)
    with open(path, "ab") as f:  # a run killed in the middle of a write
        f.write(b'{"task": "x", "config": {"rows"')
    contents = read_log(path)
    assert len(contents.records) == 3
    assert contents.foreign == 1
    assert [line for line, _ in contents.corrupt] == [5]
    assert any("tune.jsonl:5" in m for m in contents.messages())
    assert any("1 record(s) measured on another host" in m for m in contents.messages())
    measured = contents.by_task()[task.key]
    assert {task.space.normalize(k) for k in measured} == {a, b, c}
    assert best_records(contents)[task.key]["cost"] == 1e-5  # not the foreign 1e-9
    # the next append starts on a fresh line: nothing is lost
    TuningLog(path).append(_record(task, c, 2e-5))
    again = read_log(path)
    assert len(again.records) == 4 and [line for line, _ in again.corrupt] == [5]
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    assert json.loads(lines[5])["cost"] == 2e-5
    # other garbage: not JSON, not a record
    with open(path, "a") as f:
        f.write("not json\n[1, 2]\n")
    assert [line for line, _ in read_log(path).corrupt] == [5, 7, 8]


def test_apply_best_picks_the_best_record(tmp_path):
    mod, params = dense_model()
    task = only_task(mod, params, TWO_THREADS)
    default = task.space.default()
    best = next(c for c in _configs(task, 6) if c != default)
    worse = next(c for c in _configs(task, 6)[::-1] if c not in (default, best))
    path = tmp_path / "tune.jsonl"
    log = TuningLog(path)
    log.append(_record(task, default, 5e-5))
    log.append(_record(task, best, 1e-5))
    log.append(_record(task, worse, 2e-5))
    log.append(_record(task, default, None, error="boom"))  # errors never chosen
    chooser = BestConfigs.from_log(path, TWO_THREADS)
    assert chooser(task.fn, task.constant_params) == best.as_dict()
    assert chooser.applied == [task.key]
    # the build uses it: the kernel's schedule is the best record's trace
    dump: dict = {}
    model = build(mod, target=TWO_THREADS, params=params, tuning_log=path, dump=dump)
    best_trace = task.lowered(best).trace.to_text()
    assert best_trace in dump["te"]
    assert task.lowered(default).trace.to_text() not in dump["te"]
    x = np.random.default_rng(0).standard_normal((13, 19)).astype("float32")
    want = relay.interpret(mod, x, **params)
    assert relay.build(mod, target=TWO_THREADS, params=params, tuning_log=path) is not None
    np.testing.assert_allclose(model.run(x), want, rtol=1e-4, atol=1e-4)
    # without a record (another target's threads): the default schedule
    assert BestConfigs.from_log(path, Target.host(num_threads=1))(task.fn, None) is None


def test_tune_resumes_from_its_log(tmp_path):
    task = _task()
    path = tmp_path / "tune.jsonl"
    first = tune([task], path, trials=3, model="random", batch=2, options=FAST, seed=1)
    assert first.measured == 3 and first.resumed == 0
    p = first.tasks[task.key]
    assert task.space.default() in p.measured  # the default is always measured
    assert len(read_log(path).records) == 3
    second = tune([task], path, trials=5, model="xgb", batch=2, options=FAST, seed=2)
    assert second.resumed == 3 and second.measured == 2
    records = read_log(path).records
    configs = [task.space.normalize(Config.from_json(r["config"])) for r in records]
    assert len(configs) == 5 and len(set(configs)) == 5  # nothing measured twice
    assert second.best[task.key][1] == min(r["cost"] for r in records if r["error"] is None)


class _CountingModel:
    """A stand-in for a compiled model: each call takes `seconds` and is counted."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.calls = 0

    def run(self, *args):
        self.calls += 1
        time.sleep(self.seconds)


def test_timing_runs_untimed_calls_for_the_warmup_first():
    from relay.backend.tune.measure import _time_model

    model = _CountingModel(0.002)
    costs = _time_model(model, [], MeasureOptions(number=2, repeat=3, warmup_ms=30.0))
    assert len(costs) == 3 and all(c >= 0.002 for c in costs)
    assert model.calls >= 3 * 2 + 10  # >= 30 ms of 2 ms calls before the 6 timed ones
    model = _CountingModel(0.0)
    _time_model(model, [], MeasureOptions(number=1, repeat=1, warmup_ms=0.0))
    assert model.calls == 2  # a zero warm-up is still one call


class _ScriptedExecutor:
    """An executor whose measurements are given: `seconds[config]` per call, in order."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.submitted = []

    def submit(self, task, configs, options, faults=None):
        self.submitted.append(list(configs))
        for c in configs:
            yield MeasureResult(c, (self.seconds[c].pop(0),))

    def close(self):
        pass


def test_default_and_best_are_timed_again_side_by_side():
    """The ratio to the default comes from the default and the best measured one after the
    other at the end, not from the default's first (possibly disturbed) measurement."""
    from relay.backend.tune.tuner import TaskProgress, TuneSummary, _confirm

    task = _task()
    default = task.space.default()
    other = next(c for i in range(task.space.size) if (c := task.space.config_at(i)) != default)
    p = TaskProgress(task)
    p.measured.update({default: 3e-3, other: 1e-3})  # the default's first timing was slow
    executor = _ScriptedExecutor({default: [1.5e-3], other: [1.2e-3]})
    summary = TuneSummary()
    _confirm([p], executor, FAST, summary)
    assert executor.submitted == [[default, other]]
    assert summary.confirmed == {task.key: (1.5e-3, 1.2e-3)}
    # the default is the best: nothing to confirm
    p.measured[other] = 4e-3
    summary = TuneSummary()
    _confirm([p], _ScriptedExecutor({}), FAST, summary)
    assert summary.confirmed == {}
