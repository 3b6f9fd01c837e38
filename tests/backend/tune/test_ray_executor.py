"""Measurement on Ray (`--executor ray...`): a small tuning session through a local Ray
instance (records with timings and the measuring host in the log, hangs / wrong results /
crashes as error records, the best record applied at build) and the diagnostics when Ray
is missing or its address does not answer.

Ray is an optional extra: the fixture installs it into this interpreter's environment
when it is missing (skipped only if that install fails) and starts a local instance
in this process (`ray.init(num_cpus=2)`), shut down at the end of the module.
"""

from __future__ import annotations

import importlib
import json
import logging
import socket
import subprocess
import sys
from collections.abc import Mapping

import numpy as np
import pytest
import relay
from relay.backend.target import Target
from relay.backend.tune.executors import Executor, LocalExecutor, make_executor
from relay.backend.tune.log import read_log, record_of
from relay.backend.tune.measure import MeasureOptions, MeasureResult, host_description
from relay.backend.tune.ray_executor import RayExecutor
from relay.backend.tune.tuner import tune
from relay.cli import EXIT_USER_ERROR, main
from relay.driver import build

from .tune_models import dense_model, only_task

RAY_SPEC = "ray[client]>=2.9"
TWO_THREADS = Target.host(num_threads=2)


def _import_or_install_ray():
    try:
        return importlib.import_module("ray")
    except ImportError:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", RAY_SPEC],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        if done.returncode != 0:
            pytest.skip(f"Ray could not be installed: {done.stderr.strip()[-300:]}")
        importlib.invalidate_caches()
        return importlib.import_module("ray")


@pytest.fixture(scope="module")
def ray_session():
    """A local Ray instance in this process (2 CPUs, no dashboard), shut down after."""
    ray = _import_or_install_ray()
    ray.init(
        address="local", num_cpus=2, include_dashboard=False,
        logging_level=logging.ERROR, log_to_driver=False,
    )  # fmt: skip
    try:
        yield ray
    finally:
        ray.shutdown()


class FaultsInOrder(Mapping):
    """Fault injection by arrival: the n-th distinct config asked about gets `kinds[n]`."""

    def __init__(self, kinds):
        self.kinds = list(kinds)
        self.seen = []

    def __getitem__(self, config):
        if config not in self.seen:
            self.seen.append(config)
        n = self.seen.index(config)
        if n >= len(self.kinds) or self.kinds[n] is None:
            raise KeyError(config)
        return self.kinds[n]

    def __iter__(self):
        return iter(self.seen[: len(self.kinds)])

    def __len__(self):
        return len(self.kinds)


def test_a_tuning_session_on_ray_logs_errors_and_applies_the_best(ray_session, tmp_path):
    mod, params = dense_model(64, 64, 64)
    task = only_task(mod, params, TWO_THREADS)
    path = tmp_path / "tune.jsonl"
    # the default first (works), then a wrong result, a hang and a crash, then good ones
    faults = FaultsInOrder([None, "wrong", "hang", "crash"])
    opts = MeasureOptions(number=2, repeat=2, timeout=15.0)
    with RayExecutor(None) as executor:
        assert isinstance(executor, Executor) and not executor.owns_ray  # the fixture's Ray
        assert executor.node["host"] == host_description()
        summary = tune([task], path, trials=7, model="random", batch=7, options=opts,
                       seed=3, faults=faults, executor=executor)  # fmt: skip
    assert ray_session.is_initialized()  # the executor leaves a Ray it did not start
    assert summary.measured == 7
    records = read_log(path).records
    assert len(records) == 7 and read_log(path).foreign == 0
    kind_of = {json.dumps(r["config"], sort_keys=True): r["error_kind"] for r in records}
    by_fault = {
        fault: kind_of[json.dumps(config.to_json(), sort_keys=True)]
        for fault, config in zip(faults.kinds, faults.seen)
    }
    assert by_fault == {None: None, "wrong": "wrong", "hang": "timeout", "crash": "crash"}
    errors = [r for r in records if r["error"] is not None]
    assert len(errors) == 3 and all(r["cost"] is None for r in errors)
    assert any("differs from the interpreter" in r["error"] for r in errors)
    assert any("cancelled" in r["error"] for r in errors)
    good = [r for r in records if r["error"] is None]
    assert len(good) == 4  # the workers after the hang and the crash went on measuring
    for r in good:
        assert len(r["costs"]) == 2 and all(c > 0 for c in r["costs"]) and r["cost"] > 0
        assert r["host"] == host_description() and "replace_compute" in r["trace"]
    # the best record is applied at build, and the model still computes the right thing
    best = min(good, key=lambda r: r["cost"])
    dump: dict = {}
    model = build(mod, target=TWO_THREADS, params=params, tuning_log=path, dump=dump)
    assert best["trace"] in dump["te"]
    x = np.random.default_rng(1).standard_normal((64, 64)).astype("float32")
    want = relay.interpret(mod, x, **params)
    np.testing.assert_allclose(model.run(x), want, rtol=1e-4, atol=1e-4)


def test_cli_tune_on_ray(ray_session, tmp_path, capsys):
    mod, params = dense_model()
    model, weights, log = tmp_path / "m.relay", tmp_path / "w.npz", tmp_path / "t.jsonl"
    model.write_text(mod.astext())
    np.savez(weights, **params)
    argv = ["tune", str(model), "--params", str(weights), "--trials", "3", "--log", str(log),
            "--number", "1", "--repeat", "1", "--no-progress", "--executor", "ray"]  # fmt: skip
    assert main(argv) == 0
    assert "measured 3 configs" in capsys.readouterr().out
    records = read_log(log).records
    assert len(records) == 3 and all(r["host"] == host_description() for r in records)
    assert ray_session.is_initialized()  # `ray` used this process's session and left it


def test_records_carry_the_measuring_hosts_features(tmp_path):
    task = only_task(*dense_model(), target=TWO_THREADS)
    config = task.space.default()
    remote = {"cpu": "a-remote-node", "features": "0123456789abcdef", "cpus": 96}
    record = record_of(task, MeasureResult(config, costs=(1e-5,), host=remote))
    assert record["host"] == remote
    assert record_of(task, MeasureResult(config, costs=(1e-5,)))["host"] == host_description()


def test_executor_specs(tmp_path):
    with make_executor(None) as default:
        assert isinstance(default, LocalExecutor) and isinstance(default, Executor)
    with pytest.raises(relay.Error, match="unknown executor 'spark'"):
        make_executor("spark")
    with pytest.raises(relay.Error, match="no address after"):
        make_executor("ray:")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tiny(tmp_path):
    model = tmp_path / "tiny.relay"
    mod_text = """#[version = "0.0.5"]
def @main(%x: Tensor[(3, 4), float32]) { nn.relu(%x) }
"""
    model.write_text(mod_text)
    return model


def test_cli_without_ray_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if not installed
    argv = ["tune", str(_tiny(tmp_path)), "--log", str(tmp_path / "t.jsonl"),
            "--executor", "ray://127.0.0.1:10001"]  # fmt: skip
    assert main(argv) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert "needs Ray, which is not installed: pip install 'relay-lang[ray]'" in err
    assert "Traceback" not in err


def test_cli_unreachable_ray_address_fails_fast(tmp_path, capsys):
    _import_or_install_ray()
    port = _free_port()  # nothing listens there
    argv = ["tune", str(_tiny(tmp_path)), "--log", str(tmp_path / "t.jsonl"),
            "--executor", f"ray://127.0.0.1:{port}"]  # fmt: skip
    assert main(argv) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert f"no Ray cluster answers at 127.0.0.1:{port}" in err and "Traceback" not in err
    assert main([*argv[:-1], "ray:127.0.0.1:notaport"]) == EXIT_USER_ERROR
    assert "expected HOST:PORT" in capsys.readouterr().err
