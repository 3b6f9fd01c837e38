"""Property: random sequences of schedule primitives never change what a kernel computes.

Each example builds a small computation (a matmul with an elementwise producer and consumer,
or a 1-D stencil), applies random primitives (misuse is allowed: it must raise
`ScheduleError` and leave the schedule as it was), lowers, runs the kernel with the TIR
reference evaluator and compares with numpy. The trace, printed, parsed and replayed on a
fresh copy of the computation, must lower to the same kernel text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import event, given
from hypothesis import strategies as st
from relay.backend import te
from relay.backend.tir.evaluate import run_primfunc
from relay.backend.tir.printer import astext

Built = tuple[te.Schedule, list[te.Tensor], Callable[..., np.ndarray]]


def matmul_chain(n: int, m: int, k: int) -> Built:
    A = te.placeholder((n, k), "float32", "A")
    B = te.placeholder((k, m), "float32", "B")
    P = te.compute((n, k), lambda i, r: A[i, r] * 2.0 + 1.0, name="P")
    r = te.reduce_axis(k, "k")
    C = te.compute((n, m), lambda i, j: te.sum_(P[i, r] * B[r, j], axis=r), name="C")
    D = te.compute((n, m), lambda i, j: C[i, j] * 0.5 - 1.0, name="D")
    return te.create_schedule(D), [A, B, D], lambda a, b: ((a * 2 + 1) @ b) * 0.5 - 1


def stencil(n: int, m: int, k: int) -> Built:
    X = te.placeholder((n + 2, m), "float32", "X")
    Y = te.compute((n + 2, m), lambda i, j: X[i, j] * 3.0, name="Y")
    Z = te.compute((n, m), lambda i, j: Y[i, j] + Y[i + 1, j] + Y[i + 2, j], name="Z")

    def ref(x: np.ndarray) -> np.ndarray:
        y = x * 3
        return y[:-2] + y[1:-1] + y[2:]

    return te.create_schedule(Z), [X, Z], ref


BUILDERS = {"matmul": matmul_chain, "stencil": stencil}
PRIMITIVES = [
    "split", "split", "fuse", "reorder", "vectorize", "unroll", "parallel", "compute_at",
    "compute_at", "compute_inline", "compute_root", "cache_read", "cache_write",
]  # fmt: skip


def _state(s: te.Schedule) -> Any:
    return [
        (
            st_.name,
            list(st_.leaf_iter_vars),
            st_.attach_kind,
            st_.attach_ivar,
            dict(st_.annotations),
        )
        for st_ in s.stages
    ]


def apply_random(s: te.Schedule, data: st.DataObject, steps: int) -> None:
    for _ in range(steps):
        stages = [x for x in s.stages if not isinstance(x.op, te.PlaceholderOp)]
        stage = data.draw(st.sampled_from(stages))
        prim = data.draw(st.sampled_from(PRIMITIVES))
        leaves = stage.leaf_iter_vars
        before, trace_len = _state(s), len(s.trace)
        try:
            if prim == "split" and leaves:
                iv = data.draw(st.sampled_from(leaves))
                amount = data.draw(st.integers(1, 5))
                if data.draw(st.booleans()):
                    stage.split(iv, factor=amount)
                else:
                    stage.split(iv, nparts=amount)
            elif prim == "fuse" and len(leaves) >= 2:
                pos = data.draw(st.integers(0, len(leaves) - 2))
                stage.fuse(leaves[pos], leaves[pos + 1])
            elif prim == "reorder" and leaves:
                stage.reorder(*data.draw(st.permutations(leaves)))
            elif prim in ("vectorize", "unroll", "parallel") and leaves:
                innermost = data.draw(st.booleans())
                iv = leaves[-1] if innermost else data.draw(st.sampled_from(leaves))
                getattr(stage, prim)(iv)
            elif prim == "compute_at":
                targets = [x for x in stages if x.leaf_iter_vars and x is not stage]
                if targets:
                    target = data.draw(st.sampled_from(targets))
                    stage.compute_at(target, data.draw(st.sampled_from(target.leaf_iter_vars)))
            elif prim in ("compute_inline", "compute_root"):
                getattr(stage, prim)()
            elif prim == "cache_read":
                readers = [x for x in stages if any(t.op is stage.op for t in x.op.input_tensors)]
                inputs = list(stage.op.input_tensors)
                if inputs:
                    t = data.draw(st.sampled_from(inputs))
                    s.cache_read(t, "local", [stage])
                elif readers:
                    s.cache_read(stage.op.output(0), "local", readers)
            elif prim == "cache_write":
                s.cache_write(stage.op.output(0), "local")
        except te.ScheduleError:
            assert _state(s) == before, "a failed primitive changed the schedule"
            assert len(s.trace) == trace_len
            event(f"rejected {prim}")


@given(
    kind=st.sampled_from(sorted(BUILDERS)),
    shape=st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 5)),
    steps=st.integers(1, 8),
    data=st.data(),
)
def test_random_schedules_never_change_results(
    kind: str, shape: tuple[int, int, int], steps: int, data: st.DataObject
) -> None:
    s, args, ref = BUILDERS[kind](*shape)
    apply_random(s, data, steps)
    try:
        func = te.lower(s, args, "k")
    except te.ScheduleError as err:
        event(f"lowering rejected: {err.message.split(':')[0]}")
        return
    event("lowered")
    rng = np.random.default_rng(0)
    inputs = [
        rng.random([int(d.value) for d in t.shape], dtype=np.float32)
        for t in args
        if isinstance(t.op, te.PlaceholderOp)
    ]
    out_t = args[-1]
    out = np.zeros([int(d.value) for d in out_t.shape], np.float32)
    run_primfunc(func, *inputs, out)
    with np.errstate(all="ignore"):  # numpy may report a stale flag left by the evaluator
        want = ref(*inputs)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)

    fresh, args2, _ = BUILDERS[kind](*shape)
    te.replay(te.Trace.parse(str(s.trace)), fresh)
    assert astext(te.lower(fresh, args2, "k")) == astext(func)
