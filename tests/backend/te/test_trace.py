"""Schedule traces: printing, parsing, JSON and replay onto a fresh schedule."""

from __future__ import annotations

import json

import numpy as np
import pytest
from relay.backend import te
from relay.backend.te.trace import ScheduleStep
from relay.backend.tir.evaluate import run_primfunc
from relay.backend.tir.printer import astext


def gemm():
    """A fresh copy of the same computation each call (as the tuner rebuilds it)."""
    A = te.placeholder((13, 7), "float32", "A")
    B = te.placeholder((7, 10), "float32", "B")
    k = te.reduce_axis(7, "k")
    P = te.compute((13, 7), lambda i, k: A[i, k] * 2.0, name="P")
    C = te.compute((13, 10), lambda i, j: te.sum_(P[i, k] * B[k, j], axis=k), name="C")
    D = te.compute((13, 10), lambda i, j: C[i, j] + 1.0, name="D")
    return A, B, P, C, D


def schedule_it(s: te.Schedule, P, C, D) -> None:
    CL = s.cache_write(C, "local")
    BL = s.cache_read(s["B"].op.output(0), "local", [CL])
    s[P].compute_inline()
    io, jo, _ii, _ji = s[D].tile(*s[D].op.axis, 4, 4)
    fused = s[D].fuse(io, jo)
    s[D].parallel(fused)
    s[C].compute_at(s[D], fused)
    s[CL].compute_at(s[D], fused)
    ko, ki = s[CL].split(s[CL].op.reduce_axis[0], factor=3)
    x, y = s[CL].op.axis
    s[CL].reorder(ko, x, ki, y)
    s[CL].vectorize(y)
    s[CL].unroll(ki)
    s[BL].compute_at(s[CL], ko)


EXPECTED = """\
cache_write("C", "local")
cache_read("B", "local", ["C.local"])
compute_inline("P")
split("D", "i", factor=4)
split("D", "j", factor=4)
reorder("D", "i.outer", "j.outer", "i.inner", "j.inner")
fuse("D", "i.outer", "j.outer")
parallel("D", "i.outer.j.outer.fused")
compute_at("C", "D", "i.outer.j.outer.fused")
compute_at("C.local", "D", "i.outer.j.outer.fused")
split("C.local", "k", factor=3)
reorder("C.local", "k.outer", "i.c", "k.inner", "j.c")
vectorize("C.local", "j.c")
unroll("C.local", "k.inner")
compute_at("B.local", "C.local", "k.outer")"""


def build():
    A, B, P, C, D = gemm()
    s = te.create_schedule(D)
    return (A, B, D), s, (P, C, D)


def test_trace_text_names_stages_and_loops() -> None:
    _, s, (P, C, D) = build()
    schedule_it(s, P, C, D)
    assert str(s.trace) == EXPECTED


def test_print_parse_json_round_trip() -> None:
    _, s, (P, C, D) = build()
    schedule_it(s, P, C, D)
    trace = s.trace
    assert te.Trace.parse(str(trace)) == trace
    assert te.Trace.from_json(trace.to_json()) == trace
    data = json.loads(trace.to_json())
    assert data["version"] == 1
    assert data["steps"][3] == {"primitive": "split", "args": ["D", "i"], "kwargs": {"factor": 4}}


def _run(args, func) -> np.ndarray:
    rng = np.random.default_rng(1)
    a = rng.random((13, 7), dtype=np.float32)
    b = rng.random((7, 10), dtype=np.float32)
    d = np.zeros((13, 10), np.float32)
    run_primfunc(func, a, b, d)
    np.testing.assert_allclose(d, (a * 2) @ b + 1, rtol=1e-5)
    return d


def test_replay_on_a_fresh_computation_lowers_identically() -> None:
    args, s, (P, C, D) = build()
    schedule_it(s, P, C, D)
    original = te.lower(s, list(args), "k")
    text = str(s.trace)
    args2, fresh, _ = build()
    te.replay(te.Trace.parse(text), fresh)
    assert fresh.trace == s.trace
    replayed = te.lower(fresh, list(args2), "k")
    assert astext(replayed) == astext(original)
    np.testing.assert_array_equal(_run(args, original), _run(args2, replayed))


def test_replay_accepts_text_and_json() -> None:
    _args, s, (P, C, D) = build()
    schedule_it(s, P, C, D)
    for stored in (str(s.trace), te.Trace.from_json(s.trace.to_json())):
        args2, fresh, _ = build()
        te.replay(stored, fresh)
        _run(args2, te.lower(fresh, list(args2)))


def test_tuple_output_and_nparts_round_trip() -> None:
    A = te.placeholder((6, 5), "float32", "A")
    B = te.compute((6, 5), lambda i, j: A[i, j] + 1.0, name="B")
    C0, C1 = te.compute((6, 5), lambda i, j: (B[i, j] * 2.0, B[i, j] - 1.0), name="C")
    s = te.create_schedule([C0, C1])
    s.cache_read(B, "local", [C0])
    s[C0].split(s[C0].op.axis[1], nparts=2)
    text = str(s.trace)
    assert 'split("C", "j", nparts=2)' in text
    assert te.Trace.parse(text) == s.trace


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('split("C", "i", factor=4', "cannot read"),
        ('spilt("C", "i", factor=4)', "unknown schedule primitive `spilt`"),
        ('split("C", "i")', "exactly one"),
        ('split("C", "i", factor=4, nparts=2)', "exactly one"),
        ('split("C", __import__("os"), factor=4)', "is not a literal"),
        ('compute_at("C", "D")', "wrong number of arguments"),
        ('reorder("C", 3)', "must be a name"),
        ('x.split("C", "i", factor=2)', "primitive\\(arguments\\)"),
        ("split('C', 'i', factor='4')", "must be an integer"),
    ],
)
def test_parse_errors_name_the_line(text: str, match: str) -> None:
    with pytest.raises(te.ScheduleError, match=match) as info:
        te.Trace.parse("# a comment\n\n" + text)
    assert "trace line 3" in str(info.value)


def test_replay_errors_name_the_step() -> None:
    _, s, _ = build()
    with pytest.raises(te.ScheduleError, match=r"replaying step 2 .*no iteration variable `q`"):
        te.replay('split("D", "i", factor=2)\nsplit("D", "q", factor=2)', s)
    with pytest.raises(te.ScheduleError, match="no stage named `E`"):
        te.replay('compute_root("E")', build()[1])


def test_json_errors() -> None:
    with pytest.raises(te.ScheduleError, match="not valid JSON"):
        te.Trace.from_json("{")
    with pytest.raises(te.ScheduleError, match="version"):
        te.Trace.from_json('{"steps": []}')
    with pytest.raises(te.ScheduleError, match="unknown schedule primitive"):
        te.Trace.from_json('{"version": 1, "steps": [{"primitive": "bind", "args": []}]}')


def test_failed_primitives_are_not_recorded() -> None:
    _, s, (_P, C, D) = build()
    with pytest.raises(te.ScheduleError):
        s[C].compute_inline()
    s[D].split(s[D].op.axis[0], factor=3)
    assert s.trace.steps == (ScheduleStep("split", ("D", "i"), (("factor", 3),)),)
