"""The types of modules as values of a `PassContext`: inferred once per context and module
object, handed over by passes that know them (fuse-ops), and verified by the debug
checker; no module-global cache."""

import importlib
from pathlib import Path

import pytest
import relay
from relay.lang import Call, Function, IRModule, TensorType, Var, get_op, post_order
from relay.passes import PassContext, PassError, Sequential, module_pass, parse_pipeline
from relay.passes.fuse_ops import fuse_module
from relay.passes.instruments import types_disagreement
from relay.passes.pass_base import NoOptions
from relay.typecheck import ModuleTypes, check_module

T = TensorType((2, 3), "float32")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MODELS = ["mlp", "lenet", "resnet18", "mobilenet_v2", "transformer_layer", "lstm"]


def relu_chain(n):
    x = Var("x", T)
    body = x
    for _ in range(n):
        body = Call(get_op("nn.relu"), (Call(get_op("exp"), (body,)),))
    return IRModule.from_expr(Function([x], body))


@pytest.fixture
def inferences(monkeypatch):
    """The modules the pass context infers, in order."""
    context = importlib.import_module("relay.passes.context")
    seen = []
    real = context.check_module

    def counting(mod):
        seen.append(mod)
        return real(mod)

    monkeypatch.setattr(context, "check_module", counting)
    return seen


def test_a_context_infers_a_module_once(inferences):
    mod = relu_chain(3)
    ctx = PassContext()
    types = ctx.module_types(mod)
    assert ctx.module_types(mod) is types and ctx.checked_types(mod) is types
    assert inferences == [mod]
    # another context knows nothing of it: there is no global cache
    PassContext().module_types(mod)
    assert inferences == [mod, mod]


def test_unchanged_modules_are_not_inferred_again(inferences):
    mod = relu_chain(3)
    with PassContext(opt_level=3) as ctx:
        out = parse_pipeline("infer-type,identity,infer-type")(mod, ctx)
    assert out is mod and inferences == [mod]


def test_remembered_types_are_used_but_checked_types_infer(inferences):
    mod = relu_chain(2)
    ctx = PassContext()
    handed = check_module(mod)
    ctx.remember_types(mod, handed)
    assert ctx.remembered_types(mod) is handed
    assert ctx.module_types(mod) is handed and inferences == []
    checked = ctx.checked_types(mod)
    assert checked is not handed and inferences == [mod]
    # once checked, the checker's types win over anything handed over later
    ctx.remember_types(mod, handed)
    assert ctx.module_types(mod) is checked


def test_fuse_ops_hands_over_the_types_the_checker_infers():
    for name in MODELS:
        mod = relay.parse_file(EXAMPLES / f"{name}.relay")
        with PassContext(opt_level=3) as ctx:
            before = parse_pipeline("to-graph-normal-form,infer-type")(mod, ctx)
            fused, types = fuse_module(before, ctx.module_types(before))
        assert fused is not before
        checked = check_module(fused)
        assert types_disagreement(types, checked) is None, name
        op_calls = [
            n for fn in fused.functions.values() for n in post_order(fn) if n in checked.type_args
        ]
        assert op_calls, name
        for node in op_calls:
            assert types.type_args[node] == checked.type_args[node], name


def test_the_debug_checker_catches_wrongly_handed_over_types():
    @module_pass(name="test-wrong-types", opt_level=0, register=False)
    def wrong_types(mod: IRModule, ctx: PassContext, options: NoOptions) -> IRModule:
        out = relu_chain(1)
        ctx.remember_types(out, ModuleTypes(global_types=check_module(out).global_types))
        return out

    with pytest.raises(PassError, match="test-wrong-types' handed over wrong types"):
        Sequential([wrong_types])(relu_chain(1), PassContext(debug=True))


def test_types_disagreement_names_the_node():
    mod = relu_chain(1)
    types = check_module(mod)
    assert types_disagreement(types, types) is None
    wrong = ModuleTypes({**types.table, mod["main"].body: TensorType((3,), "int32")})
    wrong.global_types.update(types.global_types)
    assert "Call node has type" in types_disagreement(wrong, types)
