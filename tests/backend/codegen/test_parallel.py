"""PARALLEL loops on the persistent LLVM-IR thread pool: correct results for any extent,
no thread created per call, nesting, captured values, concurrent callers, thread-count
settings, and a clean interpreter exit."""

import collections
import ctypes
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from relay.backend import tir
from relay.backend.codegen import compile_module, get_num_threads, set_num_threads, threadpool
from relay.backend.codegen.threadpool import default_num_threads
from relay.backend.runtime.native import aligned_copy, aligned_empty

PAR, SERIAL = tir.ForKind.PARALLEL, tir.ForKind.SERIAL


def thread_count():
    return len(os.listdir("/proc/self/task"))


@pytest.fixture(autouse=True)
def restore_threads():
    yield
    set_num_threads(default_num_threads())


def scale_rows(name, rows, cols, kind=PAR, inner=SERIAL):
    """out[i, j] = a[i, j] * 2 + i, the row loop `kind`, the column loop `inner`."""
    a, out = (
        tir.decl_buffer((rows * cols,), "float32", "a"),
        tir.decl_buffer((rows * cols,), "float32", "out"),
    )
    i, j = tir.Var("i"), tir.Var("j")
    idx = i * cols + j
    value = a.load(idx) * 2.0 + tir.cast("float32", i)
    body = tir.For(
        i, 0, rows, kind, tir.For(j, 0, cols, inner, tir.BufferStore(out, value, (idx,)))
    )
    return tir.PrimFunc(name, (a, out), body)


def expected_rows(x, rows, cols):
    return x * 2 + np.repeat(np.arange(rows, dtype=np.float32), cols)


@pytest.mark.parametrize("rows", [0, 1, 2, 3, 7, 64, 1001])
def test_parallel_loop_any_extent(rows):
    cols = 33
    lib = compile_module([scale_rows("f", rows, cols)])
    x = aligned_copy(np.random.default_rng(rows).random(max(rows * cols, 1)).astype(np.float32))
    out = aligned_empty(max(rows * cols, 1), "float32")
    out[:] = -1
    lib.run("f", x, out)
    if rows:
        np.testing.assert_array_equal(out, expected_rows(x, rows, cols))
    else:
        assert out[0] == -1  # nothing ran


def test_pool_is_persistent_across_1000_calls_and_two_libraries():
    set_num_threads(2)
    rows, cols = 64, 256
    lib1 = compile_module([scale_rows("f", rows, cols)])
    lib2 = compile_module([scale_rows("g", rows, cols)])
    x = aligned_copy(np.random.default_rng(0).random(rows * cols).astype(np.float32))
    out = aligned_empty(rows * cols, "float32")
    lib1.run("f", x, out)  # starts the pool's worker (if not running yet)
    before = thread_count()
    f, g = lib1.get("f"), lib2.get("g")
    for k in range(1000):
        out[:] = 0
        (f if k % 2 else g)(x.ctypes.data, out.ctypes.data)
    assert thread_count() == before
    np.testing.assert_array_equal(out, expected_rows(x, rows, cols))


def test_tasks_are_shared_between_the_caller_and_a_worker():
    """`__relay_parallel_for` driven directly with a Python task that sleeps (releasing the
    GIL): with 2 threads both the calling thread and the pool's worker run tasks; with 1
    every task runs on the caller."""
    rt = threadpool.runtime()
    ran: collections.Counter = collections.Counter()

    @ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p)
    def task(index, closure):
        ran[threading.get_ident()] += 1
        time.sleep(0.002)

    set_num_threads(2)
    for _ in range(3):
        rt.parallel_for(ctypes.cast(task, ctypes.c_void_p), None, 20)
    assert sum(ran.values()) == 60
    assert len(ran) == 2 and threading.get_ident() in ran
    ran.clear()
    set_num_threads(1)
    rt.parallel_for(ctypes.cast(task, ctypes.c_void_p), None, 10)
    assert dict(ran) == {threading.get_ident(): 10}


def test_one_thread_runs_inline_and_more_threads_agree():
    rows, cols = 97, 129
    lib = compile_module([scale_rows("f", rows, cols)])
    x = aligned_copy(np.random.default_rng(1).random(rows * cols).astype(np.float32))
    results = []
    for n in (1, 2, 3):
        set_num_threads(n)
        assert get_num_threads() == n
        out = aligned_empty(rows * cols, "float32")
        lib.run("f", x, out)
        results.append(out.copy())
    for r in results:
        np.testing.assert_array_equal(r, expected_rows(x, rows, cols))
    with pytest.raises(ValueError):
        set_num_threads(0)


def test_nested_parallel_runs_inner_serially():
    lib = compile_module([scale_rows("f", 40, 50, kind=PAR, inner=PAR)])
    assert lib.llvm_ir_unoptimized.count('call void @"__relay_parallel_run"') == 1
    x = aligned_copy(np.random.default_rng(2).random(2000).astype(np.float32))
    out = aligned_empty(2000, "float32")
    lib.run("f", x, out)
    np.testing.assert_array_equal(out, expected_rows(x, 40, 50))


def test_parallel_body_captures_values_and_allocates_per_task():
    """An outer serial loop variable, a let-bound scalar, an allocation made inside each task
    and one made outside (shared, read-only inside)."""
    n, m = 6, 300
    a, out = tir.decl_buffer((n * m,), "float32", "a"), tir.decl_buffer((n * m,), "float32", "out")
    shared = tir.decl_buffer((m,), "float32", "shared", scope="local")
    scratch = tir.decl_buffer((4,), "float32", "scratch", scope="local")
    t, i, j, s = tir.Var("t"), tir.Var("i"), tir.Var("j"), tir.Var("s", "float32")
    fill = tir.For(j, 0, m, SERIAL, tir.BufferStore(shared, tir.cast("float32", j), (j,)))
    row = t * m + i
    inner = tir.Allocate(
        scratch,
        tir.seq(
            tir.BufferStore(scratch, a.load(row) * s, (tir.const(0),)),
            tir.BufferStore(out, scratch.load(0) + shared.load(i), (row,)),
        ),
    )
    body = tir.Allocate(
        shared,
        tir.seq(
            fill,
            tir.For(
                t,
                0,
                n,
                SERIAL,
                tir.LetStmt(s, tir.cast("float32", t) + 1.0, tir.For(i, 0, m, PAR, inner)),
            ),
        ),
    )
    lib = compile_module([tir.PrimFunc("cap", (a, out), body)])
    x = aligned_copy(np.random.default_rng(3).random(n * m).astype(np.float32))
    o = aligned_empty(n * m, "float32")
    lib.run("cap", x, o)
    expect = x.reshape(n, m) * (np.arange(n, dtype=np.float32)[:, None] + 1) + np.arange(
        m, dtype=np.float32
    )
    np.testing.assert_allclose(o, expect.ravel(), rtol=1e-6)  # a*s + shared may fuse to an FMA


def test_parallel_matmul_rows():
    n = 48
    a, b, c = (tir.decl_buffer((n * n,), "float32", nm) for nm in "abc")
    i, j, k = tir.Var("i"), tir.Var("j"), tir.Var("k")
    acc = c.load(i * n + j) + a.load(i * n + k) * b.load(k * n + j)
    body = tir.For(
        i,
        0,
        n,
        PAR,
        tir.For(k, 0, n, SERIAL, tir.For(j, 0, n, SERIAL, tir.BufferStore(c, acc, (i * n + j,)))),
    )
    lib = compile_module([tir.PrimFunc("mm", (a, b, c), body)])
    rng = np.random.default_rng(4)
    x, y = (aligned_copy(rng.random((n, n)).astype(np.float32)) for _ in range(2))
    z = aligned_empty((n, n), "float32")
    z[:] = 0
    lib.run("mm", x, y, z)
    np.testing.assert_allclose(z, x @ y, rtol=1e-5)


def test_concurrent_callers_from_python_threads():
    rows, cols = 200, 64
    lib = compile_module([scale_rows("f", rows, cols)])
    fn = lib.get("f")
    x = aligned_copy(np.random.default_rng(5).random(rows * cols).astype(np.float32))
    want = expected_rows(x, rows, cols)
    errors = []

    def worker():
        out = aligned_empty(rows * cols, "float32")
        for _ in range(200):
            out[:] = 0
            fn(x.ctypes.data, out.ctypes.data)  # ctypes releases the GIL
            if not np.array_equal(out, want):
                errors.append("mismatch")

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


EXIT_SCRIPT = textwrap.dedent(
    """
    import os, numpy as np
    from relay.backend import tir
    from relay.backend.codegen import compile_module, get_num_threads
    from relay.backend.runtime.native import aligned_copy, aligned_empty
    a, b = tir.decl_buffer((4096,), "float32", "a"), tir.decl_buffer((4096,), "float32", "b")
    i = tir.Var("i")
    f = tir.PrimFunc("f", (a, b), tir.For(i, 0, 4096, tir.ForKind.PARALLEL, tir.BufferStore(b, a.load(i) + 1.0, (i,))))
    lib = compile_module([f])
    x = aligned_copy(np.arange(4096, dtype=np.float32)); y = aligned_empty(4096, "float32")
    lib.run("f", x, y)
    before = len(os.listdir("/proc/self/task"))
    for _ in range(50):
        lib.run("f", x, y)
    grown = len(os.listdir("/proc/self/task")) - before
    assert (y == x + 1).all()
    pid = os.fork()
    if pid == 0:  # the child has no workers: it makes its own
        y[:] = 0
        lib.run("f", x, y)
        os._exit(0 if (y == x + 1).all() else 3)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    import relay  # the API edge reads RELAY_NUM_THREADS; the build sets the pool from it
    relay.build(relay.parse('#[version = "0.0.5"] def @main(%x: Tensor[(4), float32]) { %x }'))
    print("threads", get_num_threads(), grown)
    """
)


@pytest.mark.parametrize("env", ["1", "2"])
def test_exit_fork_and_env_thread_count(env):
    """The interpreter exits promptly with live workers; a forked child works; a build's
    thread count comes from RELAY_NUM_THREADS."""
    proc = subprocess.run(
        [sys.executable, "-c", EXIT_SCRIPT],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "RELAY_NUM_THREADS": env},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["threads", env, "0"]
