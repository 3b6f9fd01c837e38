"""Config spaces: the default config is the default schedule (same TIR), the space's
indexing, and every sampled config computes what the interpreter computes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend.target import Target
from relay.backend.tir.printer import astext
from relay.backend.tune.measure import kernel_inputs, one_kernel_model, reference_outputs
from relay.backend.tune.space import EMPTY, Config, ConfigSpace, Knob

from .tune_models import conv_model, dense_model, only_task

TWO_THREADS = Target.host(num_threads=2)


def test_default_config_gives_the_default_schedule_dense():
    task = only_task(*dense_model(), target=TWO_THREADS)
    assert task.space.size > 1
    default = astext(task.lower(task.space.default()))
    assert default == astext(task.lower(None))
    other = next(
        c for i in range(task.space.size) if (c := task.space.config_at(i)) != task.space.default()
    )
    assert astext(task.lower(other)) != default  # the knobs do change the schedule


def test_default_config_gives_the_default_schedule_nchwc():
    task = only_task(*conv_model(), target=TWO_THREADS)
    assert {k.name for k in task.space.knobs} == {"ocv", "owb", "icb"}
    assert astext(task.lower(task.space.default())) == astext(task.lower(None))


def test_kernels_without_a_template_have_one_point():
    # batch 1: the GEMV form has no knobs
    task = only_task(*dense_model(m=1, n=21, k=19))
    assert task.space.size == 1
    assert task.space.default() == Config(())
    assert astext(task.lower(task.space.default())) == astext(task.lower(None))
    assert EMPTY.size == 1


def test_index_and_neighbors():
    space = ConfigSpace([Knob("a", (1, 2, 3)), Knob("b", (True, False))], [2, False])
    assert space.size == 6
    assert space.default().as_dict() == {"a": 2, "b": False}
    configs = [space.config_at(i) for i in range(space.size)]
    assert len(set(configs)) == 6
    assert [space.index(c) for c in configs] == list(range(6))
    rng = np.random.default_rng(0)
    near = space.neighbors(space.default(), rng, 10)
    assert len(near) == 3  # two other values of a, one of b
    for c in near:
        diff = [k for k in ("a", "b") if c.get(k) != space.default().get(k)]
        assert len(diff) == 1
    # a log stores knobs sorted: normalize restores the space's order
    stored = Config.from_json({"b": True, "a": 3})
    assert not space.contains(stored)
    assert space.normalize(stored) == space.config_at(space.index(Config((("a", 3), ("b", True)))))
    assert space.normalize(Config.from_json({"a": 9, "b": True})) is None
    with pytest.raises(ValueError):
        ConfigSpace([Knob("a", (1, 2))], [5])


def _agrees_with_interpreter(task, config):
    inputs = kernel_inputs(task, seed=3)
    model, args = one_kernel_model(task, config, inputs)
    got = model.run(*args)
    (want,) = reference_outputs(task, inputs)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(want).max()))


@settings(max_examples=6)
@given(
    m=st.sampled_from([5, 7, 13]),
    n=st.sampled_from([9, 17, 27]),
    k=st.sampled_from([3, 11, 19]),
    pick=st.integers(0, 10**9),
)
def test_random_dense_configs_agree_with_the_interpreter(m, n, k, pick):
    task = only_task(*dense_model(m, n, k), target=TWO_THREADS)
    assert task.space.size > 1
    _agrees_with_interpreter(task, task.space.config_at(pick % task.space.size))


@settings(max_examples=6)
@given(
    ci=st.sampled_from([1, 3]),
    oc=st.sampled_from([3, 5]),
    w=st.sampled_from([5, 7]),
    pick=st.integers(0, 10**9),
)
def test_random_nchwc_configs_agree_with_the_interpreter(ci, oc, w, pick):
    task = only_task(*conv_model(ci, oc, 3, w), target=TWO_THREADS)
    assert task.space.size > 1
    _agrees_with_interpreter(task, task.space.config_at(pick % task.space.size))
