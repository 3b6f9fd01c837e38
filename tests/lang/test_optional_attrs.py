"""Operator attributes whose omission (or TVM's printed `None`) has a meaning.

Each program leaves an attribute out, or writes it as `None` the way TVM's printer does,
and must type-check, run in the interpreter and build with llvm, giving numpy's answer
for TVM's meaning of the omission; its printed text must parse back to the same result.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
import relay
from relay.grammar import parse
from relay.lang.diagnostics import TypeCheckError
from relay.lang.types import TensorType
from relay.passes import simplify_inference_pass
from relay.typecheck import check_module

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 6)).astype("float32")
X3 = RNG.standard_normal((2, 3, 4)).astype("float32")


def _l2(x: np.ndarray, axes: tuple[int, ...] | None, eps: float) -> np.ndarray:
    total = np.sum(x.astype("float64") ** 2, axis=axes, keepdims=True)
    return (x / np.sqrt(np.maximum(total, eps))).astype(x.dtype)


def _program(params: dict[str, np.ndarray], body: str) -> str:
    sig = ", ".join(
        f"%{name}: Tensor[({', '.join(map(str, v.shape))}), {v.dtype}]"
        for name, v in params.items()
    )
    return f'#[version = "0.0.5"]\ndef @main({sig}) {{\n  {body}\n}}\n'


# (name, body, inputs, expected); every body is checked, interpreted, built and printed.
CASES: list[tuple[str, str, dict[str, np.ndarray], np.ndarray]] = [
    # strided_slice: `strides` omitted or None means a stride of 1 on every sliced axis.
    (
        "strided_slice strides omitted",
        "strided_slice(%x, begin=[1, 2], end=[3, 5])",
        {"x": X},
        X[1:3, 2:5],
    ),
    (
        "strided_slice strides=None",
        "strided_slice(%x, begin=[1, 2], end=[3, 5], strides=None, axes=None)",
        {"x": X},
        X[1:3, 2:5],
    ),
    (
        "strided_slice strides omitted, leading axis only",
        "strided_slice(%x, begin=[-3], end=[4])",
        {"x": X},
        X[-3:4],
    ),
    (
        "strided_slice strides omitted with axes",
        "strided_slice(%x, begin=[1, 0], end=[5, 3], axes=[2, 0])",
        {"x": X3},
        X3[0:3, :, 1:5],
    ),
    (
        "strided_slice strides=None with axes",
        "strided_slice(%x, begin=[2], end=[6], strides=None, axes=[-1])",
        {"x": X},
        X[:, 2:6],
    ),
    (
        "strided_slice strides omitted in size mode",
        'strided_slice(%x, begin=[1, 2], end=[2, -1], slice_mode="size")',
        {"x": X},
        X[1:3, 2:],
    ),
    # nn.l2_normalize: `axis` omitted or None (TVM's null array) normalizes over every axis.
    (
        "l2_normalize axis omitted",
        "nn.l2_normalize(%x, eps=1e-05f)",
        {"x": X3},
        _l2(X3, None, 1e-5),
    ),
    (
        "l2_normalize axis=None",
        "nn.l2_normalize(%x, eps=1e-05f, axis=None)",
        {"x": X},
        _l2(X, None, 1e-5),
    ),
    (
        "l2_normalize axis=None, large eps",
        "nn.l2_normalize(%x, eps=100f, axis=None)",
        {"x": X},
        _l2(X, None, 100.0),
    ),
]

W = RNG.standard_normal((5, 6)).astype("float32")
IMG = RNG.standard_normal((1, 2, 5, 5)).astype("float32")
KERNEL = RNG.standard_normal((3, 2, 1, 1)).astype("float32")
INDICES = np.array([[0, 5], [23, 7]], "int32")
LABELS = np.array([0, 2, 1], "int32")
INT = (X * 10).astype("int32")

# The rest of the audit: omissions that already had TVM's meaning, kept as regressions.
AUDITED: list[tuple[str, str, dict[str, np.ndarray], np.ndarray]] = [
    ("sum axis omitted", "sum(%x)", {"x": X}, np.asarray(X.sum())),
    (
        "mean axis=None keepdims",
        "mean(%x, axis=None, keepdims=True)",
        {"x": X},
        X.mean((0, 1), keepdims=True),
    ),
    ("max axis=None exclude", "max(%x, axis=None, exclude=True)", {"x": X}, np.asarray(X.max())),
    ("argmax axis omitted", "argmax(%x)", {"x": X}, np.asarray(X.argmax(), "int32")),
    ("squeeze axis=None", "squeeze(%x, axis=None)", {"x": IMG[:1, :1]}, IMG[0, 0]),
    ("transpose axes=None", "transpose(%x, axes=None)", {"x": X3}, X3.transpose()),
    ("take axis=None", "take(%x, %i, axis=None)", {"x": X, "i": INDICES}, np.take(X, INDICES)),
    (
        "cumsum axis, dtype, exclusive None",
        "cumsum(%x, axis=None, dtype=None, exclusive=None)",
        {"x": INT},
        np.cumsum(INT).astype("int32"),
    ),
    ("reverse axis omitted", "reverse(%x)", {"x": X}, np.flip(X)),
    ("repeat axis omitted", "repeat(%x, repeats=2)", {"x": X}, np.repeat(X, 2)),
    (
        "gather_nd index_rank=None",
        "gather_nd(%x, %i, index_rank=None)",
        {"x": X, "i": INDICES % 4},
        X[tuple(INDICES % 4)],
    ),
    (
        "slice_like axes=None",
        "slice_like(%x, %y, axes=None)",
        {"x": X, "y": W[:2, :3].copy()},
        X[:2, :3],
    ),
    (
        "reshape_like ends None",
        "reshape_like(%x, %y, lhs_end=None, rhs_end=None)",
        {"x": X, "y": X.reshape(3, 8).copy()},
        X.reshape(3, 8),
    ),
    (
        "dense units, out_dtype None",
        "nn.dense(%x, %w, units=None, out_dtype=None)",
        {"x": X, "w": W},
        X @ W.T,
    ),
    (
        "conv2d channels, kernel_size, out_dtype None",
        'nn.conv2d(%x, %w, channels=None, kernel_size=None, out_layout="", out_dtype=None)',
        {"x": IMG, "w": KERNEL},
        np.einsum("nchw,oc->nohw", IMG, KERNEL[:, :, 0, 0]),
    ),
    (
        "adaptive_avg_pool2d output_size=None",
        "nn.adaptive_avg_pool2d(%x, output_size=None)",
        {"x": IMG},
        IMG,
    ),
    ("topk k=None", 'topk(%x, k=None, ret_type="values")', {"x": X}, -np.sort(-X, axis=-1)),
    (
        "one_hot dtype=None",
        "one_hot(%i, 1f, 0f, depth=3, dtype=None)",
        {"i": LABELS},
        np.eye(3, dtype="float32")[LABELS],
    ),
    (
        "full dtype=None",
        "full(%x, shape=[2, 3], dtype=None)",
        {"x": np.array(2.5, "float32")},
        np.full((2, 3), 2.5, "float32"),
    ),
    ("shape_of dtype=None", "shape_of(%x, dtype=None)", {"x": X}, np.array([4, 6], "int32")),
    (
        "resize2d roi=None",
        'image.resize2d(%x, size=[5, 5], roi=None, method="nearest_neighbor", out_dtype=None)',
        {"x": IMG},
        IMG,
    ),
]


def _as_list(value: Any) -> list[np.ndarray]:
    if isinstance(value, tuple | list):
        return [np.asarray(v) for v in value]
    return [np.asarray(value)]


def _assert_matches(got: Any, want: np.ndarray, where: str) -> None:
    (value,) = _as_list(got)
    assert value.shape == want.shape and value.dtype == want.dtype, where
    np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6, err_msg=where)


@pytest.mark.parametrize(
    ("body", "inputs", "want"),
    [c[1:] for c in CASES + AUDITED],
    ids=[c[0] for c in CASES + AUDITED],
)
def test_omitted_attribute_has_tvms_meaning(
    body: str, inputs: dict[str, np.ndarray], want: np.ndarray
) -> None:
    mod = parse(_program(inputs, body))
    ret = check_module(mod).global_types["main"].ret_type
    assert ret == TensorType(want.shape, str(want.dtype))
    _assert_matches(relay.interpret(mod, **inputs), want, "interpreter")
    _assert_matches(relay.build(mod, target="llvm").run(**inputs), want, "llvm")
    again = parse(mod.astext())
    _assert_matches(relay.interpret(again, **inputs), want, "interpreter after printing")


def test_printer_writes_omitted_strides_as_none_which_parses() -> None:
    mod = parse(_program({"x": X}, "strided_slice(%x, begin=[1, 2], end=[3, 5])"))
    text = mod.astext()
    assert "strides=None" in text and "axes=None" in text
    again = parse(text)
    assert check_module(again).global_types["main"].ret_type == TensorType((2, 3), "float32")
    np.testing.assert_array_equal(relay.interpret(again, x=X), X[1:3, 2:5])


def test_simplify_inference_expands_l2_normalize_over_every_axis() -> None:
    mod = parse(_program({"x": X3}, "nn.l2_normalize(%x, eps=1e-05f, axis=None)"))
    simplified = simplify_inference_pass(mod)
    assert "l2_normalize" not in simplified.astext()
    got = relay.interpret(simplified, x=X3)
    np.testing.assert_allclose(got, _l2(X3, None, 1e-5), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("strided_slice(%x, end=[3])", "`begin` must be a list of integers, not None"),
        (
            "strided_slice(%x, begin=[0], end=[2], axes=[0, 1])",
            "axes=[0, 1], begin=[0] and end=[2] must have the same length",
        ),
        ("nn.l2_normalize(%x, eps=1f, axis=[1, -1])", "axis -1 is given twice"),
    ],
)
def test_omissions_without_a_meaning_are_diagnosed(body: str, message: str) -> None:
    mod = parse(_program({"x": X}, body))
    with pytest.raises(TypeCheckError, match=re.escape(message)):
        check_module(mod)
