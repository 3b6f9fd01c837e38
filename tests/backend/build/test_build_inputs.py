"""Wrong inputs to a compiled model are errors naming the argument, checked before native
code runs (in a subprocess, so a crash would fail the test)."""

import subprocess
import sys

import pytest

PROGRAM = '''
import numpy as np, relay
from relay import build
mod = relay.parse("""#[version = "0.0.5"]
def @main(%x: Tensor[(4, 8), float32], %w: Tensor[(16, 8), float32]) {
  nn.relu(nn.dense(%x, %w))
}""")
m = build(mod)
assert m.native
x = np.ones((4, 8), np.float32); w = np.ones((16, 8), np.float32)
case = {case!r}
try:
    if case == "missing":
        m.run(x=x)
    elif case == "unknown":
        m.run(x=x, w=w, bias=x)
    elif case == "shape":
        m.run(x=np.ones((4, 9), np.float32), w=w)
    elif case == "dtype":
        m.run(x=x.astype(np.float64), w=w)
    elif case == "strided":
        m.run(x=np.ones((8, 8), np.float32)[::2], w=w)
    elif case == "not_array":
        m.run(x="hello", w=w)
    elif case == "twice":
        m.run(x, x=x, w=w)
    print("NO ERROR")
except relay.Error as e:
    print("ERROR:", e)
'''

CASES = {
    "missing": ["missing argument `w` (Tensor[(16, 8), float32])"],
    "unknown": ["unexpected argument `bias`"],
    "shape": ["argument `x`: expected Tensor[(4, 8), float32], got Tensor[(4, 9), float32]"],
    "dtype": ["argument `x`: expected Tensor[(4, 8), float32], got Tensor[(4, 8), float64]"],
    "strided": ["argument `x`", "contiguous"],
    "not_array": ["argument `x`", "str"],
    "twice": ["argument `x` is given twice"],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_wrong_input_is_a_clear_error(case):
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM.replace("{case!r}", repr(case))],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ERROR:"), done.stdout
    for fragment in CASES[case]:
        assert fragment in done.stdout


def test_correct_inputs_compute_dense_relu():
    import numpy as np
    import relay
    from relay import build

    mod = relay.parse(
        '#[version = "0.0.5"]\n'
        "def @main(%x: Tensor[(4, 8), float32], %w: Tensor[(16, 8), float32]) {\n"
        "  nn.relu(nn.dense(%x, %w))\n}"
    )
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    w = rng.standard_normal((16, 8)).astype(np.float32)
    out = build(mod).run(x=x, w=w)
    np.testing.assert_allclose(out, np.maximum(x @ w.T, 0), rtol=1e-5, atol=1e-5)


def test_inputs_that_do_not_start_on_a_cache_line_are_used_in_place():
    import numpy as np
    import relay

    mod = relay.parse(
        '#[version = "0.0.5"]\n'
        "def @main(%x: Tensor[(37, 19), float32]) { nn.relu(multiply(%x, 2f)) }"
    )
    raw = np.random.default_rng(1).standard_normal(37 * 19 + 1).astype(np.float32)
    x = raw[1:].reshape(37, 19)
    assert x.ctypes.data % 64 != 0 and x.flags.c_contiguous
    np.testing.assert_array_equal(relay.build(mod).run(x=x), np.maximum(x * 2, 0))
