"""The operator library: names, arities, patterns and attribute schemas as in TVM."""

import pytest
from relay.lang import REQUIRED, AttrsError, Kind, OpPattern, all_ops, get_op
from relay.lang.opdefs import attrs_schemas, find_attrs_schema


def _names(text):
    """The whitespace-separated names in `text`."""
    return text.split()


UNARY = _names("""negative abs exp log log2 log10 sqrt rsqrt tanh sigmoid erf floor ceil round trunc
sign sin cos tan atan logical_not bitwise_not isnan isinf isfinite copy fast_exp fast_tanh
fast_erf zeros_like ones_like""")
BINARY = _names("""add subtract multiply divide power maximum minimum floor_divide floor_mod mod
trunc_divide trunc_mod equal not_equal less less_equal greater greater_equal logical_and
logical_or logical_xor bitwise_and bitwise_or bitwise_xor left_shift right_shift""")
OTHER_TENSOR = _names("clip where cast cast_like full_like zeros ones full arange reinterpret")
# TVM's `std` and `logsumexp` are Python compositions, not operators (relay-ops.md).
REDUCE = _names("sum mean max min prod argmax argmin variance all any")
TRANSFORM = _names("""reshape reshape_like transpose squeeze expand_dims concatenate stack split
strided_slice take tile repeat reverse broadcast_to broadcast_to_like collapse_sum_like
layout_transform one_hot gather gather_nd scatter_elements slice_like shape_of ndarray_size
sequence_mask meshgrid cumsum cumprod argsort topk sort unravel_index matrix_set_diag
sparse_to_dense adv_index einsum""")
NN = _names("""conv1d conv2d conv3d conv2d_transpose conv1d_transpose contrib_conv2d_NCHWc
contrib_conv2d_winograd_without_weight_transform contrib_conv2d_winograd_weight_transform
contrib_dense_pack dense matmul batch_matmul bias_add relu leaky_relu prelu softmax
fast_softmax log_softmax max_pool1d max_pool2d max_pool3d avg_pool1d avg_pool2d avg_pool3d
global_avg_pool2d global_max_pool2d adaptive_avg_pool1d adaptive_avg_pool2d
adaptive_avg_pool3d adaptive_max_pool1d adaptive_max_pool2d adaptive_max_pool3d batch_norm
layer_norm group_norm instance_norm l2_normalize dropout pad mirror_pad batch_flatten
upsampling upsampling3d lrn depth_to_space space_to_depth cross_entropy
cross_entropy_with_logits fifo_buffer""")
IMAGE = _names("resize1d resize2d resize3d crop_and_resize grid_sample affine_grid dilation2d")
MISC = _names("annotation.stop_fusion on_device device_copy annotation.checkpoint debug")

REQUESTED = (
    UNARY
    + BINARY
    + OTHER_TENSOR
    + REDUCE
    + TRANSFORM
    + ["nn." + n for n in NN]
    + ["image." + n for n in IMAGE]
    + MISC
)


def test_every_requested_operator_is_declared():
    declared = {op.name for op in all_ops()}
    missing = [name for name in REQUESTED if name not in declared]
    assert missing == []


def test_names_are_unique_and_many():
    names = [op.name for op in all_ops()]
    assert len(names) == len(set(names))
    assert len(names) >= 120


def test_every_operator_is_well_formed():
    for op in all_ops():
        assert op.description, op.name
        assert op.num_inputs == len(op.arg_names), op.name
        assert len(set(op.arg_names)) == len(op.arg_names), op.name
        assert isinstance(op.pattern, OpPattern)


@pytest.mark.parametrize(
    ("name", "pattern"),
    [
        ("nn.conv2d", OpPattern.OUT_ELEMWISE_FUSABLE),
        ("nn.dense", OpPattern.OUT_ELEMWISE_FUSABLE),
        ("nn.softmax", OpPattern.OUT_ELEMWISE_FUSABLE),
        ("nn.max_pool2d", OpPattern.OUT_ELEMWISE_FUSABLE),
        ("one_hot", OpPattern.OUT_ELEMWISE_FUSABLE),
        ("add", OpPattern.BROADCAST),
        ("where", OpPattern.BROADCAST),
        ("nn.bias_add", OpPattern.BROADCAST),
        ("expand_dims", OpPattern.BROADCAST),
        ("tile", OpPattern.BROADCAST),
        ("nn.relu", OpPattern.ELEMWISE),
        ("exp", OpPattern.ELEMWISE),
        ("clip", OpPattern.ELEMWISE),
        ("cast", OpPattern.ELEMWISE),
        ("zeros", OpPattern.ELEMWISE),
        ("reshape", OpPattern.INJECTIVE),
        ("transpose", OpPattern.INJECTIVE),
        ("concatenate", OpPattern.INJECTIVE),
        ("layout_transform", OpPattern.INJECTIVE),
        ("nn.pad", OpPattern.INJECTIVE),
        ("image.resize2d", OpPattern.INJECTIVE),
        ("sum", OpPattern.COMM_REDUCE),
        ("argmax", OpPattern.COMM_REDUCE),
        ("collapse_sum_like", OpPattern.COMM_REDUCE),
        ("nn.dropout", OpPattern.OPAQUE),
        ("nn.layer_norm", OpPattern.OPAQUE),
        ("nn.l2_normalize", OpPattern.OPAQUE),
        ("arange", OpPattern.OPAQUE),
        ("shape_of", OpPattern.OPAQUE),
        ("topk", OpPattern.OPAQUE),
        ("annotation.stop_fusion", OpPattern.OPAQUE),
    ],
)
def test_pattern_kinds(name, pattern):
    assert get_op(name).pattern is pattern


@pytest.mark.parametrize(
    ("name", "arg_names"),
    [
        ("add", ("lhs", "rhs")),
        ("nn.conv2d", ("data", "weight")),
        ("nn.batch_norm", ("data", "gamma", "beta", "moving_mean", "moving_var")),
        ("nn.pad", ("data", "pad_value")),
        ("variance", ("data", "mean")),
        ("concatenate", ("data",)),
        ("where", ("condition", "x", "y")),
        ("arange", ("start", "stop", "step")),
        ("zeros", ()),
        ("full", ("fill_value",)),
        ("one_hot", ("indices", "on_value", "off_value")),
        ("image.crop_and_resize", ("data", "boxes", "box_indices")),
    ],
)
def test_inputs(name, arg_names):
    op = get_op(name)
    assert op.arg_names == arg_names
    assert op.num_inputs == len(arg_names)


def defaults(name):
    """Field name -> C++ default (REQUIRED when there is none), in declaration order."""
    schema = get_op(name).attrs_schema
    assert schema is not None
    return {f.name: f.default for f in schema.fields}


def test_conv2d_defaults():
    assert defaults("nn.conv2d") == {
        "strides": (1, 1),
        "padding": (0, 0),
        "dilation": (1, 1),
        "groups": 1,
        "channels": None,
        "kernel_size": None,
        "data_layout": "NCHW",
        "kernel_layout": "OIHW",
        "out_layout": "",
        "out_dtype": "",
    }
    assert list(defaults("nn.conv2d"))[:6] == [  # TVM's declaration order
        "strides",
        "padding",
        "dilation",
        "groups",
        "channels",
        "kernel_size",
    ]
    assert list(defaults("nn.conv1d").values())[:3] == [(1,), (0, 0), (1,)]
    assert defaults("nn.conv3d")["padding"] == (0, 0, 0)
    assert defaults("nn.conv3d")["kernel_layout"] == "OIDHW"


def test_conv_transpose_and_winograd_field_order():
    assert list(defaults("nn.conv2d_transpose")) == [
        "channels",
        "kernel_size",
        "strides",
        "output_padding",
        "padding",
        "dilation",
        "groups",
        "data_layout",
        "kernel_layout",
        "out_layout",
        "out_dtype",
    ]
    assert defaults("nn.conv2d_transpose")["kernel_layout"] == "IOHW"
    assert defaults("nn.conv1d_transpose")["output_padding"] == (0,)
    winograd = defaults("nn.contrib_conv2d_winograd_without_weight_transform")
    assert next(iter(winograd.items())) == ("tile_size", REQUIRED)


def test_pool_defaults():
    assert defaults("nn.max_pool2d") == {
        "pool_size": REQUIRED,
        "strides": (1, 1),
        "dilation": (1, 1),
        "padding": (0, 0),
        "layout": "NCHW",
        "out_layout": "",
        "ceil_mode": False,
    }
    assert defaults("nn.avg_pool2d") == {
        **defaults("nn.max_pool2d"),
        "count_include_pad": False,
    }
    assert list(defaults("nn.avg_pool2d"))[-1] == "count_include_pad"
    assert defaults("nn.max_pool1d")["padding"] == (0,)
    assert defaults("nn.avg_pool3d")["layout"] == "NCDHW"
    assert defaults("nn.adaptive_avg_pool2d") == {
        "output_size": (),
        "layout": "NCHW",
        "out_layout": "",
    }


def test_batch_norm_softmax_reshape_defaults():
    assert defaults("nn.batch_norm") == {
        "axis": 1,
        "epsilon": 1e-5,
        "center": True,
        "scale": True,
    }
    assert defaults("nn.layer_norm")["axis"] == -1
    assert list(defaults("nn.group_norm")) == ["num_groups", "axis", "epsilon", "center", "scale"]
    for name in ("nn.softmax", "nn.fast_softmax", "nn.log_softmax"):
        assert defaults(name) == {"axis": -1}
    assert defaults("reshape") == {"newshape": REQUIRED, "allowzero": False}


def test_strided_slice_and_resize2d_defaults():
    assert defaults("strided_slice") == {
        "begin": REQUIRED,
        "end": REQUIRED,
        "strides": REQUIRED,
        "slice_mode": "end",
        "axes": REQUIRED,
    }
    assert defaults("image.resize2d") == {
        "size": None,
        "roi": None,
        "layout": "NCHW",
        "method": "linear",
        "coordinate_transformation_mode": "half_pixel",
        "rounding_method": "round",
        "cubic_alpha": -0.5,
        "cubic_exclude": 0,
        "extrapolation_value": 0.0,
        "out_dtype": "",
    }


def test_other_defaults():
    assert defaults("take") == {"batch_dims": 0, "axis": None, "mode": "clip"}
    assert defaults("split") == {"indices_or_sections": REQUIRED, "axis": 0}
    assert defaults("sum") == {"axis": None, "keepdims": False, "exclude": False}
    assert list(defaults("argmax")) == ["axis", "keepdims", "select_last_index", "exclude"]
    assert defaults("topk")["ret_type"] == "both"
    assert defaults("nn.lrn") == {"size": 5, "axis": 1, "bias": 2.0, "alpha": 1e-4, "beta": 0.75}
    assert defaults("nn.mirror_pad") == {"mode": "SYMMETRIC", "pad_width": REQUIRED}
    assert defaults("on_device")["constrain_body"] is True


def test_schemas_are_shared_per_tvm_type():
    def schema_of(name):
        return get_op(name).attrs_schema

    assert schema_of("nn.conv2d") is schema_of("nn.contrib_conv2d_NCHWc")
    assert schema_of("nn.conv2d").name == "Conv2DAttrs"
    reduce_schema = schema_of("sum")
    for name in ("mean", "max", "min", "prod", "all", "any"):
        assert schema_of(name) is reduce_schema
    assert schema_of("argmax") is schema_of("argmin")
    assert schema_of("nn.softmax") is schema_of("nn.log_softmax") is schema_of("nn.fast_softmax")
    assert schema_of("cast") is schema_of("reinterpret")
    assert schema_of("zeros") is schema_of("ones") is schema_of("full") is schema_of("broadcast_to")
    assert schema_of("argsort") is schema_of("sort")
    assert schema_of("cumsum") is schema_of("cumprod")
    assert schema_of("nn.global_avg_pool2d") is schema_of("nn.global_max_pool2d")
    assert schema_of("nn.adaptive_avg_pool2d") is schema_of("nn.adaptive_max_pool2d")
    assert schema_of("nn.depth_to_space") is schema_of("nn.space_to_depth")
    # One schema object per TVM name across the whole library.
    by_name = {}
    for op in all_ops():
        if op.attrs_schema is not None:
            assert by_name.setdefault(op.attrs_schema.name, op.attrs_schema) is op.attrs_schema


def test_attrs_free_operators():
    for name in ("add", "exp", "nn.relu", "where", "nn.batch_flatten", "adv_index"):
        op = get_op(name)
        assert op.attrs_schema is None
        assert op.make_attrs() is None
        with pytest.raises(AttrsError):
            op.make_attrs(axis=1)


def test_find_attrs_schema():
    conv = get_op("nn.conv2d").attrs_schema
    assert find_attrs_schema("Conv2DAttrs") is conv
    assert find_attrs_schema("relay.attrs.Conv2DAttrs") is conv
    assert find_attrs_schema("NoSuchAttrs") is None
    assert attrs_schemas()["ReduceAttrs"] is get_op("sum").attrs_schema


def test_required_fields_are_required():
    # required but nullable fields may be omitted: they are None (TVM prints `units=None`)
    assert get_op("nn.dense").make_attrs().units is None
    with pytest.raises(AttrsError, match="a_min"):
        get_op("clip").make_attrs(a_max=6.0)
    with pytest.raises(AttrsError, match="pool_size"):
        get_op("nn.max_pool2d").make_attrs()
    with pytest.raises(AttrsError, match="indices_or_sections"):
        get_op("split").make_attrs(axis=1)
    # Required but nullable: TVM prints `units=None`, `axes=None`.
    assert get_op("nn.dense").make_attrs(units=None).units is None
    assert get_op("transpose").make_attrs(axes=None).axes is None


def test_unknown_keys_rejected():
    with pytest.raises(AttrsError, match="no attribute `stride`"):
        get_op("nn.conv2d").make_attrs(stride=[1, 1])
    with pytest.raises(AttrsError, match="axes"):
        get_op("sum").make_attrs(axes=[1])


def test_kinds_are_coerced():
    conv = get_op("nn.conv2d").make_attrs(padding=[1, 1, 1, 1], channels=64, kernel_size=[3, 3])
    assert conv.padding == (1, 1, 1, 1)
    assert conv.kernel_size == (3, 3)
    assert conv.strides == (1, 1)
    assert dict(conv.non_default_items()) == {
        "padding": (1, 1, 1, 1),
        "channels": 64,
        "kernel_size": (3, 3),
    }
    clip = get_op("clip").make_attrs(a_min=0, a_max=6)
    assert (clip.a_min, clip.a_max) == (0.0, 6.0)
    assert isinstance(clip.a_min, float)
    assert get_op("nn.batch_norm").make_attrs(epsilon=1).epsilon == 1.0
    assert get_op("sum").make_attrs(axis=1).axis == (1,)
    assert get_op("sum").make_attrs(keepdims=1).keepdims is True
    assert get_op("reshape").make_attrs(newshape=[0, -1]).newshape == (0, -1)
    assert get_op("split").make_attrs(indices_or_sections=3).indices_or_sections == 3
    assert get_op("split").make_attrs(indices_or_sections=[1, 4]).indices_or_sections == (1, 4)
    pad = get_op("nn.pad").make_attrs(pad_width=[[0, 0], [1, 1]])
    assert pad.pad_width == ((0, 0), (1, 1))
    assert get_op("cast").make_attrs(dtype="float").dtype == "float32"
    resize = get_op("image.resize2d").make_attrs(size=[4, 4], roi=[0, 0, 1, 1])
    assert resize.roi == (0.0, 0.0, 1.0, 1.0)


def test_null_only_where_tvm_allows_it():
    # a null out_dtype means "same as the input", stored canonically as ""
    assert get_op("nn.conv2d").make_attrs(channels=None, out_dtype=None).out_dtype == ""
    assert get_op("nn.conv2d").make_attrs().out_dtype == ""
    assert (
        get_op("strided_slice").make_attrs(begin=[0], end=None, strides=None, axes=None).end is None
    )
    for name, key, given in [
        ("nn.conv2d", "groups", {}),
        ("nn.softmax", "axis", {}),
        ("reshape", "newshape", {}),
        ("nn.batch_norm", "epsilon", {}),
        ("nn.max_pool2d", "pool_size", {}),
        ("nn.max_pool2d", "strides", {"pool_size": [2, 2]}),
        ("cast", "dtype", {}),
    ]:
        with pytest.raises(AttrsError, match=key):
            get_op(name).make_attrs(**given, **{key: None})


def test_wrong_kinds_rejected():
    with pytest.raises(AttrsError, match="groups"):
        get_op("nn.conv2d").make_attrs(groups=1.5)
    with pytest.raises(AttrsError, match="data_layout"):
        get_op("nn.conv2d").make_attrs(data_layout=3)
    with pytest.raises(AttrsError, match="dtype"):
        get_op("cast").make_attrs(dtype="float33")
    with pytest.raises(AttrsError, match="newshape"):
        get_op("reshape").make_attrs(newshape=[1.0, 2.0])
    with pytest.raises(AttrsError, match="center"):
        get_op("nn.batch_norm").make_attrs(center=2)


def test_kinds_of_sample_fields():
    def kind(op_name, field_name):
        schema = get_op(op_name).attrs_schema
        assert schema is not None
        field = schema.field_named(field_name)
        assert field is not None
        return field.kind, field.optional

    assert kind("nn.conv2d", "padding") == (Kind.INTS, False)
    assert kind("nn.conv2d", "channels") == (Kind.INT, True)
    assert kind("nn.conv2d", "out_dtype") == (Kind.DTYPE, True)
    assert kind("nn.pad", "pad_width") == (Kind.INTS_NESTED, False)
    assert kind("split", "indices_or_sections") == (Kind.INT_OR_INTS, False)
    assert kind("sum", "axis") == (Kind.INTS, True)
    assert kind("take", "axis") == (Kind.INT, True)
    assert kind("image.resize2d", "roi") == (Kind.FLOATS, True)


def test_every_default_is_a_valid_value_of_its_kind():
    for schema in attrs_schemas().values():
        for field in schema.fields:
            if field.default is not REQUIRED:
                assert field.coerce(field.default) == field.default, (schema.name, field.name)
                assert (field.default is None) <= field.optional, (schema.name, field.name)
