"""Property test: random integer (and exactly-rounded float) expression kernels compiled to
native code agree bit for bit with the reference TIR evaluator, in scalar loops and as
16-lane vectors."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend import tir
from relay.backend.codegen import compile_module
from relay.backend.runtime.native import aligned_copy, aligned_empty
from relay.backend.tir import op
from relay.backend.tir.evaluate import run_primfunc

N = 48
LANES = 16


def _const(draw, dtype):
    """A constant of `dtype` (a vector dtype gives a broadcast)."""
    if dtype.startswith("int32"):
        return tir.const(draw(st.integers(-20, 20)), dtype)
    return tir.const(draw(st.sampled_from([-2.5, -1.0, 0.0, 0.5, 3.0])), dtype)


@st.composite
def expressions(draw, leaves, dtype, depth):
    """A random expression over the leaf expressions `leaves` (all of `dtype`, which may be
    a vector dtype)."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.booleans()):
            return draw(st.sampled_from(leaves))
        return _const(draw, dtype)
    sub = expressions(leaves, dtype, depth - 1)
    x, y = draw(sub), draw(sub)
    common = ["min", "max", "select", "ite", "neg"]
    ints = ["add", "sub", "mul", "floordiv", "floormod", "div", "mod", "and", "xor", "shr"]
    floats = ["fabs", "floor", "cast_round_trip"]
    kind = draw(st.sampled_from(common + (ints if dtype.startswith("int32") else floats)))
    divisor = tir.const(draw(st.sampled_from([-7, -4, -3, 2, 3, 8, 16])), dtype)
    to_int = dtype.replace("float32", "int32")
    cmp = draw(st.sampled_from([tir.LT, tir.LE, tir.EQ, tir.NE]))
    build = {
        "min": lambda: tir.min_(x, y),
        "max": lambda: tir.max_(x, y),
        "select": lambda: tir.select(cmp(x, y), x, y),
        "ite": lambda: op.if_then_else(cmp(x, y), y, x),
        "neg": lambda: -x,
        "add": lambda: x + y,
        "sub": lambda: x - y,
        "mul": lambda: x * y,
        "floordiv": lambda: tir.FloorDiv(x, divisor),
        "floormod": lambda: tir.FloorMod(x, divisor),
        "div": lambda: tir.Div(x, divisor),
        "mod": lambda: tir.Mod(x, divisor),
        "and": lambda: op.call("bitwise_and", x, y),
        "xor": lambda: op.call("bitwise_xor", x, y),
        "shr": lambda: op.call("shift_right", x, tir.const(draw(st.integers(0, 7)), dtype)),
        "fabs": lambda: op.fabs(x),
        "floor": lambda: op.floor(x),
        "cast_round_trip": lambda: tir.cast(dtype, tir.cast(to_int, x)),
    }
    return build[kind]()


def kernels(draw, dtype):
    a, b, out = (tir.decl_buffer((N,), dtype, n) for n in ("a", "b", "out"))
    i = tir.Var("i")
    scalar = draw(expressions([a.load(i), b.load(i)], dtype, 4))
    r = tir.Ramp(i * LANES, tir.const(1), LANES)
    vdtype = f"{dtype}x{LANES}"
    vector = draw(expressions([tir.BufferLoad(a, [r]), tir.BufferLoad(b, [r])], vdtype, 4))
    funcs = [
        tir.PrimFunc(
            "s",
            (a, b, out),
            tir.For(i, 0, N, tir.ForKind.SERIAL, tir.BufferStore(out, scalar, (i,))),
        ),
        tir.PrimFunc(
            "v",
            (a, b, out),
            tir.For(i, 0, N // LANES, tir.ForKind.SERIAL, tir.BufferStore(out, vector, (r,))),
        ),
    ]
    return funcs


@settings(max_examples=25, deadline=None)
@given(st.data(), st.sampled_from(["int32", "float32"]))
def test_random_kernels_match_the_reference_evaluator(data, dtype):
    funcs = kernels(data.draw, dtype)
    lib = compile_module(funcs)
    rng = np.random.default_rng(0)
    if dtype == "int32":
        a, b = (aligned_copy(rng.integers(-1000, 1000, N).astype(np.int32)) for _ in range(2))
    else:
        a, b = (aligned_copy((rng.integers(-40, 40, N) / 4).astype(np.float32)) for _ in range(2))
    for f in funcs:
        got = aligned_empty(N, dtype)
        want = np.zeros(N, dtype)
        lib.run(f.name, a, b, got)
        run_primfunc(f, a.copy(), b.copy(), want)
        np.testing.assert_array_equal(got, want, err_msg=f.name)
