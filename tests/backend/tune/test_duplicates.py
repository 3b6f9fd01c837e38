"""No trial spent on a duplicate: configs of one space that lower to the same loop IR are
one kernel; the search proposes each kernel once, records the others as duplicates of the
measured one (in the log, kept on resume) and the trial budget counts distinct kernels."""

from __future__ import annotations

import numpy as np
from relay.backend.target import Target
from relay.backend.tune.cost_model import RandomModel
from relay.backend.tune.log import TuningLog, read_log, record_of
from relay.backend.tune.measure import MeasureOptions, MeasureResult
from relay.backend.tune.search import FeatureCache, duplicate_records, kernel_digest, propose
from relay.backend.tune.space import Config
from relay.backend.tune.tuner import log_curves, tune

from .tune_models import dense_model, only_task

# AVX2 (8 float lanes) on any host: the space below is counted for that width
TWO_THREADS = Target.parse("llvm -mattr=+avx2,+fma,-avx512f -num-threads=2")
FAST = MeasureOptions(number=1, repeat=1, timeout=30.0)


def _task():
    # 160 points; without `parallel`, `parallel_rows` changes nothing: 120 distinct kernels
    return only_task(*dense_model(5, 9, 3), target=TWO_THREADS)


def test_digest_is_the_printed_loop_ir():
    task = _task()
    default = task.space.default()
    assert kernel_digest(task.lower(default)) == kernel_digest(task.lower(None))
    others = {kernel_digest(task.lower(task.space.config_at(i))) for i in range(4)}
    assert len(others) > 1


def test_propose_gives_each_kernel_once_and_reports_the_rest():
    task = _task()
    cache = FeatureCache(task)
    everything = [task.space.config_at(i) for i in range(task.space.size)]
    digests = {c: cache.digest(c) for c in everything}
    distinct = len(set(digests.values()))
    assert distinct < task.space.size  # the space does have duplicates
    rng, model = np.random.default_rng(4), RandomModel(seed=4)
    measured: dict[Config, float | None] = {}
    proposed: list[Config] = []
    cost_of = {d: 1.0 + i for i, d in enumerate(sorted(set(digests.values())))}
    while True:
        duplicates: dict[Config, Config] = {}
        picks = propose(task, model, measured, 16, rng, cache=cache, duplicates=duplicates,
                        trained=False)  # fmt: skip
        for c, original in duplicates.items():
            assert digests[c] == digests[original] and c != original
            assert original in measured or original in picks
        if not picks:
            break
        assert len({digests[c] for c in picks}) == len(picks)
        proposed += picks
        measured.update({c: cost_of[digests[c]] for c in picks})
        records = duplicate_records(task, duplicates, measured)
        assert len(records) == len(duplicates)
        for r in records:
            original = task.space.normalize(Config.from_json(r["duplicate_of"]))
            assert r["cost"] == measured[original] and r["error"] is None
    # every kernel proposed once, every other point known as a duplicate of one
    assert len(proposed) == distinct
    assert len({digests[c] for c in proposed}) == distinct
    assert set(measured) == set(everything)


def test_tuner_never_measures_two_equal_kernels_and_resumes_counting_kernels(tmp_path):
    task = _task()
    space = task.space
    cache = FeatureCache(task)
    path = tmp_path / "tune.jsonl"
    # a log that measured every point with parallel_rows: the points without it and
    # without `parallel` are duplicates of those
    log = TuningLog(path)
    preloaded = [c for c in map(space.config_at, range(space.size)) if c.get("parallel_rows")]
    for i, c in enumerate(preloaded):
        log.append({**record_of(task, MeasureResult(c, costs=(1.0 + i,))), "model": "random"})
    seen: list[Config] = []
    first = tune([task], path, trials=len(preloaded) + 4, model="random", batch=8,
                 options=FAST, seed=5, on_result=lambda t, r: seen.append(r.config))  # fmt: skip
    assert first.measured == 4 and len(seen) == 4
    measured_digests = [cache.digest(c) for c in preloaded + seen]
    assert len(set(measured_digests)) == len(measured_digests)  # no kernel measured twice
    records = read_log(path).records
    dups = [r for r in records if r.get("duplicate_of") is not None]
    assert dups, "seed 5 draws 4 duplicates of preloaded points (seed 3 draws none)"
    by_config = {space.normalize(Config.from_json(r["config"])): r for r in records}
    for r in dups:
        config = space.normalize(Config.from_json(r["config"]))
        original = space.normalize(Config.from_json(r["duplicate_of"]))
        assert cache.digest(config) == cache.digest(original)
        assert r["cost"] == by_config[original]["cost"]
        assert config not in seen
    # resuming: the duplicates are known (not proposed again) and not counted as trials
    second = tune([task], path, trials=len(preloaded) + 6, model="random", batch=8,
                  options=FAST, seed=6)  # fmt: skip
    assert second.measured == 2
    assert second.resumed == len(preloaded) + 4 + len(dups)
    curves = log_curves(path)
    assert sum(len(ys) for ys in curves.values()) == len(preloaded) + 6  # measured ones only
