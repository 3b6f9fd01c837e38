"""Bound inference: regions of compute_at stages and loop extents."""

from __future__ import annotations

import pytest
from relay.backend import te
from relay.backend.te.bound import infer_bound
from relay.backend.tir.arith import as_int
from relay.backend.tir.printer import astext


def region(s: te.Schedule, t: te.Tensor) -> list[tuple[str, int]]:
    """(offset as text, extent) per axis of `t`'s stage."""
    sb = infer_bound(s)[s[t]]
    return [(astext(o), as_int(e)) for o, e in zip(sb.offsets, sb.shape)]


def conv2d(h: int, w: int, kh: int, kw: int, stride: int):
    X = te.placeholder((h, w), "float32", "X")
    pad = te.compute((h + 2, w + 2), lambda i, j: X[i % h, j % w] * 1.0, name="pad")
    oh, ow = (h + 2 - kh) // stride + 1, (w + 2 - kw) // stride + 1
    ri, rj = te.reduce_axis(kh, "ri"), te.reduce_axis(kw, "rj")
    out = te.compute(
        (oh, ow),
        lambda y, x: te.sum_(pad[y * stride + ri.var, x * stride + rj.var], axis=[ri, rj]),
        name="out",
    )
    return X, pad, out


@pytest.mark.parametrize("stride", [1, 2])
def test_conv_producer_region_at_a_row_tile(stride: int) -> None:
    _, pad, out = conv2d(16, 16, 3, 3, stride)
    s = te.create_schedule(out)
    y, _x = out.op.axis
    yo, _yi = s[out].split(y, factor=4)
    s[pad].compute_at(s[out], yo)
    # rows: (4 - 1) * stride + 3; columns: every column the output row reads
    ow = (18 - 3) // stride + 1
    assert region(s, pad) == [
        (f"y_outer*{4 * stride}", 3 * stride + 3),
        ("0", (ow - 1) * stride + 3),
    ]


def test_conv_producer_region_at_the_innermost_data_loop() -> None:
    _, pad, out = conv2d(16, 16, 3, 3, 2)
    s = te.create_schedule(out)
    s[pad].compute_at(s[out], out.op.axis[1])
    assert region(s, pad) == [("y*2", 3), ("x*2", 3)]


def test_region_at_a_reduction_loop() -> None:
    _, pad, out = conv2d(8, 8, 3, 3, 1)
    s = te.create_schedule(out)
    s[pad].compute_at(s[out], out.op.reduce_axis[0])
    assert region(s, pad) == [("y + ri", 1), ("x", 3)]


def test_nested_compute_at_regions_compose() -> None:
    X = te.placeholder((40,), "float32", "X")
    A = te.compute((40,), lambda i: X[i] + 1.0, name="A")
    B = te.compute((38,), lambda i: A[i] + A[i + 2], name="B")
    C = te.compute((36,), lambda i: B[i] * B[i + 2], name="C")
    s = te.create_schedule(C)
    o, _i = s[C].split(C.op.axis[0], factor=6)
    s[B].compute_at(s[C], o)
    bo, _bi = s[B].split(B.op.axis[0], factor=4)
    s[A].compute_at(s[B], bo)
    assert region(s, B) == [("i_outer*6", 8)]
    # B's loop i.outer covers 4 of B's region (which starts at C's i.outer*6)
    assert region(s, A) == [("i_outer*6 + i_outer_1*4", 6)]


def test_root_and_output_stages_cover_their_domain() -> None:
    _, pad, out = conv2d(8, 8, 3, 3, 1)
    s = te.create_schedule(out)
    assert region(s, pad) == [("0", 10), ("0", 10)]
    assert region(s, out) == [("0", 8), ("0", 8)]


def test_region_no_smaller_than_domain_falls_back_to_domain() -> None:
    X = te.placeholder((6,), "float32", "X")
    A = te.compute((6,), lambda i: X[i] * 2.0, name="A")
    r = te.reduce_axis(6, "r")
    B = te.compute((3,), lambda i: te.sum_(A[r], axis=r), name="B")
    s = te.create_schedule(B)
    s[A].compute_at(s[B], B.op.axis[0])
    sb = infer_bound(s)[s[A]]
    assert sb.at_full_domain()


def test_data_dependent_index_gets_the_whole_dimension() -> None:
    X = te.placeholder((10,), "float32", "X")
    Idx = te.placeholder((4,), "int64", "I")
    A = te.compute((10,), lambda i: X[i] + 1.0, name="A")
    B = te.compute((4,), lambda i: A[Idx[i]], name="B")
    s = te.create_schedule(B)
    s[A].compute_at(s[B], B.op.axis[0])
    assert region(s, A) == [("0", 10)]


def test_leaf_extents_follow_splits_and_fuses() -> None:
    X = te.placeholder((13, 5), "float32", "X")
    Y = te.compute((13, 5), lambda i, j: X[i, j], name="Y")
    s = te.create_schedule(Y)
    f = s[Y].fuse(*Y.op.axis)
    o, _i = s[Y].split(f, factor=8)
    _io, _ii = s[Y].split(o, nparts=3)
    sb = infer_bound(s)[s[Y]]
    assert [as_int(sb.extents[v]) for v in s[Y].leaf_iter_vars] == [3, 3, 8]
    assert as_int(sb.extents[f]) == 65
