"""`relay.transform`: TVM's pass names and signatures, over the same `Pass` objects that
pipeline text names; TVM's `Sequential`, `PassContext` and decorators; extra passes at
named points of the build pipeline."""

import numpy as np
import pytest
import relay
import relay.transform as T
from relay import passes
from relay.backend.runtime import interpret
from relay.driver import optimize
from relay.lang.expr import Call, Function
from relay.lang.op import get_op
from relay.lang.traversal import post_order, rewrite_post_order
from relay.passes import (
    PASSES,
    Pass,
    PassContext,
    PassError,
    PassInstrument,
    Sequential,
    parse_pipeline,
    values_close,
)

TVM_NAMES = [
    "InferType",
    "FoldConstant",
    "DeadCodeElimination",
    "EliminateCommonSubexpr",
    "SimplifyExpr",
    "SimplifyInference",
    "FoldScaleAxis",
    "ToANormalForm",
    "ToGraphNormalForm",
    "Inline",
    "LambdaLift",
    "FuseOps",
]

PROGRAM = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) {
  %0 = add(1f, 2f);
  %1 = multiply(%x, %0);
  %2 = add(%1, %y);
  nn.relu(%2)
}
"""


def module():
    return relay.parse(PROGRAM)


def inputs():
    rng = np.random.default_rng(3)
    return {
        "x": rng.standard_normal((2, 3)).astype("float32"),
        "y": rng.standard_normal((2, 3)).astype("float32"),
    }


def builtin_passes():
    return [p for p in PASSES.values() if p.transform.__module__.startswith("relay.passes")]


class Recorder(PassInstrument):
    """Names of the passes run and skipped, in order."""

    def __init__(self):
        self.ran, self.skipped = [], []

    def before_pass(self, p, mod, ctx):
        self.ran.append(p.name)

    def skipped_pass(self, p, reason, ctx):
        self.skipped.append(p.name)


def op_names(fn):
    return [n.op.name for n in post_order(fn) if isinstance(n, Call) and hasattr(n.op, "name")]


def groups(fn):
    """The operator names of each fused `Primitive` function (both sorted)."""
    return sorted(
        sorted(op_names(n))
        for n in post_order(fn)
        if isinstance(n, Function) and n is not fn and n.is_primitive
    )


def add_to_subtract(func, mod, ctx):
    """Turn every addition into a subtraction (wrong on purpose)."""

    def swap(node):
        if isinstance(node, Call) and node.op is get_op("add"):
            return node.replace(op=get_op("subtract"))
        return None

    return rewrite_post_order(func, swap)


# --------------------------------------------------------------------------- spellings


def test_every_tvm_name_of_the_issue_exists_and_returns_a_pass():
    for name in TVM_NAMES:
        made = getattr(T, name)()
        assert isinstance(made, Pass), name
        assert made.tvm_name == name


def test_every_registered_pass_has_one_transform_spelling_that_is_the_pipeline_object():
    found = builtin_passes()
    assert len(found) >= 14
    for p in found:
        factory = vars(T).get(p.tvm_name)
        assert factory is not None, f"relay.transform has no {p.tvm_name} for pass {p.name}"
        assert factory() is p
        assert parse_pipeline(p.name).passes[0] is p
        snake = p.name.replace("-", "_")
        assert getattr(passes, f"{snake}_pass") is p
        old = getattr(passes, snake, None)  # the old plain-function spelling is gone
        assert old is None or type(old).__name__ == "module", p.name


def test_old_spellings_are_gone():
    for name in ("infer_type", "identity", "dead_code_elimination", "to_graph_pass"):
        assert not hasattr(passes, name), name
    assert not hasattr(passes, "eliminate_common_subexpressions")


def test_list_passes_has_a_line_for_every_registered_pass(capsys):
    from relay.cli import main

    assert main(["opt", "--list-passes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for p in builtin_passes():
        line = next((ln for ln in lines if ln.split()[0] == p.name), None)
        assert line is not None, p.name
        cells = line.split()
        assert cells[1] == str(p.opt_level)
        assert cells[2] == (",".join(p.required) or "-")
        assert cells[3] == f"{p.tvm_name}()"
        assert p.summary and p.summary in line


def test_a_pass_is_called_on_a_module():
    mod = module()
    folded = T.FoldConstant()(mod)
    assert "add(1f, 2f)" not in folded.astext()
    assert values_close(interpret(folded, **inputs()), interpret(mod, **inputs()))
    assert T.InferType()(mod) is mod


def test_transform_options_and_unsupported_arguments():
    assert T.DeadCodeElimination(ignore_impurity=True).options.ignore_impurity
    assert T.DeadCodeElimination() is PASSES["dce"]
    assert T.RemoveUnusedFunctions(["entry"]).options.entry == "entry"
    with pytest.raises(PassError, match="inline_once"):
        T.DeadCodeElimination(inline_once=True)
    with pytest.raises(PassError, match="fskip"):
        T.EliminateCommonSubexpr(fskip=lambda e: False)
    with pytest.raises(PassError, match="exactly one"):
        T.RemoveUnusedFunctions(["a", "b"])


# ------------------------------------------------------------------------- FuseOps


CHAIN = """#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32]) {
  %0 = add(%x, 1f);
  %1 = exp(%0);
  negative(%1)
}
"""


@pytest.mark.parametrize(
    "fuse_opt_level, ctx_level, alone",
    [(-1, 0, True), (-1, 3, False), (0, 3, True), (1, 0, False)],
)
def test_fuse_ops_level_comes_from_the_argument_or_the_context(fuse_opt_level, ctx_level, alone):
    mod = relay.parse(CHAIN)
    with PassContext(opt_level=ctx_level):
        fused = T.FuseOps(fuse_opt_level=fuse_opt_level)(mod)
    found = groups(fused["main"])
    if alone:
        assert found == [["add"], ["exp"], ["negative"]]
    else:
        assert found == [["add", "exp", "negative"]]
    assert str(T.FuseOps(0)) == "fuse-ops{fuse-opt-level=0}"
    assert parse_pipeline("fuse-ops{fuse-opt-level=0}").passes[0] == T.FuseOps(0)


# -------------------------------------------------------------- Sequential / PassContext


def test_tvm_sequential_under_a_tvm_pass_context():
    rec = Recorder()
    seq = T.Sequential([T.FoldConstant(), T.DeadCodeElimination()], opt_level=0, name="mine")
    assert (seq.opt_level, seq.required, seq.name) == (0, (), "mine")
    with T.PassContext(opt_level=3, instruments=[rec]) as ctx:
        assert T.PassContext.current() is ctx
        seq(module())
    assert rec.ran == ["fold-constant", "dce"]
    rec = Recorder()
    with T.PassContext(opt_level=1, required_pass=["fold-constant"], instruments=[rec]):
        seq(module())
    assert rec.ran == ["fold-constant", "dce"]
    rec = Recorder()
    T.PassContext(3, None, ["fold-constant"], [rec], None)  # TVM's positional order
    with T.PassContext(3, None, ["fold-constant"], [rec], None):
        seq(module())
    assert rec.ran == ["dce"] and rec.skipped == ["fold-constant"]


def test_pass_context_is_the_one_class_and_defaults_match_tvm():
    assert T.PassContext is PassContext and T.Sequential is Sequential
    ctx = PassContext()
    assert (ctx.opt_level, ctx.required_pass, ctx.disabled_pass, ctx.instruments) == (2, (), (), ())
    assert ctx.config == {}
    with pytest.raises(PassError, match="unknown pass 'nope'"):
        PassContext(required_pass=["nope"])


@pytest.mark.parametrize(
    "config",
    [
        {"relay.FuseOps.max_depth": 1},
        {"fuse-ops.max-depth": 1},
        {"fuse-ops": {"max-depth": 1}},
    ],
)
def test_config_sets_pass_options_in_every_spelling(config):
    mod = relay.parse(CHAIN)
    ctx = PassContext(opt_level=3, config=config)
    assert ctx.config == {"fuse-ops": {"max_depth": 1}} or ctx.config == {
        "fuse-ops": {"max-depth": 1}
    }
    with ctx:
        fused = T.FuseOps()(mod)
    assert groups(fused["main"]) == [["add"], ["exp"], ["negative"]]


def test_config_errors_name_the_key():
    with pytest.raises(PassError, match="NoSuchPass"):
        PassContext(config={"relay.NoSuchPass.x": 1})
    with pytest.raises(PassError, match="has no option 'speed'"):
        PassContext(config={"fuse-ops.speed": 1})
    with pytest.raises(PassError, match=r"not 'pass-name\.option'"):
        PassContext(config={"flat": 1})


def test_a_nested_sequential_keeps_its_opt_level_and_requirements():
    rec = Recorder()
    inner = Sequential([T.DeadCodeElimination()], opt_level=3, required=["infer-type"])
    outer = Sequential([T.Identity(), inner])
    with PassContext(opt_level=2, instruments=[rec]):
        outer(module())
    assert rec.ran == ["identity"] and rec.skipped == ["infer-type", "dce"]
    rec = Recorder()
    with PassContext(opt_level=3, instruments=[rec]):
        outer(module())
    assert rec.ran == ["identity", "infer-type", "dce"]


# ----------------------------------------------------------------------- decorators


def test_function_pass_decorator_on_a_function():
    wrong = T.function_pass(add_to_subtract, opt_level=1)
    assert isinstance(wrong, Pass)
    assert (wrong.name, wrong.kind, wrong.opt_level, wrong.tvm_name) == (
        "add-to-subtract",
        "function",
        1,
        "AddToSubtract",
    )
    assert "add-to-subtract" not in PASSES  # TVM's decorators do not register
    out = wrong(module())
    assert "add" not in op_names(out["main"]) and op_names(out["main"]).count("subtract") == 2
    assert wrong.summary == "Turn every addition into a subtraction (wrong on purpose)."


def test_module_pass_decorator_on_a_function_with_a_name_and_requirements():
    seen = []

    @T.module_pass(opt_level=2, name="CountGlobals", required=["infer-type"])
    def count(mod, ctx):
        seen.append((len(mod.functions), ctx.opt_level))
        return mod

    assert (count.name, count.required, count.kind) == ("count-globals", ("infer-type",), "module")
    rec = Recorder()
    with PassContext(opt_level=2, instruments=[rec]):
        Sequential([count])(module())
    assert seen == [(1, 2)] and rec.ran == ["infer-type", "count-globals"]
    with PassContext(opt_level=1):
        Sequential([count])(module())
    assert seen == [(1, 2)]  # opt level 2 > 1: skipped


def test_decorators_on_classes_make_passes_from_constructor_arguments():
    @T.function_pass(opt_level=0)
    class ScaleConstants:
        """Multiply every scalar float constant by a factor."""

        def __init__(self, factor):
            self.factor = factor

        def transform_function(self, func, mod, ctx):
            from relay.lang.expr import Constant

            def scale(node):
                if isinstance(node, Constant) and node.data.ndim == 0:
                    return Constant(np.asarray(node.data * self.factor, node.data.dtype))
                return None

            return rewrite_post_order(func, scale)

    @T.module_pass(opt_level=0)
    class KeepModule:
        def transform_module(self, mod, ctx):
            return mod

    double = ScaleConstants(2.0)
    assert isinstance(double, Pass) and double.name == "scale-constants"
    assert double.summary == "Multiply every scalar float constant by a factor."
    mod = module()
    got = interpret(double(mod), **inputs())
    x, y = inputs()["x"], inputs()["y"]
    assert np.allclose(got, np.maximum(x * 6.0 + y, 0), atol=1e-5)
    assert KeepModule()(mod) is mod
    with pytest.raises(PassError, match="transform_module"):
        T.module_pass(opt_level=0)(type("Empty", (), {}))


def test_register_true_makes_the_pass_nameable_in_pipeline_text():
    def swap_adds_for_test(func, mod, ctx):
        return add_to_subtract(func, mod, ctx)

    try:
        p = T.function_pass(swap_adds_for_test, opt_level=0, register=True)
        assert parse_pipeline("swap-adds-for-test").passes[0] is p
        assert T.SwapAddsForTest() is p  # later passes join relay.transform
        again = T.function_pass(swap_adds_for_test, opt_level=0, register=True)  # reloaded
        assert PASSES["swap-adds-for-test"] is again
    finally:
        PASSES.pop("swap-adds-for-test", None)
    with pytest.raises(AttributeError):
        T.SwapAddsForTest  # noqa: B018


# ------------------------------------------------------- extra passes in build/optimize


def test_optimize_runs_extra_passes_at_named_points():
    rec = Recorder()
    mark = T.function_pass(lambda f, m, c: f, opt_level=0, name="mark-point")
    with PassContext(opt_level=3, instruments=[rec]):
        optimize(
            module(),
            None,
            passes=[("after:fold-constant", mark), ("start", "identity"), ("end", [mark])],
        )
    ran = [n for n in rec.ran if n != "inline"]
    last_fold = len(ran) - 1 - ran[::-1].index("fold-constant")
    assert ran[0] == "identity" and ran[last_fold + 1] == "mark-point"
    assert ran[-1] == "mark-point" and ran[-2] == "fuse-ops"
    assert ran.count("mark-point") == 2


def test_extra_passes_as_a_mapping_and_before_a_pass():
    rec = Recorder()
    with PassContext(instruments=[rec]):
        optimize(module(), 2, passes={"before:fuse-ops": T.Identity()})
    ran = rec.ran
    assert ran.index("identity") == ran.index("fuse-ops") - 1 or ran[
        ran.index("identity") + 1 : ran.index("fuse-ops")
    ] == ["infer-type"]


def test_extra_passes_run_inside_the_build_context():
    seen = []

    @T.module_pass(opt_level=0)
    def look(mod, ctx):
        seen.append((ctx is PassContext.current(), ctx.opt_level, ctx.disabled_pass))
        return mod

    with PassContext(opt_level=3, disabled_pass=["cse"]):
        optimize(module(), None, passes=[("before:fuse-ops", look)])
    assert seen == [(True, 3, ("cse",))]


def test_build_with_a_wrong_extra_pass_computes_its_result():
    mod = module()
    wrong = T.function_pass(add_to_subtract, opt_level=0)
    model = relay.build(mod, target="llvm", passes=[("start", wrong)])
    got = model.run(**inputs())
    assert values_close(got, interpret(wrong(mod), **inputs()), rtol=1e-4, atol=1e-5)
    assert not values_close(got, interpret(mod, **inputs()), rtol=1e-4, atol=1e-5)
    plain = relay.build(mod, target="llvm").run(**inputs())
    assert values_close(plain, interpret(mod, **inputs()), rtol=1e-4, atol=1e-5)


def test_unknown_point_is_an_error_listing_the_points():
    with pytest.raises(PassError) as info:
        optimize(module(), 2, passes=[("after:cse", T.Identity())])  # cse is level 3 only
    message = info.value.message
    assert "unknown point 'after:cse'" in message
    assert "after:fold-constant" in message and "before:fuse-ops" in message
    assert "start" in message and "end" in message
    with pytest.raises(PassError, match="pairs"):
        optimize(module(), 2, passes=[T.Identity()])
    with pytest.raises(PassError, match="not int"):
        optimize(module(), 2, passes=[("end", 3)])
