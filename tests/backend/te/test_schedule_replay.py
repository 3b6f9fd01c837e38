"""Every default schedule is a trace: it prints, parses back, replays on a fresh schedule of
the same computes and gives the same loop IR (the anchor rewrites of dense, batch_matmul,
conv2d's forms, conv2d_NCHWc, Winograd, depthwise, the pools and int8 are recorded as
`replace_compute` steps; weight folding as `make_input` steps)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import pytest
from relay.backend import te
from relay.backend.lower.fold_constants import fold_constant_stages
from relay.backend.lower.lower_func import schedule_outputs
from relay.backend.lower.schedules.int8 import force_plan
from relay.backend.target import Target
from relay.backend.te.errors import ScheduleError
from relay.backend.te.rewrite import register_rewrite
from relay.backend.te.tensor import PlaceholderOp, Tensor
from relay.backend.tir.printer import astext
from relay.testing.compute_check import apply_compute

Case = tuple[list[Tensor], list[Tensor]]


def _ph(shape: tuple[int, ...], name: str, dtype: str = "float32") -> Tensor:
    return te.placeholder(shape, dtype, name)


def _bias_relu(out: Tensor, channels: int, axis: int = 1) -> tuple[Tensor, Tensor]:
    b = _ph((channels,), "b")
    biased, _ = apply_compute("nn.bias_add", [out, b], axis=axis)
    return apply_compute("nn.relu", [biased])[0], b


def dense(m: int, n: int, k: int, tail: bool = True) -> Case:
    x, w = _ph((m, k), "x"), _ph((n, k), "w")
    out, _ = apply_compute("nn.dense", [x, w], units=n)
    if not tail:
        return [x, w], [out]
    out, b = _bias_relu(out, n)
    return [x, w, b], [out]


def matmul(m: int, n: int, k: int) -> Case:
    x, w = _ph((m, k), "x"), _ph((k, n), "w")
    out, _ = apply_compute("nn.matmul", [x, w], units=n)
    return [x, w], [out]


def dense_pack(m: int, n: int, k: int, block: int) -> Case:
    x, w = _ph((m, k), "x"), _ph((n // block, k, block), "w")
    out, _ = apply_compute("nn.contrib_dense_pack", [x, w], units=n, weight_layout=f"NC{block}n")
    return [x, w], [out]


def batch_matmul(b: int, m: int, n: int, k: int, transpose_b: bool = True) -> Case:
    x = _ph((b, m, k), "a")
    y = _ph((b, n, k) if transpose_b else (b, k, n), "b")
    out, _ = apply_compute("nn.batch_matmul", [x, y], transpose_b=transpose_b)
    return [x, y], [out]


def conv2d(
    n: int, c: int, h: int, w: int, o: int, k: int = 3, stride: int = 1, pad: int = 1,
    groups: int = 1, layout: str = "NCHW", dtype: str = "float32", out_dtype: str = "",
) -> Case:  # fmt: skip
    if layout == "NCHW":
        xs, ws, kl = (n, c, h, w), (o, c // groups, k, k), "OIHW"
    else:
        xs, ws, kl = (n, h, w, c), (k, k, c // groups, o), "HWIO"
    x, wt = _ph(xs, "x", dtype), _ph(ws, "w", dtype)
    out, _ = apply_compute(
        "nn.conv2d", [x, wt], strides=[stride, stride], padding=[pad, pad], groups=groups,
        channels=o, kernel_size=[k, k], data_layout=layout, kernel_layout=kl,
        out_dtype=out_dtype,
    )  # fmt: skip
    if dtype != "float32":
        return [x, wt], [out]
    out, b = _bias_relu(out, o, 1 if layout == "NCHW" else 3)
    return [x, wt, b], [out]


def conv2d_nchwc(
    c_outer: int, hw: int, bi: int, o_outer: int, bo: int, depthwise: bool = False,
    stride: int = 1,
) -> Case:  # fmt: skip
    if depthwise:
        bo, o_outer = bi, c_outer
        ws, op, kl, groups = (c_outer, 1, 3, 3, 1, bi), "nn.contrib_depthwise_conv2d_NCHWc", \
            f"OIHW1i{bi}o", c_outer * bi  # fmt: skip
    else:
        ws, op, kl, groups = (o_outer, c_outer, 3, 3, bi, bo), "nn.contrib_conv2d_NCHWc", \
            f"OIHW{bi}i{bo}o", 1  # fmt: skip
    x, wt = _ph((1, c_outer, hw, hw, bi), "x"), _ph(ws, "w")
    out, _ = apply_compute(
        op, [x, wt], strides=(stride, stride), padding=1, groups=groups, channels=o_outer * bo,
        kernel_size=(3, 3), data_layout=f"NCHW{bi}c", kernel_layout=kl,
        out_layout=f"NCHW{bo}c",
    )  # fmt: skip
    b = _ph((o_outer, 1, 1, bo), "b")
    out, _ = apply_compute("add", [out, b])
    out, _ = apply_compute("nn.relu", [out])
    return [x, wt, b], [out]


def winograd(n: int, c: int, h: int, w: int, k: int, tile: int) -> Case:
    wt = _ph((k, c, 3, 3), "w")
    u_shape, _ = apply_compute("nn.contrib_conv2d_winograd_weight_transform", [wt],
                               tile_size=tile)  # fmt: skip
    x, u = _ph((n, c, h, w), "x"), _ph(tuple(int(d.value) for d in u_shape.shape), "u")
    out, _ = apply_compute(
        "nn.contrib_conv2d_winograd_without_weight_transform", [x, u], tile_size=tile,
        padding=[1, 1], channels=k, kernel_size=[3, 3],
    )  # fmt: skip
    out, b = _bias_relu(out, k)
    return [x, u, b], [out]


def weight_transform(k: int, c: int, tile: int) -> Case:
    wt = _ph((k, c, 3, 3), "w")
    out, _ = apply_compute("nn.contrib_conv2d_winograd_weight_transform", [wt], tile_size=tile)
    return [wt], [out]


def pool(kind: str, shape: tuple[int, ...], k: int = 3, stride: int = 2, pad: int = 1,
         relu: bool = True) -> Case:  # fmt: skip
    x = _ph(shape, "x")
    out, _ = apply_compute(
        f"nn.{kind}_pool2d", [x], pool_size=[k, k], strides=[stride, stride],
        padding=[pad, pad],
    )  # fmt: skip
    if relu:
        out, _ = apply_compute("nn.relu", [out])
    return [x], [out]


def unary(op: str, shape: tuple[int, ...], **attrs: object) -> Case:
    x = _ph(shape, "x")
    out, _ = apply_compute(op, [x], **attrs)
    return [x], [out]


def int8_dense(m: int, n: int, k: int, dtype: str = "int8") -> Case:
    x, w = _ph((m, k), "x", dtype), _ph((n, k), "w", "int8")
    out, _ = apply_compute("nn.dense", [x, w], units=n, out_dtype="int32")
    return [x, w], [out]


PLAIN: dict[str, Callable[[], Case]] = {
    "dense_gemm_tail": lambda: dense(37, 50, 23),
    "dense_gemm": lambda: dense(64, 48, 32, tail=False),
    "dense_gemv": lambda: dense(2, 70, 45),
    "dense_narrow": lambda: dense(9, 5, 30),
    "matmul": lambda: matmul(16, 40, 24),
    "dense_pack_fits": lambda: dense_pack(12, 32, 20, 16),
    "dense_pack_repack": lambda: dense_pack(12, 36, 20, 4),
    "batch_matmul": lambda: batch_matmul(3, 16, 40, 24),
    "batch_matmul_nt": lambda: batch_matmul(2, 9, 20, 13, transpose_b=False),
    "batch_matmul_gemv": lambda: batch_matmul(2, 1, 30, 17),
    "conv2d_blocked": lambda: conv2d(1, 16, 14, 14, 32),
    "conv2d_flat": lambda: conv2d(1, 3, 16, 16, 8),
    "conv2d_flat_strided": lambda: conv2d(1, 32, 14, 14, 64, stride=2),
    "conv2d_width_grouped": lambda: conv2d(1, 4, 10, 40, 6, groups=2),
    "depthwise_width": lambda: conv2d(1, 8, 12, 40, 8, groups=8),
    "depthwise_flat": lambda: conv2d(1, 8, 7, 7, 8, groups=8),
    "depthwise_strided": lambda: conv2d(1, 8, 14, 14, 8, groups=8, stride=2),
    "conv2d_nhwc": lambda: conv2d(1, 8, 9, 9, 20, layout="NHWC"),
    "conv2d_nchwc": lambda: conv2d_nchwc(2, 9, 8, 3, 8),
    "conv2d_nchwc_strided": lambda: conv2d_nchwc(4, 14, 8, 2, 8, stride=2),
    "depthwise_nchwc": lambda: conv2d_nchwc(2, 10, 8, 2, 8, depthwise=True),
    "winograd": lambda: winograd(1, 5, 7, 9, 11, 4),
    "winograd_wide": lambda: winograd(1, 16, 14, 14, 32, 4),
    "weight_transform": lambda: weight_transform(24, 10, 4),
    "max_pool": lambda: pool("max", (1, 8, 17, 17)),
    "avg_pool": lambda: pool("avg", (1, 8, 17, 17)),
    "avg_pool_no_tail": lambda: pool("avg", (2, 3, 12, 12), k=2, pad=0, relu=False),
    "global_pool": lambda: unary("nn.global_avg_pool2d", (1, 16, 7, 7)),
    "softmax": lambda: unary("nn.softmax", (6, 100)),
    "sum": lambda: unary("sum", (8, 33, 10), axis=[1]),
    "relu": lambda: unary("nn.relu", (5, 70)),
}

INT8: dict[str, tuple[str, Callable[[], Case]]] = {
    "int8_dense_avx2": ("avx2", lambda: int8_dense(13, 40, 37)),
    "int8_dense_vnni": ("avx512_vnni", lambda: int8_dense(3, 20, 9)),
    "int8_dense_uint8": ("avx_vnni", lambda: int8_dense(7, 33, 16, "uint8")),
    "int8_conv_avx2": ("avx2", lambda: conv2d(1, 5, 9, 9, 12, dtype="int8", out_dtype="int32")),
    "int8_conv_vnni": (
        "avx512_vnni",
        lambda: conv2d(1, 8, 6, 7, 20, dtype="int8", out_dtype="int32"),
    ),
    "int8_conv_strided": (
        "avx2",
        lambda: conv2d(1, 5, 9, 9, 12, stride=2, dtype="int8", out_dtype="int32"),
    ),
    "int8_depthwise": (
        "avx2",
        lambda: conv2d(1, 8, 12, 13, 8, groups=8, dtype="int8", out_dtype="int32"),
    ),
}

TARGETS = {"t1": Target.host(1), "t2": Target.host(2)}


@contextlib.contextmanager
def _plan_for(name: str) -> Iterator[None]:
    if name in INT8:
        with force_plan(INT8[name][0]):
            yield
    else:
        yield


def _case(name: str) -> Case:
    return INT8[name][1]() if name in INT8 else PLAIN[name]()


def lowered_text(s: te.Schedule, inputs: list[Tensor], outputs: list[Tensor]) -> str:
    """The loop IR of `s` with the kernel's inputs (placeholders the schedule made by folding
    included, by stage order) and outputs as parameters."""
    made = [
        st.op.output(0)
        for st in s.stages
        if isinstance(st.op, PlaceholderOp) and all(st.op is not t.op for t in inputs)
    ]
    args = [s.tensor(t) for t in inputs if _known(s, t)] + made
    args += [s.tensor(t) for t in outputs]
    return astext(te.lower(s, args, "kernel"))


def _known(s: te.Schedule, t: Tensor) -> bool:
    try:
        s[t]
    except ScheduleError:
        return False
    return True


def scheduled(name: str, target: Target) -> tuple[te.Schedule, list[Tensor], list[Tensor]]:
    """The default schedule of case `name` (its inputs, outputs)."""
    inputs, outputs = _case(name)
    with _plan_for(name):
        s, _ = schedule_outputs(outputs, target)
    return s, inputs, outputs


ALL = [*PLAIN, *INT8]

FOLDED = [
    "dense_gemm_tail",
    "dense_pack_repack",
    "conv2d_blocked",
    "int8_dense_vnni",
    "int8_conv_avx2",
]
"""Cases whose weight (input 1) is a constant: their packed weights fold into inputs."""


def folded(name: str, target: Target) -> tuple[te.Schedule, list[Tensor], list[Tensor]]:
    """The default schedule of case `name` with its weight-only stages folded."""
    s, inputs, outputs = scheduled(name, target)
    assert fold_constant_stages(s, inputs, (), {1}) is not None
    return s, inputs, outputs


NO_REWRITE = {"weight_transform", "global_pool", "softmax", "sum", "relu"}
"""Cases whose default schedule keeps the operator's own computes."""


def _replayed(trace: te.Trace, outputs: list[Tensor]) -> te.Schedule:
    fresh = te.create_schedule([t.op for t in outputs])
    return te.replay(trace, fresh)


@pytest.mark.parametrize("target", TARGETS.values(), ids=TARGETS.keys())
@pytest.mark.parametrize("name", ALL)
def test_default_schedule_is_a_replayable_trace(name: str, target: Target) -> None:
    s, inputs, outputs = scheduled(name, target)
    text = str(s.trace)
    assert ("replace_compute(" in text) == (name not in NO_REWRITE)
    parsed = te.Trace.parse(text)
    assert parsed == s.trace
    assert te.Trace.from_json(s.trace.to_json()) == s.trace
    want = lowered_text(s, inputs, outputs)
    # on a fresh schedule of the same computes (outside any forced int8 plan: the trace
    # alone says what to build)
    again = _replayed(parsed, outputs)
    assert again.trace == s.trace
    assert lowered_text(again, inputs, outputs) == want
    # on a fresh copy of the computation, as a tuner rebuilds it from the model
    inputs2, outputs2 = _case(name)
    assert lowered_text(_replayed(parsed, outputs2), inputs2, outputs2) == want


@pytest.mark.parametrize("name", FOLDED)
def test_folded_kernel_is_a_replayable_trace(name: str) -> None:
    s, inputs, outputs = folded(name, TARGETS["t2"])
    text = str(s.trace)
    assert "make_input(" in text
    again = _replayed(te.Trace.parse(text), outputs)
    assert [st.name for st in again.stages] == [st.name for st in s.stages]
    assert lowered_text(again, inputs, outputs) == lowered_text(s, inputs, outputs)


# ------------------------------------------------------------------ the primitives alone


def _product():
    a = _ph((6, 5), "a")
    b = te.compute((6, 5), lambda i, j: a[i, j] + 1.0, name="b")
    c = te.compute((6, 5), lambda i, j: b[i, j] * 2.0, name="c")
    return a, b, c


def _double(op: te.Operation, times: int, label: str = "", flags: tuple = ()) -> dict:
    """A test rewrite: the stage computes its own value plus `times` (a fresh copy read
    through a view)."""
    value = op.output(0)
    (src,) = op.input_tensors
    inner = te.compute(value.shape, lambda i, j: src[i, j] + float(times),
                       name=f"{op.name}_copy{label}")  # fmt: skip
    return {"view": te.compute(value.shape, lambda i, j: inner[i, j], name=op.name),
            "inner": inner}  # fmt: skip


register_rewrite("test.double")(_double)
register_rewrite("test.wrong_shape")(
    lambda op: {"view": te.compute((2,), lambda i: op.output(0)[i, 0], name="x")}
)


def test_replace_compute_records_its_parameters() -> None:
    a, b, c = _product()
    s = te.create_schedule(c)
    parts = s.replace_compute(b, "test.double", times=3, label="_x", flags=(True, 2, "k"))
    assert s[b].op is parts["view"].op and s["b_copy_x"].op is parts["inner"].op
    step = 'replace_compute("b", "test.double", flags=[True, 2, "k"], label="_x", times=3)'
    assert str(s.trace) == step
    assert te.Trace.parse(step) == s.trace
    assert te.Trace.from_json(s.trace.to_json()) == s.trace
    again = te.replay(step, te.create_schedule(c))
    assert [st.name for st in again.stages] == ["a", "b_copy_x", "b", "c"]
    assert astext(te.lower(again, [a, again.tensor(c)])) == astext(te.lower(s, [a, s.tensor(c)]))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s, b: s.replace_compute(b, "test.nothing"), "unknown compute rewrite"),
        (lambda s, b: s.replace_compute(b, "test.double", times=1.5), "parameter `times`"),
        (lambda s, b: s.replace_compute(b, "test.wrong_shape"), r"made float32\[2\]"),
        (lambda s, b: s.replace_compute("a", "test.double", times=1), "one-output compute"),
    ],
)
def test_replace_compute_misuse_is_a_schedule_error(call, message) -> None:
    _, b, c = _product()
    s = te.create_schedule(c)
    with pytest.raises(ScheduleError, match=message):
        call(s, b)
    assert len(s.trace) == 0


def test_replace_compute_after_splitting_is_an_error() -> None:
    _, b, c = _product()
    s = te.create_schedule(c)
    s[b].split(s[b].op.axis[0], factor=2)
    with pytest.raises(ScheduleError, match="replace its computation first"):
        s.replace_compute(b, "test.double", times=1)


def test_trace_rejects_a_float_parameter() -> None:
    with pytest.raises(ScheduleError, match="trace line 1"):
        te.Trace.parse('replace_compute("b", "test.double", times=1.5)')


def test_make_input_drops_the_stages_only_it_read() -> None:
    _, b, c = _product()
    s = te.create_schedule(c)
    value = s.make_input(b, "b_value")
    assert isinstance(value.op, PlaceholderOp) and s[b].op is value.op
    assert [st.name for st in s.stages] == ["b", "c"]  # `a` is read by nobody now
    assert str(s.trace) == 'make_input("b", "b_value")'
    again = te.replay(str(s.trace), te.create_schedule(c))
    args = [again["b"].op.output(0), again.tensor(c)]
    assert astext(te.lower(again, args)) == astext(te.lower(s, [value, s.tensor(c)]))
    with pytest.raises(ScheduleError, match="output"):
        s.make_input(c, "c_value")
