"""Vectorizable float32 exp, tanh, sigmoid and erf as LLVM IR.

Each function is an internal, always-inlined LLVM function over `float` or `<N x float>`
(any N), built from FMAs, selects and bit operations only (no branches, no table lookups, no
libm calls), so LLVM's vectorizers handle them like any other arithmetic. NaN in gives NaN out;
±inf and huge inputs saturate correctly; denormal inputs and outputs are handled. The
instructions carry no fast-math flags, so LLVM cannot reassociate the range reductions away.
The polynomial coefficients are least-squares fits at 2000 Chebyshev nodes (weighted for
relative error), which is within a few percent of minimax; erf's rational is a linearized
least-squares fit iterated and reweighted towards minimax (Lawson's method).

Error bounds, measured against float64 references (scipy/numpy) over 4 million random bit
patterns covering all finite float32 values and dense sweeps of [-110, 110] and [-2, 2];
tests/backend/codegen/test_fastmath.py checks them again on fewer points. "ulp" is the
spacing of float32 at the exact result; results below 2^-126 (denormal) are held to an
absolute error of one denormal step, 2^-149.

* `exp` (measured max 1.04 ulp; bound 1.5 ulp): n = round(x / ln 2) by the 1.5·2^23 trick,
  Cody–Waite reduction r = x - n ln 2 in two FMAs, e^r ≈ 1 + r + r²·P4(r) on |r| ≤ ln2/2,
  scaled by 2^n in two steps (an exponent-field add of n >> 1, then a multiply by the rest),
  so results down to the smallest denormal are rounded once and come out right.
  +inf for x > 88.73 (and x = +inf), 0 for x < -103.98 (and x = -inf).
* `tanh` (measured 1.51 ulp; bound 2 ulp): |x| < 0.625: x + x³·P4(x²); otherwise
  sign(x)·(1 - e)/(1 + e) with e = exp(-2|x|): no cancellation, no overflow; ±1 at ±inf.
* `sigmoid` (measured 2.31 ulp; bound 3 ulp): e = exp(-|x|); 1/(1 + e) for x ≥ 0 and
  e/(1 + e) for x < 0 (one division, no overflow; denormal results for x < -87.3).
* `erf` (measured 5.9 ulp, 3.5e-7 relative, by an exhaustive sweep of [0.5, 3.92) and
  samples elsewhere; bound 6 ulp): x·P5(x²)/Q5(x²) (odd, so it keeps the sign of x and of
  ±0), one rational fitted for relative error on [0, 3.92] (fit error 1.9e-8; the rest is
  float32 rounding; rationals of lower degree fit no better than 2.8e-7), x clamped to
  ±3.9192 (from there erf rounds to ±1 in float32, and the rational there is >= 1) and the
  quotient to [-1, 1]. 17 vector operations and one division, no exp: it is the GELU tail
  of a dense layer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from llvmlite import ir

from .llvm_types import F32, I32, intrinsic

_EXP_P = (0.49999997909884975, 0.16666576760856963, 0.0416679373159573,
          0.00836340491127345, 0.0013813092553217107)  # fmt: skip
_TANH_P = (-0.33333279208370503, 0.1333138135435874, -0.05373531884934353,
           0.020626291822993463, -0.005691985662941903)  # fmt: skip
_ERF_P = (1.1283791462588006, 0.19037861935821165, 0.052745637569987125,
          0.00376457907896673, 0.00028488712796052477, 2.0506738411184626e-06)  # fmt: skip
_ERF_Q = (1.0, 0.5020514014056644, 0.1140981427214092, 0.014967124642191496,
          0.0011623348668562254, 3.809799816747294e-05)  # fmt: skip
_ERF_SATURATE = 3.919205904006958  # the least float32 x with erf(x) rounding to 1.0f

_LOG2E = 1.4426950408889634
_LN2_HI = 0.693359375
_LN2_LO = -2.12194440e-4
_ROUND_MAGIC = 12582912.0  # 1.5 * 2**23: adding it rounds a float32 to an integer


class _Vec:
    """Terse builder helpers for float32 values with a fixed lane count."""

    def __init__(self, b: ir.IRBuilder, lanes: int) -> None:
        self.b = b
        self.n = lanes
        self.fty: ir.Type = F32 if lanes == 1 else ir.VectorType(F32, lanes)
        self.ity: ir.Type = I32 if lanes == 1 else ir.VectorType(I32, lanes)

    def f(self, value: float) -> ir.Constant:
        c = ir.Constant(F32, value)
        return c if self.n == 1 else ir.Constant(self.fty, [c] * self.n)

    def i(self, value: int) -> ir.Constant:
        c = ir.Constant(I32, value)
        return c if self.n == 1 else ir.Constant(self.ity, [c] * self.n)

    def call(self, name: str, *args: ir.Value) -> ir.Value:
        fn = intrinsic(self.b.module, name, self.fty, [self.fty] * len(args), [self.fty])
        return self.b.call(fn, list(args))

    def fma(self, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
        return self.call("llvm.fma", a, b, c)

    def horner(self, x: ir.Value, coeffs: Sequence[float]) -> ir.Value:
        """c0 + c1 x + ... + ck x^k, by Horner's rule with FMAs."""
        acc: ir.Value = self.f(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self.fma(acc, x, self.f(c))
        return acc

    def lt(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fcmp_ordered("<", a, b)

    def select(self, c: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.select(c, a, b)


def _exp(v: _Vec, x: ir.Value) -> ir.Value:
    b = v.b
    x = v.select(b.fcmp_ordered(">", x, v.f(89.0)), v.f(89.0), x)
    x = v.select(v.lt(x, v.f(-104.0)), v.f(-104.0), x)
    shifted = v.fma(x, v.f(_LOG2E), v.f(_ROUND_MAGIC))
    nf = b.fsub(shifted, v.f(_ROUND_MAGIC))
    n = b.sub(b.bitcast(shifted, v.ity), b.bitcast(v.f(_ROUND_MAGIC), v.ity))
    r = v.fma(nf, v.f(-_LN2_HI), x)
    r = v.fma(nf, v.f(-_LN2_LO), r)
    q = v.horner(r, _EXP_P)
    p = b.fadd(v.fma(b.fmul(r, r), q, r), v.f(1.0))
    # p * 2^n in two steps, so that denormal results are rounded once: p * 2^n1 (n1 = n >> 1,
    # a normal result) by adding n1 to p's exponent field, then a multiply by 2^(n - n1)
    n1 = b.ashr(n, v.i(1))
    s2 = b.bitcast(b.shl(b.add(b.sub(n, n1), v.i(127)), v.i(23)), v.fty)
    p1 = b.bitcast(b.add(b.bitcast(p, v.ity), b.shl(n1, v.i(23))), v.fty)
    return b.fmul(p1, s2)


def _tanh(v: _Vec, x: ir.Value) -> ir.Value:
    b = v.b
    a = v.call("llvm.fabs", x)
    x2 = b.fmul(x, x)
    small = v.fma(b.fmul(x, x2), v.horner(x2, _TANH_P), x)
    e = _call_fast(b, "exp", b.fmul(a, v.f(-2.0)))
    big = b.fdiv(b.fsub(v.f(1.0), e), b.fadd(v.f(1.0), e))
    return v.call("llvm.copysign", v.select(v.lt(a, v.f(0.625)), small, big), x)


def _sigmoid(v: _Vec, x: ir.Value) -> ir.Value:
    b = v.b
    e = _call_fast(b, "exp", b.fneg(v.call("llvm.fabs", x)))
    num = v.select(b.fcmp_ordered(">=", x, v.f(0.0)), v.f(1.0), e)
    return b.fdiv(num, b.fadd(v.f(1.0), e))


def _erf(v: _Vec, x: ir.Value) -> ir.Value:
    b = v.b
    # erf is odd: x P(x²)/Q(x²) carries the sign of x (and of ±0) without fabs/copysign.
    # Past ±_ERF_SATURATE erf is ±1 in float32: x is clamped there (the rational at the
    # clamp is >= 1 in float32) and the quotient clamped to [-1, 1]. The clamps are selects
    # on ordered compares, false for NaN, so NaN passes through.
    x = v.select(b.fcmp_ordered(">", x, v.f(_ERF_SATURATE)), v.f(_ERF_SATURATE), x)
    x = v.select(v.lt(x, v.f(-_ERF_SATURATE)), v.f(-_ERF_SATURATE), x)
    t = b.fmul(x, x)
    r = b.fdiv(b.fmul(x, v.horner(t, _ERF_P)), v.horner(t, _ERF_Q))
    r = v.select(b.fcmp_ordered(">", r, v.f(1.0)), v.f(1.0), r)
    return v.select(v.lt(r, v.f(-1.0)), v.f(-1.0), r)


_BODIES: dict[str, Callable[[_Vec, ir.Value], ir.Value]] = {
    "exp": _exp,
    "tanh": _tanh,
    "sigmoid": _sigmoid,
    "erf": _erf,
}

FAST_FUNCTIONS = frozenset(_BODIES)
"""The intrinsics that have a fast float32 implementation here."""


def _function(module: ir.Module, name: str, lanes: int) -> ir.Function:
    fname = f"__relay_fast_{name}_{'f32' if lanes == 1 else f'v{lanes}f32'}"
    existing = module.globals.get(fname)
    if isinstance(existing, ir.Function):
        return existing
    ty: ir.Type = F32 if lanes == 1 else ir.VectorType(F32, lanes)
    fn = ir.Function(module, ir.FunctionType(ty, [ty]), fname)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    fn.attributes.add("readnone")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(_BODIES[name](_Vec(b, lanes), fn.args[0]))
    return fn


def _call_fast(b: ir.IRBuilder, name: str, x: ir.Value) -> ir.Value:
    lanes = x.type.count if isinstance(x.type, ir.VectorType) else 1
    return b.call(_function(b.module, name, lanes), [x])


def emit_fast(b: ir.IRBuilder, name: str, x: ir.Value) -> ir.Value:
    """`name(x)` (one of `FAST_FUNCTIONS`) for a float32 scalar or vector `x`, as a call to
    an always-inlined internal function added to `b`'s module on first use."""
    if name not in _BODIES:
        raise ValueError(f"no fast float32 implementation of `{name}`")
    return _call_fast(b, name, x)
