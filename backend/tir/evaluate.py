"""A reference evaluator of loop-IR kernels over numpy arrays, for tests.

`run_primfunc(func, *arrays)` executes `func` in plain Python: every value is a small numpy
array with one element per vector lane (a scalar has one lane), so integer arithmetic wraps at
the dtype's width and float32 arithmetic rounds to float32, as native code does. Statements run
on an explicit stack (a sequence of thousands of stores does not recurse); an expression is
compiled once into nested closures (recursion bounded by the expression's depth).

Semantics: integer `Div`/`Mod` truncate toward zero, `FloorDiv`/`FloorMod` floor; `Cast` from
float to int truncates and to bool is `!= 0`; `if_then_else` evaluates only the taken side (with
a vector condition, each side runs masked: its loads read only the lanes that take it); `round`
rounds half away from zero, `nearbyint` half to even. Every loop kind runs serially. Accesses
may be multi-dimensional (one index per dimension, row-major) or flat (one index), and every
access is bounds-checked against the buffer's declared size and its memory.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .buffer import Buffer
from .dtypes import element_of, lanes_of
from .expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Select,
    StringImm,
    Sub,
    Var,
)
from .stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
)

Value = np.ndarray
Env = dict[Any, Any]
Thunk = Callable[[Env], Value]

_MASK = object()
"""Key of the active lane mask in an environment (set inside a vector `if_then_else`)."""
_UNSET = object()


class TIREvalError(RuntimeError):
    """A kernel did something undefined while being evaluated (out-of-bounds access,
    unbound variable, malformed node)."""


def np_dtype(dtype: str) -> np.dtype[Any]:
    """The numpy dtype of one element of a loop-IR dtype (`float32x8` → float32)."""
    base = element_of(dtype)
    if base == "handle":
        raise TIREvalError("a `handle` value cannot be evaluated")
    return np.dtype(base)


def _wrap_int(value: int, dtype: np.dtype[Any]) -> int:
    """`value` wrapped into the range of integer `dtype`."""
    bits = dtype.itemsize * 8
    value &= (1 << bits) - 1
    if dtype.kind == "i" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def _const(value: float, dtype: str) -> Value:
    nd = np_dtype(dtype)
    if nd.kind == "b":
        return np.array([bool(value)], dtype=nd)
    if nd.kind in "iu":
        return np.array([_wrap_int(int(value), nd)], dtype=nd)
    return np.array([value], dtype=nd)


def _truncdiv(a: Value, b: Value) -> Value:
    if a.dtype.kind == "f":
        return a / b
    r = np.fmod(a, b)
    return (a - r) // np.where(b == 0, 1, b)


def _truncmod(a: Value, b: Value) -> Value:
    return np.fmod(a, b)


def _floordiv(a: Value, b: Value) -> Value:
    if a.dtype.kind == "f":
        return np.floor(a / b)
    return np.floor_divide(a, b)


def _floormod(a: Value, b: Value) -> Value:
    if a.dtype.kind == "f":
        return a - np.floor(a / b) * b
    return np.mod(a, b)


_BINARY: dict[type, Callable[[Value, Value], Value]] = {
    Add: np.add,
    Sub: np.subtract,
    Mul: np.multiply,
    Div: _truncdiv,
    Mod: _truncmod,
    FloorDiv: _floordiv,
    FloorMod: _floormod,
    Min: np.minimum,
    Max: np.maximum,
    EQ: np.equal,
    NE: np.not_equal,
    LT: np.less,
    LE: np.less_equal,
    GT: np.greater,
    GE: np.greater_equal,
    And: np.logical_and,
    Or: np.logical_or,
}


def _round_half_away(x: Value) -> Value:
    t = np.trunc(x)
    frac = np.abs(x - t)
    return np.where(frac >= 0.5, t + np.sign(x), t).astype(x.dtype)


def _popcount(x: Value) -> Value:
    if x.dtype.kind == "b":
        return x
    unsigned = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    return np.bitwise_count(unsigned).astype(x.dtype)


def _via_f64(fn: Callable[[Value], Value]) -> Callable[[Value], Value]:
    """A float function computed in float64 and rounded back to the argument's dtype."""

    def apply(x: Value) -> Value:
        return np.asarray(fn(x.astype(np.float64))).astype(x.dtype)

    return apply


_erf = np.vectorize(math.erf, otypes=[np.float64])

_UNARY: dict[str, Callable[[Value], Value]] = {
    "exp": _via_f64(np.exp),
    "exp2": _via_f64(np.exp2),
    "exp10": _via_f64(lambda x: np.power(10.0, x)),
    "log": _via_f64(np.log),
    "log2": _via_f64(np.log2),
    "log10": _via_f64(np.log10),
    "log1p": _via_f64(np.log1p),
    "expm1": _via_f64(np.expm1),
    "sqrt": _via_f64(np.sqrt),
    "rsqrt": _via_f64(lambda x: 1.0 / np.sqrt(x)),
    "sin": _via_f64(np.sin),
    "cos": _via_f64(np.cos),
    "tan": _via_f64(np.tan),
    "asin": _via_f64(np.arcsin),
    "acos": _via_f64(np.arccos),
    "atan": _via_f64(np.arctan),
    "sinh": _via_f64(np.sinh),
    "cosh": _via_f64(np.cosh),
    "tanh": _via_f64(np.tanh),
    "asinh": _via_f64(np.arcsinh),
    "acosh": _via_f64(np.arccosh),
    "atanh": _via_f64(np.arctanh),
    "erf": _via_f64(_erf),
    "sigmoid": _via_f64(lambda x: 1.0 / (1.0 + np.exp(-x))),
    "floor": np.floor,
    "ceil": np.ceil,
    "round": _round_half_away,
    "nearbyint": np.rint,
    "trunc": np.trunc,
    "fabs": np.abs,
    "bitwise_not": lambda x: np.logical_not(x) if x.dtype.kind == "b" else np.invert(x),
    "popcount": _popcount,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
    "likely": lambda x: x,
}


def _via_f64_2(fn: Callable[[Value, Value], Value]) -> Callable[[Value, Value], Value]:
    """A binary function computed in float64 for float arguments, rounded back."""

    def apply(a: Value, b: Value) -> Value:
        if a.dtype.kind != "f":
            return fn(a, b)
        return np.asarray(fn(a.astype(np.float64), b.astype(np.float64))).astype(a.dtype)

    return apply


_BINARY_CALLS: dict[str, Callable[[Value, Value], Value]] = {
    "pow": _via_f64_2(np.power),
    "atan2": _via_f64_2(np.arctan2),
    "fmod": np.fmod,
    "copysign": np.copysign,
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "shift_left": np.left_shift,
    "shift_right": np.right_shift,
}


# --------------------------------------------------------------------------------- memory


class _Memory:
    """Flat numpy arrays keyed by buffer data pointer (aliasing buffers share one)."""

    def __init__(self) -> None:
        self.arrays: dict[Var, np.ndarray] = {}

    def get(self, buffer: Buffer) -> np.ndarray:
        try:
            return self.arrays[buffer.data]
        except KeyError:
            raise TIREvalError(
                f"buffer `{buffer.name}` is used outside its allocation (no memory)"
            ) from None


# ------------------------------------------------------------------------------- compiler


class _Compiler:
    """Turns expressions into closures `env -> value`, memoized per node."""

    def __init__(self, memory: _Memory) -> None:
        self.memory = memory
        self.cache: dict[int, Thunk] = {}
        self.keep: list[PrimExpr] = []

    def compile(self, expr: PrimExpr) -> Thunk:
        """The closure evaluating `expr`."""
        got = self.cache.get(id(expr))
        if got is None:
            got = self._compile(expr)
            self.cache[id(expr)] = got
            self.keep.append(expr)
        return got

    def _compile(self, e: PrimExpr) -> Thunk:
        cls = type(e)
        if isinstance(e, Var):
            var = e

            def load_var(env: Env) -> Value:
                try:
                    return env[var]  # type: ignore[no-any-return]
                except KeyError:
                    raise TIREvalError(f"variable `{var.name}` is not bound") from None

            return load_var
        if cls is IntImm or cls is FloatImm:
            value = _const(e.value, e.dtype)  # type: ignore[attr-defined]
            return lambda env: value
        if cls in _BINARY:
            fa, fb = self.compile(e.a), self.compile(e.b)  # type: ignore[attr-defined]
            op = _BINARY[cls]
            return lambda env: op(fa(env), fb(env))
        if cls is Not:
            fa = self.compile(e.a)  # type: ignore[attr-defined]
            return lambda env: np.logical_not(fa(env))
        if cls is Select:
            assert isinstance(e, Select)
            fc = self.compile(e.condition)
            ft, ff = self.compile(e.true_value), self.compile(e.false_value)
            return lambda env: np.where(fc(env), ft(env), ff(env))
        if cls is Cast:
            assert isinstance(e, Cast)
            return self._cast(e)
        if cls is Call:
            assert isinstance(e, Call)
            return self._call(e)
        if cls is Let:
            assert isinstance(e, Let)
            return self._let(e)
        if cls is Ramp:
            assert isinstance(e, Ramp)
            fbase, fstride = self.compile(e.base), self.compile(e.stride)
            steps = np.arange(e.lanes, dtype=np_dtype(e.base.dtype))
            return lambda env: fbase(env) + fstride(env) * steps
        if cls is Broadcast:
            assert isinstance(e, Broadcast)
            fv = self.compile(e.value)
            lanes = e.lanes
            return lambda env: np.repeat(fv(env), lanes)
        if cls is BufferLoad:
            assert isinstance(e, BufferLoad)
            return self._load(e)
        if cls is StringImm:
            raise TIREvalError("a string is only allowed as an intrinsic argument")
        raise TIREvalError(f"cannot evaluate a `{cls.__name__}` node in a PrimFunc")

    def _cast(self, e: Cast) -> Thunk:
        fv = self.compile(e.value)
        target = np_dtype(e.dtype)
        lanes = lanes_of(e.dtype)

        def run(env: Env) -> Value:
            v = fv(env)
            if target.kind == "b":
                out = v != 0
            elif target.kind in "iu" and v.dtype.kind == "f":
                out = np.trunc(v).astype(target)
            else:
                out = v.astype(target)
            return np.repeat(out, lanes) if len(out) == 1 and lanes > 1 else out

        return run

    def _let(self, e: Let) -> Thunk:
        var = e.var
        fv, fb = self.compile(e.value), self.compile(e.body)

        def run(env: Env) -> Value:
            old = env.get(var, _UNSET)
            env[var] = fv(env)
            try:
                return fb(env)
            finally:
                if old is _UNSET:
                    del env[var]
                else:
                    env[var] = old

        return run

    def _call(self, e: Call) -> Thunk:
        name = e.name
        out = np_dtype(e.dtype)
        if name == "if_then_else":
            return self._if_then_else(e)
        if name == "reinterpret":
            fv = self.compile(e.args[0])
            return lambda env: fv(env).view(out)
        args = [self.compile(a) for a in e.args]
        if name in _UNARY and len(args) == 1:
            fn, fa = _UNARY[name], args[0]
            return lambda env: np.asarray(fn(fa(env))).astype(out, copy=False)
        if name in _BINARY_CALLS and len(args) == 2:
            fn2, fa, fb = _BINARY_CALLS[name], args[0], args[1]
            return lambda env: np.asarray(fn2(fa(env), fb(env))).astype(out, copy=False)
        raise TIREvalError(f"unknown intrinsic `{name}` with {len(args)} arguments")

    def _if_then_else(self, e: Call) -> Thunk:
        fc, ft, ff = (self.compile(a) for a in e.args)
        lanes = lanes_of(e.dtype)
        out = np_dtype(e.dtype)

        def run(env: Env) -> Value:
            cond = fc(env)
            if len(cond) == 1:
                return (ft if cond[0] else ff)(env)
            outer = env.get(_MASK)
            result = np.zeros(lanes, dtype=out)
            for side, take in ((ft, cond), (ff, np.logical_not(cond))):
                mask = take if outer is None else take & outer
                if not mask.any():
                    continue
                env[_MASK] = None if mask.all() else mask
                try:
                    result = np.where(mask, side(env), result)
                finally:
                    if outer is None:
                        env.pop(_MASK, None)
                    else:
                        env[_MASK] = outer
            return result

        return run

    def flat_index(self, buffer: Buffer, indices: tuple[PrimExpr, ...]) -> Thunk:
        """A closure computing the flat (row-major) element index of an access."""
        fis = [self.compile(i) for i in indices]
        if len(indices) == 1:
            return fis[0]
        if not indices and not buffer.shape:
            zero = np.zeros(1, dtype=np.int64)
            return lambda env: zero
        if len(indices) != len(buffer.shape):
            raise TIREvalError(
                f"buffer `{buffer.name}` has {len(buffer.shape)} dimensions but is accessed "
                f"with {len(indices)} indices"
            )
        fdims = [self.compile(d) for d in buffer.shape]

        def run(env: Env) -> Value:
            flat = fis[0](env)
            for fi, fd in zip(fis[1:], fdims[1:]):
                flat = flat * fd(env) + fi(env)
            return flat

        return run

    def buffer_size(self, buffer: Buffer) -> Thunk:
        """A closure computing the declared element count of `buffer`."""
        fdims = [self.compile(d) for d in buffer.shape]

        def run(env: Env) -> int:
            n = 1
            for fd in fdims:
                n *= int(fd(env)[0])
            return n

        return run  # type: ignore[return-value]

    def _load(self, e: BufferLoad) -> Thunk:
        buffer = e.buffer
        findex = self.flat_index(buffer, e.indices)
        fsize = self.buffer_size(buffer)
        memory = self.memory
        out = np_dtype(buffer.dtype)

        def run(env: Env) -> Value:
            idx = findex(env)
            arr = memory.get(buffer)
            mask = env.get(_MASK)
            if mask is not None:
                if len(idx) == 1:
                    if not mask.any():
                        return np.zeros(1, dtype=out)
                else:
                    result = np.zeros(len(idx), dtype=out)
                    live = idx[mask]
                    _check_bounds(buffer, live, fsize(env), len(arr))  # type: ignore[arg-type]
                    result[mask] = arr[live]
                    return result
            _check_bounds(buffer, idx, fsize(env), len(arr))  # type: ignore[arg-type]
            return arr[idx]

        return run


def _check_bounds(buffer: Buffer, idx: Value, size: int, memory: int) -> None:
    if len(idx) == 0:
        return
    lo, hi = int(idx.min()), int(idx.max())
    limit = min(size, memory)
    if lo < 0 or hi >= limit:
        bad = lo if lo < 0 else hi
        raise TIREvalError(
            f"out-of-bounds access to `{buffer.name}`: flat index {bad}, size {size}"
            + (f" (memory holds {memory})" if memory != size else "")
        )


# ----------------------------------------------------------------------------- statements


def _poison(n: int, dtype: np.dtype[Any]) -> np.ndarray:
    """Fresh memory filled with a conspicuous value (NaN for floats) to expose reads of
    uninitialized elements."""
    arr = np.empty(n, dtype=dtype)
    if dtype.kind == "f":
        arr.fill(np.nan)
    elif dtype.kind in "iu":
        arr.fill(np.iinfo(dtype).max // 3)
    else:
        arr.fill(True)
    return arr


def _restore(table: dict[Any, Any], key: Any, old: Any) -> None:
    """Put back `table[key]` as it was before a scope bound it (`old` None: it was unset)."""
    if old is None:
        table.pop(key, None)
    else:
        table[key] = old


class _Machine:
    """Runs statements with an explicit stack of tasks."""

    def __init__(self) -> None:
        self.memory = _Memory()
        self.compiler = _Compiler(self.memory)
        self.stores: dict[int, tuple[Thunk, Thunk, Thunk]] = {}

    def run(self, body: Stmt, env: Env) -> None:
        compile_ = self.compiler.compile
        memory = self.memory.arrays
        stack: list[tuple[Any, ...]] = [("exec", body)]
        while stack:
            task = stack.pop()
            tag = task[0]
            if tag == "loop":
                _, var, i, end, loop_body, dtype = task
                if i < end:
                    env[var] = np.array([i], dtype=dtype)
                    stack.append(("loop", var, i + 1, end, loop_body, dtype))
                    stack.append(("exec", loop_body))
                else:
                    env.pop(var, None)
                continue
            if tag == "unbind":
                _restore(env, task[1], task[2])
                continue
            if tag == "free":
                _restore(memory, task[1], task[2])
                continue
            s = task[1]
            cls = type(s)
            if cls is BufferStore:
                self._store(s, env)
            elif cls is SeqStmt:
                stack.extend(("exec", c) for c in reversed(s.stmts))
            elif cls is For:
                lo = _scalar_int(compile_(s.min)(env), "loop min")
                extent = _scalar_int(compile_(s.extent)(env), "loop extent")
                dtype = np_dtype(s.loop_var.dtype)
                stack.append(("loop", s.loop_var, lo, lo + extent, s.body, dtype))
            elif cls is IfThenElse:
                cond = compile_(s.condition)(env)
                if len(cond) != 1:
                    raise TIREvalError("an IfThenElse statement needs a scalar condition")
                if cond[0]:
                    stack.append(("exec", s.then_case))
                elif s.else_case is not None:
                    stack.append(("exec", s.else_case))
            elif cls is LetStmt:
                stack.append(("unbind", s.var, env.get(s.var)))
                env[s.var] = compile_(s.value)(env)
                stack.append(("exec", s.body))
            elif cls is Allocate:
                buf = s.buffer
                n = self.compiler.buffer_size(buf)(env)
                stack.append(("free", buf.data, memory.get(buf.data)))
                memory[buf.data] = _poison(int(n), np_dtype(buf.dtype))  # type: ignore[call-overload]
                stack.append(("exec", s.body))
            elif cls is Evaluate:
                compile_(s.value)(env)
            else:
                raise TIREvalError(f"cannot execute a `{cls.__name__}` statement")

    def _store(self, s: BufferStore, env: Env) -> None:
        got = self.stores.get(id(s))
        if got is None:
            c = self.compiler
            got = (c.compile(s.value), c.flat_index(s.buffer, s.indices), c.buffer_size(s.buffer))
            self.stores[id(s)] = got
            c.keep.append(s)  # type: ignore[arg-type]
        fvalue, findex, fsize = got
        idx = findex(env)
        arr = self.memory.get(s.buffer)
        _check_bounds(s.buffer, idx, fsize(env), len(arr))  # type: ignore[arg-type]
        value = fvalue(env)
        if len(value) != len(idx) and len(value) != 1:
            raise TIREvalError(
                f"store to `{s.buffer.name}`: {len(value)} lanes of value for {len(idx)} indices"
            )
        arr[idx] = value


def _scalar_int(v: Value, what: str) -> int:
    if len(v) != 1:
        raise TIREvalError(f"{what} must be a scalar")
    return int(v[0])


def run_primfunc(func: PrimFunc, *arrays: np.ndarray) -> None:
    """Execute `func` on `arrays` (one per param, C-contiguous, of the param's dtype and
    element count); outputs are written in place."""
    if len(arrays) != len(func.params):
        raise ValueError(f"{func.name} takes {len(func.params)} arrays, got {len(arrays)}")
    machine = _Machine()
    env: Env = {}
    for buf, arr in zip(func.params, arrays):
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"argument `{buf.name}` must be a numpy array")
        want = np_dtype(buf.dtype)
        if arr.dtype != want:
            raise ValueError(f"argument `{buf.name}` has dtype {arr.dtype}, expected {want}")
        if not arr.flags.c_contiguous:
            raise ValueError(f"argument `{buf.name}` is not C-contiguous")
        size = machine.compiler.buffer_size(buf)(env)
        if arr.size != size:
            raise ValueError(
                f"argument `{buf.name}` has {arr.size} elements, the buffer has {size}"
            )
        machine.memory.arrays[buf.data] = arr.reshape(-1)
    with np.errstate(all="ignore"):
        machine.run(func.body, env)


def evaluate_expr(expr: PrimExpr, bindings: dict[Var, Any] | None = None) -> np.ndarray:
    """The value of a buffer-free expression (one element per lane), with `bindings` giving
    numbers for its free variables."""
    machine = _Machine()
    env: Env = {}
    for var, v in (bindings or {}).items():
        env[var] = np.atleast_1d(np.asarray(v, dtype=np_dtype(var.dtype)))
    with np.errstate(all="ignore"):
        return machine.compiler.compile(expr)(env)


__all__ = ["TIREvalError", "evaluate_expr", "np_dtype", "run_primfunc"]
