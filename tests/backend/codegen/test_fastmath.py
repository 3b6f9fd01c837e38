"""The polynomial float32 exp/tanh/sigmoid/erf of `codegen.fastmath` hold their documented
error bounds against float64 references over the whole float32 range, including ±inf, NaN,
huge magnitudes and denormals, for any vector width."""

import math
import re

import numpy as np
import pytest
from relay.backend import tir
from relay.backend.codegen import compile_module
from relay.backend.runtime.native import aligned_copy, aligned_empty
from relay.backend.target import Target
from relay.backend.tir import op

FLT_MAX = float(np.finfo(np.float32).max)
TINY = 2.0**-149  # smallest float32 denormal
NORMAL_MIN = 2.0**-126

BOUNDS_ULP = {"exp": 1.5, "tanh": 2.0, "sigmoid": 3.0, "erf": 6.0}
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x):
    with np.errstate(all="ignore"):
        return np.where(x >= 0, 1 / (1 + np.exp(-x)), np.exp(x) / (1 + np.exp(x)))


def _exp(x):
    with np.errstate(over="ignore"):
        return np.exp(x)


REFERENCE = {"exp": _exp, "tanh": np.tanh, "sigmoid": _sigmoid, "erf": _erf}

SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, FLT_MAX, -FLT_MAX, NORMAL_MIN, -NORMAL_MIN, TINY, -TINY,
           3 * TINY, 1e-40, -1e-40, 1e-30, 88.72, 88.7228, 88.73, 89.0, 100.0, -87.3, -88.8, -100.0, -103.9,
           -103.98, -104.0, -150.0, 0.625, -0.625, 0.62499, 1.0, -1.0, 0.99999, 3.9, 4.0, 4.1, 9.0, 10.0,
           -20.0, 1e10, -1e10, 1e30, -1e30, 0.5, 2.0, 1e-3, -1e-3]  # fmt: skip


def _points(n=1 << 17):
    rng = np.random.default_rng(42)
    bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    bits = bits[np.isfinite(bits)]
    dense = np.linspace(-110, 110, n, dtype=np.float32)
    near_zero = np.linspace(-2, 2, n // 4, dtype=np.float32)
    denormals = (rng.integers(1, 2**23, n // 8).astype(np.uint32)).view(np.float32)
    pts = np.concatenate(
        [bits, dense, near_zero, denormals, -denormals, np.array(SPECIAL, np.float32)]
    )
    pad = -len(pts) % 64
    return np.concatenate([pts, np.zeros(pad, np.float32)])


POINTS = _points()


@pytest.fixture(scope="module")
def lib():
    n = len(POINTS)
    funcs = []
    for name in REFERENCE:
        a, b = tir.decl_buffer((n,), "float32", "a"), tir.decl_buffer((n,), "float32", "b")
        i = tir.Var("i")
        funcs.append(
            tir.PrimFunc(
                name,
                (a, b),
                tir.For(
                    i, 0, n, tir.ForKind.SERIAL, tir.BufferStore(b, op.call(name, a.load(i)), (i,))
                ),
            )
        )
        for lanes in (3, 8, 32):  # explicit vectors of odd and wide widths
            r = tir.Ramp(i * lanes, tir.const(1), lanes)
            body = tir.For(
                i,
                0,
                96 // lanes,
                tir.ForKind.SERIAL,
                tir.BufferStore(b, op.call(name, tir.BufferLoad(a, [r])), (r,)),
            )
            funcs.append(tir.PrimFunc(f"{name}_x{lanes}", (a, b), body))
    return compile_module(funcs)


@pytest.mark.parametrize("name", list(REFERENCE))
def test_error_bound_over_the_float32_range(lib, name):
    x = aligned_copy(POINTS)
    out = aligned_empty(len(x), "float32")
    lib.run(name, x, out)
    ref = REFERENCE[name](x.astype(np.float64))
    nan = np.isnan(ref)
    np.testing.assert_array_equal(np.isnan(out), nan)
    with np.errstate(over="ignore"):
        ref32 = ref.astype(np.float32)
    inf = np.isinf(ref32)
    np.testing.assert_array_equal(out[inf], ref32[inf])
    finite = ~nan & ~inf
    got, exact = out[finite].astype(np.float64), ref[finite]
    err = np.abs(got - exact)
    normal = np.abs(exact) >= NORMAL_MIN
    ulp = np.spacing(np.abs(ref32[finite])).astype(np.float64)
    worst = (err / ulp)[normal]
    assert worst.max() <= BOUNDS_ULP[name], (name, x[finite][normal][worst.argmax()], worst.max())
    assert err[~normal].max(initial=0) <= TINY, name
    assert (
        np.all(np.signbit(out[finite & (ref == 0)]) == np.signbit(ref[finite & (ref == 0)]))
        or name == "exp"
    )


@pytest.mark.parametrize("name", list(REFERENCE))
def test_special_values(lib, name):
    x = aligned_copy(np.resize(np.array(SPECIAL, np.float32), len(POINTS)))
    out = aligned_empty(len(x), "float32")
    lib.run(name, x, out)
    got = out[: len(SPECIAL)]
    assert math.isnan(got[SPECIAL.index(np.nan)])
    expect = {
        "exp": {np.inf: np.inf, -np.inf: 0.0, 89.0: np.inf, 1e30: np.inf, -150.0: 0.0, 0.0: 1.0},
        "tanh": {np.inf: 1.0, -np.inf: -1.0, 1e30: 1.0, -1e10: -1.0, -0.0: -0.0, TINY: TINY},
        "sigmoid": {np.inf: 1.0, -np.inf: 0.0, 1e30: 1.0, -1e30: 0.0, 0.0: 0.5},
        "erf": {np.inf: 1.0, -np.inf: -1.0, 10.0: 1.0, -1e10: -1.0, -0.0: -0.0},
    }[name]
    for k, v in expect.items():
        value = got[SPECIAL.index(k)] if k != 0 else got[1 if math.copysign(1, k) < 0 else 0]
        assert value == v and math.copysign(1, value) == math.copysign(1, v), (name, k, value)


@pytest.mark.parametrize("name", list(REFERENCE))
def test_vector_widths_agree_with_scalar_code(lib, name):
    x = aligned_copy(
        np.concatenate(
            [
                np.array(SPECIAL[:48], np.float32),
                np.linspace(-30, 30, len(POINTS) - 48, dtype=np.float32),
            ]
        )
    )
    scalar = aligned_empty(len(x), "float32")
    lib.run(name, x, scalar)
    for lanes in (3, 8, 32):
        out = aligned_empty(len(x), "float32")
        lib.run(f"{name}_x{lanes}", x, out)
        np.testing.assert_array_equal(out[:96], scalar[:96], err_msg=f"{name} x{lanes}")


def test_fast_functions_are_inlined_and_vectorized(lib):
    body = lib.llvm_ir.split("define void @erf(")[1].split("\n}")[0]
    lanes = Target.host().lanes("float32")  # 16 with AVX-512, 8 with AVX2
    assert f"<{lanes} x float>" in body
    assert not re.search(r"call [^@]*@(?!llvm\.)", body)  # no calls left but LLVM intrinsics


def test_erf_near_saturation_stays_within_one_and_its_bound(lib):
    """Every float32 in [3.5, 4.1] (where the rational's value is closest to 1), and every
    16th of their negations: |erf| <= 1, within the bound, ±1 from the saturation point."""
    start, stop = np.float32(3.5).view(np.uint32), np.float32(4.1).view(np.uint32)
    x = np.arange(start, stop, dtype=np.uint32).view(np.float32)
    x = np.concatenate([x, -x[::16]])
    n = len(POINTS)
    for lo in range(0, len(x), n):
        part = x[lo : lo + n]
        chunk = np.zeros(n, np.float32)
        chunk[: len(part)] = part
        out = aligned_empty(n, "float32")
        lib.run("erf", aligned_copy(chunk), out)
        got = out[: len(part)].astype(np.float64)
        ref = _erf(part.astype(np.float64))
        assert np.all(np.abs(got) <= 1.0)
        ulp = np.spacing(np.abs(ref.astype(np.float32))).astype(np.float64)
        assert np.max(np.abs(got - ref) / ulp) <= BOUNDS_ULP["erf"]
        saturated = np.abs(part) >= np.float32(3.9192059)
        assert np.all(got[saturated] == np.sign(part[saturated]))


def test_erf_is_odd_bit_for_bit(lib):
    """erf(-x) is exactly -erf(x) for every sampled x (the rational is odd in x)."""
    x = aligned_copy(POINTS)
    pos, neg = aligned_empty(len(x), "float32"), aligned_empty(len(x), "float32")
    lib.run("erf", x, pos)
    lib.run("erf", aligned_copy(-POINTS), neg)
    keep = ~np.isnan(POINTS)
    np.testing.assert_array_equal((-neg[keep]).view(np.uint32), pos[keep].view(np.uint32))
