"""The attribute rules of `lang/opdefs/semantics`, each on its own (plain values in and out)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from relay.lang.opdefs.semantics import (
    MAX_INDEX,
    RESIZE_METHODS,
    Copy,
    Infer,
    Merge,
    Part,
    ReshapeError,
    Rest,
    SemanticsError,
    highest,
    layout_letters,
    listed_axes,
    lowest,
    normalize_axes,
    normalize_axis,
    pad_pairs,
    parse_layout,
    reduce_axes,
    reshape_plan,
    reshape_shape,
    resize_method,
    slice_range,
    source_coordinate,
    spatial_positions,
    strided_slice_axes,
    strided_slice_ranges,
    winograd_g,
)

# ------------------------------------------------------------------------------- axes


def test_semantics_error_is_a_value_error():
    assert issubclass(SemanticsError, ValueError)
    assert issubclass(ReshapeError, SemanticsError)


@pytest.mark.parametrize(
    "axis, ndim, want", [(0, 3, 0), (2, 3, 2), (-1, 3, 2), (-3, 3, 0), (-1, 1, 0)]
)
def test_normalize_axis_counts_negative_axes_from_the_end(axis, ndim, want):
    assert normalize_axis(axis, ndim) == want


@pytest.mark.parametrize("axis", [3, -4, 100])
def test_normalize_axis_out_of_range(axis):
    with pytest.raises(SemanticsError, match=r"out of range for an input of rank 3 \(expected"):
        normalize_axis(axis, 3)


def test_normalize_axis_of_a_scalar_and_the_attribute_name():
    with pytest.raises(SemanticsError, match="axis 0 is invalid for a scalar input"):
        normalize_axis(0, 0)
    with pytest.raises(SemanticsError, match="batch_axis 5 is out of range"):
        normalize_axis(5, 2, "batch_axis")


def test_normalize_axis_with_extra_names_a_new_position():
    assert normalize_axis(3, 3, extra=1) == 3
    assert normalize_axis(-1, 3, extra=1) == 3
    assert normalize_axis(-4, 3, extra=1) == 0
    assert normalize_axis(0, 0, extra=1) == 0
    with pytest.raises(SemanticsError, match=r"expected -4 <= axis < 4"):
        normalize_axis(4, 3, extra=1)


def test_normalize_axes_keeps_the_order_and_rejects_repeats():
    assert normalize_axes([2, -3, 1], 3) == [2, 0, 1]
    with pytest.raises(SemanticsError, match=r"axis -1 is given twice \(as axis 2\)"):
        normalize_axes([2, -1], 3)


@given(st.integers(0, 6), st.data())
def test_normalize_axis_agrees_with_python_indexing(ndim, data):
    axis = data.draw(st.integers(-ndim, ndim - 1)) if ndim else 0
    if ndim == 0:
        with pytest.raises(SemanticsError):
            normalize_axis(axis, ndim)
        return
    assert list(range(ndim))[axis] == normalize_axis(axis, ndim)


@pytest.mark.parametrize(
    "axis, exclude, want",
    [
        (None, False, (0, 1, 2, 3)),
        ((), False, (0, 1, 2, 3)),
        ((), True, (0, 1, 2, 3)),  # empty means every axis, exclude or not (TVM)
        ((-1, 1), False, (1, 3)),
        ((-1, 1), True, (0, 2)),
        ((0, 1, 2, 3), True, ()),
        ((2,), False, (2,)),
    ],
)
def test_reduce_axes(axis, exclude, want):
    assert reduce_axes(4, axis, exclude) == want


def test_reduce_axes_errors():
    with pytest.raises(SemanticsError, match="out of range"):
        reduce_axes(2, (2,), False)
    with pytest.raises(SemanticsError, match="given twice"):
        reduce_axes(2, (1, -1), True)


# ----------------------------------------------------------------------------- reshape


@pytest.mark.parametrize(
    "ishape, newshape, want",
    [
        ((2, 3, 4), (0, -1), (2, 12)),
        ((2, 3, 4), (-1,), (24,)),
        ((2, 3, 4), (-2,), (2, 3, 4)),
        ((2, 3, 4), (0, -2), (2, 3, 4)),
        ((2, 3, 4), (-3, 4), (6, 4)),
        ((2, 3, 4), (2, -3), (2, 12)),
        ((2, 3, 4), (-3, -2), (6, 4)),
        ((2, 3, 4), (-4, 1, 2, -2), (1, 2, 3, 4)),
        ((2, 3, 4), (-4, -1, 2, -3), (1, 2, 12)),
        ((2, 3, 4), (-4, 2, -1, -2), (2, 1, 3, 4)),
        ((2, 3, 4), (-1, 0, 0), (2, 3, 4)),  # 0 copies by position, -1 fills in
        ((6, 4), (-4, 2, 3, -1), (2, 3, 4)),
        ((2, 3, 4), (4, -1, 2), (4, 3, 2)),
        ((0, 3), (0, 3), (0, 3)),
        ((0, 3), (0, -1), (0, 3)),  # the -1 does not share dims with the copied 0
    ],
)
def test_reshape_special_values(ishape, newshape, want):
    assert reshape_shape(ishape, newshape) == want
    assert np.zeros(ishape).reshape(want).shape == want


def test_reshape_allowzero_keeps_a_literal_zero():
    assert reshape_shape((0, 3), (3, 0), allowzero=True) == (3, 0)
    with pytest.raises(SemanticsError, match="elements"):
        reshape_shape((2, 3), (0, 6), allowzero=True)
    with pytest.raises(SemanticsError, match="-1 cannot be inferred next to a size 0"):
        reshape_shape((6,), (0, -1), allowzero=True)


def test_reshape_plan_says_where_each_dimension_comes_from():
    plan = reshape_plan(4, (0, -4, -1, 2, -3, 7, -1))
    assert plan.dims == (Copy(0), Rest(1, 2), Part(1, 2), Merge(2), 7, Infer())
    assert plan.used_in == {0, 1, 2, 3}
    assert plan.used_out == {0, 1, 2, 3}
    assert plan.infer_at == 5
    assert reshape_plan(2, (-2,)).dims == (Copy(0), Copy(1))


@pytest.mark.parametrize(
    "ishape, newshape, message",
    [
        ((6,), (-1, -1), "only one dimension can be -1"),
        ((6,), (-1, 0), "the 0 at position 1 copies input dimension 1"),
        ((6,), (-3,), "the -3 at position 0 merges input dimensions 0 and 1"),
        ((6,), (-4, 2), "must be followed by two sizes"),
        ((6,), (-4, -1, -1), "needs two positive sizes or one positive size and -1"),
        ((6,), (-4, 0, 6), "needs two positive sizes"),
        ((6,), (6, -4, 1, 1), "splits input dimension 1, but the input has 1 dimensions"),
        ((6,), (-5,), "-5 at position 0 is neither a size nor one of the special values"),
        ((5,), (-4, 2, -1), "input dimension 5 does not split into 2s"),
        ((2, 3, 4), (5, -1), "24 elements do not divide into blocks of 5"),
    ],
)
def test_reshape_errors_say_why(ishape, newshape, message):
    with pytest.raises(SemanticsError, match=message) as info:
        reshape_shape(ishape, newshape)
    assert str(info.value).startswith(
        f"cannot reshape the input of shape ({', '.join(map(str, ishape))}) "
        f"to newshape={list(newshape)}: "
    )


def test_reshape_error_counts_elements():
    with pytest.raises(SemanticsError) as info:
        reshape_shape((2, 3), (4, 2))
    assert str(info.value) == (
        "cannot reshape the input of shape (2, 3) (6 elements) to (4, 2) (8 elements)"
    )


def test_reshape_plan_errors_carry_the_reason_alone():
    with pytest.raises(ReshapeError) as info:
        reshape_plan(1, (-1, -1))
    assert str(info.value) == "only one dimension can be -1 (inferred)"


# ----------------------------------------------------------------------------- layouts


def test_parse_layout():
    assert parse_layout("NCHW") == (("N", 0), ("C", 0), ("H", 0), ("W", 0))
    assert parse_layout("NCHW16c") == (("N", 0), ("C", 0), ("H", 0), ("W", 0), ("c", 16))
    assert parse_layout("OIHW8i4o")[-2:] == (("i", 8), ("o", 4))
    assert layout_letters("NCHW8c") == ["N", "C", "H", "W", "c"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "layout is undefined"),
        ("__undef__", "layout is undefined"),
        ("N4CHW", "the primal axis C cannot have a factor"),
        ("NCHWc", "the sub-axis c needs a positive factor"),
        ("NCHW0c", "the sub-axis c needs a positive factor"),
        ("NCH-W", 'unexpected character "-"'),
        ("NCHW4", "it ends with a factor"),
        ("NCHH", "the axis H appears twice"),
        ("NHW8c", "the sub-axis c has no primal axis C"),
    ],
)
def test_parse_layout_errors(text, message):
    with pytest.raises(SemanticsError, match=message):
        parse_layout(text)


def test_parse_layout_names_the_attribute():
    with pytest.raises(SemanticsError, match='kernel_layout "OI2HW" is invalid'):
        parse_layout("OI2HW", "kernel_layout")


def test_spatial_positions():
    assert spatial_positions("NCHW") == [2, 3]
    assert spatial_positions("NHWC") == [1, 2]
    assert spatial_positions("NCDHW") == [2, 3, 4]
    assert spatial_positions("NCHW16c") == [2, 3]
    assert spatial_positions("NWC") == [1]
    assert spatial_positions("NCHW", "WH") == [3, 2]


# ---------------------------------------------------------------------- padding, slicing


@pytest.mark.parametrize(
    "padding, n, want",
    [
        ((1,), 2, [(1, 1), (1, 1)]),
        ((1, 2), 2, [(1, 1), (2, 2)]),
        ((1, 2, 3, 4), 2, [(1, 3), (2, 4)]),  # all befores, then all afters
        ((5,), 1, [(5, 5)]),
        ((1, 2), 1, [(1, 2)]),
        ((1, 2, 3), 3, [(1, 1), (2, 2), (3, 3)]),
    ],
)
def test_pad_pairs(padding, n, want):
    assert pad_pairs(padding, n) == want


def test_pad_pairs_counts():
    with pytest.raises(SemanticsError, match=r"padding=\[1, 2, 3\] must have 1, 2 or 4 values"):
        pad_pairs((1, 2, 3), 2)
    with pytest.raises(SemanticsError, match="must have 1 or 2 values for 1 spatial axes"):
        pad_pairs((1, 2, 3), 1)


def _numpy_slice(shape, begin, end, strides):
    x = np.arange(int(np.prod(shape))).reshape(shape)
    return x[tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides))]


def _ranges_apply(shape, ranges):
    x = np.arange(int(np.prod(shape))).reshape(shape)
    for ax, r in enumerate(ranges):
        if r is not None:
            first, stride, count = r
            x = np.take(x, first + stride * np.arange(count), axis=ax)
    return x


def test_slice_range_clamps_like_tvm():
    assert slice_range(0, 1, 3, 1, 5) == (1, 2)
    assert slice_range(0, -2, MAX_INDEX, 1, 5) == (3, 2)  # negative counts from the end
    assert slice_range(0, -100, 100, 1, 5) == (0, 5)  # clamped to [0, dim]
    assert slice_range(0, 4, -100, -1, 5) == (4, 5)  # negative stride: clamped to [-1, dim-1]
    assert slice_range(0, 100, 0, -2, 5) == (4, 2)  # 4, 2
    assert slice_range(0, 0, 5, 2, 5) == (0, 3)  # 0, 2, 4
    assert slice_range(0, 2, 2, 1, 5) == (2, 0)  # empty


def test_slice_range_running_backwards_is_an_error():
    with pytest.raises(SemanticsError, match="runs backwards: it starts at 3 and ends at 1"):
        slice_range(1, 3, 1, 1, 5)
    with pytest.raises(SemanticsError, match="runs backwards"):
        slice_range(0, 1, 3, -1, 5)


@given(
    st.lists(st.integers(1, 5), min_size=1, max_size=3),
    st.data(),
)
def test_strided_slice_matches_numpy_where_both_slice_forwards(shape, data):
    n = len(shape)
    strides = data.draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    begin = [data.draw(st.integers(-d, d)) for d in shape]
    ends = []
    for d, b in zip(shape, begin):
        lo = b + d if b < 0 else b
        ends.append(data.draw(st.integers(lo, d)))
    ranges = strided_slice_ranges(tuple(shape), begin, ends, strides, None, "end")
    np.testing.assert_array_equal(
        _ranges_apply(shape, ranges), _numpy_slice(shape, begin, ends, strides)
    )


def test_strided_slice_negative_strides():
    shape = (4, 5)
    ranges = strided_slice_ranges(shape, [3, -1], [0, -6], [-1, -2], None, "end")
    assert ranges == [(3, -1, 3), (4, -2, 3)]
    np.testing.assert_array_equal(
        _ranges_apply(shape, ranges), np.arange(20).reshape(shape)[3:0:-1, 4::-2]
    )


def test_strided_slice_pads_missing_entries_like_tvm():
    # begin/end cover the leading axes; the rest is sliced whole with stride 1
    assert strided_slice_axes(3, [1], [2], [], None, "end") == [
        (0, 1, 2, 1),
        (1, 0, MAX_INDEX, 1),
        (2, 0, MAX_INDEX, 1),
    ]
    # a negative stride without begin/end starts at the end; its padded end is 0 (TVM)
    assert strided_slice_axes(2, [], [], [1, -1], None, "end") == [
        (0, 0, MAX_INDEX, 1),
        (1, MAX_INDEX, 0, -1),
    ]
    assert strided_slice_ranges((3, 4), [], [], [1, -1], None, "end") == [
        (0, 1, 3),
        (3, -1, 3),
    ]


def test_strided_slice_with_axes():
    assert strided_slice_axes(3, [1, 0], [3, 2], [1, 1], [-1, 0], "end") == [
        (2, 1, 3, 1),
        (0, 0, 2, 1),
    ]
    assert strided_slice_ranges((2, 3, 4), [1], [3], [1], [2], "end") == [None, None, (1, 1, 2)]


def test_strided_slice_strides_none_means_one_on_every_sliced_axis():
    assert strided_slice_axes(3, [1, -2], [3, 5], None, None, "end") == strided_slice_axes(
        3, [1, -2], [3, 5], [1, 1], None, "end"
    )
    assert strided_slice_axes(3, [2, 0], [4, 1], None, [2, 0], "end") == [
        (2, 2, 4, 1),
        (0, 0, 1, 1),
    ]
    assert strided_slice_ranges((5, 6), [1, 2], [2, -1], None, None, "size") == [
        (1, 1, 2),
        (2, 1, 4),
    ]
    with pytest.raises(SemanticsError, match=r"begin=\[0\] and end=\[1\] must have the same"):
        strided_slice_axes(2, [0], [1], None, [0, 1], "end")


def test_strided_slice_size_mode():
    # end holds lengths (negative: to the end); strides are ignored
    assert strided_slice_ranges((5, 6), [1, 2], [2, -1], [3, 3], None, "size") == [
        (1, 1, 2),
        (2, 1, 4),
    ]
    assert strided_slice_ranges((5,), [-2], [10], [1], None, "size") == [(3, 1, 2)]


@pytest.mark.parametrize(
    "args, message",
    [
        (([0], [1], [1], [0, 1], "end"), "must have the same length"),
        (([0, 0, 0], [1, 1, 1], [], None, "end"), r"begin=\[0, 0, 0\] has 3 values, but"),
        (([0], [1], [0], None, "end"), "a stride cannot be 0"),
        (([0], [1], [1], None, "middle"), "slice_mode"),
        (([0], [1], [1], [2], "end"), "out of range"),
        (([0, 0], [1, 1], [1, 1], [1, -1], "end"), "given twice"),
    ],
)
def test_strided_slice_errors(args, message):
    begin, end, strides, axes, mode = args
    with pytest.raises(SemanticsError, match=message):
        strided_slice_axes(2, begin, end, strides, axes, mode)


def test_strided_slice_names_the_input_in_messages():
    with pytest.raises(SemanticsError, match="but the data has only 1 axes"):
        strided_slice_axes(1, [0, 0], [1, 1], [], None, "end", "the data")


def test_listed_axes_none_names_every_axis():
    assert listed_axes(None, 3) == (0, 1, 2)
    assert listed_axes([-1, 0], 3) == (0, 2)
    assert listed_axes([], 3) == ()
    with pytest.raises(SemanticsError, match="given twice"):
        listed_axes([1, -2], 3)
    with pytest.raises(SemanticsError, match="out of range"):
        listed_axes([3], 3)


# ------------------------------------------------------------------------------ dtypes


@pytest.mark.parametrize(
    "dtype, low, high",
    [
        ("int8", -128, 127),
        ("uint8", 0, 255),
        ("int64", -(2**63), 2**63 - 1),
        ("bool", False, True),
        ("float16", -65504.0, 65504.0),
        ("float32", float(np.finfo(np.float32).min), float(np.finfo(np.float32).max)),
    ],
)
def test_dtype_limits_are_finite_plain_values(dtype, low, high):
    assert lowest(dtype) == low and type(lowest(dtype)) is type(low)
    assert highest(dtype) == high and type(highest(dtype)) is type(high)


# ------------------------------------------------------------------------------ resize


def test_resize_methods_name_three_kinds():
    assert set(RESIZE_METHODS.values()) == {"nearest_neighbor", "linear", "cubic"}
    assert RESIZE_METHODS["bilinear"] == "linear" and RESIZE_METHODS["bicubic"] == "cubic"


def test_resize_method_and_default_rounding():
    assert resize_method("bilinear", "half_pixel", "") == ("linear", "")
    assert resize_method("nearest", "align_corners", "") == ("nearest_neighbor", "round")
    assert resize_method("nearest", "asymmetric", "") == ("nearest_neighbor", "floor")
    assert resize_method("nearest", "asymmetric", "ceil") == ("nearest_neighbor", "ceil")
    with pytest.raises(SemanticsError, match="unknown method `squiggly`"):
        resize_method("squiggly", "asymmetric", "")


F32 = np.float32


def _coords(n_in, n_out, mode, start=0.0, end=0.0):
    x = np.arange(n_out).astype(F32)
    got = source_coordinate(x, n_in, n_out, mode, F32, start, end)
    return np.broadcast_to(got, x.shape)


@pytest.mark.parametrize(
    "mode, n_in, n_out, want",
    [
        ("asymmetric", 4, 8, [0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5]),
        ("half_pixel", 4, 8, [-0.25, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3.25]),
        ("pytorch_half_pixel", 4, 8, [-0.25, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3.25]),
        ("pytorch_half_pixel", 4, 1, [0.0]),
        ("align_corners", 4, 7, [0, 0.5, 1, 1.5, 2, 2.5, 3]),
        ("align_corners", 4, 1, [0.0]),
        ("tf_half_pixel_for_nn", 4, 2, [1.0, 3.0]),
    ],
)
def test_source_coordinate_table(mode, n_in, n_out, want):
    got = _coords(n_in, n_out, mode)
    assert got.dtype == F32
    np.testing.assert_array_equal(got, np.asarray(want, F32))


def test_source_coordinate_crop_and_resize():
    np.testing.assert_allclose(_coords(5, 3, "tf_crop_and_resize", 0.0, 1.0), [0, 2, 4])
    np.testing.assert_allclose(_coords(5, 3, "tf_crop_and_resize", 0.25, 0.75), [1, 2, 3])
    np.testing.assert_allclose(_coords(5, 1, "tf_crop_and_resize", 0.0, 1.0), [2])


def test_source_coordinate_is_float32_arithmetic_with_lifted_constants():
    lifted = []

    def lift(value):
        lifted.append(value)
        return value

    source_coordinate(F32(3), 3, 7, "half_pixel", lift)
    assert all(type(v) is F32 for v in lifted)
    assert F32(3) / F32(7) in lifted


def test_source_coordinate_unknown_mode():
    with pytest.raises(SemanticsError, match="unknown coordinate_transformation_mode"):
        source_coordinate(F32(0), 2, 4, "sideways", F32)


# ----------------------------------------------------------------------------- winograd


def test_winograd_g_f23_is_tvms_matrix():
    assert winograd_g(2, 3) == (
        (1.0, 0.0, 0.0),
        (0.5, -0.5, 0.5),
        (0.5, 0.5, 0.5),
        (0.0, 0.0, 1.0),
    )


@pytest.mark.parametrize("tile, kernel", [(2, 3), (4, 3), (6, 3), (2, 5), (8, 7)])
def test_winograd_g_shape_and_last_row(tile, kernel):
    g = np.asarray(winograd_g(tile, kernel))
    assert g.shape == (tile + kernel - 1, kernel)
    assert list(g[-1]) == [0.0] * (kernel - 1) + [1.0]
    assert g[0, 0] > 0  # the first row's sign is normalized (TVM)


@pytest.mark.parametrize("tile, kernel", [(1, 3), (9, 3), (2, 2), (2, 8)])
def test_winograd_g_unsupported_sizes(tile, kernel):
    with pytest.raises(SemanticsError, match="unsupported tile size"):
        winograd_g(tile, kernel)
