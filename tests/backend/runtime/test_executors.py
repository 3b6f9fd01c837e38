"""`relay.create_executor(kind, mod, ...).evaluate(expr)(*args)`, as in TVM: every kind
agrees with the reference interpreter on a model and on a control-flow program, the forms of
`evaluate`, `params`, and clear errors."""

import numpy as np
import pytest
import relay
from relay.backend.runtime import ConstructorValue
from relay.executor import KINDS

MLP = """#[version = "0.0.5"]
def @main(%x: Tensor[(4, 16), float32], %w1: Tensor[(24, 16), float32],
          %w2: Tensor[(5, 24), float32]) {
  %0 = nn.dense(%x, %w1);
  %1 = nn.relu(%0);
  %2 = nn.dense(%1, %w2);
  (nn.softmax(%2), %1)
}
def @double(%a: Tensor[(3,), float32]) { %a * 2f }
"""

CONTROL_FLOW = """#[version = "0.0.5"]
def @main(%n: int32, %x: Tensor[(3,), float32]) {
  let %xs = @build(%n, %x);
  if (%n > 2) { (@total(%xs), %n) } else { (negative(%x), %n) }
}
def @build(%k: int32, %v: Tensor[(3,), float32]) -> List[Tensor[(3,), float32]] {
  if (%k <= 0) { Nil } else { Cons(%v * 2f, @build(%k - 1, %v + 1f)) }
}
def @total(%l: List[Tensor[(3,), float32]]) -> Tensor[(3,), float32] {
  match (%l) {
    Cons(%h, %t) => %h + @total(%t),
    Nil => zeros(shape=[3], dtype="float32"),
  }
}
"""


def _weights():
    rng = np.random.default_rng(3)
    return {
        "w1": (rng.standard_normal((24, 16)) / 4).astype("float32"),
        "w2": (rng.standard_normal((5, 24)) / 4).astype("float32"),
    }


def _assert_same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _assert_same(g, w)
        return
    assert isinstance(got, np.ndarray) and got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def mlp():
    return relay.parse(MLP)


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_runs_the_model_like_the_interpreter(kind, mlp):
    w = _weights()
    x = np.random.default_rng(kind.__len__()).standard_normal((4, 16)).astype("float32")
    want = relay.interpret(mlp, x, w["w1"], w["w2"])
    run = relay.create_executor(kind, mod=mlp, target="llvm -num-threads=1").evaluate()
    assert run.native == (kind != "debug")
    _assert_same(run(x, w["w1"], w["w2"]), want)
    _assert_same(run(w2=w["w2"], x=x, w1=w["w1"]), want)  # by name, any order
    # `params` binds the weights: the callable then takes the remaining input only.
    bound = relay.create_executor(kind, mod=mlp, params=w).evaluate()
    _assert_same(bound(x), want)
    # numpy's own MLP agrees, so the interpreter is not wrong in the same way.
    h = np.maximum(x @ w["w1"].T, 0) @ w["w2"].T
    e = np.exp(h - h.max(axis=1, keepdims=True))
    np.testing.assert_allclose(want[0], e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def _py(value):
    if isinstance(value, tuple):
        return tuple(_py(v) for v in value)
    if isinstance(value, ConstructorValue):
        return (value.constructor.name_hint, *(_py(f) for f in value.fields))
    return np.asarray(value).tolist()


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_runs_control_flow_and_lists_like_the_interpreter(kind):
    mod = relay.parse(CONTROL_FLOW)
    run = relay.create_executor(kind, mod=mod).evaluate()
    x = np.array([1.0, -2.0, 0.5], dtype="float32")
    for n in (0, 2, 3, 5):
        want = relay.interpret(mod, np.int32(n), x)
        got = run(np.int32(n), x)
        assert _py(got) == _py(want)
    # Worked by hand: 2 * (x + (x+1) + (x+2)) for n = 3, negation for n <= 2.
    np.testing.assert_allclose(run(3, x)[0], 2 * (3 * x + 3))
    np.testing.assert_allclose(run(1, x)[0], -x)


@pytest.mark.parametrize("kind", ["debug", "graph"])
def test_evaluate_a_global_a_function_and_a_closed_expression(kind, mlp):
    ex = relay.create_executor(kind, mod=mlp)
    a = np.array([1.0, 2.5, -3.0], dtype="float32")
    double = ex.evaluate(mlp.get_global_var("double"))
    np.testing.assert_array_equal(double(a), a * 2)
    np.testing.assert_array_equal(double(a=a), a * 2)

    p = relay.var("p", shape=(3,))
    fn = relay.Function([p], relay.multiply(relay.add(p, relay.const(1.0)), p))
    np.testing.assert_array_equal(ex.evaluate(fn)(a), (a + 1) * a)

    # A closed expression that is not a function: its value, at once (as TVM does).
    value = ex.evaluate(relay.add(relay.const(np.arange(3, dtype="float32")), relay.const(2.0)))
    np.testing.assert_array_equal(value, np.arange(3, dtype="float32") + 2)
    assert ex.evaluate(relay.const(7)).item() == 7
    pair = ex.evaluate(relay.Tuple([relay.const(1), relay.const(2.0)]))
    assert _py(pair) == (1, 2.0)

    # `binds` gives values to the free variables of the expression.
    q = relay.var("q", shape=(3,))
    np.testing.assert_array_equal(ex.evaluate(relay.negative(q), binds={q: a}), -a)


def test_params_bind_weights_of_main_and_of_an_evaluated_function(mlp):
    w = _weights()
    x = np.ones((4, 16), dtype="float32")
    ex = relay.create_executor("graph", mod=mlp, params={**w})
    want = relay.interpret(mlp, x, w["w1"], w["w2"])
    _assert_same(ex.evaluate()(x), want)
    # A function given to `evaluate` takes those params that name its parameters.
    w1 = relay.var("w1", shape=(24, 16))
    y = relay.var("y", shape=(4, 16))
    fn = relay.Function([y, w1], relay.nn.dense(y, w1))
    np.testing.assert_allclose(ex.evaluate(fn)(x), x @ w["w1"].T, rtol=1e-5)


def test_wrong_params_and_arguments_are_errors_naming_them(mlp):
    with pytest.raises(relay.Error, match="`bias`"):
        relay.create_executor("graph", mod=mlp, params={"bias": np.zeros(3)}).evaluate()
    bad = {"w1": np.zeros((24, 15), dtype="float32")}
    with pytest.raises(relay.Error, match=r"`w1`.*\(24, 16\)"):
        relay.create_executor("debug", mod=mlp, params=bad).evaluate()
    run = relay.create_executor("graph", mod=mlp, params=_weights()).evaluate()
    with pytest.raises(relay.Error, match=r"argument `x`.*\(4, 16\).*\(4, 15\)"):
        run(np.zeros((4, 15), dtype="float32"))
    with pytest.raises(relay.Error, match="missing argument `x`"):
        run()


def test_executor_errors_are_clear(mlp):
    with pytest.raises(relay.Error, match=r"unknown executor kind 'jit'.*debug, graph, vm, aot"):
        relay.create_executor("jit", mod=mlp)
    with pytest.raises(relay.Error, match=r"CPU.*cuda"):
        relay.create_executor("graph", mod=mlp, device="cuda")
    with pytest.raises(relay.Error, match="IRModule"):
        relay.create_executor("graph", mod="def @main() { 1 }")
    with pytest.raises(relay.Error, match="no @main"):
        relay.create_executor("graph").evaluate()
    free = relay.var("free", shape=(3,))
    with pytest.raises(relay.Error, match=r"free variables.*%free"):
        relay.create_executor("debug", mod=mlp).evaluate(relay.negative(free))
    with pytest.raises(relay.Error, match="@missing"):
        relay.create_executor("debug", mod=mlp).evaluate(relay.GlobalVar("missing"))
    # The CPU in its usual spellings is accepted.
    for device in (None, "cpu", (1, 0)):
        relay.create_executor("debug", mod=mlp, device=device)


def test_an_executor_builds_once_per_function(mlp):
    ex = relay.create_executor("graph", mod=mlp, params=_weights())
    assert ex.evaluate() is ex.evaluate()
    assert ex.evaluate().model is not ex.evaluate(mlp.get_global_var("double")).model
