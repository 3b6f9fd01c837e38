"""The machine probe: its kernels compute what they claim (so the FLOP and byte counts are
real), and its figures agree with what numpy reaches on the same machine."""

import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from relay.backend.codegen import probe, threadpool
from relay.backend.codegen.threadpool import default_num_threads
from relay.backend.target import Target, cpu_count

FMA_UNITS_BOUND = 4  # no CPU retires more than 4 vector FMAs per cycle
CLOCK_BOUND_HZ = 6e9


@pytest.fixture(autouse=True)
def restore_threads():
    yield
    threadpool.set_num_threads(default_num_threads())


def chains_after(start, iterations):
    """What the FMA kernel's task returns: every lane of chains k = 0..CHAINS-1 that start at
    `start + k` and run `x = x * 0.5 + 1` (exact in float64 for these small counts)."""
    total = 0.0
    for k in range(probe.CHAINS):
        x = start + k
        for _ in range(iterations):
            x = x * 0.5 + 1.0
        total += x
    return total * probe.kernels().lanes


def test_vector_width_follows_the_host():
    host = Target.host()
    assert probe.kernels().lanes == min(16, max(4, host.lanes("float32")))
    assert probe.flops_per_iteration() == 2 * probe.kernels().lanes * probe.CHAINS


@pytest.mark.parametrize(("iterations", "tasks", "threads"), [(1, 1, 1), (5, 3, 2), (9, 4, 1)])
def test_fma_kernel_runs_every_round_of_every_chain(iterations, tasks, threads):
    with probe.pool_threads(threads):
        seconds, out = probe.run_fma(iterations, tasks, start=1.0)
    assert seconds > 0
    np.testing.assert_array_equal(out, np.full(tasks, chains_after(1.0, iterations), np.float32))


@pytest.mark.parametrize("tasks", [1, 3])
def test_sum_kernel_reads_each_share_once(tasks):
    data = probe.aligned_buffer(300_000 * 4)
    data[:] = np.random.default_rng(tasks).integers(0, 8, data.size)
    step = probe.kernels().sum_step
    with probe.pool_threads(2):
        seconds, sums, nbytes = probe.run_sum(data, tasks)
    per_task = nbytes // 4 // tasks
    assert seconds > 0 and per_task % step == 0 and data.size - per_task * tasks < tasks * step
    expected = data[: per_task * tasks].astype(np.float64).reshape(tasks, per_task).sum(axis=1)
    np.testing.assert_array_equal(sums, expected)


def test_sum_kernel_rejects_unaligned_or_tiny_buffers():
    data = probe.aligned_buffer(4096)
    with pytest.raises(ValueError, match="aligned"):
        probe.run_sum(data[1:], 1)
    with pytest.raises(ValueError, match="too few"):
        probe.run_sum(data[:16], 1)


def test_thread_count_is_restored_after_a_measurement():
    threadpool.set_num_threads(3)
    probe.measure_fp32_peak(1)
    assert threadpool.get_num_threads() == 3
    with pytest.raises(ValueError, match="at least 1"):
        probe.measure_fp32_peak(0)


def numpy_matmul_gflops(threads):
    """What numpy's BLAS reaches on a 512³ float32 product with `threads` threads (in a
    child process, since BLAS reads its thread count at start-up)."""
    code = textwrap.dedent(
        """
        import time
        import numpy as np
        a = np.random.default_rng(0).random((512, 512), dtype=np.float32)
        b = a.T.copy()
        a @ b
        best = float("inf")
        for _ in range(15):
            start = time.perf_counter()
            a @ b
            best = min(best, time.perf_counter() - start)
        print(2 * 512**3 / best / 1e9)
        """
    )
    names = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    env = {**os.environ, **dict.fromkeys(names, str(threads))}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return float(done.stdout)


def peak_in_a_fresh_process(threads):
    """`probe.measure_fp32_peak(threads)` in a new process, as numpy's matmul is measured:
    in a test process that ran other files first, the 2-thread probe read exactly the
    1-thread peak 8 times in a row (3 of 8 full runs; cause not found: see the notes)."""
    code = f"from relay.backend.codegen import probe; print(probe.measure_fp32_peak({threads}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout)


def holds_once(attempts, check):
    """Whether `check()` (a verdict and what it measured) holds in one of `attempts` tries:
    the cores are shared with other processes, so one measurement can be disturbed."""
    seen = []
    for _ in range(attempts):
        ok, measured = check()
        if ok:
            return True, measured
        seen.append(measured)
    return False, seen


@pytest.mark.parametrize("threads", sorted({1, cpu_count()}))
def test_peak_is_at_least_what_numpy_matmul_reaches(threads):
    lanes = probe.kernels().lanes
    absurd = 2 * lanes * FMA_UNITS_BOUND * CLOCK_BOUND_HZ * threads / 1e9

    best_peak = 0.0

    def check():
        # the best peak so far: under `-n auto` the other test process may hold a core for
        # seconds, and 2 threads of the probe then share one (half the peak)
        nonlocal best_peak
        blas, peak = numpy_matmul_gflops(threads), peak_in_a_fresh_process(threads)
        assert peak < absurd, (peak, absurd)
        best_peak = max(best_peak, peak)
        if best_peak < 0.8 * blas:
            time.sleep(0.5)
        return best_peak >= 0.8 * blas, (blas, peak)

    ok, measured = holds_once(8, check)
    assert ok, f"numpy's matmul beat the probed peak: (numpy, peak) = {measured}"


def two_callers_speedup(iterations):
    """How much more FMA work two threads of this process get done than one (each calling
    the kernel directly, no pool), the best of three tries: the parallelism the machine
    really offers right now (2 on an idle 2-core machine, less when cores are shared)."""
    with probe.pool_threads(1):
        alone = min(probe.run_fma(iterations, 1)[0] for _ in range(3))
        best_pair = float("inf")
        for _ in range(3):
            barrier, times = threading.Barrier(2), []

            def work(barrier=barrier, times=times):
                barrier.wait()
                times.append(probe.run_fma(iterations, 1)[0])

            workers = [threading.Thread(target=work) for _ in range(2)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            best_pair = min(best_pair, max(times))
    return 2 * alone / best_pair


def test_all_threads_scale_like_the_machine():
    threads = cpu_count()
    with probe.pool_threads(1):
        start = time.perf_counter()
        iterations = 1 << 16
        while probe.run_fma(iterations, 1)[0] < 0.005:
            iterations *= 2
    assert time.perf_counter() - start < 5

    def check():
        machine = two_callers_speedup(iterations * 4) if threads >= 2 else 1.0
        one, many = probe.measure_fp32_peak(1), probe.measure_fp32_peak(threads)
        # With two free cores `machine` is about 2, and the peak must then nearly double.
        return many >= 0.7 * min(machine, threads) * one, (machine, one, many)

    ok, measured = holds_once(3, check)
    assert ok, f"(machine speedup, 1-thread peak, all-threads peak) = {measured}"


def numpy_sum_gbs(nbytes):
    a = np.ones(nbytes // 4, dtype=np.float32)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        a.sum()
        best = min(best, time.perf_counter() - start)
    return nbytes / best / 1e9


@pytest.mark.parametrize("threads", sorted({1, cpu_count()}))
def test_bandwidth_is_at_least_half_what_numpy_sum_reaches(threads):
    def check():
        reference, bandwidth = numpy_sum_gbs(256 * 1024 * 1024), probe.measure_bandwidth(threads)
        assert bandwidth < 10_000, bandwidth
        return bandwidth >= 0.5 * reference, (reference, bandwidth)

    ok, measured = holds_once(2, check)
    assert ok, f"(numpy's sum, probed bandwidth) in GB/s = {measured}"


def test_default_buffer_is_bigger_than_the_caches():
    nbytes = probe.bandwidth_bytes()
    assert nbytes >= min(probe.MAX_BANDWIDTH_BYTES, 4 * Target.host().l3_bytes)
    assert nbytes >= probe.BANDWIDTH_BYTES


def test_whole_probe_is_quick():
    probe.kernels()
    start = time.perf_counter()
    probe.measure_fp32_peak(1)
    probe.measure_fp32_peak(cpu_count())
    probe.measure_bandwidth(cpu_count())
    # well under 2 s on an idle machine; the margin is for helpers sharing the cores
    assert time.perf_counter() - start < 4
