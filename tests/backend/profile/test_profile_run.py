"""Profiling a compiled model (`model.profile`, `profile_model`): the profiling entry gives
the same results as `run`, every step is timed, parallel loops are attributed to their
kernel with per-worker tasks, the kernels plus the time outside them account for
each run, costs survive an artifact, and the Chrome trace has one track per thread."""

import json

import numpy as np
import pytest
import relay
from relay.backend.codegen import set_num_threads, threadpool
from relay.backend.codegen.threadpool import default_num_threads
from relay.backend.profile.run import profile_model
from relay.backend.runtime.compiled import CompiledModel
from relay.lang.diagnostics import InputError

MLP = """#[version = "0.0.5"]
def @main(%x: Tensor[(64, 256), float32], %w: Tensor[(512, 256), float32],
          %b: Tensor[(512), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  %3 = exp(%2);
  sum(%3, axis=[1])
}
"""


BIG_MLP = (
    MLP.replace("(64, 256)", "(128, 512)")
    .replace("(512, 256)", "(1024, 512)")
    .replace("Tensor[(512), float32]", "Tensor[(1024), float32]")
)


@pytest.fixture(autouse=True)
def restore_threads():
    yield
    set_num_threads(default_num_threads())


@pytest.fixture(scope="module")
def mlp():
    model = relay.build(relay.parse(MLP), target="llvm -num-threads=2")
    rng = np.random.default_rng(0)
    inputs = {
        "x": rng.random((64, 256), np.float32),
        "w": rng.random((512, 256), np.float32) * 0.01,
        "b": rng.random(512, np.float32),
    }
    return model, inputs


def test_profiled_runs_compute_what_run_computes(mlp):
    model, inputs = mlp
    stamps = np.zeros(len(model.plan.steps) + 1, np.int64)
    np.testing.assert_array_equal(model.run_profiled(stamps, **inputs), model.run(**inputs))
    assert (np.diff(stamps) >= 0).all() and stamps[0] > 0


def test_each_step_is_timed_and_named_after_its_fused_operators(mlp):
    model, inputs = mlp
    set_num_threads(2)
    data = model.profile(**inputs, repeat=5).data
    assert data.repeat == 5 and len(data.wall_ns) == 5 and data.threads == 2
    assert [s.step for s in data.steps] == list(range(len(model.plan.steps)))
    dense = data.steps[0]
    assert dense.cost.name == "fused_nn_dense_nn_bias_add_nn_relu_exp"
    assert dense.cost.ops == ("nn.dense", "nn.bias_add", "nn.relu", "exp")
    assert dense.cost.kind == "nn.dense"
    assert dense.cost.flops == 2 * 64 * 512 * 256 + 3 * 64 * 512
    assert dense.cost.bytes == 4 * (64 * 256 + 512 * 256 + 512 + 64 * 512)
    for step in data.steps:
        assert len(step.times_ns) == 5 and min(step.times_ns) > 0
    for r in range(5):
        assert sum(s.times_ns[r] for s in data.steps) <= data.wall_ns[r]


def test_parallel_loops_belong_to_their_kernel_with_every_task_counted(mlp):
    model, inputs = mlp
    set_num_threads(2)
    data = model.profile(**inputs, repeat=4).data
    dense = data.steps[0]
    assert dense.parallel_loops >= 1
    for loads, time_ns in zip(dense.loads, dense.times_ns):
        tasks = sum(w.tasks for w in loads)
        assert tasks == dense.parallel_loops * min(64, threadpool.TASKS_PER_THREAD * 2) or (
            tasks % dense.parallel_loops == 0
        )
        assert {w.worker for w in loads} <= {0, 1}
        for w in loads:
            assert 0 < w.busy_ns <= time_ns


def test_kernels_plus_outside_account_for_every_run(mlp):
    """Each profiled run's wall time is its kernels' times plus the time outside them, the
    outside time is never negative, and the summary's figures are the medians of those.
    (How close kernels + outside come to the plain model's time is a timing, so
    bench/profile_models.py prints it; a test cannot hold it on a shared machine.)"""
    model, inputs = mlp
    set_num_threads(2)
    profile = model.profile(**inputs, repeat=6)
    data = profile.data
    kernels_per_run = [sum(s.times_ns[r] for s in data.steps) for r in range(data.repeat)]
    outside_per_run = [w - k for w, k in zip(data.wall_ns, kernels_per_run)]
    assert all(o >= 0 for o in outside_per_run)
    summary = profile.json()
    assert summary["outside"]["us"] == pytest.approx(np.median(outside_per_run) / 1e3)
    step_medians = sum(float(np.median(s.times_ns)) for s in data.steps)
    assert summary["kernels_plus_outside_us"] == pytest.approx(
        (step_medians + np.median(outside_per_run)) / 1e3
    )


def test_the_trace_has_one_track_per_thread_and_loads_as_json(mlp, tmp_path):
    model, inputs = mlp
    set_num_threads(2)
    profile = model.profile(**inputs, repeat=3)
    path = tmp_path / "trace.json"
    profile.write_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    names = {
        e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"
    }
    spans = [e for e in events if e["ph"] == "X"]
    assert set(names) == {e["tid"] for e in spans}
    assert {e["tid"] for e in spans} <= {0, 1}
    kernels = [e for e in spans if e["cat"] == "kernel"]
    assert [e["name"] for e in kernels] == [s.cost.name for s in profile.data.steps]
    tasks = [e for e in spans if e["cat"] == "task"]
    assert tasks and all(e["name"].startswith("fused_nn_dense") for e in tasks)
    for e in spans:
        assert e["dur"] >= 0 and e["ts"] >= 0


def test_costs_and_profiling_survive_an_artifact(mlp, tmp_path):
    model, inputs = mlp
    path = tmp_path / "mlp.relaymod"
    model.save(path)
    loaded = relay.load(path)
    assert [k.cost for k in loaded.kernels] == [k.cost for k in model.kernels]
    data = loaded.profile(**inputs, repeat=2).data
    assert data.steps[0].cost.name == "fused_nn_dense_nn_bias_add_nn_relu_exp"


def test_a_model_stepping_from_python_is_profiled_too(mlp):
    model, inputs = mlp
    stepping = CompiledModel(
        plan=model.plan,
        kernels=model.kernels,
        params=model.params,
        memory=model.memory,
        slot_kind=model.slot_kind,
        output_slots=model.output_slots,
        library=model.library,
        entry_name=None,
        stats=model.stats,
        target=model.target,
        profiler=profile_model,
    )
    data = stepping.profile(**inputs, repeat=2).data
    np.testing.assert_array_equal(stepping.run(**inputs), model.run(**inputs))
    assert all(min(s.times_ns) > 0 for s in data.steps)


def test_bad_arguments_are_errors_not_tracebacks(mlp):
    model, inputs = mlp
    with pytest.raises(InputError, match="missing argument `b`"):
        model.profile(x=inputs["x"], w=inputs["w"])
    with pytest.raises(ValueError, match="repeat"):
        model.profile(**inputs, repeat=0)


def test_a_cached_peak_that_a_kernel_beats_is_measured_again(mlp, monkeypatch):
    from relay.backend.profile import machine
    from relay.backend.profile.data import MachinePeak

    model, inputs = mlp
    calls = []

    def fake_peak(threads, refresh=False):
        calls.append(refresh)
        gflops = 1e6 if refresh else 1e-3  # the cached figure is one no kernel is below
        return MachinePeak(gflops, gflops, 10.0, threads, "test", "measured" if refresh else "/c")

    monkeypatch.setattr(machine, "machine_peak", fake_peak)
    data = model.profile(**inputs, repeat=2).data
    assert calls == [False, True]
    assert data.machine.fp32_gflops == 1e6
