"""Each compiled model runs with its own thread count (its target's, changeable on the loaded
model), whatever other models were built since; workers can be pinned to CPUs; `run`'s fast
path gives the checked path's results and leaves every wrong argument to its diagnostics."""

import contextlib
import ctypes
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
import relay
from relay.backend.codegen import set_num_threads, threadpool
from relay.backend.codegen.threadpool import default_num_threads
from relay.backend.target import Target
from relay.lang.diagnostics import Error, InputError

N = 1 << 20  # elements: well above the parallel grain

BIG = f"""#[version = "0.0.5"]
def @main(%x: Tensor[({N},), float32], %y: Tensor[({N},), float32]) {{
  multiply(add(%x, %y), %x)
}}"""

PAIR = """#[version = "0.0.5"]
def @main(%a: Tensor[(3, 5), float32], %b: Tensor[(5,), float32]) {
  (add(%a, %b), nn.relu(%a))
}"""


@pytest.fixture(autouse=True)
def restore_pool():
    yield
    set_num_threads(default_num_threads())
    threadpool.bind_threads(False)


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(0)
    return rng.random(N).astype("float32"), rng.random(N).astype("float32")


def build(text, threads):
    return relay.build(relay.parse(text), target=f"llvm -num-threads={threads}")


class ThreadsSeen:
    """A library wrapper whose entry function is a native callback (so the model calls it
    through the pool, as it calls real code) that records the thread count in force on
    the calling thread during the call, then runs the real entry."""

    PROTO = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 4)

    def __init__(self, model):
        self.library = model.library
        self.object_code = model.library.object_code
        self.entry_name = model.entry_name
        self.seen = []
        real = model.library.get(model.entry_name)

        def entry(*args):
            self.seen.append(threadpool.get_num_threads())
            real(*args)

        self.callback = self.PROTO(entry)

    def get(self, name):
        return self.callback if name == self.entry_name else self.library.get(name)


def workers_in_trace(model, x, y, calls):
    """The pool workers (not the caller) that ran tasks during `calls` calls of `model`."""
    threadpool.start_trace(1 << 16)
    for _ in range(calls):
        model.run(x, y)
    records, _ = threadpool.stop_trace()
    return set(records["worker"][records["worker"] > 0].tolist())


def test_a_model_keeps_its_thread_count_when_a_later_build_asks_for_fewer(inputs):
    x, y = inputs
    two = build(BIG, 2)
    one = build(BIG, 1)  # sets the process default to 1
    assert threadpool.get_num_threads() == 1
    assert (two.num_threads, one.num_threads) == (2, 1)
    for model in (two, one):
        model.library = ThreadsSeen(model)
        np.testing.assert_array_equal(model.run(x, y), (x + y) * x)
    assert two.library.seen == [2] and one.library.seen == [1]
    assert threadpool.get_num_threads() == 1  # the count is restored after each call
    # the planned loop really runs on the pool's worker for the 2-thread model (tasks of
    # about a millisecond: a worker joins within a few calls even on a busy machine)
    two.library = two.library.library
    found: set[int] = set()
    for _ in range(20):
        found |= workers_in_trace(two, x, y, 3)
        if found:
            break
    assert found == {1}


def test_set_num_threads_changes_a_loaded_model_without_a_rebuild(inputs):
    x, y = inputs
    model = build(BIG, 2)
    expected = model.run(x, y)
    model.set_num_threads(1)
    assert model.num_threads == 1 and model.target.num_threads == 2
    assert workers_in_trace(model, x, y, 5) == set()  # every task on the caller
    np.testing.assert_array_equal(model.run(x, y), expected)
    model.set_num_threads(2)
    model.library = ThreadsSeen(model)
    np.testing.assert_array_equal(model.run(x, y), expected)
    model.run(x=x, y=y)  # the checked path too
    assert model.library.seen == [2, 2]


BRANCHY = f"""#[version = "0.0.5"]
def @main(%x: Tensor[({N},), float32], %y: Tensor[({N},), float32], %c: bool) {{
  if (%c) {{ multiply(add(%x, %y), %x) }} else {{ subtract(%x, %y) }}
}}"""


def test_a_vm_model_runs_on_its_own_thread_count(inputs):
    x, y = inputs
    model = build(BRANCHY, 2)
    assert model.stats.executor == "vm" and model.num_threads == 2
    build(BIG, 1)  # a later build sets the process's count to 1
    assert threadpool.get_num_threads() == 1
    found: set[int] = set()
    for _ in range(20):  # the planned loop runs on the worker too (within a few calls)
        threadpool.start_trace(1 << 16)
        for _ in range(3):
            np.testing.assert_array_equal(model.run(x, y, True), (x + y) * x)
        records, _ = threadpool.stop_trace()
        found |= set(records["worker"][records["worker"] > 0].tolist())
        if found:
            break
    assert found == {1}
    assert threadpool.get_num_threads() == 1  # restored after each run
    model.set_num_threads(1)
    assert model.num_threads == 1 and model.target.num_threads == 2
    threadpool.start_trace(1 << 16)
    for _ in range(5):
        np.testing.assert_array_equal(model.run(x, y, False), x - y)
        np.testing.assert_array_equal(model.run(x, y, True), (x + y) * x)
    records, _ = threadpool.stop_trace()
    assert len(records) and not (records["worker"] > 0).any()  # every task on the caller
    with pytest.raises(InputError, match="at least 1"):
        model.set_num_threads(0)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_set_num_threads_rejects_what_is_not_a_positive_integer(bad):
    model = build(PAIR, 1)
    with pytest.raises(InputError, match="at least 1"):
        model.set_num_threads(bad)
    assert model.num_threads == 1


def test_results_are_exact_at_every_thread_count_from_1_to_16(inputs):
    x, y = inputs
    reference = (x + y) * x
    for model in (build(BIG, n) for n in (1, 4, 16)):
        for k in (1, 2, 3, 5, 8, 16):
            model.set_num_threads(k)
            np.testing.assert_array_equal(model.run(x, y), reference)


def test_models_with_different_counts_called_from_two_threads_are_exact(inputs):
    x, y = inputs
    models = [build(BIG, 2), build(BIG, 1)]
    errors = []

    def hammer(model):
        for _ in range(10):
            if not np.array_equal(model.run(x, y), (x + y) * x):
                errors.append(model.num_threads)

    callers = [threading.Thread(target=hammer, args=(m,)) for m in models]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    assert errors == []


# ---------------------------------------------------------------------------------- pinning


def worker_affinities():
    """CPU sets of this process's threads other than the main one."""
    found = []
    for tid in map(int, os.listdir("/proc/self/task")):
        if tid != threading.main_thread().native_id:
            with contextlib.suppress(OSError):  # the thread ended meanwhile
                found.append(os.sched_getaffinity(tid))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pinning is Linux only")
def test_bound_workers_are_pinned_and_results_stay_exact(inputs):
    x, y = inputs
    cpus = sorted(os.sched_getaffinity(0))
    model = build(BIG, 3)
    threadpool.bind_threads(True)
    assert threadpool.threads_bound()
    np.testing.assert_array_equal(model.run(x, y), (x + y) * x)  # starts pinned workers
    wanted = [{cpus[(w + 1) % len(cpus)]} for w in range(2)]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # a new worker pins itself as it starts
        pinned = [a for a in worker_affinities() if len(a) == 1]
        if all(w in pinned for w in wanted):
            break
        time.sleep(0.01)
    assert all(w in pinned for w in wanted)
    for _ in range(3):
        np.testing.assert_array_equal(model.run(x, y), (x + y) * x)
    threadpool.bind_threads(False)
    assert not threadpool.threads_bound()
    model.run(x, y)  # workers start again, free
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(cpus) > 1:
        if all(a == set(cpus) for a in worker_affinities()):
            break
        time.sleep(0.01)
    assert all(a == set(cpus) for a in worker_affinities())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pinning is Linux only")
def test_relay_bind_threads_pins_workers_from_the_environment():
    script = textwrap.dedent(
        f"""
        import os, threading, time
        import numpy as np, relay
        from relay.backend.codegen import threadpool
        model = relay.build(relay.parse({BIG!r}), target="llvm -num-threads=2")
        x = np.arange({N}, dtype="float32") / {N}
        assert np.array_equal(model.run(x, x), (x + x) * x)
        cpus = sorted(os.sched_getaffinity(0))
        main = threading.main_thread().native_id
        for _ in range(1000 if threadpool.threads_bound() else 1):  # pinned as it starts
            seen = [os.sched_getaffinity(int(t)) for t in os.listdir("/proc/self/task")
                    if int(t) != main]
            if {{cpus[1 % len(cpus)]}} in seen:
                break
            time.sleep(0.01)
        print(threadpool.threads_bound(), {{cpus[1 % len(cpus)]}} in seen)
        """
    )
    env = {**os.environ, "RELAY_BIND_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True True"
    env["RELAY_BIND_THREADS"] = "0"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # unpinned: the worker keeps the process's CPUs (the same set with a single CPU)
    assert done.stdout.strip() == f"False {len(os.sched_getaffinity(0)) == 1}"


def run_script(script, **env):
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_bind_threads_target_attribute_parses_prints_and_rejects_other_values():
    target = Target.parse("llvm -num-threads=2 -bind-threads=1")
    assert target.bind_threads and "-bind-threads=1" in str(target)
    assert Target.parse(str(target)) == target
    assert not Target.parse("llvm -bind-threads=0").bind_threads
    assert "bind-threads" not in str(Target.parse("llvm -num-threads=2"))
    with pytest.raises(Error, match="must be 0 or 1"):
        Target.parse("llvm -bind-threads=yes")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pinning is Linux only")
def test_a_bind_threads_target_pins_workers_when_built_and_when_loaded(tmp_path):
    path = tmp_path / "m.relaymod"
    check = f"""
        import os, threading, time
        import numpy as np, relay
        from relay.backend.codegen import threadpool
        x = np.arange({N}, dtype="float32") / {N}
        def pinned():
            assert np.array_equal(model.run(x, x), (x + x) * x)
            cpu = {{sorted(os.sched_getaffinity(0))[1 % len(os.sched_getaffinity(0))]}}
            main = threading.main_thread().native_id
            for _ in range(1000):  # a worker pins itself as it starts
                seen = [os.sched_getaffinity(int(t)) for t in os.listdir("/proc/self/task")
                        if int(t) != main]
                if cpu in seen:
                    return True
                time.sleep(0.01)
            return False
    """
    built = run_script(
        check
        + f"""
        model = relay.build(relay.parse({BIG!r}), target="llvm -num-threads=2 -bind-threads=1")
        model.save({str(path)!r})
        print(threadpool.threads_bound(), pinned(), model.target.bind_threads)
        """
    )
    assert built == "True True True"
    loaded = run_script(
        check
        + f"""
        assert not threadpool.threads_bound()
        model = relay.load({str(path)!r})
        print(threadpool.threads_bound(), pinned(), model.target)
        """
    )
    assert loaded.startswith("True True llvm") and loaded.endswith("-bind-threads=1")


# ------------------------------------------------------------------------------- spinning


def test_the_spin_window_is_a_knob_and_results_stay_exact_without_spinning(inputs):
    x, y = inputs
    model = build(BIG, 2)
    try:
        threadpool.set_spin_ns(0)  # workers sleep at once: every loop wakes its worker
        assert threadpool.get_spin_ns() == 0
        for _ in range(5):
            np.testing.assert_array_equal(model.run(x, y), (x + y) * x)
        with pytest.raises(ValueError, match="0 or more"):
            threadpool.set_spin_ns(-1)
    finally:
        threadpool.set_spin_ns(threadpool.SPIN_NS)
    assert threadpool.get_spin_ns() == threadpool.SPIN_NS


def test_relay_spin_ns_sets_the_window_from_the_environment():
    script = """
        from relay.backend.codegen import threadpool
        try:
            print(threadpool.get_spin_ns())
        except ValueError as exc:
            print(exc)
    """
    assert run_script(script, RELAY_SPIN_NS="5000") == "5000"
    assert "RELAY_SPIN_NS must be a whole number" in run_script(script, RELAY_SPIN_NS="fast")


# -------------------------------------------------------------------------------- fast path


def test_fast_path_matches_the_checked_path_for_a_tuple_of_outputs():
    model = build(PAIR, 1)
    a = np.linspace(-1, 1, 15, dtype="float32").reshape(3, 5)
    b = np.arange(5, dtype="float32")
    fast = model.run(a, b)
    checked = model.run(a=a, b=b)
    assert model._run_fast((a, b)) is not None  # the positional call took the fast path
    for got in (fast, checked):
        np.testing.assert_array_equal(got[0], a + b)
        np.testing.assert_array_equal(got[1], np.maximum(a, 0))
    assert not np.shares_memory(fast[0], checked[0])


def test_fast_path_leaves_wrong_arguments_to_the_checked_path():
    model = build(PAIR, 1)
    a = np.ones((3, 5), "float32")
    b = np.ones(5, "float32")
    raw = np.zeros(5 * 4 + 1, np.uint8)
    misaligned = np.frombuffer(raw.data, dtype="float32", count=5, offset=1)
    assert not misaligned.flags.aligned
    with pytest.raises(InputError, match="not aligned"):
        model.run(a, misaligned)
    with pytest.raises(InputError, match="not C-contiguous"):
        model.run(np.ones((5, 3), "float32").T, b)
    with pytest.raises(InputError, match="expected Tensor"):
        model.run(a, b.astype(">f4"))
    with pytest.raises(InputError, match="expected Tensor"):
        model.run(a, np.ones(4, "float32"))
    with pytest.raises(InputError, match="takes 2 arguments"):
        model.run(a, b, b)
    got = model.run(a, b[None, :][0])  # a view with the right strides: fast and exact
    np.testing.assert_array_equal(got[0], a + b)


def test_fast_path_by_name_and_into_out_buffers():
    model = build(PAIR, 1)
    a = np.linspace(-1, 1, 15, dtype="float32").reshape(3, 5)
    b = np.arange(5, dtype="float32")
    by_name = model.run(b=b, a=a)
    np.testing.assert_array_equal(by_name[0], a + b)
    assert model._by_name({"b": b, "a": a}) == (a, b)
    assert model._by_name({"a": a, "c": b}) is None
    with pytest.raises(InputError, match="unexpected argument `c`"):
        model.run(a=a, c=b)
    out = (np.empty((3, 5), "float32"), np.empty((3, 5), "float32"))
    assert model.run(a, b, out=out) is out
    np.testing.assert_array_equal(out[0], a + b)
    np.testing.assert_array_equal(out[1], np.maximum(a, 0))
    listed = [np.zeros((3, 5), "float32"), np.zeros((3, 5), "float32")]
    assert model.run(a=a, b=b, out=listed) is listed
    np.testing.assert_array_equal(listed[1], np.maximum(a, 0))


def test_out_buffers_the_fast_path_refuses_still_get_the_result():
    model = build(PAIR, 1)
    a = np.linspace(-1, 1, 15, dtype="float32").reshape(3, 5)
    b = np.arange(5, dtype="float32")
    relu = np.maximum(a, 0)
    same = np.empty((3, 5), "float32")
    fast = (np.empty((3, 5), "float32"), same)
    assert model._fast_buffers(fast, (a, b)) is not None
    assert model._fast_buffers((same, same), (a, b)) is None  # two outputs, one buffer
    assert model._fast_buffers((a, same), (a, b)) is None  # overlaps an input
    twice = np.empty((3, 5), "float32")
    model.run(a, b, out=(twice, twice))
    np.testing.assert_array_equal(twice, relu)  # the later output wins, as a copy
    a_copy = a.copy()
    model.run(a_copy, b, out=(np.empty((3, 5), "float32"), a_copy))  # relu in place
    np.testing.assert_array_equal(a_copy, relu)
    frozen = np.empty((3, 5), "float32")
    frozen.flags.writeable = False
    with pytest.raises(InputError):
        model.run(a, b, out=(frozen, np.empty((3, 5), "float32")))
