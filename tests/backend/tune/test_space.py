"""Config spaces: the default config is the default schedule (same TIR), the space's
indexing, and every sampled config computes what the interpreter computes."""

from __future__ import annotations

import numpy as np
import pytest
import relay
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend.target import Target
from relay.backend.tir.printer import astext
from relay.backend.tune.measure import kernel_inputs, one_kernel_model, reference_outputs
from relay.backend.tune.space import EMPTY, Config, ConfigSpace, Knob

from .tune_models import (
    conv_model,
    dense_model,
    depthwise_model,
    int8_conv_model,
    int8_dense_model,
    only_task,
)

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


@pytest.mark.parametrize("stride", [1, 2])
def test_default_config_gives_the_default_schedule_depthwise(stride):
    task = only_task(*depthwise_model(stride=stride), target=TWO_THREADS)
    assert {k.name for k in task.space.knobs} == {"by_rows", "owb"}
    default = astext(task.lower(task.space.default()))
    assert default == astext(task.lower(None))
    flipped = task.space.default().as_dict()
    flipped["by_rows"] = not flipped["by_rows"]
    other = task.space.normalize(Config.from_json(flipped))
    assert other is not None and astext(task.lower(other)) != default


@pytest.mark.parametrize(
    ("model", "names"),
    [
        (int8_dense_model(), {"rows", "vectors"}),
        (int8_conv_model(w=15, stride=1), {"channels", "vectors"}),
        (int8_conv_model(stride=2), {"columns", "vectors"}),
    ],
)
def test_default_config_gives_the_default_schedule_int8(model, names):
    task = only_task(*model, target=TWO_THREADS)
    assert {k.name for k in task.space.knobs} == names
    default = astext(task.lower(task.space.default()))
    assert default == astext(task.lower(None))
    assert "tensor.x86." in default  # the tensorized nest


def test_kernels_without_a_template_have_one_point():  # pools: no knobs yet
    mod = relay.parse(
        """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 9, 9), float32]) { nn.max_pool2d(%x, pool_size=[3, 3]) }"""
    )
    task = only_task(mod, {}, target=TWO_THREADS)
    assert task.space.size == 1
    assert task.space.default() == Config(())
    assert astext(task.lower(task.space.default())) == astext(task.lower(None))
    assert EMPTY.size == 1


@pytest.mark.parametrize(("m", "n", "k"), [(1, 21, 19), (3, 70, 33), (1, 5, 40)])
def test_default_config_gives_the_default_schedule_gemv(m, n, k):
    task = only_task(*dense_model(m, n, k), target=TWO_THREADS)
    names = {kn.name for kn in task.space.knobs}
    assert names == {"columns", "tile", "parallel"} - ({"columns"} if n < 8 else set())
    default = astext(task.lower(task.space.default()))
    assert default == astext(task.lower(None))
    assert any(
        astext(task.lower(task.space.config_at(i))) != default for i in range(task.space.size)
    )
    one_thread = only_task(*dense_model(m, n, k), target=Target.host(num_threads=1))
    assert "parallel" not in {kn.name for kn in one_thread.space.knobs}


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


@settings(max_examples=6)
@given(
    c=st.sampled_from([1, 3]),
    h=st.sampled_from([5, 7]),
    w=st.sampled_from([5, 9, 13]),
    stride=st.sampled_from([1, 2]),
    pick=st.integers(0, 10**9),
)
def test_random_depthwise_configs_agree_with_the_interpreter(c, h, w, stride, pick):
    task = only_task(*depthwise_model(c, h, w, stride=stride), target=TWO_THREADS)
    assert task.space.size > 1
    _agrees_with_interpreter(task, task.space.config_at(pick % task.space.size))


@settings(max_examples=6)
@given(
    m=st.sampled_from([1, 2, 4]),
    n=st.sampled_from([5, 21, 70]),
    k=st.sampled_from([7, 19, 67]),
    pick=st.integers(0, 10**9),
)
def test_random_gemv_configs_agree_with_the_interpreter(m, n, k, pick):
    task = only_task(*dense_model(m, n, k), target=TWO_THREADS)
    assert task.space.size > 1
    _agrees_with_interpreter(task, task.space.config_at(pick % task.space.size))


@settings(max_examples=6)
@given(
    m=st.sampled_from([1, 5, 13]),
    n=st.sampled_from([7, 21, 40]),
    k=st.sampled_from([3, 19, 33]),
    pick=st.integers(0, 10**9),
)
def test_random_int8_dense_configs_agree_with_the_interpreter(m, n, k, pick):
    task = only_task(*int8_dense_model(m, n, k), target=TWO_THREADS)
    _agrees_with_interpreter(task, task.space.config_at(pick % task.space.size))


@settings(max_examples=6)
@given(
    c=st.sampled_from([1, 3, 5]),
    oc=st.sampled_from([3, 11]),
    w=st.sampled_from([5, 9, 13]),
    stride=st.sampled_from([1, 2]),
    pick=st.integers(0, 10**9),
)
def test_random_int8_conv_configs_agree_with_the_interpreter(c, oc, w, stride, pick):
    task = only_task(*int8_conv_model(c, oc, 7, w, stride), target=TWO_THREADS)
    assert task.space.size > 1
    _agrees_with_interpreter(task, task.space.config_at(pick % task.space.size))


def _row_model(body: str, rows: int, cols: int):
    """A one-kernel model of `body` over `%x: (rows, cols)` float32 (`%g`, `%b`: (cols,))."""
    mod = relay.parse(
        f"""#[version = "0.0.5"]
def @main(%x: Tensor[({rows}, {cols}), float32], %g: Tensor[({cols}), float32],
          %b: Tensor[({cols}), float32]) {{ {body} }}"""
    )
    return mod, {}


SOFTMAX = "nn.softmax(%x, axis=-1)"
LAYER_NORM = "nn.layer_norm(%x, %g, %b)"


@pytest.mark.parametrize(
    ("body", "names", "flip"),
    [
        (SOFTMAX, {"row_block", "interleave"}, {"interleave": 1}),
        (LAYER_NORM, {"row_block"}, {"row_block": 4}),
    ],
)
def test_default_config_gives_the_default_schedule_rows(body, names, flip):
    task = only_task(*_row_model(body, 16, 64), target=TWO_THREADS)
    assert {k.name for k in task.space.knobs} == names
    default = astext(task.lower(task.space.default()))
    assert default == astext(task.lower(None))
    other = task.space.normalize(Config.from_json({**task.space.default().as_dict(), **flip}))
    assert other is not None and astext(task.lower(other)) != default


@settings(max_examples=8)
@given(
    body=st.sampled_from([SOFTMAX, LAYER_NORM, "nn.log_softmax(%x, axis=-1)"]),
    rows=st.sampled_from([1, 6, 8, 12]),
    cols=st.sampled_from([9, 16, 40]),
    pick=st.integers(0, 10**9),
)
def test_random_row_configs_agree_with_the_interpreter(body, rows, cols, pick):
    task = only_task(*_row_model(body, rows, cols), target=TWO_THREADS)
    assert task.space.size > 1
    _agrees_with_interpreter(task, task.space.config_at(pick % task.space.size))
