"""Compiling kernels in worker processes (`codegen.compile_jobs`): the library and a model
built that way compute bit for bit what the in-process build computes; an error in a worker
reaches the caller as in-process, a worker that dies is an `Error` (and the next build
works); small builds and `$RELAY_COMPILE_JOBS=1` stay in-process."""

import os
import re
import threading

import numpy as np
import pytest
import relay
from relay.backend.codegen import compile_jobs
from relay.backend.codegen.compile import (
    _elf_symbols,
    compile_module,
    object_members,
    undefined_symbols,
)
from relay.backend.codegen.threadpool import runtime
from relay.backend.runtime.native import aligned_empty
from relay.backend.tir.buffer import decl_buffer
from relay.backend.tir.expr import BufferLoad, IntImm, Var
from relay.backend.tir.stmt import BufferStore, For, ForKind, PrimFunc
from relay.backend.tir.transform import lower_pipeline
from relay.lang.diagnostics import Error

CONVNET = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 12, 12), float32], %w1: Tensor[(8, 4, 3, 3), float32],
          %w2: Tensor[(8, 8, 3, 3), float32], %d: Tensor[(10, 8), float32]) {
  %0 = nn.conv2d(%x, %w1, padding=[1, 1, 1, 1]);
  %1 = nn.relu(%0);
  %2 = nn.conv2d(%1, %w2, padding=[1, 1, 1, 1]);
  %3 = tanh(add(%2, %1));
  %4 = nn.global_avg_pool2d(%3);
  %5 = nn.batch_flatten(%4);
  %6 = nn.dense(%5, %d);
  nn.softmax(sigmoid(%6))
}
"""

SHAPES = {"x": (1, 4, 12, 12), "w1": (8, 4, 3, 3), "w2": (8, 8, 3, 3), "d": (10, 8)}


def _values() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {k: rng.standard_normal(s).astype("float32") for k, s in SHAPES.items()}


def _build(params: bool):
    values = _values()
    bound = {k: v for k, v in values.items() if k != "x"} if params else None
    model = relay.build(relay.parse(CONVNET), target="llvm -num-threads=2", params=bound)
    inputs = {"x": values["x"]} if params else values
    return model, inputs


@pytest.fixture(params=["forked", "spawned"])
def parallel_always(monkeypatch, request):
    """Every build with more than one kernel compiles in two workers, forked from this
    process or started as new interpreters (the test process has other threads, which
    would otherwise always choose the latter)."""
    monkeypatch.delenv(compile_jobs.JOBS_ENV, raising=False)
    monkeypatch.setattr(compile_jobs, "PARALLEL_MIN_SIZE", 0)
    monkeypatch.setattr(compile_jobs, "available_cpus", lambda: 2)
    forked = request.param == "forked"
    monkeypatch.setattr(compile_jobs, "fork_is_safe", lambda: forked)
    compile_jobs.stop_workers()
    yield request.param
    compile_jobs.stop_workers()


def _copy_kernel(name: str, n: int = 16, alias: bool = False) -> PrimFunc:
    """`out[i] = inp[i] * 2` over `n` floats (with `alias`, both parameters are one buffer)."""
    inp = decl_buffer((n,), "float32", "inp")
    out = inp if alias else decl_buffer((n,), "float32", "out")
    i = Var("i", "int64")
    store = BufferStore(out, BufferLoad(inp, (i,)) * 2.0, (i,))
    return PrimFunc(name, (inp, out), For(i, IntImm(0), IntImm(n), ForKind.SERIAL, store))


@pytest.mark.parametrize("params", [False, True], ids=["weights-as-inputs", "weights-bound"])
def test_a_model_built_in_workers_computes_the_same_bits(parallel_always, monkeypatch, params):
    model, inputs = _build(params)
    assert "tir+opt" in model.stats.seconds  # the workers compiled it
    monkeypatch.setenv(compile_jobs.JOBS_ENV, "1")
    reference, _ = _build(params)
    assert "tir+opt" not in reference.stats.seconds and "tir" in reference.stats.seconds
    got = model.run(**inputs)
    np.testing.assert_array_equal(got, reference.run(**inputs))
    expected = relay.interpret(relay.parse(CONVNET), **_values())
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    # one object file with the same functions and the same outside symbols
    runtime()
    assert reference.library.names() == model.library.names()
    assert sorted(undefined_symbols(model.library.object_code)) == sorted(
        undefined_symbols(reference.library.object_code)
    )


def test_kernels_compiled_in_workers_are_the_kernels_compiled_here():
    funcs = [_copy_kernel(f"copy{k}", 16 + 8 * k) for k in range(5)]
    here = compile_module([lower_pipeline(f) for f in funcs], name="lib")
    there = compile_jobs.compile_functions(funcs, name="lib", jobs=2)
    assert here.names() == there.names()
    for k, f in enumerate(funcs):
        n = 16 + 8 * k
        inp = aligned_empty((n,), "float32")
        inp[:] = np.arange(n, dtype="float32") - 3.5
        outs = [aligned_empty((n,), "float32") for _ in range(2)]
        here.run(f.name, inp, outs[0])
        there.run(f.name, inp, outs[1])
        np.testing.assert_array_equal(outs[0], inp * 2)
        np.testing.assert_array_equal(outs[1], outs[0])


def test_an_error_in_a_worker_is_the_error_in_process():
    funcs = [_copy_kernel("good0"), _copy_kernel("bad", alias=True), _copy_kernel("good1")]
    with pytest.raises(Error) as in_process:
        compile_jobs.compile_functions(funcs, name="lib", jobs=1)
    with pytest.raises(type(in_process.value), match=re.escape(str(in_process.value))):
        compile_jobs.compile_functions(funcs, name="lib", jobs=2)
    # the workers survive a failed build
    library = compile_jobs.compile_functions(funcs[::2], name="lib", jobs=2)
    assert sorted(library.names()) == ["good0", "good1"]


def test_kernels_that_do_not_pickle_compile_in_process():
    odd = _copy_kernel("odd")
    odd = PrimFunc(odd.name, odd.params, odd.body, {"note": lambda: None})
    seconds: dict[str, float] = {}
    funcs = [_copy_kernel("a"), odd]
    library = compile_jobs.compile_functions(funcs, name="lib", seconds=seconds, jobs=2)
    assert sorted(library.names()) == ["a", "odd"] and "tir+opt" not in seconds


def test_two_kernels_with_one_name_are_an_error_in_parts_too():
    funcs = [_copy_kernel("same"), _copy_kernel("other"), _copy_kernel("same")]
    with pytest.raises(Error, match="two kernels are named `same`"):
        compile_jobs.compile_functions(funcs, name="lib", jobs=2)


class _ExitWhenUnpickled:
    """A value whose unpickling ends the process: the worker receiving it dies."""

    def __reduce__(self):
        return (os._exit, (3,))


@pytest.mark.parametrize("forked", [True, False])
def test_a_worker_that_dies_is_an_error_and_the_next_build_works(monkeypatch, forked):
    monkeypatch.setattr(compile_jobs, "fork_is_safe", lambda: forked)
    compile_jobs.stop_workers()
    doomed = _copy_kernel("doomed")
    doomed = PrimFunc(doomed.name, doomed.params, doomed.body, {"x": _ExitWhenUnpickled()})
    funcs = [_copy_kernel("a"), doomed, _copy_kernel("b")]
    with pytest.raises(compile_jobs.WorkerDied, match=r"exit code 3.*RELAY_COMPILE_JOBS=1"):
        compile_jobs.compile_functions(funcs, name="lib", jobs=2)
    library = compile_jobs.compile_functions(funcs[::2], name="lib", jobs=2)
    assert sorted(library.names()) == ["a", "b"]


def test_small_builds_stay_in_process(monkeypatch):
    monkeypatch.delenv(compile_jobs.JOBS_ENV, raising=False)
    monkeypatch.setattr(compile_jobs, "available_cpus", lambda: 8)

    def no_workers(n, tasks):
        raise AssertionError("a small build started compile workers")

    monkeypatch.setattr(compile_jobs, "run_in_workers", no_workers)
    model, _ = _build(params=False)
    assert "tir" in model.stats.seconds and "tir+opt" not in model.stats.seconds
    sizes = [compile_jobs.kernel_size(_copy_kernel(f"k{k}")) for k in range(4)]
    assert compile_jobs.worker_count(sizes) == 1
    big = [compile_jobs.PARALLEL_MIN_SIZE] * 4
    assert compile_jobs.worker_count(big) == 4


def test_the_environment_variable_caps_the_workers(monkeypatch):
    monkeypatch.setattr(compile_jobs, "available_cpus", lambda: 8)
    big = [compile_jobs.PARALLEL_MIN_SIZE] * 6
    monkeypatch.setenv(compile_jobs.JOBS_ENV, "1")
    assert compile_jobs.worker_count(big) == 1
    monkeypatch.setattr(compile_jobs, "PARALLEL_MIN_SIZE", 0)
    model, _ = _build(params=False)
    assert "tir+opt" not in model.stats.seconds
    monkeypatch.setenv(compile_jobs.JOBS_ENV, "3")
    assert compile_jobs.worker_count(big) == 3
    monkeypatch.setenv(compile_jobs.JOBS_ENV, "0")
    assert compile_jobs.worker_count(big) == 6
    monkeypatch.setenv(compile_jobs.JOBS_ENV, "many")
    with pytest.raises(Error, match="RELAY_COMPILE_JOBS must be a number"):
        compile_jobs.worker_count(big)


def test_unrolled_loops_count_once_per_iteration():
    serial = _copy_kernel("s", n=64)
    body = serial.body
    unrolled = PrimFunc("u", serial.params, For(body.loop_var, 0, 64, ForKind.UNROLLED, body.body))
    assert compile_jobs.kernel_size(unrolled) > 32 * compile_jobs.kernel_size(serial)


def test_shares_hold_every_kernel_once_largest_first():
    sizes = [5, 100, 1, 1, 40, 60, 2, 30]
    groups = compile_jobs.shares(sizes, 3)
    assert sorted(k for g in groups for k in g) == list(range(len(sizes)))
    assert groups[0] == [1]  # the largest kernel fills a share alone
    totals = [sum(sizes[k] for k in g) for g in groups]
    assert totals[0] == max(totals)
    assert len(groups) <= 4


def test_a_build_reports_the_seconds_of_each_stage(parallel_always):
    model, _ = _build(params=True)
    seconds = model.stats.seconds
    for stage in ("check", "optimize", "plan", "lower", "tir+opt", "link", "machine-code"):
        assert seconds[stage] >= 0.0, stage
    # the workers' own stage times come back with their parts
    assert {"workers.tir", "workers.llvm-ir", "workers.llvm-opt"} <= seconds.keys()
    report = relay.driver.stage_report(seconds, total=1.5)
    rows = [line.split()[0] for line in report.splitlines()[1:]]
    assert rows.index("optimize") < rows.index("lower") < rows.index("machine-code")
    assert report.splitlines()[-1].split() == ["total", "1.500"]


def test_in_process_stages_are_split(monkeypatch):
    monkeypatch.setenv(compile_jobs.JOBS_ENV, "1")
    model, _ = _build(params=False)
    seconds = model.stats.seconds
    parts = ("llvm-ir", "llvm-opt", "machine-code", "load")
    assert all(seconds[p] >= 0.0 for p in parts) and "tir+opt" not in seconds
    assert seconds["codegen"] >= sum(seconds[p] for p in parts) * 0.99


def test_workers_start_early_only_when_builds_use_them(monkeypatch):
    monkeypatch.setenv(compile_jobs.JOBS_ENV, "1")
    assert compile_jobs.start_workers() == 0
    monkeypatch.setattr(compile_jobs, "available_cpus", lambda: 1)
    monkeypatch.delenv(compile_jobs.JOBS_ENV)
    assert compile_jobs.start_workers() == 0
    assert compile_jobs.start_workers(2) == 2  # asked for explicitly
    compile_jobs.stop_workers()


def test_big_models_start_their_workers_before_optimizing(monkeypatch):
    started: list[int | None] = []
    monkeypatch.setattr(compile_jobs, "start_workers", lambda n=None: started.append(n) or 0)
    monkeypatch.delenv("RELAY_CACHE_DIR", raising=False)
    convs = "\n".join(f"  %{k + 1} = nn.conv2d(%{k}, %w, padding=[1, 1]);" for k in range(12))
    text = (
        '#[version = "0.0.5"]\n'
        "def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 3, 3), float32]) {\n"
        f"  %0 = nn.relu(%x);\n{convs}\n  %12\n}}\n"
    )
    module = relay.parse(text)
    assert relay.driver.heavy_calls(module) == 12
    relay.build(module, target="llvm -num-threads=1")
    assert started == [None]
    started.clear()
    relay.build(relay.parse(CONVNET), target="llvm -num-threads=1")  # two convs, one dense
    assert started == []


def _run_copy(library, name: str, n: int) -> np.ndarray:
    inp = aligned_empty((n,), "float32")
    inp[:] = np.arange(n, dtype="float32") - 3.5
    out = aligned_empty((n,), "float32")
    library.run(name, inp, out)
    return out


def test_a_stream_compiles_kernels_while_they_are_added(parallel_always, monkeypatch):
    monkeypatch.setattr(compile_jobs, "STREAM_SHARE_SIZE", 1)
    sizes = [16 + 8 * k for k in range(4)]
    seconds: dict[str, float] = {}
    with compile_jobs.KernelStream("lib", None) as stream:
        for k, n in enumerate(sizes):
            stream.add(_copy_kernel(f"k{k}", n))
        assert stream.sent == len(sizes)  # each kernel left before the last one was added
        final = [_copy_kernel(f"lib_x_k{k}", n) for k, n in enumerate(sizes)]
        renames = {f"k{k}": f.name for k, f in enumerate(final)}
        library = stream.finish(final, renames, seconds=seconds)
    assert "tir+opt" in seconds and "link" in seconds
    assert sorted(library.names()) == sorted(renames.values())
    symbols = object_symbols(library.object_code)
    assert set(renames.values()) <= symbols
    assert not any(name.split(".")[0] in renames for name in symbols)  # no old name left
    for f, n in zip(final, sizes, strict=True):
        np.testing.assert_array_equal(_run_copy(library, f.name, n), _run_copy(library, f.name, n))
        np.testing.assert_array_equal(_run_copy(library, f.name, n), (np.arange(n) - 3.5) * 2)


def object_symbols(object_code: bytes) -> set[str]:
    """The symbols the object files of a library's object code define."""
    defined: set[str] = set()
    for obj in object_members(object_code):
        defined |= _elf_symbols(obj)[0]
    return defined


def test_a_small_stream_compiles_in_process(monkeypatch):
    monkeypatch.delenv(compile_jobs.JOBS_ENV, raising=False)

    def no_workers(n):
        raise AssertionError("a small stream started compile workers")

    monkeypatch.setattr(compile_jobs, "_Batch", lambda pool, n: no_workers(n))
    seconds: dict[str, float] = {}
    with compile_jobs.KernelStream("lib", None) as stream:
        stream.add(_copy_kernel("k0"))
        library = stream.finish([_copy_kernel("lib_k0")], {"k0": "lib_k0"}, seconds=seconds)
    assert library.names() == ["lib_k0"] and "tir" in seconds and "tir+opt" not in seconds


def test_a_stream_left_unfinished_stops_its_workers_and_the_next_build_works(parallel_always):
    workers = []
    with (
        pytest.raises(RuntimeError, match="lowering failed"),
        compile_jobs.KernelStream("lib", None) as stream,
    ):
        stream.add(_copy_kernel("k0"))
        workers = list(compile_jobs._pool().workers)
        raise RuntimeError("lowering failed")
    assert workers  # the stream had started them
    assert all(w.process.poll() is not None for w in workers)
    assert compile_jobs._lock.acquire(blocking=False)  # the pool is free again
    compile_jobs._lock.release()
    model, inputs = _build(params=True)
    assert "tir+opt" in model.stats.seconds
    expected = relay.interpret(relay.parse(CONVNET), **_values())
    np.testing.assert_allclose(model.run(**inputs), expected, rtol=1e-4, atol=1e-5)


def test_workers_fork_only_without_other_python_threads():
    assert compile_jobs.fork_is_safe() == (threading.active_count() == 1)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert not compile_jobs.fork_is_safe()
    finally:
        release.set()
        other.join()


def test_forked_workers_hold_no_other_worker_open(monkeypatch):
    # each forked worker closes the pipes it inherited, so closing a worker's input ends
    # it (exit code 0), even while a younger worker (forked after it) still runs
    monkeypatch.setattr(compile_jobs, "fork_is_safe", lambda: True)
    compile_jobs.stop_workers()
    assert compile_jobs.start_workers(2) == 2
    workers = list(compile_jobs._current.workers)
    assert all(isinstance(w.process, compile_jobs._Forked) for w in workers)
    first = workers[0].process
    first.stdin.close()
    assert first.wait(timeout=10) == 0
    compile_jobs.stop_workers()
    assert workers[1].process.returncode == 0
