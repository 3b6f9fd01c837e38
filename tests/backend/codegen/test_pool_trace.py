"""The thread pool's task trace and the profiling twin of a model's entry function: records
say which worker ran which task of which loop and when; the trace costs nothing when off
(no record is made) and the plain entry never reads the clock."""

import time

import numpy as np
import pytest
from relay.backend import tir
from relay.backend.codegen import compile_module, set_num_threads, threadpool
from relay.backend.codegen.entry import BufferRef, EntryPlan, KernelCall, profiled_name
from relay.backend.codegen.threadpool import default_num_threads
from relay.backend.runtime.native import aligned_copy, aligned_empty

PAR, SERIAL = tir.ForKind.PARALLEL, tir.ForKind.SERIAL


@pytest.fixture(autouse=True)
def restore_threads():
    yield
    set_num_threads(default_num_threads())


def double_rows(name, rows, cols):
    """out[i, j] = a[i, j] * 2 with the row loop parallel."""
    a = tir.decl_buffer((rows * cols,), "float32", "a")
    out = tir.decl_buffer((rows * cols,), "float32", "out")
    i, j = tir.Var("i"), tir.Var("j")
    idx = i * cols + j
    body = tir.For(
        i,
        0,
        rows,
        PAR,
        tir.For(j, 0, cols, SERIAL, tir.BufferStore(out, a.load(idx) * 2.0, (idx,))),
    )
    return tir.PrimFunc(name, (a, out), body)


def test_now_is_the_monotonic_clock():
    before = time.monotonic_ns()
    now = threadpool.now_ns()
    after = time.monotonic_ns()
    assert before <= now <= after


@pytest.mark.parametrize("threads", [1, 2])
def test_trace_records_every_task_of_every_loop(threads):
    set_num_threads(threads)
    rows, cols = 64, 4096
    lib = compile_module([double_rows("f", rows, cols)])
    x = aligned_copy(np.random.default_rng(0).random(rows * cols).astype(np.float32))
    out = aligned_empty(rows * cols, "float32")
    lib.run("f", x, out)  # warm: workers exist
    threadpool.start_trace(1024)
    begin = time.monotonic_ns()
    for _ in range(3):
        lib.run("f", x, out)
    end = time.monotonic_ns()
    records, dropped = threadpool.stop_trace()
    np.testing.assert_array_equal(out, x * 2)
    assert dropped == 0
    loops = records[records["worker"] < 0]
    tasks = records[records["worker"] >= 0]
    assert len(loops) == 3
    ntasks = 1 if threads == 1 else min(rows, threadpool.TASKS_PER_THREAD * threads)
    assert loops["index"].tolist() == [ntasks] * 3
    for loop in loops:
        mine = tasks[tasks["loop"] == loop["loop"]]
        assert sorted(mine["index"].tolist()) == list(range(ntasks))
        assert (mine["start"] >= loop["start"]).all() and (mine["end"] <= loop["end"]).all()
    assert (records["start"] >= begin).all() and (records["end"] <= end).all()
    assert (records["end"] >= records["start"]).all()
    assert set(tasks["worker"].tolist()) <= set(range(threads))
    # Off again: nothing more is recorded.
    lib.run("f", x, out)
    again, dropped = threadpool.stop_trace()
    assert len(again) == 0 and dropped == 0


def test_trace_counts_what_it_drops():
    set_num_threads(2)
    lib = compile_module([double_rows("f", 64, 256)])
    x = aligned_copy(np.ones(64 * 256, np.float32))
    out = aligned_empty(64 * 256, "float32")
    threadpool.start_trace(4)
    for _ in range(3):
        lib.run("f", x, out)
    records, dropped = threadpool.stop_trace()
    assert len(records) == 4
    assert dropped == 3 * (1 + threadpool.TASKS_PER_THREAD * 2) - 4


def test_profiled_entry_stamps_each_call_and_the_plain_entry_reads_no_clock():
    rows, cols = 8, 256
    kernels = [double_rows("k", rows, cols)]
    args = (BufferRef("input", 0), BufferRef("workspace", 0, 0))
    back = (BufferRef("workspace", 0, 0), BufferRef("output", 0))
    plan = EntryPlan("model_main", (KernelCall("k", args), KernelCall("k", back)))
    lib = compile_module(kernels, entry=plan)
    assert profiled_name("model_main") in lib.names()
    plain = lib.llvm_ir_unoptimized.split('define void @"model_main"(')[1].split("}")[0]
    assert "__relay_now_ns" not in plain
    import ctypes

    x = aligned_copy(np.arange(rows * cols, dtype=np.float32))
    out = aligned_empty(rows * cols, "float32")
    workspace = aligned_empty(rows * cols * 4, np.uint8)
    stamps = np.zeros(3, np.int64)
    ptrs = [(ctypes.c_void_p * 1)(a.ctypes.data) for a in (x, out)]
    begin = time.monotonic_ns()
    lib.get(profiled_name("model_main"))(
        ptrs[0], ptrs[1], None, workspace.ctypes.data, stamps.ctypes.data
    )
    end = time.monotonic_ns()
    np.testing.assert_array_equal(out, x * 4)
    assert begin <= stamps[0] <= stamps[1] <= stamps[2] <= end


def _function_text(llvm_ir, name):
    return (
        llvm_ir.split(f'define void @"{name}"(')[-1]
        .split(f"define void @{name}(")[-1]
        .split("\n}\n")[0]
    )


def test_the_profiling_twin_leaves_the_optimized_plain_entry_unchanged():
    rows, cols = 8, 256
    kernels = [double_rows("k", rows, cols)]
    args = (BufferRef("input", 0), BufferRef("workspace", 0, 0))
    back = (BufferRef("workspace", 0, 0), BufferRef("output", 0))
    plan = EntryPlan("model_main", (KernelCall("k", args), KernelCall("k", back)))
    with_twin = compile_module(kernels, entry=plan)
    without = compile_module(kernels, entry=plan, profiled=False)
    assert profiled_name("model_main") not in without.names()
    assert "__relay_parallel_run" in _function_text(without.llvm_ir, "k")
    for name in ("model_main", "k"):
        assert _function_text(with_twin.llvm_ir, name) == _function_text(without.llvm_ir, name)
