"""Compute definitions of the reduce family (lang/opdefs/reduce.py) against the reference
implementations, evaluated with the vectorized TE evaluator."""

from __future__ import annotations

import ast
import inspect

import numpy as np
import pytest
import relay.lang.opdefs.reduce as family_module
from relay.backend.lower.computes import compute_for, has_compute
from relay.backend.runtime.op_impls import implementation_for
from relay.backend.te import placeholder
from relay.backend.te.evaluate import evaluate
from relay.lang.op import get_op
from relay.lang.types import TensorType, Type
from relay.testing.relations import op_call_type

RNG = np.random.default_rng(5)


def run_both(
    name: str,
    arrays: list[np.ndarray],
    out_type: Type | None = None,
    tuple_arg: bool = False,
    **attrs: object,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(compute result, reference result) of `name` on `arrays`."""
    op = get_op(name)
    checked = op.make_attrs(**attrs) if op.attrs_schema is not None else None
    types = [TensorType(a.shape, str(a.dtype)) for a in arrays]
    if out_type is None:
        out_type = op_call_type(name, *types, tuple_arg=tuple_arg, **attrs)
    phs = [placeholder(a.shape, str(a.dtype), f"p{k}") for k, a in enumerate(arrays)]
    outs = compute_for(op)(checked, [tuple(phs)] if tuple_arg else phs, out_type)
    got = evaluate(outs, dict(zip(phs, arrays)), strict_select=True)
    args = [tuple(arrays)] if tuple_arg else list(arrays)
    with np.errstate(all="ignore"):
        ref = implementation_for(op)(args, checked)  # type: ignore[arg-type]
    expected = list(ref) if isinstance(ref, tuple) else [ref]
    return got, expected


def check(name: str, arrays: list[np.ndarray], **kwargs: object) -> None:
    """The compute of `name` equals the reference: exactly for integers, to 1e-5 for floats."""
    got, expected = run_both(name, arrays, **kwargs)  # type: ignore[arg-type]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
        if e.dtype.kind == "f":
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(g, e)


def declared_ops(module: object) -> set[str]:
    """Operator names a lang/opdefs module declares (dict keys of its tables and the first
    field of its declare rows)."""
    tree = ast.parse(inspect.getsource(module))  # type: ignore[arg-type]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            names.update(k.value for k in node.keys if isinstance(k, ast.Constant))
        if isinstance(node, ast.Tuple) and len(node.elts) == 5:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
    return names


def randf(*shape: int, lo: float = -2.0, hi: float = 2.0, dtype: str = "float32") -> np.ndarray:
    """Uniform random floats."""
    return RNG.uniform(lo, hi, shape).astype(dtype)


def randi(*shape: int, lo: int = -9, hi: int = 10, dtype: str = "int32") -> np.ndarray:
    """Uniform random integers in [lo, hi)."""
    return RNG.integers(lo, hi, shape).astype(dtype)


def verify(name: str, arrays: list[np.ndarray], **kwargs: object) -> None:
    """`check` (the coverage test below finds the operators tested by these calls)."""
    check(name, arrays, **kwargs)


def names_tested_here() -> set[str]:
    """The operator names passed to `verify(...)` in this file."""
    with open(__file__) as f:
        tree = ast.parse(f.read())
    return {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "verify"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    }


# ------------------------------------------------------------------------------ reductions

AXES = [
    dict(axis=None),
    dict(axis=[1]),
    dict(axis=[0, 2], keepdims=True),
    dict(axis=[-1]),
    dict(axis=[1], exclude=True),
    dict(axis=[0, 1, 2], exclude=True),
    dict(axis=[2, 0]),
    dict(axis=None, keepdims=True),
]


@pytest.mark.parametrize("kw", AXES)
def test_sum_prod_max_min_mean(kw: dict) -> None:  # type: ignore[type-arg]
    x = randf(2, 3, 4)
    i = randi(2, 3, 4, lo=-3, hi=4)
    for args in ([x], [i], [i.astype("int8") * 40]):
        verify("sum", args, **kw)
        verify("max", args, **kw)
        verify("min", args, **kw)
        verify("mean", args, **kw)
    verify("prod", [randf(2, 3, 4, lo=0.5, hi=1.5)], **kw)
    verify("prod", [i], **kw)


@pytest.mark.parametrize("kw", AXES)
def test_all_any(kw: dict) -> None:  # type: ignore[type-arg]
    b = RNG.random((2, 3, 4)) < 0.7
    for args in ([b], [randi(2, 3, 4, lo=0, hi=2)], [randi(2, 3, 4, lo=0, hi=3).astype("float32")]):
        verify("all", args, **kw)
        verify("any", args, **kw)
    verify("all", [np.ones((2, 3, 4), bool)], **kw)
    verify("any", [np.zeros((2, 3, 4), bool)], **kw)


def test_reductions_of_scalars_and_vectors() -> None:
    for name in ("sum", "max", "min", "mean", "prod", "all", "any"):
        verify(name, [np.array(1.5, "float32")])
        verify(name, [randf(5)], axis=[0])
        verify(name, [randf(5)], axis=[0], keepdims=True)


def test_max_with_infinities_and_empty_reductions() -> None:
    x = np.array([[-np.inf, -np.inf], [1.0, np.inf]], "float32")
    verify("max", [x], axis=[1])
    verify("min", [x], axis=[1])
    verify("max", [np.zeros((3, 0), "float32")], axis=[1])
    verify("min", [np.zeros((3, 0), "int32")], axis=[1])
    verify("sum", [np.zeros((3, 0), "float32")], axis=[1])


def test_integer_mean_divides_toward_zero() -> None:
    verify("mean", [np.array([[-7, 2], [7, 0], [-1, 0]], "int32")], axis=[1])
    verify("mean", [np.full((2, 200), 3, "int8")], axis=[1])  # count 200 wraps in int8


@pytest.mark.parametrize("kw", AXES[:7])
@pytest.mark.parametrize("unbiased", [False, True])
def test_variance(kw: dict, unbiased: bool) -> None:  # type: ignore[type-arg]
    arrays = [randf(2, 3, 4), randi(2, 3, 4, lo=-5, hi=6)]
    if unbiased and kw.get("exclude") and len(kw["axis"]) == 3:
        arrays = arrays[:1]  # an integer division by count - 1 = 0 is an error
    for x in arrays:
        axes = kw["axis"]
        keep_axes = tuple(range(3)) if axes is None else tuple(a % 3 for a in axes)
        if kw.get("exclude"):
            keep_axes = tuple(a for a in range(3) if a not in keep_axes)
        m = np.mean(x, axis=keep_axes, keepdims=True).astype(x.dtype)
        verify("variance", [x, m], unbiased=unbiased, **kw)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("last", [False, True])
@pytest.mark.parametrize("kw", AXES[:7])
def test_argmax_argmin(name: str, last: bool, kw: dict) -> None:  # type: ignore[type-arg]
    verify(name, [randf(2, 3, 4)], select_last_index=last, **kw)
    ties = randi(2, 3, 4, lo=0, hi=3)  # many ties
    verify(name, [ties], select_last_index=last, **kw)
    verify(name, [ties.astype("int8")], select_last_index=last, **kw)


def test_argmax_at_the_extremes_of_the_dtype() -> None:
    x = np.array([[-128, -128, -128], [127, 127, -128]], "int8")
    for name in ("argmax", "argmin"):
        for last in (False, True):
            verify(name, [x], axis=[1], select_last_index=last)
    f = np.array([[-np.inf, -np.inf], [np.inf, np.inf]], "float32")
    for name in ("argmax", "argmin"):
        verify(name, [f], axis=[1])
        verify(name, [f], axis=[1], select_last_index=True)


def test_argmax_without_reduced_axes_is_zero() -> None:
    verify("argmax", [randf(2, 3)], axis=[1, 0], exclude=True)
    verify("argmin", [randf(2, 3)], axis=[0, 1], exclude=True)


# ------------------------------------------------------------------------------- coverage


def test_every_reduce_op_has_a_compute_and_a_test() -> None:
    names = declared_ops(family_module)
    assert len(names) == 10
    assert sorted(n for n in names if not has_compute(get_op(n))) == []
    assert names - names_tested_here() == set()
