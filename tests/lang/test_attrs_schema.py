"""Attribute schemas: defaults, required fields, unknown keys, kinds."""

import pytest
from relay.lang import AttrField, AttrsError, AttrsSchema, Kind
from relay.lang.attrs import REQUIRED

SCHEMA = AttrsSchema(
    "TestAttrs",
    [
        AttrField("units", Kind.INT, REQUIRED, optional=True),
        AttrField("strides", Kind.INTS, (1, 1)),
        AttrField("alpha", Kind.FLOAT, 0.25),
        AttrField("layout", Kind.STR, "NCHW"),
        AttrField("out_dtype", Kind.DTYPE, "", optional=True),
        AttrField("keep", Kind.BOOL, False),
        AttrField("pad_width", Kind.INTS_NESTED, ((0, 0),)),
    ],
)


def test_defaults_and_normalization():
    attrs = SCHEMA.make(units=4, strides=[2, 2], alpha=1, out_dtype="float")
    assert attrs.units == 4
    assert attrs.strides == (2, 2)
    assert attrs.alpha == 1.0 and isinstance(attrs.alpha, float)
    assert attrs.out_dtype == "float32"
    assert attrs.layout == "NCHW"
    assert dict(attrs.non_default_items()) == {
        "units": 4,
        "strides": (2, 2),
        "alpha": 1.0,
        "out_dtype": "float32",
    }


def test_required_field_missing():
    strict = AttrsSchema("StrictAttrs", [AttrField("a_min", Kind.FLOAT, REQUIRED)])
    with pytest.raises(AttrsError, match="missing required attribute `a_min`"):
        strict.make()


def test_required_nullable_field_may_be_omitted():
    assert SCHEMA.make().units is None
    # the printer still writes it, as TVM does (`units=None`)
    assert dict(SCHEMA.make().non_default_items()) == {"units": None}


def test_required_optional_field_accepts_none():
    assert SCHEMA.make(units=None).units is None


def test_unknown_key_names_the_key():
    with pytest.raises(AttrsError, match="no attribute `stride`"):
        SCHEMA.make(units=1, stride=[1, 1])


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("strides", "x"),
        ("alpha", "x"),
        ("keep", 2),
        ("layout", 1),
        ("out_dtype", "float31"),
        ("pad_width", [1, 2]),
        ("strides", None),
    ],
)
def test_wrong_kind_is_an_error_naming_the_field(key, value):
    with pytest.raises(AttrsError, match=f"TestAttrs.{key}"):
        SCHEMA.make(units=1, **{key: value})


def test_equality_and_hash_are_structural():
    a = SCHEMA.make(units=1, strides=[1, 2])
    b = SCHEMA.make(units=1, strides=(1, 2))
    assert a == b and hash(a) == hash(b)
    assert a.replace(units=1) is a
    assert a.replace(units=2).units == 2


def test_unknown_attribute_read_raises_attribute_error():
    with pytest.raises(AttributeError):
        _ = SCHEMA.make(units=1).nothing
