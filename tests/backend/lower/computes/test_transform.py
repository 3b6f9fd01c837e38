"""Compute definitions of the transform family (lang/opdefs/transform.py) against the reference
implementations, evaluated with the vectorized TE evaluator."""

from __future__ import annotations

from functools import partial

import pytest
import relay.lang.opdefs.transform as family_module
from relay.backend.lower.computes import has_compute
from relay.lang.op import get_op
from relay.lang.types import TensorType
from relay.testing.compute_check import (
    RandomArrays,
    check_compute,
    declared_op_names,
    op_names_called_in,
)

ARRAYS = RandomArrays(5)
randf, randi = ARRAYS.uniform, ARRAYS.ints


# ------------------------------------------------------------------------------- transforms


verify = partial(check_compute, atol=1e-6)
"""`check_compute`, to an absolute 1e-6 for floats (the coverage test looks for its calls)."""


@pytest.mark.parametrize(
    ("shape", "newshape"),
    [((2, 3, 4), (6, 4)), ((2, 3, 4), (4, -1)), ((2, 3, 4), (0, -1)), ((2, 3, 4), (-1,)),
     ((6,), (2, 3)), ((2, 3, 4), (2, 4, 3)), ((2, 3, 4), (-3, 4)), ((2, 12), (0, -4, 3, -1)),
     ((1, 5), (5, 1, 1)), ((), (1, 1)), ((1,), ()), ((2, 3, 4), (-2,))],
)  # fmt: skip
def test_reshape(shape: tuple[int, ...], newshape: tuple[int, ...]) -> None:
    verify("reshape", [randf(*shape)], newshape=list(newshape))
    verify("reshape", [randi(*shape)], newshape=list(newshape))


def test_reshape_like() -> None:
    verify("reshape_like", [randf(2, 3, 4), randf(4, 6)])
    verify("reshape_like", [randi(2, 3, 4), randf(3, 12, 5)], lhs_begin=1, rhs_begin=1, rhs_end=2)


@pytest.mark.parametrize("axes", [None, [1, 0, 2], [2, 0, 1], [-1, 0, 1], [0, 1, 2]])
def test_transpose(axes: list[int] | None) -> None:
    verify("transpose", [randf(2, 3, 4)], axes=axes)
    verify("transpose", [randi(2, 3, 4, dtype="int8")], axes=axes)


@pytest.mark.parametrize(
    ("shape", "axis"), [((1, 3, 1, 4), None), ((1, 3, 1, 4), [0]), ((1, 3, 1, 4), [-2, 0]),
                        ((1,), None), ((2, 3), None)],
)  # fmt: skip
def test_squeeze(shape: tuple[int, ...], axis: list[int] | None) -> None:
    verify("squeeze", [randf(*shape)], axis=axis)
    verify("squeeze", [randi(*shape)], axis=axis)


@pytest.mark.parametrize(("axis", "num"), [(0, 1), (1, 2), (-1, 1), (3, 1), (2, 0), (-4, 3)])
def test_expand_dims(axis: int, num: int) -> None:
    verify("expand_dims", [randf(2, 3, 4)], axis=axis, num_newaxis=num)
    verify("expand_dims", [randi(2, 3, 4)], axis=axis, num_newaxis=num)


@pytest.mark.parametrize(
    ("shapes", "axis"),
    [([(2, 3), (2, 1), (2, 4)], 1), ([(1, 3), (2, 3)], 0), ([(2, 3)], -1),
     ([(3,)] * 7, 0), ([(2, 0), (2, 2), (2, 1)], 1), ([(1, 2, 2), (1, 2, 1)], -1)],
)  # fmt: skip
def test_concatenate(shapes: list[tuple[int, ...]], axis: int) -> None:
    verify("concatenate", [randf(*s) for s in shapes], tuple_arg=True, axis=axis)
    verify("concatenate", [randi(*s) for s in shapes], tuple_arg=True, axis=axis)


@pytest.mark.parametrize(("shape", "count", "axis"), [((2, 3), 3, 0), ((2, 3), 2, 2),
                                                      ((4,), 5, -1), ((), 3, 0), ((2, 3), 1, -2)])  # fmt: skip
def test_stack(shape: tuple[int, ...], count: int, axis: int) -> None:
    verify("stack", [randf(*shape) for _ in range(count)], tuple_arg=True, axis=axis)
    verify("stack", [randi(*shape) for _ in range(count)], tuple_arg=True, axis=axis)


@pytest.mark.parametrize(
    ("sections", "axis"), [(3, 1), (2, 0), ([1, 4], 1), ([2], -1), ([1, 3, 5], 1), (1, 0)]
)
def test_split(sections: int | list[int], axis: int) -> None:
    verify("split", [randf(4, 6)], indices_or_sections=sections, axis=axis)
    verify("split", [randi(4, 6)], indices_or_sections=sections, axis=axis)


@pytest.mark.parametrize(
    "kw",
    [dict(begin=[0, 1], end=[2, 4], strides=[1, 2]),
     dict(begin=[1], end=[-1], strides=[]),
     dict(begin=[-1, -1], end=[-5, -6], strides=[-1, -2]),
     dict(begin=[0, 0, 1], end=[10, 10, 3], strides=[1, 1, 1]),
     dict(begin=[1, 0], end=[2, -1], strides=[1], slice_mode="size"),
     dict(begin=[2], end=[5], strides=[2], axes=[2]),
     dict(begin=[3], end=[0], strides=[-1], axes=[0])],
)  # fmt: skip
def test_strided_slice(kw: dict) -> None:  # type: ignore[type-arg]
    kw = dict(kw)
    kw.setdefault("axes", None)
    verify("strided_slice", [randf(4, 5, 6)], **kw)
    verify("strided_slice", [randi(4, 5, 6)], **kw)


@pytest.mark.parametrize("axes", [None, [1], [0, -1]])
def test_slice_like(axes: list[int] | None) -> None:
    verify("slice_like", [randf(4, 5, 6), randf(2, 3, 4)], axes=axes)
    verify("slice_like", [randi(4, 5, 6), randi(2, 3, 4)], axes=axes)


@pytest.mark.parametrize(
    ("shape", "reps"), [((2, 3), (2, 1)), ((2, 3), (3,)), ((3,), (2, 2, 1)), ((1, 2), (3, 2))]
)
def test_tile(shape: tuple[int, ...], reps: tuple[int, ...]) -> None:
    verify("tile", [randf(*shape)], reps=list(reps))
    verify("tile", [randi(*shape)], reps=list(reps))


@pytest.mark.parametrize(("repeats", "axis"), [(2, 0), (3, 1), (1, -1), (2, None)])
def test_repeat(repeats: int, axis: int | None) -> None:
    verify("repeat", [randf(2, 3)], repeats=repeats, axis=axis)
    verify("repeat", [randi(2, 3)], repeats=repeats, axis=axis)


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_reverse(axis: int | None) -> None:
    verify("reverse", [randf(3, 4)], axis=axis)
    verify("reverse", [randi(3, 4)], axis=axis)


@pytest.mark.parametrize(("src", "dst"), [((3, 1), (2, 3, 4)), ((), (2, 2)), ((4,), (3, 4))])
def test_broadcast_to(src: tuple[int, ...], dst: tuple[int, ...]) -> None:
    verify("broadcast_to", [randf(*src)], shape=list(dst))
    verify("broadcast_to", [randi(*src)], shape=list(dst))
    verify("broadcast_to_like", [randf(*src), randf(*dst)])
    verify("broadcast_to_like", [randi(*src), randi(*dst)])


@pytest.mark.parametrize(
    ("src", "dst"), [((2, 3, 4), (3, 1)), ((2, 3), (2, 3)), ((4, 1, 5), (1, 5)), ((2, 3), ())]
)
def test_collapse_sum_like(src: tuple[int, ...], dst: tuple[int, ...]) -> None:
    verify("collapse_sum_like", [randf(*src), randf(*dst)])
    verify(
        "collapse_sum_like", [randi(*src, dtype="int8", lo=-100, hi=100), randi(*dst, dtype="int8")]
    )


@pytest.mark.parametrize(
    ("shape", "src", "dst"),
    [((1, 8, 2, 3), "NCHW", "NCHW4c"),
     ((1, 2, 2, 3, 4), "NCHW4c", "NCHW"), ((1, 8, 2, 3), "NCHW", "NHWC"),
     ((2, 2, 3, 8), "NHWC", "NCHW8c"), ((1, 2, 2, 3, 4), "NCHW4c", "NCHW2c"),
     ((1, 4, 2, 2, 4), "NCHW4c", "NCHW8c"), ((1, 4, 2, 3), "NCHW", "NCHW")],
)  # fmt: skip
def test_layout_transform(shape: tuple[int, ...], src: str, dst: str) -> None:
    verify("layout_transform", [randf(*shape)], src_layout=src, dst_layout=dst)
    verify("layout_transform", [randi(*shape)], src_layout=src, dst_layout=dst)


def test_layout_transform_pads_a_split_that_does_not_divide() -> None:
    # the type checker rejects this; the compute still pads with zeros like the reference
    x = randf(1, 6, 2, 3)
    out_type = TensorType((1, 2, 2, 3, 4), "float32")
    verify("layout_transform", [x], out_type=out_type, src_layout="NCHW", dst_layout="NCHW4c")
    y = randi(1, 3, 2, 2, 4)
    out_type = TensorType((1, 2, 2, 2, 8), "int32")
    verify("layout_transform", [y], out_type=out_type, src_layout="NCHW4c", dst_layout="NCHW8c")


@pytest.mark.parametrize("dtype", ["", "int32", "int64"])
@pytest.mark.parametrize("shape", [(2, 3, 4), (), (7,)])
def test_shape_of_and_ndarray_size(dtype: str, shape: tuple[int, ...]) -> None:
    verify("shape_of", [randf(*shape)], dtype=dtype)
    verify("ndarray_size", [randi(*shape)], dtype=dtype)


@pytest.mark.parametrize("indexing", ["ij", "xy"])
@pytest.mark.parametrize("sizes", [[3], [2, 3], [2, 3, 4], [None, 3]])
def test_meshgrid(indexing: str, sizes: list[int | None]) -> None:
    arrays = [randf() if s is None else randf(s) for s in sizes]
    verify("meshgrid", arrays, tuple_arg=True, indexing=indexing)
    verify("meshgrid", [a.astype("int32") for a in arrays], tuple_arg=True, indexing=indexing)


# ------------------------------------------------------------------------------- coverage


def test_every_transform_op_has_a_compute_and_a_test() -> None:
    names = declared_op_names(family_module)
    assert len(names) == 20
    assert sorted(n for n in names if not has_compute(get_op(n))) == []
    assert names - op_names_called_in(__file__, "verify") == set()
