"""Profile reports from hand-built sessions: per-kernel figures, imbalance, time outside the
kernels, kinds, sorting, the table's width, JSON and Chrome traces."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from relay.backend.kernel_cost import KernelCost
from relay.backend.profile.data import (
    MachinePeak,
    ProfileData,
    StepTiming,
    TraceEvent,
    WorkerLoad,
)
from relay.backend.profile.report import chrome_trace, format_table, to_json, write_chrome_trace
from relay.backend.profile.summary import outside_ns, summarize
from relay.backend.profile.table import format_count, format_us

MS = 1_000_000

CONV = KernelCost(
    "fused_nn_conv2d_add_nn_relu_and_a_long_tail_of_fused_things",
    ("nn.conv2d", "add", "nn.relu", "multiply", "add", "nn.relu", "clip", "cast"),
    "nn.conv2d",
    2_000_000_000,
    40_000_000,
)
CONV2 = KernelCost("fused_nn_conv2d_1", ("nn.conv2d",), "nn.conv2d", 1_000_000_000, 8_000_000)
DENSE = KernelCost("fused_nn_dense", ("nn.dense",), "nn.dense", 600_000_000, 6_000_000)
MACHINE = MachinePeak(
    fp32_gflops=4000.0,
    fp32_gflops_1thread=2500.0,
    bandwidth_gbs=80.0,
    threads=2,
    cpu="Test CPU",
    source="/cache/relay/machine.json",
)


def session(steps, wall_ns, threads=2, machine=MACHINE, trace=()):
    return ProfileData(
        model="net",
        target="llvm",
        threads=threads,
        repeat=len(wall_ns),
        warmup=1,
        steps=tuple(steps),
        wall_ns=tuple(wall_ns),
        trace=tuple(trace),
        machine=machine,
    )


def row_named(summary, name):
    (row,) = [row for row in summary.kernels if row.name == name]
    return row


def test_rates_and_percent_of_peak_use_the_median_time():
    data = session([StepTiming(0, 0, CONV, (MS, 3 * MS, MS))], [4 * MS] * 3)
    (row,) = summarize(data).kernels
    assert row.median_ns == MS
    assert row.gflops == pytest.approx(2000.0)
    assert row.gbs == pytest.approx(40.0)
    assert row.of_peak == pytest.approx(0.5)
    assert row.of_bandwidth == pytest.approx(0.5)
    assert row.share == 1.0


def test_one_thread_sessions_compare_with_the_one_thread_peak():
    data = session([StepTiming(0, 0, CONV, (MS,))], [2 * MS], threads=1)
    (row,) = summarize(data).kernels
    assert row.of_peak == pytest.approx(2000.0 / 2500.0)


def test_a_kernel_called_by_several_steps_is_one_row():
    steps = [
        StepTiming(0, 0, CONV2, (MS, MS, 4 * MS)),
        StepTiming(1, 1, DENSE, (MS, MS, MS)),
        StepTiming(2, 0, CONV2, (5 * MS, 6 * MS, 7 * MS)),
    ]
    summary = summarize(session(steps, [20 * MS] * 3))
    conv = row_named(summary, "fused_nn_conv2d_1")
    assert conv.calls == 2
    assert conv.median_ns == 4.5 * MS  # median of all six samples
    assert conv.total_ns == MS + 6 * MS  # sum of each step's median
    assert conv.first_step == 0
    assert conv.share == pytest.approx(7 / 8)
    assert row_named(summary, "fused_nn_dense").share == pytest.approx(1 / 8)
    assert summary.kernels_ns == 8 * MS


def test_imbalance_is_slowest_worker_over_the_mean():
    balanced = (WorkerLoad(0, 2, 2 * MS), WorkerLoad(1, 2, 2 * MS))
    skewed = (WorkerLoad(0, 3, 3 * MS), WorkerLoad(1, 1, MS))
    alone = (WorkerLoad(0, 4, 2 * MS),)  # worker 1 ran nothing: counts as idle
    steps = [
        StepTiming(0, 0, CONV, (MS,), loads=(skewed,), parallel_loops=1),
        StepTiming(1, 1, CONV2, (MS,), loads=(alone,), parallel_loops=1),
        StepTiming(2, 2, DENSE, (MS,)),
    ]
    summary = summarize(session(steps, [5 * MS]))
    assert row_named(summary, CONV.name).imbalance == pytest.approx(1.5)
    assert row_named(summary, CONV2.name).imbalance == pytest.approx(2.0)
    assert row_named(summary, DENSE.name).imbalance is None
    assert row_named(summary, DENSE.name).tasks is None
    assert row_named(summary, CONV.name).tasks == 4

    runs = (skewed, balanced, alone)
    three = session([StepTiming(0, 0, CONV, (MS,) * 3, loads=runs, parallel_loops=1)], [MS] * 3)
    (row,) = summarize(three).kernels
    assert row.imbalance == pytest.approx(1.5)  # median of 1.5, 1.0, 2.0
    assert row.tasks == 4


def test_imbalance_counts_every_worker_of_the_session():
    loads = ((WorkerLoad(0, 1, MS), WorkerLoad(1, 1, MS)),)
    data = session([StepTiming(0, 0, CONV, (MS,), loads=loads, parallel_loops=1)], [MS], threads=4)
    assert summarize(data).kernels[0].imbalance == pytest.approx(2.0)


def test_outside_time_is_the_median_gap_between_wall_and_kernels():
    steps = [
        StepTiming(0, 0, CONV, (3 * MS, 4 * MS, 5 * MS)),
        StepTiming(1, 1, DENSE, (5 * MS, 5 * MS, 5 * MS)),
    ]
    data = session(steps, [10 * MS, 12 * MS, 20 * MS])
    assert outside_ns(data) == 3 * MS  # gaps 2, 3, 10 ms
    summary = summarize(data)
    assert summary.wall_ns == 12 * MS
    report = to_json(data)
    assert report["outside"]["us"] == 3000.0
    assert report["outside"]["share"] == pytest.approx(0.25)
    assert report["total_us"] == 12000.0
    assert report["kernels_plus_outside_us"] == 4000.0 + 5000.0 + 3000.0
    text = format_table(data, width=120)
    outside_line = next(line for line in text.splitlines() if line.startswith("outside kernels"))
    assert outside_line.split()[-2:] == ["3,000", "25.0%"]


def test_kinds_group_kernels_by_their_anchor_operator():
    steps = [
        StepTiming(0, 0, CONV, (MS,)),
        StepTiming(1, 1, DENSE, (MS,)),
        StepTiming(2, 2, CONV2, (MS,)),
        StepTiming(3, 2, CONV2, (MS,)),
        StepTiming(4, 3, None, (MS,)),
    ]
    summary = summarize(session(steps, [6 * MS]))
    kinds = {kind.kind: kind for kind in summary.kinds}
    assert set(kinds) == {"nn.conv2d", "nn.dense", None}
    conv = kinds["nn.conv2d"]
    assert (conv.kernels, conv.calls, conv.total_ns) == (2, 3, 3 * MS)
    assert conv.share == pytest.approx(0.6)
    assert conv.gflops == pytest.approx((2e9 + 2 * 1e9) / (3 * MS))
    assert kinds["nn.dense"].gflops == pytest.approx(600.0)
    assert kinds[None].gflops is None
    assert summary.kinds[0].kind == "nn.conv2d"  # most time first


def test_a_kernel_without_cost_gets_a_placeholder_row():
    steps = [StepTiming(0, 3, None, (2 * MS,)), StepTiming(1, 0, DENSE, (MS,))]
    data = session(steps, [4 * MS])
    row = row_named(summarize(data), "kernel 3")
    assert (row.ops, row.kind, row.flops, row.gflops, row.of_peak) == ((), None, None, None, None)
    text = format_table(data, width=120)
    assert "kernel 3" in text
    assert "(unknown)" in text


def test_sort_orders_and_top():
    steps = [
        StepTiming(0, 0, DENSE, (MS,)),
        StepTiming(1, 1, CONV, (5 * MS,)),
        StepTiming(2, 2, CONV2, (3 * MS,)),
    ]
    data = session(steps, [10 * MS])
    by_time = [row.name for row in summarize(data).kernels]
    assert by_time == [CONV.name, CONV2.name, DENSE.name]
    by_order = [row.name for row in summarize(data, sort="order").kernels]
    assert by_order == [DENSE.name, CONV.name, CONV2.name]
    top = summarize(data, top=1)
    assert [row.name for row in top.kernels] == [CONV.name]
    assert [row.name for row in top.hidden] == [CONV2.name, DENSE.name]
    assert top.kernels_ns == 9 * MS  # the total still counts every kernel
    assert [k["name"] for k in to_json(data, sort="order", top=2)["kernels"]] == by_order[:2]
    text = format_table(data, width=200, top=1)
    assert CONV.name in text and CONV2.name not in text
    assert "(2 more)" in text
    with pytest.raises(ValueError, match="sort order"):
        summarize(data, sort="name")


def test_table_fits_the_width_and_cuts_long_names():
    steps = [
        StepTiming(0, 0, CONV, (MS,), loads=(((WorkerLoad(0, 2, MS)),),), parallel_loops=1),
        StepTiming(1, 1, DENSE, (2 * MS,)),
    ]
    data = session(steps, [4 * MS])
    narrow = format_table(data, width=80)
    assert max(len(line) for line in narrow.splitlines()) <= 80
    assert "…" in narrow
    assert "hidden for width" in narrow
    wide = format_table(data, width=400)
    assert CONV.name in wide  # the name is the fused operators; JSON lists them apart
    assert "…" not in wide
    header = wide.splitlines()[:2]
    assert header[0].startswith("profile of net: target llvm, 2 threads, 1 run")
    assert "fp32 peak 4,000 GFLOP/s (2 threads), 2,500 GFLOP/s (1 thread)" in header[1]
    assert "memory 80.0 GB/s (cached in /cache/relay/machine.json)" in header[1]


def test_table_defaults_to_the_terminal_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "64")
    steps = [StepTiming(0, 0, CONV, (MS,)), StepTiming(1, 1, DENSE, (2 * MS,))]
    text = format_table(session(steps, [4 * MS]))
    assert max(len(line) for line in text.splitlines()) <= 64


def test_table_without_machine_leaves_percentages_out():
    data = session([StepTiming(0, 0, DENSE, (MS,))], [2 * MS], machine=None)
    text = format_table(data, width=200)
    assert "machine peaks not measured" in text
    assert "%peak" not in text
    (row,) = summarize(data).kernels
    assert row.of_peak is None and row.of_bandwidth is None
    assert to_json(data)["machine"] is None


def test_json_is_plain_and_complete():
    loads = ((WorkerLoad(0, 2, 3 * MS), WorkerLoad(1, 1, MS)),)
    steps = [
        StepTiming(0, 0, CONV, (MS,), loads=loads, parallel_loops=1),
        StepTiming(1, 1, None, (0,)),  # a zero time must not give NaN or infinity
    ]
    data = session(steps, [3 * MS])
    report = json.loads(json.dumps(to_json(data), allow_nan=False))
    conv = report["kernels"][0]
    assert conv["name"] == CONV.name and conv["ops"] == list(CONV.ops)
    assert conv["gflops"] == pytest.approx(2000.0)
    assert conv["imbalance"] == pytest.approx(1.5)
    assert report["kernels"][1]["gflops"] is None
    assert [step["median_us"] for step in report["steps"]] == [1000.0, 0.0]
    assert report["machine"]["fp32_gflops"] == 4000.0
    assert report["wall_us"] == [3000.0]
    assert {kind["kind"] for kind in report["kinds"]} == {"nn.conv2d", None}


def nested_trace():
    return (
        TraceEvent("fused_nn_dense", 0, 0, 1000, "kernel"),
        TraceEvent("task", 0, 100, 700, "task", {"loop": 0, "shape": (4, 4)}),
        TraceEvent("task", 2, 150, 600, "task"),
        TraceEvent("task", 0, 2000, 50, "task"),  # starts with its kernel
        TraceEvent("fused_nn_conv2d_1", 0, 2000, 3000, "kernel", {"step": 1}),
        TraceEvent("task", 0, 2100, 2901, "task"),  # overruns its kernel by 1 ns
        TraceEvent("task", 2, 2200, 0, "task"),
    )


def assert_valid_trace(trace, tracks):
    events = json.loads(json.dumps(trace, allow_nan=False))["traceEvents"]
    for event in events:
        assert {"ph", "pid", "tid", "ts", "name"} <= set(event)
        assert event["pid"] == 1
    spans = [e for e in events if e["ph"] == "X"]
    assert all(e["dur"] >= 0 for e in spans)
    names = [e for e in events if e["ph"] == "M" and e["name"] == "thread_name"]
    assert sorted(e["tid"] for e in names) == sorted(tracks)
    assert {e["tid"] for e in spans} == set(tracks)
    for track in tracks:
        open_ends: list[float] = []
        for span in (e for e in spans if e["tid"] == track):
            while open_ends and open_ends[-1] <= span["ts"]:
                open_ends.pop()
            assert not open_ends or span["ts"] + span["dur"] <= open_ends[-1] + 1e-9
            open_ends.append(span["ts"] + span["dur"])
    return events


def test_chrome_trace_has_one_named_track_per_thread_and_nests(tmp_path):
    data = session([StepTiming(0, 0, DENSE, (MS,))], [2 * MS], trace=nested_trace())
    trace = chrome_trace(data)
    assert trace["displayTimeUnit"] == "ms"
    events = assert_valid_trace(trace, [0, 2])
    thread_names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert thread_names == {0: "caller", 2: "worker 2"}
    process = [e for e in events if e["name"] == "process_name"]
    assert [e["args"]["name"] for e in process] == ["net"]
    caller = [e for e in events if e["ph"] == "X" and e["tid"] == 0]
    assert [e["name"] for e in caller] == [
        "fused_nn_dense",
        "task",
        "fused_nn_conv2d_1",
        "task",
        "task",
    ]
    assert caller[2]["dur"] == pytest.approx(3.0)
    assert caller[1]["ts"] == pytest.approx(0.1) and caller[1]["dur"] == pytest.approx(0.7)
    assert caller[1]["args"] == {"loop": 0, "shape": [4, 4]}
    assert caller[4]["dur"] == pytest.approx(2.9)  # cut at its kernel's end
    assert caller[4]["args"]["measured_dur_us"] == pytest.approx(2.901)
    path = write_chrome_trace(data, tmp_path / "trace.json")
    assert json.loads(path.read_text()) == json.loads(json.dumps(trace))


def test_chrome_trace_of_an_empty_trace_names_only_the_process():
    events = chrome_trace(session([], [MS]))["traceEvents"]
    assert [e["name"] for e in events] == ["process_name"]


def test_human_units():
    assert [format_us(ns) for ns in (1234, 56_780, 1_234_567_000)] == ["1.23", "56.8", "1,234,567"]
    assert [format_count(n) for n in (999, 1234, 999_999, 2e9, None)] == [
        "999",
        "1.23k",
        "1.00M",
        "2.00G",
        "",
    ]


spans = st.builds(
    TraceEvent,
    name=st.sampled_from(["k", "task"]),
    track=st.integers(0, 3),
    start_ns=st.integers(0, 10_000),
    dur_ns=st.integers(-5, 10_000),
)
costs = st.none() | st.builds(
    KernelCost,
    name=st.text("abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=60),
    ops=st.lists(st.sampled_from(["nn.conv2d", "add", "nn.relu", "nn.dense"]), max_size=8).map(
        tuple
    ),
    kind=st.sampled_from(["nn.conv2d", "nn.dense", "add"]),
    flops=st.integers(0, 10**12),
    bytes=st.integers(0, 10**10),
)


@st.composite
def sessions(draw):
    runs = draw(st.integers(1, 3))
    threads = draw(st.integers(1, 3))
    kernel_costs = draw(st.lists(costs, min_size=1, max_size=4))
    steps = []
    for index in range(draw(st.integers(0, 6))):
        kernel = draw(st.integers(0, len(kernel_costs) - 1))
        times = tuple(draw(st.lists(st.integers(0, 10**9), min_size=runs, max_size=runs)))
        load = st.builds(
            WorkerLoad, st.integers(0, threads - 1), st.integers(0, 9), st.integers(0, 10**7)
        )
        loads = draw(
            st.none()
            | st.lists(st.lists(load, max_size=3).map(tuple), min_size=runs, max_size=runs)
        )
        steps.append(
            StepTiming(
                index, kernel, kernel_costs[kernel], times, tuple(loads or ()), int(bool(loads))
            )
        )
    walls = draw(st.lists(st.integers(0, 10**10), min_size=runs, max_size=runs))
    trace = draw(st.lists(spans, max_size=12))
    machine = draw(st.none() | st.just(MACHINE))
    return session(steps, walls, threads=threads, machine=machine, trace=trace)


@given(sessions(), st.integers(60, 160), st.sampled_from(["time", "order"]))
def test_any_session_reports_within_width_and_as_valid_json(data, width, sort):
    text = format_table(data, width=width, sort=sort)
    assert max(len(line) for line in text.splitlines()) <= width
    json.dumps(to_json(data, sort=sort), allow_nan=False)
    summary = summarize(data, sort)
    assert sum(row.calls for row in summary.kernels) == len(data.steps)
    if summary.kernels_ns:
        assert sum(row.share for row in summary.kernels) == pytest.approx(1.0)
    assert_valid_trace(chrome_trace(data), sorted({e.track for e in data.trace}))
