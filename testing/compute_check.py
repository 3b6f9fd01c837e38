"""Check an operator's compute definition against its reference implementation.

    import relay.lang.opdefs.tensor as family
    from relay.testing.compute_check import (
        RandomArrays, check_compute, declared_op_names, op_names_called_in)

    arrays = RandomArrays(seed=0)

    def test_my_op():
        (out,) = check_compute("my_op", [arrays.uniform(2, 3), arrays.uniform(3)], axis=1)
        assert out.op.tag == "elemwise"  # the TE tensors the compute definition built

    def test_every_op_of_the_family_is_tested():
        assert declared_op_names(family) - op_names_called_in(__file__, "check_compute") == set()

`compute_and_reference` builds the compute definition on placeholders of the arrays' shapes
and dtypes, runs it with the TE evaluator in strict-select mode (a `select` whose unchosen
branch reads out of bounds is an error) and runs the operator's reference implementation on
the same arrays. `check_compute` compares the two: exactly for integers and booleans; floats
within a relative 1e-5 plus 1e-5 times the largest finite magnitude of the reference (for
cancellation), or within an explicit absolute `atol` (`assert_matches` compares two arrays so).

For schedule tests, `apply_compute` builds an operator's compute on TE tensors and
`run_default_schedule` schedules, lowers, compiles and runs a kernel.
"""

from __future__ import annotations

import ast
import ctypes
import inspect
from types import ModuleType

import numpy as np

from ..backend.lower import computes
from ..backend.lower.computes.elementwise import static_dims
from ..backend.runtime.op_impls import implementation_for
from ..backend.target import Target
from ..backend.te import placeholder
from ..backend.te.evaluate import evaluate
from ..backend.te.schedule import Schedule
from ..backend.te.tensor import Tensor
from ..lang.attrs import Attrs
from ..lang.op import get_op
from ..lang.types import TensorType, Type
from .relations import op_call_type


def compute_and_reference(
    op_name: str,
    arrays: list[np.ndarray],
    out_type: Type | None = None,
    tuple_arg: bool = False,
    **attrs: object,
) -> tuple[list[np.ndarray], list[np.ndarray], list[Tensor]]:
    """(compute results, reference results, compute output tensors) of one call of `op_name`
    on `arrays` with attributes `attrs`.

    `out_type` is the call's type (inferred by the type checker when None); with `tuple_arg`
    the arrays are passed as one tuple argument (`concatenate`, `einsum`); the compute
    definition gets the tuple's fields as a flat list of tensors, as lowering gives them.
    """
    op = get_op(op_name)
    checked = op.make_attrs(**attrs) if op.attrs_schema is not None else None
    if out_type is None:
        types = [TensorType(a.shape, str(a.dtype)) for a in arrays]
        out_type = op_call_type(op_name, *types, tuple_arg=tuple_arg, **attrs)
    holders = [placeholder(a.shape, str(a.dtype), f"p{k}") for k, a in enumerate(arrays)]
    # tuple fields flat, like lowering
    outs = computes.apply_compute(op, checked, holders, out_type)
    got = evaluate(outs, dict(zip(holders, arrays)), strict_select=True)
    args = [tuple(arrays)] if tuple_arg else list(arrays)
    with np.errstate(all="ignore"):
        ref = implementation_for(op)(args, checked)  # type: ignore[arg-type]
    expected = list(ref) if isinstance(ref, tuple) else [ref]
    return got, expected, outs


def check_compute(
    op_name: str,
    arrays: list[np.ndarray],
    out_type: Type | None = None,
    tuple_arg: bool = False,
    *,
    atol: float | None = None,
    **attrs: object,
) -> list[Tensor]:
    """Assert that the compute definition of `op_name` agrees with its reference on `arrays`
    (see `compute_and_reference` for the arguments) and return the compute's output tensors.

    Shapes and dtypes must be equal; integers and booleans exactly; floats to a relative 1e-5
    plus an absolute `atol` (default: 1e-5 times the reference's largest finite magnitude,
    at least 1e-5).
    """
    got, expected, outs = compute_and_reference(op_name, arrays, out_type, tuple_arg, **attrs)
    assert len(got) == len(expected), (len(got), len(expected))
    for g, e in zip(got, expected):
        assert_matches(g, e, atol=atol)
    return outs


def assert_matches(
    got: np.ndarray, want: np.ndarray, *, atol: float | None = None, atol_scale: float = 1e-5
) -> None:
    """Assert equal shape and dtype, equal integers and booleans, and floats within a relative
    1e-5 plus an absolute `atol` (default: `atol_scale` times the largest finite magnitude of
    `want`, taken as at least 1)."""
    assert got.shape == want.shape and got.dtype == want.dtype, (
        got.shape,
        want.shape,
        got.dtype,
        want.dtype,
    )
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    if atol is None:
        atol = atol_scale * float(np.max(np.abs(want[np.isfinite(want)]), initial=1.0))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=atol)


def apply_compute(
    op_name: str, inputs: list[Tensor], **attrs: object
) -> tuple[Tensor, Attrs | None]:
    """The one output tensor of `op_name`'s compute definition on the TE tensors `inputs`
    (static shapes), and the call's checked attributes."""
    op = get_op(op_name)
    checked = op.make_attrs(**attrs) if op.attrs_schema is not None else None
    types = [TensorType(static_dims(t), t.dtype) for t in inputs]
    out_type = op_call_type(op_name, *types, tuple_arg=False, **attrs)
    (out,) = computes.apply_compute(op, checked, list(inputs), out_type)
    return out, checked


def run_default_schedule(
    inputs: list[Tensor],
    outputs: list[Tensor],
    arrays: list[np.ndarray],
    target: Target | None = None,
) -> tuple[list[np.ndarray], Schedule]:
    """Schedule `outputs` with the default schedules for `target` (the host when None), lower
    them with `inputs` as parameters, compile, and run on `arrays`; returns (the output arrays,
    the schedule)."""
    from ..backend.codegen import compile_module
    from ..backend.lower.lower_func import schedule_outputs
    from ..backend.runtime.native import aligned_copy
    from ..backend.te import lower
    from ..backend.tir.transform import lower_pipeline

    s, _ = schedule_outputs(outputs, target)
    func = lower_pipeline(lower(s, list(inputs) + list(outputs), "kernel"))
    fn = compile_module([func]).get("kernel")
    ins = [aligned_copy(a) for a in arrays]
    outs = [aligned_copy(np.zeros(static_dims(t), t.dtype)) for t in outputs]
    fn(*(ctypes.c_void_p(a.ctypes.data) for a in ins + outs))
    return outs, s


def declared_op_names(opdefs_module: ModuleType) -> set[str]:
    """The operator names a `relay.lang.opdefs` family module declares: the string keys of
    its dict tables and the first field of its five-field declaration rows."""
    tree = ast.parse(inspect.getsource(opdefs_module))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            names.update(
                k.value
                for k in node.keys
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            )
        if isinstance(node, ast.Tuple) and len(node.elts) == 5:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
    return names


def op_names_called_in(path: str, function: str) -> set[str]:
    """The string constants passed as first argument to calls of the plain name `function` in
    the Python file at `path` (a test file's `__file__`: the operators it checks)."""
    with open(path) as f:
        tree = ast.parse(f.read())
    return {
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == function
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    }


class RandomArrays:
    """Random test arrays drawn from one seeded numpy generator (`rng`, for anything else).

    `uniform` and `ints` take their bounds from the constructor unless given; `ints` draws
    from the half-open range [lo, hi).
    """

    def __init__(
        self,
        seed: int,
        float_range: tuple[float, float] = (-2.0, 2.0),
        int_range: tuple[int, int] = (-9, 10),
    ) -> None:
        self.rng = np.random.default_rng(seed)
        self.float_range = float_range
        self.int_range = int_range

    def uniform(
        self,
        *shape: int,
        lo: float | None = None,
        hi: float | None = None,
        dtype: str = "float32",
    ) -> np.ndarray:
        """Uniform random floats in [lo, hi)."""
        lo = self.float_range[0] if lo is None else lo
        hi = self.float_range[1] if hi is None else hi
        return self.rng.uniform(lo, hi, shape).astype(dtype)

    def ints(
        self, *shape: int, lo: int | None = None, hi: int | None = None, dtype: str = "int32"
    ) -> np.ndarray:
        """Uniform random integers in [lo, hi)."""
        lo = self.int_range[0] if lo is None else lo
        hi = self.int_range[1] if hi is None else hi
        return self.rng.integers(lo, hi, shape).astype(dtype)

    def normal(self, *shape: int, dtype: str = "float32") -> np.ndarray:
        """Standard normal floats."""
        return self.rng.normal(size=shape).astype(dtype)
