"""Types flow as values through a build: `relay.build` infers the types of the user's
module once and those of the optimized module at most once more, whatever the number of
kernels; planning and lowering use the optimizer's types and infer nothing."""

import importlib.util
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import relay
import relay.typecheck.infer as infer
from relay.backend.build import plan_graph
from relay.driver import bind_params, optimize
from relay.lang import Call, Function
from relay.passes import PassContext, TimingInstrument

ENTRY_POINTS = ("infer_module", "check_module", "infer_expr")
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


class InferenceCounter:
    """Counts every call of the type-inference entry points, wherever they were imported.

    `whole`: inferences of a whole module (`check_module` goes through `infer_module`);
    `functions`: `infer_expr` calls on a whole (non-primitive) function, as a rewriting
    pass makes to type the function it rewrites; `kernels`: `infer_expr` calls on a
    `Primitive` function or a call of one (what lowering without types does once per
    kernel). Other `infer_expr` calls type one rewritten node locally (`local`)."""

    def __init__(self, monkeypatch):
        self.calls = Counter()
        originals = {name: getattr(infer, name) for name in ENTRY_POINTS}
        wrappers = {name: self._wrap(name, fn) for name, fn in originals.items()}
        for module in list(sys.modules.values()):
            if not (getattr(module, "__name__", "") or "").startswith("relay"):
                continue
            for attr, value in list(vars(module).items()):
                for name, original in originals.items():
                    if value is original:
                        monkeypatch.setattr(module, attr, wrappers[name])

    def _wrap(self, name, fn):
        def counted(*args, **kwargs):
            self.calls[name] += 1
            if name == "infer_expr":
                expr = args[0]
                if _is_kernel(expr):
                    self.calls["kernels"] += 1
                elif isinstance(expr, Function):
                    self.calls["functions"] += 1
                else:
                    self.calls["local"] += 1
            return fn(*args, **kwargs)

        return counted

    @property
    def whole(self):
        return self.calls["infer_module"]

    @property
    def functions(self):
        return self.calls["functions"]

    @property
    def kernels(self):
        return self.calls["kernels"]


def _is_kernel(expr):
    fn = expr.op if isinstance(expr, Call) else expr
    return isinstance(fn, Function) and fn.is_primitive


def elementwise_chain(n):
    """`@main` of `n` nested adds and multiplies by distinct scalars: at opt level 0 (every
    operator its own kernel) `n` distinct, quickly compiled kernels."""
    body = "%x"
    for k in range(n):
        body = f"add({body}, {k + 1}f)" if k % 2 == 0 else f"multiply({body}, {k + 1}f)"
    text = f'#[version = "0.0.5"]\ndef @main(%x: Tensor[(2, 8), float32]) {{\n  {body}\n}}\n'
    return relay.parse(text)


def _elementwise_reference(n, x):
    for k in range(n):
        x = x + np.float32(k + 1) if k % 2 == 0 else x * np.float32(k + 1)
    return x


def dense_chain(n):
    """`@main` with `n` dense+relu layers of distinct widths: `n` distinct kernels."""
    widths = [4 + k for k in range(n + 1)]
    params = [f"%x: Tensor[(2, {widths[0]}), float32]"]
    params += [f"%w{k}: Tensor[({widths[k + 1]}, {widths[k]}), float32]" for k in range(n)]
    lines = [f"  let %h{k + 1} = nn.relu(nn.dense(%h{k}, %w{k}));" for k in range(n)]
    text = (
        '#[version = "0.0.5"]\n'
        f"def @main({', '.join(params)}) -> Tensor[(2, {widths[-1]}), float32] {{\n"
        "  let %h0 = %x;\n" + "\n".join(lines) + f"\n  %h{n}\n}}\n"
    )
    return relay.parse(text), widths


def _inputs(widths, seed=0):
    rng = np.random.default_rng(seed)
    inputs = {"x": rng.standard_normal((2, widths[0])).astype("float32")}
    for k in range(len(widths) - 1):
        shape = (widths[k + 1], widths[k])
        inputs[f"w{k}"] = (rng.standard_normal(shape) / np.sqrt(widths[k])).astype("float32")
    return inputs


def _reference(widths, inputs):
    h = inputs["x"]
    for k in range(len(widths) - 1):
        h = np.maximum(h @ inputs[f"w{k}"].T, 0)
    return h


@pytest.mark.parametrize("n", [3, 30])
def test_a_build_infers_twice_whatever_the_number_of_kernels(monkeypatch, n):
    mod = elementwise_chain(n)
    counter = InferenceCounter(monkeypatch)
    model = relay.build(mod, opt_level=0)
    assert model.native and model.stats.kernels == n
    # the user's program once, the optimized module once (infer-type before fusion; fusion
    # hands over the fused module's types); planning and lowering infer nothing
    assert counter.whole == 2
    assert counter.kernels == 0
    assert counter.functions == 0
    x = np.arange(16, dtype="float32").reshape(2, 8)
    np.testing.assert_allclose(model.run(x=x), _elementwise_reference(n, x), rtol=1e-6)


def test_the_full_pipeline_infers_twice(monkeypatch):
    mod, widths = dense_chain(3)
    counter = InferenceCounter(monkeypatch)
    model = relay.build(mod, opt_level=3)
    assert model.native and model.stats.kernels == 3
    assert counter.whole == 2
    assert counter.kernels == 0
    assert counter.functions == 0  # nothing for the rewriting passes to re-type here
    inputs = _inputs(widths)
    np.testing.assert_allclose(model.run(**inputs), _reference(widths, inputs), rtol=1e-5)


def test_bound_weights_do_not_add_inferences(monkeypatch):
    mod, widths = dense_chain(3)
    inputs = _inputs(widths)
    weights = {k: v for k, v in inputs.items() if k != "x"}
    counter = InferenceCounter(monkeypatch)
    model = relay.build(mod, params=weights)
    assert counter.whole == 2 and counter.kernels == 0
    np.testing.assert_allclose(model.run(x=inputs["x"]), _reference(widths, inputs), rtol=1e-5)


def test_optimize_returns_the_module_and_its_types(monkeypatch):
    mod, _ = dense_chain(4)
    counter = InferenceCounter(monkeypatch)
    optimized = optimize(mod, 3)
    assert counter.whole == 1  # infer-type; fuse-ops hands over the fused module's types
    main = optimized.module["main"]
    kernels = [n.op for n in relay.lang.post_order(main) if isinstance(n, Call) and _is_kernel(n)]
    assert len(kernels) == 4
    for fn in kernels:
        assert fn.body in optimized.types  # lowering can use the table as it is
    # the handed-over types are the type checker's
    checked = infer.check_module(optimized.module)
    for node, ty in checked.table.items():
        assert optimized.types.type_of(node) == ty


def test_build_under_an_enclosing_context_reuses_its_memo(monkeypatch):
    mod, _ = dense_chain(3)
    counter = InferenceCounter(monkeypatch)
    timing = TimingInstrument()
    with PassContext(opt_level=3, instruments=(timing,)):
        relay.build(mod)
    assert counter.whole == 2 and counter.kernels == 0
    assert "fuse-ops" in [name for name, _ in timing.times]


def _example_with_weights(name):
    spec = importlib.util.spec_from_file_location("make_weights", EXAMPLES / "make_weights.py")
    assert spec is not None and spec.loader is not None
    weights = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(weights)
    values = weights.make_weights(weights.parameter_specs(name), seed=0)
    return relay.parse_file(EXAMPLES / f"{name}.relay"), values


def test_resnet18_is_optimized_and_planned_with_one_module_inference(monkeypatch):
    mod, values = _example_with_weights("resnet18")
    bound = bind_params(mod, {k: v for k, v in values.items() if k != "data"})
    counter = InferenceCounter(monkeypatch)
    optimized = optimize(bound, 3)
    plan = plan_graph(optimized.module["main"], optimized.types)
    assert counter.whole == 1  # infer-type; fusion hands over the fused module's types
    # simplify-inference, fold-scale-axis, simplify-expr and alter-op-layout each type @main
    # once for their own rewrites (then retype rewritten nodes locally); nothing is
    # inferred per kernel
    assert counter.functions <= 4 and counter.kernels == 0
    assert len(plan.kernels) >= 20
    assert all(fn.body in optimized.types for fn in plan.kernels)  # lowering infers nothing
