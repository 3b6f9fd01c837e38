"""Several local measurement workers: they build side by side and take turns to time (a
lock file held shared while building, exclusive while checking and timing); CPU-time
measurement."""

from __future__ import annotations

import fcntl
import os
import threading

import pytest
from relay.backend.target import Target
from relay.backend.tune import measure as measure_module
from relay.backend.tune.executors import ExecutorError, LocalExecutor, make_executor
from relay.backend.tune.measure import TIMING_LOCK_ENV, MeasureOptions

from .tune_models import dense_model, only_task


def test_timing_waits_for_builds_and_builds_share(tmp_path, monkeypatch):
    lock = tmp_path / "timing.lock"
    lock.touch()
    monkeypatch.setenv(TIMING_LOCK_ENV, str(lock))
    other_build = open(lock, encoding="utf-8")  # another worker's open file: its own lock  # noqa: SIM115
    fcntl.flock(other_build, fcntl.LOCK_SH)
    events: list[str] = []

    def build_then_time() -> None:
        with measure_module._phase(exclusive=False):
            events.append("built")  # builds share the lock with the other build
        with measure_module._phase(exclusive=True):
            events.append("timed")

    thread = threading.Thread(target=build_then_time)
    thread.start()
    thread.join(timeout=1.0)
    assert events == ["built"] and thread.is_alive()  # waiting: the other worker builds
    fcntl.flock(other_build, fcntl.LOCK_UN)
    thread.join(timeout=10.0)
    assert events == ["built", "timed"]
    other_build.close()


def test_two_workers_measure_every_config_once():
    task = only_task(*dense_model(), target=Target.host(num_threads=2))
    configs = [task.space.config_at(i * 11 % task.space.size) for i in range(4)]
    opts = MeasureOptions(number=1, repeat=1, timeout=30.0, clock="cpu")
    with pytest.raises(ValueError, match="unknown clock"):
        MeasureOptions(clock="sundial")
    with make_executor("local:2") as executor:
        assert isinstance(executor, LocalExecutor) and len(executor.measurers) == 2
        results = list(executor.submit(task, configs, opts, {configs[2]: "wrong"}))
        assert {r.config for r in results} == set(configs)
        by_config = {r.config: r for r in results}
        assert by_config[configs[2]].error_kind == "wrong"
        assert all(by_config[c].checked and by_config[c].cost for c in configs if c != configs[2])
        assert sum(m.process is not None for m in executor.measurers) == 2  # both worked
        path = executor.lock_path
    assert path is not None and not os.path.exists(path)
    for bad in ("local:0", "local:x"):
        with pytest.raises(ExecutorError, match="number of workers"):
            make_executor(bad)


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="reads /proc")
def test_a_worker_runs_numpy_on_one_thread_and_starts_before_any_timeout(monkeypatch):
    # BLAS threads spinning after the reference outputs slowed the first config's timing
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "8")
    with measure_module.Measurer() as worker:
        process = worker._start()
        with open(f"/proc/{process.pid}/environ", "rb") as f:
            env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
        assert env[b"OPENBLAS_NUM_THREADS"] == b"1" and env[b"MKL_NUM_THREADS"] == b"1"
        # started means booted: relay is imported before any config's timeout counts
        assert process.poll() is None
        with open(f"/proc/{process.pid}/maps", "rb") as f:
            assert b"_multiarray_umath" in f.read()  # numpy, so relay, imported
