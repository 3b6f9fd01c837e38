"""Every intrinsic of `tir.op.INTRINSICS` compiled and compared with numpy, in scalar loops
and as explicit 16-lane vectors, for float32 and float64 (plus float16 and integer forms)."""

import math

import numpy as np
import pytest
from relay.backend import tir
from relay.backend.codegen import compile_module
from relay.backend.runtime.native import aligned_copy, aligned_empty
from relay.backend.tir import op
from relay.backend.tir.op import INTRINSICS

N = 64
_erf = np.vectorize(math.erf, otypes=[np.float64])

# name -> (numpy reference in float64, input generator over an rng)
UNARY = {
    "exp": (np.exp, lambda r: r.uniform(-80, 80, N)),
    "exp2": (np.exp2, lambda r: r.uniform(-120, 120, N)),
    "exp10": (lambda x: np.power(10.0, x), lambda r: r.uniform(-30, 30, N)),
    "log": (np.log, lambda r: np.exp(r.uniform(-30, 30, N))),
    "log2": (np.log2, lambda r: np.exp(r.uniform(-30, 30, N))),
    "log10": (np.log10, lambda r: np.exp(r.uniform(-30, 30, N))),
    "log1p": (np.log1p, lambda r: r.uniform(-0.99, 1e3, N)),
    "expm1": (np.expm1, lambda r: r.uniform(-20, 20, N)),
    "sqrt": (np.sqrt, lambda r: r.uniform(0, 1e6, N)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), lambda r: r.uniform(0.01, 1e4, N)),
    "sin": (np.sin, lambda r: r.uniform(-10, 10, N)),
    "cos": (np.cos, lambda r: r.uniform(-10, 10, N)),
    "tan": (np.tan, lambda r: r.uniform(-1.5, 1.5, N)),
    "asin": (np.arcsin, lambda r: r.uniform(-1, 1, N)),
    "acos": (np.arccos, lambda r: r.uniform(-1, 1, N)),
    "atan": (np.arctan, lambda r: r.uniform(-100, 100, N)),
    "sinh": (np.sinh, lambda r: r.uniform(-20, 20, N)),
    "cosh": (np.cosh, lambda r: r.uniform(-20, 20, N)),
    "tanh": (np.tanh, lambda r: r.uniform(-12, 12, N)),
    "asinh": (np.arcsinh, lambda r: r.uniform(-100, 100, N)),
    "acosh": (np.arccosh, lambda r: r.uniform(1, 100, N)),
    "atanh": (np.arctanh, lambda r: r.uniform(-0.99, 0.99, N)),
    "erf": (_erf, lambda r: r.uniform(-5, 5, N)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), lambda r: r.uniform(-30, 30, N)),
    "fabs": (np.abs, lambda r: r.uniform(-10, 10, N)),
}
ROUNDING = {
    "floor": np.floor,
    "ceil": np.ceil,
    "round": lambda x: np.where(
        np.abs(x - np.trunc(x)) >= 0.5, np.trunc(x) + np.sign(x), np.trunc(x)
    ),
    "nearbyint": np.rint,
    "trunc": np.trunc,
}
BINARY = {
    "pow": (np.power, lambda r: (r.uniform(0.1, 10, N), r.uniform(-5, 5, N))),
    "atan2": (np.arctan2, lambda r: (r.uniform(-5, 5, N), r.uniform(-5, 5, N))),
    "fmod": (
        np.fmod,
        lambda r: (r.uniform(-50, 50, N), r.choice([-3.5, -1.0, 0.75, 2.0, 7.25], N)),
    ),
    "copysign": (np.copysign, lambda r: (r.uniform(-5, 5, N), r.uniform(-5, 5, N))),
}
INT_BINARY = {
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "shift_left": np.left_shift,
    "shift_right": np.right_shift,
}
PREDICATES = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}
SPECIAL = ("if_then_else", "likely", "reinterpret", "bitwise_not", "popcount")


def test_every_intrinsic_is_covered_here():
    covered = (
        set(UNARY) | set(ROUNDING) | set(BINARY) | set(INT_BINARY) | set(PREDICATES) | set(SPECIAL)
    )
    assert covered == set(INTRINSICS)


def unary_kernels(name, dtype):
    """A scalar-loop kernel `<name>_s` and a 16-lane vector kernel `<name>_v`."""
    a, b = tir.decl_buffer((N,), dtype, "a"), tir.decl_buffer((N,), dtype, "b")
    i = tir.Var("i")
    scalar = tir.For(
        i, 0, N, tir.ForKind.SERIAL, tir.BufferStore(b, op.call(name, a.load(i)), (i,))
    )
    r = tir.Ramp(i * 16, tir.const(1), 16)
    vec = tir.For(
        i,
        0,
        N // 16,
        tir.ForKind.SERIAL,
        tir.BufferStore(b, op.call(name, tir.BufferLoad(a, [r])), (r,)),
    )
    return [tir.PrimFunc(f"{name}_s", (a, b), scalar), tir.PrimFunc(f"{name}_v", (a, b), vec)]


def binary_kernels(name, dtype):
    a, b, c = (tir.decl_buffer((N,), dtype, n) for n in "abc")
    i = tir.Var("i")
    scalar = tir.For(
        i, 0, N, tir.ForKind.SERIAL, tir.BufferStore(c, op.call(name, a.load(i), b.load(i)), (i,))
    )
    r = tir.Ramp(i * 16, tir.const(1), 16)
    vload = [tir.BufferLoad(x, [r]) for x in (a, b)]
    vec = tir.For(
        i, 0, N // 16, tir.ForKind.SERIAL, tir.BufferStore(c, op.call(name, *vload), (r,))
    )
    return [tir.PrimFunc(f"{name}_s", (a, b, c), scalar), tir.PrimFunc(f"{name}_v", (a, b, c), vec)]


def ulp_error(got, ref, dtype):
    """|got - ref| in units of the last place of the reference rounded to `dtype`."""
    ref_rounded = ref.astype(dtype)
    ulp = np.spacing(np.abs(ref_rounded)).astype(np.float64)
    ulp = np.maximum(ulp, np.finfo(dtype).smallest_subnormal)
    return np.abs(got.astype(np.float64) - ref) / ulp


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_unary_intrinsics(dtype):
    funcs = [f for name in list(UNARY) + list(ROUNDING) for f in unary_kernels(name, dtype)]
    lib = compile_module(funcs)
    rng = np.random.default_rng(0)
    for name, (ref, gen) in UNARY.items():
        x = aligned_copy(gen(rng).astype(dtype))
        expect = ref(x.astype(np.float64))
        for kind in "sv":
            out = aligned_empty(N, dtype)
            lib.run(f"{name}_{kind}", x, out)
            err = ulp_error(out, expect, dtype)
            assert err.max() <= 4, (name, kind, x[err.argmax()], out[err.argmax()], err.max())
    halves = aligned_copy((np.arange(N) - N // 2) / 2 + np.where(np.arange(N) % 4 == 0, 0.25, 0.0))
    halves = aligned_copy(halves.astype(dtype))
    for name, ref in ROUNDING.items():
        for kind in "sv":
            out = aligned_empty(N, dtype)
            lib.run(f"{name}_{kind}", halves, out)
            np.testing.assert_array_equal(out, ref(halves), err_msg=f"{name}_{kind}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_binary_intrinsics(dtype):
    lib = compile_module([f for name in BINARY for f in binary_kernels(name, dtype)])
    rng = np.random.default_rng(1)
    for name, (ref, gen) in BINARY.items():
        x, y = (aligned_copy(v.astype(dtype)) for v in gen(rng))
        expect = ref(x.astype(np.float64), y.astype(np.float64))
        for kind in "sv":
            out = aligned_empty(N, dtype)
            lib.run(f"{name}_{kind}", x, y, out)
            if name == "fmod":  # exact operation
                np.testing.assert_array_equal(out, np.fmod(x, y), err_msg=name)
                continue
            err = ulp_error(out, expect, dtype)
            assert err.max() <= 4, (name, kind, err.max())


def test_float16_math_runs_in_float32():
    lib = compile_module(
        [f for name in ("exp", "sqrt", "tanh", "floor") for f in unary_kernels(name, "float16")]
        + binary_kernels("pow", "float16")
    )
    x = aligned_copy(np.linspace(-4, 4, N).astype(np.float16))
    for name, ref in (("exp", np.exp), ("tanh", np.tanh), ("floor", np.floor)):
        for kind in "sv":
            out = aligned_empty(N, "float16")
            lib.run(f"{name}_{kind}", x, out)
            expect = ref(x.astype(np.float64))
            assert ulp_error(out, expect, "float16").max() <= 1, name
    pos = aligned_copy(np.linspace(0, 100, N).astype(np.float16))
    out = aligned_empty(N, "float16")
    lib.run("sqrt_v", pos, out)
    assert ulp_error(out, np.sqrt(pos.astype(np.float64)), "float16").max() <= 1
    y = aligned_copy(np.linspace(0.5, 2, N).astype(np.float16))
    lib.run("pow_s", y, y, out)
    assert (
        ulp_error(out, np.power(y.astype(np.float64), y.astype(np.float64)), "float16").max() <= 1
    )


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "uint16"])
def test_integer_intrinsics(dtype):
    bits = np.dtype(dtype).itemsize * 8
    funcs = [f for name in INT_BINARY for f in binary_kernels(name, dtype)]
    funcs += [
        f
        for name in ("bitwise_not", "popcount", "fabs", "floor")
        for f in unary_kernels(name, dtype)
    ]
    lib = compile_module(funcs)
    info = np.iinfo(dtype)
    rng = np.random.default_rng(2)
    x = aligned_copy(rng.integers(info.min, info.max, N, endpoint=True).astype(dtype))
    y = aligned_copy(rng.integers(info.min, info.max, N, endpoint=True).astype(dtype))
    shifts = aligned_copy(rng.integers(0, bits, N).astype(dtype))
    for name, ref in INT_BINARY.items():
        second = shifts if name.startswith("shift") else y
        for kind in "sv":
            out = aligned_empty(N, dtype)
            lib.run(f"{name}_{kind}", x, second, out)
            np.testing.assert_array_equal(out, ref(x, second), err_msg=f"{name}_{kind}")
    unsigned = x.view(f"u{np.dtype(dtype).itemsize}")
    expect = {
        "bitwise_not": np.invert(x),
        "popcount": np.bitwise_count(unsigned).astype(dtype),
        "fabs": np.abs(x),
        "floor": x,
    }
    for name, ref in expect.items():
        for kind in "sv":
            out = aligned_empty(N, dtype)
            lib.run(f"{name}_{kind}", x, out)
            np.testing.assert_array_equal(out, ref, err_msg=f"{name}_{kind}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32"])
def test_predicates(dtype):
    funcs = []
    for name in PREDICATES:
        a, b = tir.decl_buffer((16,), dtype, "a"), tir.decl_buffer((16,), "bool", "b")
        i = tir.Var("i")
        funcs.append(
            tir.PrimFunc(
                f"{name}_s",
                (a, b),
                tir.For(
                    i, 0, 16, tir.ForKind.SERIAL, tir.BufferStore(b, op.call(name, a.load(i)), (i,))
                ),
            )
        )
        r = tir.Ramp(tir.const(0), tir.const(1), 16)
        funcs.append(
            tir.PrimFunc(
                f"{name}_v", (a, b), tir.BufferStore(b, op.call(name, tir.BufferLoad(a, [r])), (r,))
            )
        )
    lib = compile_module(funcs)
    if dtype == "int32":
        x = aligned_copy(np.arange(16, dtype=dtype))
    else:
        vals = [
            0.0,
            -0.0,
            1.5,
            -2.0,
            np.inf,
            -np.inf,
            np.nan,
            -np.nan,
            1e-40,
            3e38,
            7.0,
            np.nan,
            2.0,
            -np.inf,
            0.5,
            1.0,
        ]
        with np.errstate(over="ignore"):
            x = aligned_copy(np.array(vals).astype(dtype))
    for name, ref in PREDICATES.items():
        for kind in "sv":
            out = aligned_empty(16, "bool")
            lib.run(f"{name}_{kind}", x, out)
            np.testing.assert_array_equal(out, ref(x), err_msg=f"{name}_{kind}")


def test_reinterpret_and_likely():
    a, b = tir.decl_buffer((16,), "float32", "a"), tir.decl_buffer((16,), "int32", "b")
    c = tir.decl_buffer((16,), "float32", "c")
    i = tir.Var("i")
    bits = tir.For(
        i, 0, 16, tir.ForKind.SERIAL, tir.BufferStore(b, op.reinterpret("int32", a.load(i)), (i,))
    )
    r = tir.Ramp(tir.const(0), tir.const(1), 16)
    back = tir.BufferStore(c, op.reinterpret("float32x16", tir.BufferLoad(b, [r])), (r,))
    guarded = tir.For(
        i,
        0,
        16,
        tir.ForKind.SERIAL,
        tir.IfThenElse(op.likely(i < 10), tir.BufferStore(c, a.load(i) * 2.0, (i,))),
    )
    lib = compile_module(
        [
            tir.PrimFunc("bits", (a, b), bits),
            tir.PrimFunc("back", (b, c), back),
            tir.PrimFunc("likely", (a, c), guarded),
        ]
    )
    x = aligned_copy(np.linspace(-3, 3, 16).astype(np.float32))
    out = aligned_empty(16, "int32")
    lib.run("bits", x, out)
    np.testing.assert_array_equal(out, x.view(np.int32))
    f = aligned_empty(16, "float32")
    lib.run("back", out, f)
    np.testing.assert_array_equal(f, x)
    f[:] = -1
    lib.run("likely", x, f)
    np.testing.assert_array_equal(f, np.where(np.arange(16) < 10, x * 2, -1))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["sqrt", "rsqrt"])
def test_square_roots_of_signed_zeros_and_infinity(name, dtype):
    """IEEE at the edges, as numpy gives them: a fast reciprocal square root with a Newton
    step would turn 1/sqrt(0) into 0 * inf = nan (found by the fuzz campaign)."""
    lib = compile_module(unary_kernels(name, dtype))
    edges = np.array([0.0, -0.0, np.inf, 4.0, 1e-30, -1.0], dtype)
    x = aligned_copy(np.resize(edges, N).astype(dtype))
    with np.errstate(divide="ignore", invalid="ignore"):
        expect = np.sqrt(x) if name == "sqrt" else 1 / np.sqrt(x)
    for kind in "sv":
        out = aligned_empty(N, dtype)
        lib.run(f"{name}_{kind}", x, out)
        np.testing.assert_allclose(out, expect, rtol=1e-6, err_msg=f"{name}_{kind}")
        np.testing.assert_array_equal(np.signbit(out), np.signbit(expect), err_msg=name)
