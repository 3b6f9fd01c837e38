"""`CompiledModel.run` from several threads at once: calls really run side by side (no lock
serializes them), each has its own workspace, every result matches numpy, outputs belong
to the caller, and no input is read after `run` returns."""

import ctypes
import functools
import importlib
import threading

import numpy as np
import pytest
import relay
from relay.backend.lower.lower_func import LoweringError

compile_plan_module = importlib.import_module("relay.backend.build.compile_plan")

MLP = """#[version = "0.0.5"]
def @main(%x: Tensor[(8, 64), float32], %w1: Tensor[(96, 64), float32],
          %w2: Tensor[(80, 96), float32], %w3: Tensor[(10, 80), float32]) {
  %0 = nn.dense(%x, %w1);
  %1 = nn.relu(%0);
  %2 = nn.dense(%1, %w2);
  %3 = tanh(%2);
  %4 = nn.dense(%3, %w3);
  nn.softmax(%4)
}
"""

IDENTITY = """#[version = "0.0.5"]
def @main(%x: Tensor[(3, 5), float32]) {
  (%x, nn.relu(%x), %x)
}
"""


def _weights():
    rng = np.random.default_rng(7)
    return {
        "w1": (rng.standard_normal((96, 64)) / 8).astype("float32"),
        "w2": (rng.standard_normal((80, 96)) / 8).astype("float32"),
        "w3": (rng.standard_normal((10, 80)) / 8).astype("float32"),
    }


def _numpy_mlp(x, w):
    h = np.tanh(np.maximum(x @ w["w1"].T, 0) @ w["w2"].T) @ w["w3"].T
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _build(threads=1, fallback_kernel=None, monkeypatch=None):
    """The MLP with weights bound; `fallback_kernel` k is left to the interpreter (the
    model then runs step by step from Python)."""
    if fallback_kernel is not None:
        assert monkeypatch is not None
        real = compile_plan_module.lower_primitive

        def lower(fn, types, name, target, **options):
            if name.split("_")[-1] == f"k{fallback_kernel}":
                raise LoweringError("left to the interpreter by the test")
            return real(fn, types, name, target, **options)

        monkeypatch.setattr(compile_plan_module, "lower_primitive", lower)
    model = relay.build(relay.parse(MLP), target=f"llvm -num-threads={threads}", params=_weights())
    assert model.memory.workspace_bytes > 0  # intermediates live in the shared-risk workspace
    return model


def _hammer(model, threads=4, calls=25):
    """`threads` threads each run `model` `calls` times on inputs of their own and compare
    every result with numpy; returns the failures."""
    w = _weights()
    failures: list[str] = []
    start = threading.Barrier(threads)

    def worker(seed):
        rng = np.random.default_rng(seed)
        start.wait()
        for k in range(calls):
            x = rng.standard_normal((8, 64)).astype("float32") * (1 + seed)
            got = model.run(x=x)
            if not np.allclose(got, _numpy_mlp(x, w), rtol=1e-4, atol=1e-5):
                failures.append(f"thread {seed}, call {k}")

    pool = [threading.Thread(target=worker, args=(s,)) for s in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return failures


@functools.cache
def _shared_model():
    return _build()


def test_concurrent_native_runs_are_correct():
    model = _shared_model()
    assert model.native
    assert _hammer(model) == []


def test_concurrent_runs_with_the_parallel_thread_pool_are_correct():
    model = _build(threads=2)
    assert _hammer(model, threads=3, calls=15) == []


def test_concurrent_step_by_step_runs_are_correct(monkeypatch):
    model = _build(fallback_kernel=1, monkeypatch=monkeypatch)
    assert not model.native and model.stats.fallback_kernels == 1
    assert _hammer(model, threads=3, calls=8) == []


class _Rendezvous:
    """A library whose functions wait until two calls are inside native code at once
    (recording the workspace each call got) before running."""

    def __init__(self, library):
        self.library = library
        self.object_code = library.object_code
        self.barrier = threading.Barrier(2, timeout=15)
        self.workspaces: list[int] = []

    def get(self, name):
        fn = self.library.get(name)

        def call(*args):
            self.workspaces.append(args[3].value)
            self.barrier.wait()  # BrokenBarrierError if the other call cannot get in
            fn(*args)

        return call


def test_two_runs_are_inside_native_code_at_the_same_time_with_their_own_workspace():
    model = _build()
    model.library = _Rendezvous(model.library)
    w = _weights()
    xs = [np.full((8, 64), v, "float32") for v in (0.5, -1.0)]
    results: dict[int, object] = {}

    def call(k):
        try:
            results[k] = model.run(x=xs[k])
        except threading.BrokenBarrierError as exc:
            results[k] = exc

    pool = [threading.Thread(target=call, args=(k,)) for k in range(2)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    for k in range(2):
        assert isinstance(results[k], np.ndarray), "runs were serialized"
        np.testing.assert_allclose(results[k], _numpy_mlp(xs[k], w), rtol=1e-4, atol=1e-5)
    assert len(set(model.library.workspaces)) == 2


def test_results_are_fresh_and_inputs_are_not_read_after_run_returns():
    model = relay.build(relay.parse(IDENTITY), target="llvm -num-threads=1")
    x = np.arange(15, dtype="float32").reshape(3, 5) - 7
    first, relu, again = model.run(x=x)
    expected = x.copy()
    x[...] = 100.0  # the caller reuses its buffer
    np.testing.assert_array_equal(first, expected)
    np.testing.assert_array_equal(again, expected)
    np.testing.assert_array_equal(relu, np.maximum(expected, 0))
    second = model.run(x=x)
    for a in (first, relu, again):
        for b in (*second, x):
            assert not np.shares_memory(a, b)


def test_outputs_of_concurrent_calls_never_share_memory():
    model = _shared_model()
    x = np.ones((8, 64), "float32")
    outs = []
    lock = threading.Lock()

    def call():
        out = model.run(x=x)
        with lock:
            outs.append(out)

    pool = [threading.Thread(target=call) for _ in range(4)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    addresses = {o.ctypes.data for o in outs}
    assert len(addresses) == 4
    ctypes.memset(outs[0].ctypes.data, 0, outs[0].nbytes)
    np.testing.assert_allclose(outs[1], _numpy_mlp(x, _weights()), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("threads", [2, 5])
def test_workspaces_are_reused_not_grown_without_bound(threads):
    model = _build()
    assert _hammer(model, threads=threads, calls=5) == []
    assert 1 <= len(model._idle_frames) <= max(threads, 1)
