"""The Winograd template's config space: its default point is the default schedule (the
same loop IR), the knobs change the schedule, every sampled config computes what the
interpreter computes (within the Winograd tolerance), and a tuned config's trace replays."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend import te
from relay.backend.lower.computes.winograd import WINOGRAD_RTOL
from relay.backend.lower.lower_func import lower_to_te, schedule_outputs
from relay.backend.target import Target
from relay.backend.tir.printer import astext
from relay.backend.tune.measure import kernel_inputs, one_kernel_model, reference_outputs

from .tune_models import only_task, winograd_model

ONE, TWO = Target.host(num_threads=1), Target.host(num_threads=2)


@pytest.mark.parametrize("target", [ONE, TWO], ids=["t1", "t2"])
@pytest.mark.parametrize(
    "shape",
    [(5, 11, 7, 9, 4), (3, 5, 6, 62, 4), (64, 64, 56, 56, 4), (8, 12, 7, 7, 2)],
    ids=["odd", "wide", "resnet56", "tile2"],
)
def test_default_config_gives_the_default_schedule(shape, target):
    task = only_task(*winograd_model(*shape), target=target)
    names = {k.name for k in task.space.knobs}
    assert {"rows", "vectors", "k_inner", "input_vector", "output_vector"} <= names
    assert ("input_parallel" in names) == (target.num_threads > 1)
    default = task.space.default()
    assert astext(task.lower(default)) == astext(task.lower(None))


def test_every_knob_changes_the_schedule():
    task = only_task(*winograd_model(3, 5, 6, 62, 4), target=TWO)
    default = task.space.default()
    want = astext(task.lower(default))
    for knob in task.space.knobs:
        other = next(c for c in knob.choices if c != default.get(knob.name))
        changed = task.space.normalize(type(default).from_json({**default.as_dict(),
                                                                knob.name: other}))  # fmt: skip
        assert changed is not None
        assert astext(task.lower(changed)) != want, knob.name


def test_fallback_convolution_has_no_knobs():
    # a 5x5 output with tile 4 but stride 2 runs the direct fallback: one point
    op = "nn.contrib_conv2d_winograd_without_weight_transform"
    import relay

    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 9, 9), float32], %u: Tensor[(6, 6, 6, 4), float32]) {{
  {op}(%x, %u, tile_size=4, strides=[2, 2], padding=[1, 1, 1, 1], channels=6, kernel_size=[3, 3])
}}"""
    u = np.ones((6, 6, 6, 4), "float32")
    task = only_task(relay.parse(text), {"u": u}, target=TWO)
    assert task.space.size == 1


def _agrees_with_interpreter(task, config, tile):
    inputs = kernel_inputs(task, seed=5)
    model, args = one_kernel_model(task, config, inputs)
    got = model.run(*args)
    (want,) = reference_outputs(task, inputs)
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=0, atol=WINOGRAD_RTOL[tile] * scale)


@settings(max_examples=5, deadline=None)
@given(
    shape=st.sampled_from(
        [(5, 11, 7, 9, 4), (3, 5, 6, 62, 4), (6, 7, 5, 13, 2), (4, 9, 10, 10, 4)]
    ),
    threads=st.sampled_from([1, 2]),
    pick=st.integers(0, 10**9),
)
def test_random_configs_agree_with_the_interpreter(shape, threads, pick):
    task = only_task(*winograd_model(*shape), target=Target.host(num_threads=threads))
    assert task.space.size > 1
    _agrees_with_interpreter(task, task.space.config_at(pick % task.space.size), shape[-1])


def _lowered(s, graph) -> str:
    return astext(te.lower(s, [s.tensor(t) for t in graph.args], "kernel"))


def test_a_tuned_config_is_a_replayable_trace():
    task = only_task(*winograd_model(3, 5, 6, 62, 4), target=TWO)
    config = task.space.config_at(task.space.size - 1)
    assert config != task.space.default()
    graph = lower_to_te(task.fn)
    s, _ = schedule_outputs(graph.outputs, TWO, config.as_dict())
    text = str(s.trace)
    assert "winograd_gemm" in text
    parsed = te.Trace.parse(text)
    assert parsed == s.trace
    # replayed on a fresh copy of the computation, as the build applies a tuning record
    fresh = lower_to_te(task.fn)
    again = te.replay(parsed, te.create_schedule([t.op for t in fresh.outputs]))
    assert _lowered(again, fresh) == _lowered(s, graph)
    plain = lower_to_te(task.fn)
    assert _lowered(schedule_outputs(plain.outputs, TWO)[0], plain) != _lowered(s, graph)


@pytest.mark.parametrize(("width", "rolled"), [(9, False), (62, True)])
def test_long_rows_keep_the_output_transform_loops_rolled(width, rolled):
    # 9 columns: 3 tiles of 4 a row, LLVM unrolls the output transform; 62: 16 tiles, it
    # may not (`pragma no_unroll` on Z's and O's loops over tiles and rows)
    task = only_task(*winograd_model(3, 5, 6, width, 4), target=TWO)
    assert task.space.default().get("output_unroll") is not rolled
    assert ("# pragma_no_unroll" in astext(task.lower(None))) is rolled
