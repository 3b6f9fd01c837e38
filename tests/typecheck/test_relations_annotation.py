"""Identity relations of annotation and device ops, and the relation facet of every op."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.lang import (
    ANY,
    Call,
    Function,
    FuncType,
    IncompleteType,
    ShapeVar,
    TensorType,
    TupleType,
    Type,
    Var,
    get_op,
)
from relay.lang.op import all_ops
from relay.testing.relations import StandaloneContext as Ctx
from relay.testing.relations import f32
from relay.typecheck import RelationError, infer_expr, relation_for
from relay.typecheck.relations import missing_relations
from relay.typecheck.relations.annotation import IDENTITIES

ATTRS = {
    "on_device": {"virtual_device": None},
    "device_copy": {"src_virtual_device": 1, "dst_virtual_device": 2},
    "debug": {"debug_func": None},
}


class UnifyingCtx(Ctx):
    """A context whose unifications always succeed (they are not under test here)."""

    def unify(self, lhs, rhs):
        pass


def _attrs(name):
    op = get_op(name)
    return op.make_attrs(**ATTRS.get(name, {})) if op.attrs_schema else None


@pytest.mark.parametrize("name", IDENTITIES)
def test_identity_ops_keep_any_type(name):
    op = get_op(name)
    for t in (
        TensorType((2, 3), "float32"),
        TupleType([TensorType((), "int8"), TensorType((4,), "bool")]),
        FuncType([TensorType((), "float32")], TensorType((), "float32")),
    ):
        param = Var("x", t)
        call = Call(op, [param], _attrs(name))
        assert infer_expr(Function([param], call)).type_of(call) == t


@pytest.mark.parametrize("name", IDENTITIES)
def test_identity_passes_an_unknown_type_through(name):
    hole = IncompleteType()
    assert relation_for(get_op(name))([hole], _attrs(name), Ctx()) is hole


def test_every_declared_operator_has_a_relation():
    missing = [op.name for op in missing_relations()]
    assert not missing, f"operators without a type relation: {', '.join(missing)}"
    for op in all_ops():
        assert callable(relation_for(op)), op.name


def i32(*shape):
    return TensorType(shape, "int32")


TUPLE_INPUT = {"concatenate", "stack", "meshgrid", "einsum", "adv_index"}

EXAMPLES = [  # one valid call of every operator of the non-elementwise families
    ("sum", [f32(2, 3)], {"axis": [1]}),
    ("mean", [f32(2, 3)], {}),
    ("max", [f32(2, 3)], {"keepdims": True}),
    ("min", [f32(2, 3)], {"exclude": True, "axis": [0]}),
    ("prod", [f32(2, 3)], {}),
    ("all", [TensorType((2, 3), "bool")], {}),
    ("any", [TensorType((2, 3), "bool")], {}),
    ("argmax", [f32(2, 3)], {"axis": [1]}),
    ("argmin", [f32(2, 3)], {}),
    ("variance", [f32(2, 3), f32(2, 1)], {"axis": [1]}),
    ("reshape", [f32(2, 3, 4)], {"newshape": [0, -1]}),
    ("reshape_like", [f32(2, 3, 4), f32(6, 4)], {}),
    ("transpose", [f32(2, 3, 4)], {"axes": [2, 0, 1]}),
    ("squeeze", [f32(2, 1, 4)], {"axis": [1]}),
    ("expand_dims", [f32(2, 3)], {"axis": 1, "num_newaxis": 2}),
    ("concatenate", [f32(2, 3), f32(4, 3)], {"axis": 0}),
    ("stack", [f32(2, 3), f32(2, 3)], {"axis": 1}),
    ("split", [f32(6, 3)], {"indices_or_sections": [2, 5]}),
    (
        "strided_slice",
        [f32(6, 7)],
        {"begin": [1, 2], "end": [5, -1], "strides": [2, 1], "axes": None},
    ),
    ("slice_like", [f32(6, 7), f32(3, 4)], {"axes": None}),
    ("tile", [f32(2, 3)], {"reps": [2, 2]}),
    ("repeat", [f32(2, 3)], {"repeats": 2, "axis": 0}),
    ("reverse", [f32(2, 3)], {"axis": 0}),
    ("broadcast_to", [f32(3, 1)], {"shape": [2, 3, 4]}),
    ("broadcast_to_like", [f32(3, 1), f32(2, 3, 4)], {}),
    ("collapse_sum_like", [f32(2, 3, 4), f32(3, 1)], {}),
    ("layout_transform", [f32(1, 16, 4, 4)], {"src_layout": "NCHW", "dst_layout": "NHWC8c"}),
    ("shape_of", [f32(2, 3)], {}),
    ("ndarray_size", [f32(2, 3)], {}),
    ("meshgrid", [f32(2), f32(3)], {}),
    ("arange", [f32(), f32(), f32()], {"start": 0.0, "stop": 4.0, "step": 1.0, "dtype": "float32"}),
    ("take", [f32(5, 6), i32(2, 3)], {"axis": 1}),
    ("gather", [f32(5, 6), i32(5, 2)], {"axis": 1}),
    ("gather_nd", [f32(5, 6, 7), i32(2, 3)], {}),
    ("scatter_elements", [f32(5, 6), i32(5, 2), f32(5, 2)], {"axis": 1}),
    ("one_hot", [i32(2, 3), f32(), f32()], {"depth": 4, "dtype": "float32"}),
    ("sparse_to_dense", [i32(3, 2), f32(3), f32()], {"output_shape": [4, 5]}),
    ("adv_index", [f32(5, 6, 7), i32(2, 1), i32(3)], {}),
    ("unravel_index", [i32(3), i32(2)], {}),
    ("matrix_set_diag", [f32(2, 3, 4), f32(2, 3)], {}),
    ("sequence_mask", [f32(5, 3, 4), i32(3)], {}),
    ("argsort", [f32(5, 6)], {}),
    ("sort", [f32(5, 6)], {}),
    ("topk", [f32(5, 6)], {"k": 2}),
    ("cumsum", [f32(5, 6)], {"axis": 1}),
    ("cumprod", [f32(5, 6)], {}),
    ("einsum", [f32(2, 3), f32(3, 4)], {"equation": "ij,jk->ik"}),
    ("nn.conv1d", [f32(1, 4, 9), f32(6, 2, 3)], {"groups": 2, "padding": [1]}),
    ("nn.conv2d", [f32(1, 3, 9, 9), f32(8, 3, 3, 3)], {"strides": [2, 2], "padding": [1, 1]}),
    ("nn.conv3d", [f32(1, 3, 5, 5, 5), f32(4, 3, 3, 3, 3)], {"dilation": [1, 2, 1]}),
    ("nn.conv1d_transpose", [f32(1, 4, 9), f32(4, 3, 3)], {"strides": [2]}),
    ("nn.conv2d_transpose", [f32(1, 4, 9, 9), f32(4, 3, 3, 3)], {"strides": [2, 2]}),
    (
        "nn.contrib_conv2d_NCHWc",
        [f32(1, 2, 8, 8, 8), f32(4, 2, 3, 3, 8, 8)],
        {"channels": 32, "kernel_size": [3, 3], "data_layout": "NCHW8c", "out_layout": "NCHW8c"},
    ),
    (
        "nn.contrib_depthwise_conv2d_NCHWc",
        [f32(1, 2, 8, 8, 8), f32(2, 1, 3, 3, 1, 8)],
        {
            "channels": 16,
            "groups": 16,
            "kernel_size": [3, 3],
            "data_layout": "NCHW8c",
            "kernel_layout": "OIHW1i8o",
            "out_layout": "NCHW8c",
        },
    ),
    (
        "nn.contrib_conv2d_winograd_without_weight_transform",
        [f32(1, 3, 8, 8), f32(6, 6, 16, 3)],
        {"tile_size": 4, "channels": 16, "kernel_size": [3, 3]},
    ),
    ("nn.contrib_conv2d_winograd_weight_transform", [f32(16, 3, 3, 3)], {"tile_size": 4}),
    ("nn.dense", [f32(8, 16), f32(10, 16)], {"units": None}),
    ("nn.contrib_dense_pack", [f32(8, 16), f32(2, 16, 8)], {"units": None}),
    ("nn.matmul", [f32(8, 16), f32(16, 10)], {"units": None}),
    ("nn.batch_matmul", [f32(1, 3, 4), f32(5, 6, 4)], {"transpose_b": True}),
    ("nn.bias_add", [f32(1, 16, 4, 4), f32(16)], {}),
    ("nn.relu", [f32(2, 3)], None),
    ("nn.leaky_relu", [f32(2, 3)], {}),
    ("nn.prelu", [f32(2, 3), f32(3)], {}),
    ("nn.softmax", [f32(2, 3)], {}),
    ("nn.fast_softmax", [f32(2, 3)], {}),
    ("nn.log_softmax", [f32(2, 3)], {}),
    ("nn.batch_norm", [f32(2, 3, 4), f32(3), f32(3), f32(3), f32(3)], {}),
    ("nn.layer_norm", [f32(2, 3, 4), f32(4), f32(4)], {}),
    ("nn.group_norm", [f32(2, 6, 4), f32(6), f32(6)], {"num_groups": 3}),
    ("nn.instance_norm", [f32(2, 6, 4), f32(6), f32(6)], {}),
    ("nn.l2_normalize", [f32(2, 6, 4)], {"eps": 1e-5, "axis": [1]}),
    ("nn.dropout", [f32(2, 3)], {}),
    ("nn.lrn", [f32(2, 3, 4, 4)], {}),
    ("nn.batch_flatten", [f32(2, 3, 4)], None),
    ("nn.cross_entropy", [f32(2, 3), f32(2, 3)], None),
    ("nn.cross_entropy_with_logits", [f32(2, 3), f32(2, 3)], None),
    ("nn.fifo_buffer", [f32(1, 3), f32(5, 3)], {}),
    ("nn.pad", [f32(2, 3), f32()], {"pad_width": [[1, 1], [0, 2]]}),
    ("nn.mirror_pad", [f32(2, 3)], {"pad_width": [[1, 1], [0, 2]]}),
    ("nn.upsampling", [f32(1, 3, 4, 5)], {"scale_h": 2.0, "scale_w": 1.5}),
    ("nn.upsampling3d", [f32(1, 3, 4, 5, 6)], {"scale_d": 2.0, "scale_h": 2.0, "scale_w": 0.5}),
    ("nn.depth_to_space", [f32(1, 12, 4, 5)], {"block_size": 2}),
    ("nn.space_to_depth", [f32(1, 3, 4, 6)], {"block_size": 2}),
    *[
        (f"nn.{kind}_pool{n}d", [f32(1, 3, *[7] * n)], {"pool_size": [3] * n, "strides": [2] * n})
        for kind in ("max", "avg")
        for n in (1, 2, 3)
    ],
    *[
        (f"nn.adaptive_{kind}_pool{n}d", [f32(1, 3, *[7] * n)], {"output_size": [2] * n})
        for kind in ("max", "avg")
        for n in (1, 2, 3)
    ],
    ("nn.global_max_pool2d", [f32(1, 3, 7, 7)], {}),
    ("nn.global_avg_pool2d", [f32(1, 3, 7, 7)], {}),
    ("image.resize1d", [f32(1, 3, 7)], {"size": [14]}),
    ("image.resize2d", [f32(1, 3, 7, 7)], {"size": [14, 14]}),
    ("image.resize3d", [f32(1, 3, 7, 7, 7)], {"size": [14, 14, 14]}),
    ("image.crop_and_resize", [f32(1, 3, 7, 7), f32(5, 4), i32(5)], {"crop_size": [3, 3]}),
    ("image.dilation2d", [f32(1, 3, 7, 7), f32(3, 3, 3)], {}),
    ("image.affine_grid", [f32(2, 2, 3)], {"target_shape": [4, 5]}),
    ("image.grid_sample", [f32(2, 3, 7, 7), f32(2, 2, 4, 5)], {}),
    *[(name, [f32(2, 3)], ATTRS.get(name, {})) for name in IDENTITIES],
]

MODULES = {
    f"relay.typecheck.relations.{m}"
    for m in ("reduce", "transform", "index", "algorithm", "nn", "conv", "pool", "image")
} | {"relay.typecheck.relations.annotation"}


def _call(name, args, attrs, ctx):
    op = get_op(name)
    made = op.make_attrs(**attrs) if attrs is not None else None
    types = [TupleType(args)] if name in TUPLE_INPUT else args
    return relation_for(op)(types, made, ctx)


def test_every_family_operator_has_an_example():
    named = {name for name, _, _ in EXAMPLES}
    ours = {op.name for op in all_ops() if relation_for(op).__module__ in MODULES}
    assert ours - named == set()
    for name, args, attrs in EXAMPLES:
        assert isinstance(_call(name, args, attrs, UnifyingCtx()), Type), name


@settings(max_examples=15)
@given(st.integers(0, 2**32))
def test_unknown_dims_never_crash_a_relation(seed):
    """Replace dimensions by `?`, shape variables, 0 or 1, drop or add axes: every
    relation returns a type or None, or raises a RelationError; nothing else escapes."""
    rng = random.Random(seed)
    n = ShapeVar("n")

    def mutate(t):
        shape = list(t.shape)
        roll = rng.random()
        if roll < 0.15 and shape:
            shape.pop(rng.randrange(len(shape)))
        elif roll < 0.3:
            shape.insert(rng.randrange(len(shape) + 1), rng.choice([1, 2, ANY, n]))
        shape = [rng.choice([d, d, ANY, n, 0, 1]) for d in shape]
        return TensorType(tuple(shape), t.dtype)

    for name, args, attrs in EXAMPLES:
        for final in (False, True):
            try:
                out = _call(name, [mutate(t) for t in args], attrs, UnifyingCtx(final))
            except RelationError:
                continue
            assert out is None or isinstance(out, Type), name
