"""A vectorized numpy evaluator of tensor expressions, the oracle of compute definitions.

    out = evaluate(C, {A: a, B: b})[0]

Each `ComputeOp` body is evaluated once, as numpy arrays over the index grid of its output
(each axis variable is an `int64` array broadcastable over the grid; reduce axes are extra
trailing grid dimensions). `ProducerLoad`s are fancy indexing of the producer's array.
Out-of-range reads are allowed only where the value is not used: on the untaken side of
`if_then_else` (and of `Select`, unless `strict_select=True`) or where a `Reduce` condition is
false; there indices are clipped into range and the result discarded with `np.where`. A read
out of range anywhere else is an `IndexError` (a bug of the compute definition).

Dtype semantics are the loop IR's: integers wrap around at their width, integer `Div`/`Mod`
truncate and `FloorDiv`/`FloorMod` floor, casts from float to int truncate, casts to bool are
`!= 0`, `round` rounds half away from zero, float32 math is done in float32 (or in float64
and rounded, for `erf` and for sums and products). `ExternOp`s run through the TIR reference
evaluator. Each operation is evaluated once per call.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ...lang.dtype import numpy_dtype
from ...lang.trampoline import Step, run
from ..tir import expr as E
from ..tir.dtypes import is_bool, lanes_of
from .tensor import ComputeOp, ExternOp, Operation, PlaceholderOp, ProducerLoad, Tensor

Array = np.ndarray
Mask = Any  # None (every position is used) or a bool array broadcastable over the grid


def evaluate(
    tensors: Tensor | Sequence[Tensor],
    inputs: Mapping[Tensor, np.ndarray],
    *,
    strict_select: bool = False,
) -> list[np.ndarray]:
    """The values of `tensors` (one array each) when the placeholders are bound by `inputs`.

    With `strict_select`, both sides of a `Select` must read in range (as native code
    evaluates both); by default a `Select` guards reads like `if_then_else`.
    """
    wanted = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    evaluator = _Evaluator(inputs, strict_select)
    with np.errstate(all="ignore"):
        for op in _post_order([t.op for t in wanted]):
            evaluator.run_op(op)
    return [evaluator.value_of(t) for t in wanted]


def _post_order(roots: list[Operation]) -> list[Operation]:
    """Operations reachable from `roots`, each after the operations it reads."""
    order: list[Operation] = []
    seen: set[int] = set()
    stack: list[tuple[Operation, bool]] = [(op, False) for op in reversed(roots)]
    while stack:
        op, expanded = stack.pop()
        if expanded:
            order.append(op)
            continue
        if id(op) in seen:
            continue
        seen.add(id(op))
        stack.append((op, True))
        stack.extend((t.op, False) for t in reversed(op.input_tensors) if id(t.op) not in seen)
    return order


def _np_dtype(dtype: str) -> np.dtype:
    if lanes_of(dtype) != 1:
        raise TypeError(f"the TE evaluator handles scalar dtypes only, got {dtype}")
    return numpy_dtype(dtype)


def _static_int(value: E.PrimExpr) -> int:
    """A shape or extent as a Python int (constant expressions are folded)."""
    if isinstance(value, E.IntImm):
        return value.value
    folded = run(_ExprEvaluator({}, {}, False).eval(value, None))
    if np.ndim(folded) != 0:
        raise ValueError("shapes and extents must be constants")
    return int(folded)


class _Evaluator:
    """The values of the operations evaluated so far."""

    def __init__(self, inputs: Mapping[Tensor, np.ndarray], strict_select: bool) -> None:
        self.inputs = inputs
        self.strict_select = strict_select
        self.values: dict[int, tuple[Array, ...]] = {}
        self.keep: list[Operation] = []  # keeps ids valid while values are memoized

    def value_of(self, tensor: Tensor) -> Array:
        """The value of an already evaluated tensor."""
        return self.values[id(tensor.op)][tensor.value_index]

    def run_op(self, op: Operation) -> None:
        """Evaluate `op` (its inputs are already evaluated) and remember its outputs."""
        if id(op) in self.values:
            return
        if isinstance(op, PlaceholderOp):
            result: tuple[Array, ...] = (self._placeholder(op),)
        elif isinstance(op, ComputeOp):
            result = self._compute(op)
        elif isinstance(op, ExternOp):
            result = self._extern(op)
        else:
            raise TypeError(f"cannot evaluate operation {type(op).__name__}")
        self.keep.append(op)
        self.values[id(op)] = result

    def _placeholder(self, op: PlaceholderOp) -> Array:
        tensor = op.output(0)
        if tensor not in self.inputs:
            raise KeyError(f"no value given for placeholder `{op.name}`")
        value = np.asarray(self.inputs[tensor])
        shape = tuple(_static_int(d) for d in op.shape)
        if value.shape != shape:
            raise ValueError(f"placeholder `{op.name}` has shape {shape}, given {value.shape}")
        return value.astype(_np_dtype(op.dtype), copy=False)

    def _extern(self, op: ExternOp) -> tuple[Array, ...]:
        from ..tir.evaluate import run_primfunc
        from ..tir.stmt import PrimFunc

        ins = [
            np.array(self.value_of(t), dtype=_np_dtype(b.dtype), order="C")
            for t, b in zip(op.inputs, op.input_buffers)
        ]
        outs = [
            np.zeros(tuple(_static_int(d) for d in b.shape), dtype=_np_dtype(b.dtype))
            for b in op.output_buffers
        ]
        func = PrimFunc(op.name, (*op.input_buffers, *op.output_buffers), op.body)
        run_primfunc(func, *ins, *outs)
        return tuple(outs)

    def _compute(self, op: ComputeOp) -> tuple[Array, ...]:
        shape = tuple(_static_int(iv.dom.extent) for iv in op.axis)
        dtypes = [_np_dtype(b.dtype) for b in op.body]
        if math.prod(shape) == 0:
            return tuple(np.zeros(shape, dt) for dt in dtypes)
        reduce_axes = op.reduce_axis
        ndim = len(shape) + len(reduce_axes)
        env: dict[E.Var, Array] = {}
        for k, iv in enumerate((*op.axis, *reduce_axes)):
            lo = _static_int(iv.dom.min)
            extent = _static_int(iv.dom.extent)
            grid_shape = [1] * ndim
            grid_shape[k] = extent
            env[iv.var] = (lo + np.arange(extent, dtype=np.int64)).reshape(grid_shape)
        exprs = _ExprEvaluator(env, self.values, self.strict_select)
        first = op.body[0]
        if isinstance(first, E.Reduce):
            for body in op.body:
                if not isinstance(body, E.Reduce) or body.combiner is not first.combiner:
                    raise TypeError(f"{op.name}: every body of a reduction must share its Reduce")
            extents = tuple(_static_int(iv.dom.extent) for iv in reduce_axes)
            reduced = _reduce(exprs, first, shape, extents)
            picks = [b.value_index for b in op.body if isinstance(b, E.Reduce)]
            return tuple(np.array(reduced[k], dtype=dt, order="C") for k, dt in zip(picks, dtypes))
        out = []
        for body, dt in zip(op.body, dtypes):
            value = run(exprs.eval(body, None))
            out.append(np.array(np.broadcast_to(value, shape), dtype=dt))
        return tuple(out)


# -------------------------------------------------------------------------------- reduction

_SIMPLE_COMBINERS: dict[type, np.ufunc] = {
    E.Add: np.add,
    E.Mul: np.multiply,
    E.Max: np.maximum,
    E.Min: np.minimum,
    E.And: np.logical_and,
    E.Or: np.logical_or,
}


def _simple_ufunc(combiner: E.CommReducer) -> np.ufunc | None:
    """The numpy ufunc of a one-value sum/product/max/min combiner, or None."""
    if len(combiner.result) != 1:
        return None
    res = combiner.result[0]
    ufunc = _SIMPLE_COMBINERS.get(type(res))
    if ufunc is None:
        return None
    x, y = combiner.lhs[0], combiner.rhs[0]
    operands = (res.a, res.b)  # type: ignore[attr-defined]
    if (operands[0] is x and operands[1] is y) or (operands[0] is y and operands[1] is x):
        return ufunc
    return None


def _reduce(
    exprs: _ExprEvaluator, red: E.Reduce, shape: tuple[int, ...], extents: tuple[int, ...]
) -> list[Array]:
    """Every component of the tuple reduction `red` over the trailing grid dimensions."""
    combiner = red.combiner
    full = (*shape, *extents)
    cond = run(exprs.eval(red.condition, None))
    always = np.ndim(cond) == 0 and bool(cond)
    mask = None if always else cond
    sources = [np.broadcast_to(run(exprs.eval(s, mask)), full) for s in red.source]
    cond_full = None if always else np.broadcast_to(cond, full)
    ident_eval = _ExprEvaluator({}, {}, exprs.strict_select)
    identity = [
        np.asarray(run(ident_eval.eval(e, None))).astype(s.dtype)
        for e, s in zip(combiner.identity, sources)
    ]
    axes = tuple(range(len(shape), len(full)))
    ufunc = _simple_ufunc(combiner)
    if ufunc is not None:
        src, ident = sources[0], identity[0]
        if cond_full is not None:
            src = np.where(cond_full, src, ident)
        acc_dtype = src.dtype
        if ufunc in (np.add, np.multiply) and src.dtype.kind == "f" and src.dtype.itemsize < 8:
            acc_dtype = np.dtype(np.float64)  # accumulate exactly-ish, round once
        result = ufunc.reduce(
            src.astype(acc_dtype, copy=False), axis=axes, dtype=acc_dtype, initial=ident.item()
        )
        return [np.asarray(result).astype(src.dtype)]
    # A generic (tuple) combiner: fold in iteration order, vectorized over the output grid.
    count = math.prod(extents)
    flat = [s.reshape((*shape, count)) for s in sources]
    flat_cond = None if cond_full is None else cond_full.reshape((*shape, count))
    acc = [np.array(np.broadcast_to(i, shape)) for i in identity]
    for k in range(count):
        env: dict[E.Var, Array] = {}
        for var, value in zip(combiner.lhs, acc):
            env[var] = value
        for var, value in zip(combiner.rhs, flat):
            env[var] = value[..., k]
        step = _ExprEvaluator(env, {}, exprs.strict_select)
        new = [run(step.eval(r, None)) for r in combiner.result]
        if flat_cond is None:
            acc = [np.asarray(n).astype(a.dtype) for n, a in zip(new, acc)]
        else:
            acc = [np.where(flat_cond[..., k], n, a).astype(a.dtype) for n, a in zip(new, acc)]
    return [np.broadcast_to(a, shape) for a in acc]


# ------------------------------------------------------------------------------ expressions


def _trunc_div(a: Array, b: Array) -> Array:
    safe = np.where(b == 0, np.ones_like(b), b)
    return np.asarray((a - np.fmod(a, safe)) // safe)


def _floor_mod_float(a: Array, b: Array) -> Array:
    return np.asarray(a - np.floor(a / b) * b)


def _round_half_away(x: Array) -> Array:
    whole = np.trunc(x)
    bump = np.where(np.abs(x - whole) >= 0.5, np.sign(x), 0).astype(x.dtype)
    return np.asarray(whole + bump)


_erf_py = np.frompyfunc(math.erf, 1, 1)


def _erf(x: Array) -> Array:
    return np.asarray(_erf_py(np.asarray(x, dtype=np.float64)), dtype=np.float64).astype(x.dtype)


def _sigmoid(x: Array) -> Array:
    one = np.ones((), x.dtype)
    return np.asarray(one / (one + np.exp(-x)))


def _popcount(x: Array) -> Array:
    bits = np.asarray(x).view(f"u{np.asarray(x).dtype.itemsize}")
    return np.asarray(np.bitwise_count(bits)).astype(x.dtype)


def _pow(a: Array, b: Array) -> Array:
    if a.dtype.kind in "iu":
        nonneg = np.power(a, np.where(b < 0, np.zeros_like(b), b))
        neg = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
        return np.asarray(np.where(b < 0, neg.astype(a.dtype), nonneg))
    return np.asarray(np.power(a, b))


_UNARY: dict[str, Callable[[Array], Any]] = {
    "exp": np.exp,
    "exp2": np.exp2,
    "exp10": lambda x: np.power(np.asarray(10, x.dtype), x),
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: np.ones((), x.dtype) / np.sqrt(x),
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "erf": _erf,
    "sigmoid": _sigmoid,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": _round_half_away,
    "nearbyint": np.rint,
    "trunc": np.trunc,
    "fabs": np.abs,
    "bitwise_not": np.invert,
    "popcount": _popcount,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
}

_BINARY_CALLS: dict[str, Callable[[Array, Array], Any]] = {
    "pow": _pow,
    "atan2": np.arctan2,
    "fmod": np.fmod,
    "copysign": np.copysign,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "shift_left": np.left_shift,
    "shift_right": np.right_shift,
}


def _binary_op(node: E.PrimExpr, a: Array, b: Array) -> Any:
    fl = a.dtype.kind == "f"
    if isinstance(node, E.Add):
        return np.logical_or(a, b) if a.dtype == np.bool_ else a + b
    if isinstance(node, E.Sub):
        return a - b
    if isinstance(node, E.Mul):
        return np.logical_and(a, b) if a.dtype == np.bool_ else a * b
    if isinstance(node, E.Div):
        return a / b if fl else _trunc_div(a, b)
    if isinstance(node, E.Mod):
        return np.fmod(a, b)
    if isinstance(node, E.FloorDiv):
        return np.floor(a / b) if fl else np.floor_divide(a, b)
    if isinstance(node, E.FloorMod):
        return _floor_mod_float(a, b) if fl else np.mod(a, b)
    if isinstance(node, E.Min):
        return np.minimum(a, b)
    if isinstance(node, E.Max):
        return np.maximum(a, b)
    if isinstance(node, E.EQ):
        return a == b
    if isinstance(node, E.NE):
        return a != b
    if isinstance(node, E.LT):
        return a < b
    if isinstance(node, E.LE):
        return a <= b
    if isinstance(node, E.GT):
        return a > b
    if isinstance(node, E.GE):
        return a >= b
    if isinstance(node, E.And):
        return np.logical_and(a, b)
    if isinstance(node, E.Or):
        return np.logical_or(a, b)
    raise TypeError(f"unknown binary node {type(node).__name__}")


_BINARY_NODES = (E.BinaryOp, E.CmpOp, E.And, E.Or)


def _cast(dtype: str, value: Array) -> Array:
    target = _np_dtype(dtype)
    if is_bool(dtype):
        return np.asarray(value != 0)
    if value.dtype.kind == "f" and target.kind in "iu":
        value = np.trunc(value)
        if target.kind == "u" or target.itemsize < 8:
            # C leaves out-of-range conversions undefined; wrap like an int64 conversion.
            return np.asarray(value.astype(np.int64).astype(target))
    return np.asarray(value.astype(target))


def _masked(mask: Mask, cond: Array) -> Mask:
    return cond if mask is None else np.logical_and(mask, cond)


def _any(mask: Mask) -> bool:
    return True if mask is None else bool(np.any(mask))


class _ExprEvaluator:
    """Evaluates expressions over one index grid; `env` binds variables to arrays."""

    def __init__(
        self,
        env: dict[E.Var, Array],
        values: Mapping[int, tuple[Array, ...]],
        strict_select: bool,
    ) -> None:
        self.env = env
        self.values = values
        self.strict_select = strict_select
        self.memo: dict[tuple[int, int], Array] = {}
        self.masks: list[Mask] = []  # keeps mask ids valid while memoized

    def eval(self, node: E.PrimExpr, mask: Mask) -> Step[Array]:
        """The value of `node` (an array broadcastable over the grid) where `mask` holds."""
        key = (id(node), id(mask))
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        value = yield self._eval(node, mask)
        value = np.asarray(value)
        if not isinstance(node, E.StringImm):
            expected = _np_dtype(node.dtype)
            if value.dtype != expected:
                value = value.astype(expected)
        self.memo[key] = value
        return value

    def _eval(self, node: E.PrimExpr, mask: Mask) -> Step[Array]:
        if isinstance(node, (E.IntImm, E.FloatImm)):
            return np.asarray(node.value, dtype=_np_dtype(node.dtype))
        if isinstance(node, E.Var):
            if node not in self.env:
                raise KeyError(f"unbound variable `{node.name}` in a compute body")
            return self.env[node]
        if isinstance(node, ProducerLoad):
            indices = []
            for index in node.indices:
                indices.append((yield self.eval(index, mask)))
            return self._load(node, indices, mask)
        if isinstance(node, _BINARY_NODES):
            a = yield self.eval(node.a, mask)  # type: ignore[attr-defined]
            b = yield self.eval(node.b, mask)  # type: ignore[attr-defined]
            return _binary_op(node, a, b)
        if isinstance(node, E.Not):
            a = yield self.eval(node.a, mask)
            return np.logical_not(a)
        if isinstance(node, E.Cast):
            value = yield self.eval(node.value, mask)
            return _cast(node.dtype, value)
        if isinstance(node, E.Select):
            return (
                yield self._choose(
                    node.condition,
                    node.true_value,
                    node.false_value,
                    mask,
                    lazy=not self.strict_select,
                )
            )
        if isinstance(node, E.Call):
            return (yield self._call(node, mask))
        if isinstance(node, E.Let):
            self.env[node.var] = yield self.eval(node.value, mask)
            return (yield self.eval(node.body, mask))
        if isinstance(node, E.Reduce):
            raise TypeError("a Reduce may only be the whole body of a compute")
        raise TypeError(f"the TE evaluator cannot evaluate {type(node).__name__}")

    def _load(self, node: ProducerLoad, indices: list[Array], mask: Mask) -> Array:
        producer = node.producer
        array = self.values[id(producer.op)][producer.value_index]
        out_shape = np.broadcast_shapes(*(np.shape(i) for i in indices))
        bad: Any = False
        clipped = []
        for index, dim in zip(indices, array.shape):
            bad = np.logical_or(bad, (index < 0) | (index >= dim))
            clipped.append(np.clip(index, 0, max(dim - 1, 0)))
        if mask is not None:
            bad = np.logical_and(bad, mask)
        if np.any(bad):
            full = np.broadcast_shapes(out_shape, np.shape(bad))
            first = np.unravel_index(int(np.argmax(np.broadcast_to(bad, full))), full)
            example = tuple(int(np.broadcast_to(i, full)[first]) for i in indices)
            raise IndexError(
                f"read of `{producer.name}` (shape {array.shape}) out of range at "
                f"{example}, where the value is used"
            )
        if array.size == 0:
            return np.zeros(out_shape, array.dtype)
        return np.asarray(array[tuple(clipped)])

    def _choose(
        self, cond: E.PrimExpr, t: E.PrimExpr, f: E.PrimExpr, mask: Mask, lazy: bool
    ) -> Step[Array]:
        c = yield self.eval(cond, mask)
        if lazy:
            t_mask, f_mask = _masked(mask, c), _masked(mask, np.logical_not(c))
            self.masks.extend([t_mask, f_mask])
        else:
            t_mask = f_mask = mask
        dtype = _np_dtype(t.dtype)
        tv = (yield self.eval(t, t_mask)) if _any(t_mask) else np.zeros((), dtype)
        fv = (yield self.eval(f, f_mask)) if _any(f_mask) else np.zeros((), dtype)
        return np.where(c, tv, fv)

    def _call(self, node: E.Call, mask: Mask) -> Step[Array]:
        name = node.name
        if name == "if_then_else":
            cond, t, f = node.args
            return (yield self._choose(cond, t, f, mask, lazy=True))
        args = []
        for arg in node.args:
            args.append((yield self.eval(arg, mask)))
        if name == "likely":
            return args[0]
        if name == "reinterpret":
            src = np.array(args[0], order="C")
            return src.view(_np_dtype(node.dtype))
        if name in _UNARY:
            return _UNARY[name](args[0])
        if name in _BINARY_CALLS:
            return _BINARY_CALLS[name](args[0], args[1])
        raise TypeError(f"the TE evaluator does not know the intrinsic `{name}`")
