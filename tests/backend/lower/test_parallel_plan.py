"""The parallel plan: threads and tasks per parallel loop from its work and the target's
thread count, balanced chunks, fused loops, only the planned threads taking part, and the
same results at every thread count."""

import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import relay
from hypothesis import given
from hypothesis import strategies as st
from relay.backend import tir
from relay.backend.codegen import compile_module, set_num_threads, threadpool
from relay.backend.codegen.threadpool import default_num_threads
from relay.backend.kernel_cost import PLAN_KEY, ParallelLoop
from relay.backend.lower import parallel_plan
from relay.backend.lower.parallel_plan import GRAIN_WORK, MAX_IMBALANCE, choose, plan_function
from relay.backend.runtime.native import aligned_copy, aligned_empty
from relay.backend.target import Target

BENCH = Path(__file__).resolve().parents[3] / "bench"
PAR, SERIAL = tir.ForKind.PARALLEL, tir.ForKind.SERIAL


@pytest.fixture(autouse=True)
def restore_threads():
    yield
    set_num_threads(default_num_threads())


def scale_rows(rows, cols, name="f", mid=1):
    """out[i, m, j] = a[i, m, j] * 2 + i with the row loop parallel (`m` only when `mid` > 1)."""
    a = tir.decl_buffer((rows * mid * cols,), "float32", "a")
    out = tir.decl_buffer((rows * mid * cols,), "float32", "out")
    i, m, j = tir.Var("i"), tir.Var("m"), tir.Var("j")
    idx = (i * mid + m) * cols + j if mid > 1 else i * cols + j
    value = a.load(idx) * 2.0 + tir.cast("float32", i)
    body = tir.For(j, 0, cols, SERIAL, tir.BufferStore(out, value, (idx,)))
    if mid > 1:
        body = tir.For(m, 0, mid, SERIAL, body)
    return tir.PrimFunc(name, (a, out), tir.For(i, 0, rows, PAR, body))


def run_rows(func, rows, cols, mid=1):
    lib = compile_module([func])
    n = rows * mid * cols
    x = aligned_copy(np.random.default_rng(rows).random(n).astype(np.float32))
    out = aligned_empty(n, "float32")
    lib.run(func.name, x, out)
    row = np.repeat(np.arange(rows, dtype=np.float32), mid * cols)
    np.testing.assert_array_equal(out, x * 2 + row)
    return lib, x, out


# ------------------------------------------------------------------------------ the choice


def test_imbalance_is_the_slowest_threads_share_over_the_mean():
    assert ParallelLoop(1, 14, 8, 14).imbalance == pytest.approx(2 / 1.75)
    assert ParallelLoop(1, 14, 7, 14).imbalance == 1.0
    assert ParallelLoop(1, 100, 4, 16).imbalance == pytest.approx(4 * 7 / 25)  # 4 tasks of 7
    assert ParallelLoop(1, 5, 1, 1).imbalance == 1.0


@pytest.mark.parametrize("threads", [1, 2, 4, 8, 64])
def test_below_the_grain_one_thread(threads):
    plan = choose(GRAIN_WORK - 1, [10_000], threads)
    assert (plan.threads, plan.tasks) == (1, 1)
    if threads > 1:
        assert choose(GRAIN_WORK, [10_000], threads).threads > 1


def test_medium_work_takes_fewer_threads_than_the_machine_has():
    assert 1 < choose(4 * GRAIN_WORK, [4096], 64).threads < 64
    assert choose(10**9, [4096], 64).threads == 64


def test_a_short_loop_is_fused_with_the_next_for_balance():
    plan = choose(10**7, [7, 56], 4)  # 7 rows alone cannot split evenly over 4 threads
    assert plan.fused == 2 and plan.extent == 7 * 56 and plan.loop.imbalance <= MAX_IMBALANCE
    assert choose(10**7, [8, 56], 4).fused == 1  # 8 rows can


@given(
    work=st.integers(GRAIN_WORK, 10**10),
    outer=st.integers(1, 5000),
    inner=st.integers(8, 512),
    threads=st.integers(1, 64),
)
def test_plans_above_the_grain_are_balanced(work, outer, inner, threads):
    plan = choose(work, [outer, inner], threads)
    assert plan.loop.imbalance <= MAX_IMBALANCE
    assert 1 <= plan.threads <= threads and plan.tasks <= plan.extent
    assert plan.extent == math.prod([outer, inner][: plan.fused])


# ------------------------------------------------------------------------------- the work


def matvec(rows, cols):
    """out[i] = sum_k w[i, k] * x[k]: an initial store and `cols` reduction steps per row."""
    w = tir.decl_buffer((rows * cols,), "float32", "w")
    x = tir.decl_buffer((cols,), "float32", "x")
    out = tir.decl_buffer((rows,), "float32", "out")
    i, k = tir.Var("i"), tir.Var("k")
    step = tir.BufferStore(out, out.load(i) + w.load(i * cols + k) * x.load(k), (i,))
    body = tir.SeqStmt(
        (tir.BufferStore(out, tir.const(0.0, "float32"), (i,)), tir.For(k, 0, cols, SERIAL, step))
    )
    return tir.PrimFunc("mv", (w, x, out), tir.For(i, 0, rows, PAR, body))


def test_work_weighs_fresh_stores_above_reduction_steps():
    weight = parallel_plan.ELEMENT_WEIGHT
    assert weight > 1
    assert parallel_plan.work_of(scale_rows(16, 64).body) == 16 * 64 * weight
    assert parallel_plan.work_of(matvec(16, 64).body) == 16 * 64 + 16 * weight


def test_an_elementwise_kernel_goes_parallel_from_the_grain_over_its_weight():
    grain = -(-GRAIN_WORK // parallel_plan.ELEMENT_WEIGHT)
    n = (grain + 8) // 8 * 8
    assert n < GRAIN_WORK  # below the grain counted in plain iterations
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[({n},), float32], %y: Tensor[({n},), float32]) {{
  multiply(add(%x, %y), %x)
}}"""
    model = relay.build(relay.parse(text), target="llvm -num-threads=2")
    (loop,) = model.kernels[0].cost.parallel
    assert loop.threads == 2 and loop.work >= GRAIN_WORK
    x, y = np.arange(n, dtype="f4"), np.ones(n, "f4")
    np.testing.assert_array_equal(model.run(x, y), (x + y) * x)
    fewer = n // 2
    small = relay.build(relay.parse(text.replace(str(n), str(fewer))), "llvm -num-threads=2")
    assert all(p.threads == 1 for k in small.kernels for p in k.cost.parallel)


# ----------------------------------------------------------------------- loop IR and the pool


def test_plan_function_annotates_and_fuses_and_stays_exact():
    rows, mid, cols = 7, 24, 2048
    func = plan_function(scale_rows(rows, cols, mid=mid), 4)
    (plan,) = func.attrs[PLAN_KEY]
    assert plan.fused == 2 and plan.threads == 4 and plan.extent == rows * mid
    assert plan.imbalance <= MAX_IMBALANCE
    assert func.body.annotations[PLAN_KEY] is plan
    set_num_threads(4)
    run_rows(func, rows, cols, mid)


def test_small_loop_planned_on_one_thread_runs_in_one_task():
    func = plan_function(scale_rows(16, 64), 8)
    (plan,) = func.attrs[PLAN_KEY]
    assert (plan.threads, plan.tasks) == (1, 1)
    set_num_threads(8)
    lib, x, out = run_rows(func, 16, 64)
    threadpool.start_trace(256)
    lib.run("f", x, out)
    records, _ = threadpool.stop_trace()
    tasks = records[records["worker"] >= 0]
    assert len(tasks) == 1 and set(tasks["worker"].tolist()) == {0}


def test_only_the_planned_threads_take_part():
    rows, cols = 64, 8192
    func = plan_function(scale_rows(rows, cols), 2)  # planned for 2 threads
    (plan,) = func.attrs[PLAN_KEY]
    assert plan.threads == 2
    set_num_threads(6)  # the pool has more
    lib, x, out = run_rows(func, rows, cols)
    for _ in range(20):  # each run: at most 2 threads (which workers join may change)
        threadpool.start_trace(4096)
        lib.run("f", x, out)
        records, _ = threadpool.stop_trace()
        assert len(set(records[records["worker"] >= 0]["worker"].tolist())) <= 2
        assert records[records["worker"] < 0]["index"].tolist() == [plan.tasks]


# ------------------------------------------------------------------------------ the models


def _balance_rows(name, counts):
    sys.path.insert(0, str(BENCH))
    import threads as bench_threads

    module, weights = bench_threads.load(name)
    for n in counts:
        for kernel, loop in bench_threads.kernel_plans(module, weights, n):
            yield n, kernel, loop


@pytest.mark.parametrize("name", ["mlp64", "transformer_layer"])
def test_example_kernels_balanced_above_the_grain_and_serial_below(name):
    counts = [1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64]
    seen = 0
    for n, kernel, loop in _balance_rows(name, counts):
        where = f"{name} {kernel} at {n} threads: {loop}"
        assert loop.threads <= n, where
        if loop.work < GRAIN_WORK:
            assert loop.threads == 1 and loop.tasks == 1, where
        else:
            seen += 1
            assert loop.imbalance <= MAX_IMBALANCE, where
    assert seen > 0


CONVNET = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 8, 30, 30), float32], %w: Tensor[(16, 8, 3, 3), float32],
          %d: Tensor[(10, 3600), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
  %1 = nn.relu(%0);
  %2 = nn.max_pool2d(%1, pool_size=[2, 2], strides=[2, 2]);
  %3 = reshape(%2, newshape=[1, -1]);
  %4 = nn.batch_flatten(%3);
  nn.dense(%4, %d)
}"""

MLP = """#[version = "0.0.5"]
def @main(%x: Tensor[(37, 300), float32], %w: Tensor[(200, 300), float32],
          %b: Tensor[(200,), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  nn.softmax(%2)
}"""


@pytest.mark.parametrize(
    ("text", "counts"),
    [(MLP, range(1, 17)), (CONVNET, (1, 2, 3, 4, 5, 7, 8, 11, 13, 16))],
    ids=["mlp", "convnet"],
)
def test_exact_against_the_interpreter_for_1_to_16_threads(text, counts):
    module = relay.parse(text)
    rng = np.random.default_rng(0)
    args = {
        p.name_hint: rng.standard_normal([int(d) for d in p.type_annotation.shape]).astype("f4")
        for p in module["main"].params
    }
    expected = relay.build(module, target="interp").run(**args)
    planned = set()
    for n in counts:
        model = relay.build(module, target=Target.parse(f"llvm -num-threads={n}"))
        got = model.run(**args)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4, err_msg=f"{n} threads")
        planned |= {(n, p) for k in model.kernels for p in k.cost.parallel if p.threads > 1}
    assert planned  # some kernel really ran on several threads


def test_plans_are_saved_in_artifacts_and_printed(tmp_path):
    module = relay.parse(MLP)
    model = relay.build(module, target="llvm -num-threads=4")
    plans = [k.cost.parallel for k in model.kernels]
    assert any(p for p in plans)
    path = tmp_path / "m.relaymod"
    model.save(str(path))
    loaded = relay.load(str(path))
    assert [k.cost.parallel for k in loaded.kernels] == plans
    text = "\n".join(k.cost.describe_parallel() for k in model.kernels)
    assert "threads" in text


def test_fusion_covers_every_index_once():
    for rows, mid, cols in itertools.product([1, 3, 7], [2, 5], [1, 64]):
        func = scale_rows(rows, cols, mid=mid)
        chain = parallel_plan.fusable_chain(func.body)
        for depth in (2, 3):
            extent = math.prod([rows, mid, cols][:depth])
            fused = parallel_plan.fuse_chain(chain[:depth], ParallelLoop(1, extent, 2, 2, depth))
            assert int(fused.extent.value) == extent
            set_num_threads(2)
            run_rows(tir.PrimFunc("f", func.params, fused), rows, cols, mid)
