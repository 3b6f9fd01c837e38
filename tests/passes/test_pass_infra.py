"""The pass infrastructure: passes, registry, PassContext rules, Sequential, pipeline text,
instruments (timing, IR printing, debug checks), the bisector and standard pipelines."""

import io
import sys

import numpy as np
import pytest
import relay
from attrs import frozen
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend.runtime import interpret
from relay.lang import (
    Call,
    Constructor,
    FuncAttrs,
    Function,
    GlobalTypeVar,
    GlobalVar,
    IRModule,
    Let,
    TensorType,
    TypeCheckError,
    Var,
    const,
    get_op,
    let_chain,
    rewrite_post_order,
)
from relay.passes import (
    PASSES,
    STANDARD_PIPELINES,
    DebugInstrument,
    NoOptions,
    Pass,
    PassContext,
    PassError,
    PassInstrument,
    PrintIR,
    Sequential,
    TimingInstrument,
    bisect,
    check_well_formed,
    function_pass,
    get_pass,
    identity_pass,
    infer_type_pass,
    module_pass,
    normal_form_problem,
    parse_pipeline,
    register_pass,
    standard_pipeline,
    values_close,
    well_formed_problems,
)
from relay.testing import dataflow_programs, inputs_for

SOURCE = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32] {
  let %a = add(%x, %y);
  multiply(%a, 2f)
}
"""

T23 = TensorType((2, 3), "float32")


def module() -> IRModule:
    return relay.parse(SOURCE)


def inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "x": rng.standard_normal((2, 3)).astype("float32"),
        "y": rng.standard_normal((2, 3)).astype("float32"),
    }


# ---------------------------------------------------------------- test passes (registered)

LOG: list[str] = []


@frozen
class DemoOptions:
    """Options of the demo pass."""

    max_depth: int = 3
    scale: float = 1.0
    fast: bool = False
    mode: str = "auto"


@module_pass(name="test-infra-log-a", opt_level=1, register=False)
def log_a(mod, ctx, options):
    """Records that it ran."""
    LOG.append("test-infra-log-a")
    return mod


@module_pass(name="test-infra-log-b", opt_level=3, required=("test-infra-log-a",), register=False)
def log_b(mod, ctx, options):
    """Records that it ran; requires log-a."""
    LOG.append("test-infra-log-b")
    return mod


@module_pass(name="test-infra-log-c", opt_level=0, required=("test-infra-log-b",), register=False)
def log_c(mod, ctx, options):
    """Records that it ran; requires log-b (and so log-a)."""
    LOG.append("test-infra-log-c")
    return mod


SEEN_OPTIONS: list[DemoOptions] = []


@module_pass(name="test-infra-demo", opt_level=2, options=DemoOptions, register=False)
def demo(mod, ctx, options):
    """Records its options."""
    SEEN_OPTIONS.append(options)
    return mod


def _swap_multiply_for_add(fn, mod, ctx, options):
    mul, add = get_op("multiply"), get_op("add")

    def rewrite(e):
        if isinstance(e, Call) and e.op is mul:
            return e.replace(op=add)
        return None

    return rewrite_post_order(fn, rewrite)


wrong_math = function_pass(name="test-infra-wrong-math", opt_level=0, register=False)(
    _swap_multiply_for_add
)


@function_pass(name="test-infra-nudge", opt_level=0, register=False)
def nudge(fn, mod, ctx, options):
    """Multiplies the result by (1 + 1e-7): a change within float tolerance."""
    return fn.replace(body=Call(get_op("multiply"), [fn.body, const(1.0000001)]))


TEST_PASSES = (log_a, log_b, log_c, demo, wrong_math, nudge)


@pytest.fixture(autouse=True, scope="module")
def registered_test_passes():
    """Register the test passes for this module only (other tests that walk the
    registry, e.g. to check every pass, must not see semantics-changing test passes)."""
    for p in TEST_PASSES:
        register_pass(p)
    yield
    for p in TEST_PASSES:
        del PASSES[p.name]


# ------------------------------------------------------------------------ pass values


def test_decorators_make_frozen_pass_values():
    p = get_pass("test-infra-demo")
    assert isinstance(p, Pass)
    assert (p.name, p.opt_level, p.kind, p.needs, p.produces) == (
        "test-infra-demo",
        2,
        "module",
        "any",
        "any",
    )
    assert p.options == DemoOptions()
    assert get_pass("test-infra-log-b").required == ("test-infra-log-a",)
    assert wrong_math.kind == "function"
    with pytest.raises(AttributeError):
        p.name = "other"  # type: ignore[misc]
    assert "Records its options" in p.doc


def test_names_must_be_kebab_case_and_normal_forms_known():
    with pytest.raises(PassError, match="kebab-case"):
        module_pass(name="Fold_Constant", register=False)(lambda m, c, o: m)
    with pytest.raises(PassError, match="normal form"):
        module_pass(name="test-infra-bad-form", needs="cps", register=False)(lambda m, c, o: m)
    with pytest.raises(PassError, match="attrs class"):
        module_pass(name="test-infra-bad-opts", options=dict, register=False)(lambda m, c, o: m)


def test_registry_lookup_and_duplicates():
    assert PASSES["infer-type"] is infer_type_pass
    assert get_pass("identity") is identity_pass
    with pytest.raises(PassError, match="unknown pass 'fold-constnt'"):
        get_pass("fold-constnt")
    with pytest.raises(PassError, match="did you mean identity"):
        get_pass("identiy")
    with pytest.raises(PassError, match="already registered"):
        module_pass(name="identity")(lambda m, c, o: m)
    # registering the same pass again is harmless
    assert register_pass(identity_pass) is identity_pass


def test_unregistered_pass_is_not_in_registry():
    p = module_pass(name="test-infra-private", register=False)(lambda m, c, o: m)
    assert "test-infra-private" not in PASSES
    mod = module()
    assert p(mod, PassContext()) is mod


def test_function_pass_skips_primitive_functions_unless_asked():
    mod = module()
    x = Var("p", T23)
    prim = Function([x], Call(get_op("multiply"), [x, const(3.0)]), T23)
    prim = prim.replace(attrs=FuncAttrs({"Primitive": 1}))
    mod = mod.with_function("fused", prim)
    out = wrong_math(mod, PassContext())
    assert out["fused"] is mod["fused"]
    assert out["main"] is not mod["main"]
    every = function_pass(name="test-infra-all", include_primitive=True, register=False)(
        _swap_multiply_for_add
    )
    out2 = every(mod, PassContext())
    assert out2["fused"].body.op is get_op("add")


def test_function_pass_unchanged_returns_same_module():
    keep = function_pass(name="test-infra-keep", register=False)(lambda f, m, c, o: f)
    mod = module()
    assert keep(mod, PassContext()) is mod


def test_pass_returning_wrong_kind_is_an_error_naming_it():
    bad = function_pass(name="test-infra-bad-fn", register=False)(lambda f, m, c, o: f.body)
    with pytest.raises(PassError, match="test-infra-bad-fn"):
        bad(module(), PassContext())
    bad_mod = module_pass(name="test-infra-bad-mod", register=False)(lambda m, c, o: None)
    with pytest.raises(PassError, match="test-infra-bad-mod"):
        bad_mod(module(), PassContext())


# ------------------------------------------------------------------- PassContext rules


@pytest.mark.parametrize(
    ("opt_level", "required", "disabled", "runs"),
    [
        (2, (), (), True),  # 2 >= 2
        (1, (), (), False),  # 1 < 2
        (3, (), (), True),
        (1, ("test-infra-demo",), (), True),  # required overrides the level
        (3, (), ("test-infra-demo",), False),  # disabled wins
        (3, ("test-infra-demo",), ("test-infra-demo",), False),  # disabled beats required
    ],
)
def test_tvm_enabling_rule(opt_level, required, disabled, runs):
    ctx = PassContext(opt_level=opt_level, required_pass=required, disabled_pass=disabled)
    assert ctx.pass_enabled(get_pass("test-infra-demo")) is runs
    seq = Sequential([get_pass("test-infra-demo")])
    SEEN_OPTIONS.clear()
    seq(module(), ctx)
    assert len(SEEN_OPTIONS) == (1 if runs else 0)


def test_context_defaults_and_unknown_names():
    ctx = PassContext()
    assert (ctx.opt_level, ctx.required_pass, ctx.disabled_pass, ctx.debug) == (2, (), (), False)
    with pytest.raises(PassError, match="unknown pass 'nope'"):
        PassContext(disabled_pass=["nope"])
    with pytest.raises(PassError, match="unknown pass 'nope'"):
        PassContext(config={"nope": {"a": 1}})


def test_context_manager_sets_current():
    outer = PassContext(opt_level=3)
    inner = PassContext(opt_level=0)
    assert PassContext.current().opt_level == 2
    with outer:
        assert PassContext.current() is outer
        with inner:
            assert PassContext.current() is inner
        assert PassContext.current() is outer
    assert PassContext.current() is not outer
    LOG.clear()
    with PassContext(opt_level=0):
        Sequential([log_a])(module())
    assert LOG == []
    with PassContext(opt_level=1):
        Sequential([log_a])(module())
    assert LOG == ["test-infra-log-a"]


# ------------------------------------------------------------------------- Sequential


def test_sequential_runs_required_passes_first():
    LOG.clear()
    Sequential([log_c])(module(), PassContext(opt_level=0))
    # log-b and log-a are required (transitively): they run although opt_level is 0
    assert LOG == ["test-infra-log-a", "test-infra-log-b", "test-infra-log-c"]


def test_sequential_flattens_and_prints():
    inner = Sequential([identity_pass, infer_type_pass])
    seq = Sequential([inner, log_a])
    assert seq.passes == (identity_pass, infer_type_pass, log_a)
    assert str(seq) == "identity,infer-type,test-infra-log-a"
    with pytest.raises(PassError, match="not int"):
        Sequential([3])  # type: ignore[list-item]


class Recorder(PassInstrument):
    def __init__(self):
        self.events = []

    def enter_pipeline(self, mod, ctx):
        self.events.append(("enter",))

    def exit_pipeline(self, mod, ctx):
        self.events.append(("exit",))

    def before_pass(self, p, mod, ctx):
        self.events.append(("before", p.name))

    def after_pass(self, p, before, after, ctx):
        self.events.append(("after", p.name))

    def skipped_pass(self, p, reason, ctx):
        self.events.append(("skip", p.name, reason))


def test_describe_lists_runs_and_skips_with_reasons():
    seq = parse_pipeline("identity,test-infra-demo,test-infra-log-b,infer-type")
    ctx = PassContext(opt_level=2, disabled_pass=["identity"])
    text = seq.describe(ctx)
    lines = text.splitlines()
    assert lines[0] == "pipeline at opt_level=2:"
    assert "skip identity" in lines[1] and "disabled by the PassContext" in lines[1]
    assert "run  test-infra-demo" in lines[2] and "opt_level 2 <= 2" in lines[2]
    assert "skip test-infra-log-b" in lines[3]
    assert "needs opt_level 3 > context opt_level 2" in lines[3]
    assert "run  infer-type" in lines[4]
    assert len(lines) == 5
    steps = seq.plan(PassContext(opt_level=3))
    assert [(s.pass_.name, s.runs) for s in steps] == [
        ("identity", True),
        ("test-infra-demo", True),
        ("test-infra-log-a", True),
        ("test-infra-log-b", True),
        ("infer-type", True),
    ]
    assert steps[2].reason == "required by test-infra-log-b"


def test_skipped_passes_are_reported_to_instruments():
    rec = Recorder()
    ctx = PassContext(opt_level=2, disabled_pass=["identity"], instruments=[rec])
    parse_pipeline("identity,test-infra-log-b,infer-type")(module(), ctx)
    assert rec.events == [
        ("enter",),
        ("skip", "identity", "disabled by the PassContext"),
        ("skip", "test-infra-log-b", "needs opt_level 3 > context opt_level 2"),
        ("before", "infer-type"),
        ("after", "infer-type"),
        ("exit",),
    ]


def test_calling_a_pass_directly_ignores_opt_level_but_is_instrumented():
    rec = Recorder()
    LOG.clear()
    log_b(module(), PassContext(opt_level=0, instruments=[rec]))
    assert LOG == ["test-infra-log-b"]
    assert rec.events == [("before", "test-infra-log-b"), ("after", "test-infra-log-b")]


# ---------------------------------------------------------------------- pipeline text


def test_pipeline_text_round_trips():
    text = "identity,test-infra-demo{max-depth=8,fast=true,mode=loop},infer-type"
    seq = parse_pipeline(text)
    assert str(seq) == text
    assert str(parse_pipeline(str(seq))) == text
    demo_pass = seq.passes[1]
    assert demo_pass.options == DemoOptions(max_depth=8, fast=True, mode="loop")
    assert str(parse_pipeline("test-infra-demo{scale=0.5}")) == "test-infra-demo{scale=0.5}"
    # default values print as nothing (canonical form)
    assert str(parse_pipeline("test-infra-demo{max-depth=3}")) == "test-infra-demo"
    assert str(parse_pipeline(" identity , infer-type ")) == "identity,infer-type"
    assert str(parse_pipeline("")) == ""
    quoted = 'test-infra-demo{mode="a,b}c"}'
    assert parse_pipeline(quoted).passes[0].options.mode == "a,b}c"
    assert str(parse_pipeline(quoted)) == quoted


def test_pipeline_options_reach_the_pass():
    SEEN_OPTIONS.clear()
    parse_pipeline("test-infra-demo{max-depth=8,scale=2}")(module(), PassContext())
    assert [DemoOptions(max_depth=8, scale=2.0)] == SEEN_OPTIONS
    assert isinstance(SEEN_OPTIONS[0].scale, float)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("identity,fold-constnt", "unknown pass 'fold-constnt'"),
        ("test-infra-demo{depth=8}", "pass 'test-infra-demo' has no option 'depth'"),
        ("test-infra-demo{max-depth=eight}", "option 'max-depth' of pass 'test-infra-demo'"),
        ("test-infra-demo{fast=maybe}", "expects bool, got 'maybe'"),
        ("test-infra-demo{scale=big}", "expects float"),
        ("test-infra-demo{max-depth}", "expected key=value"),
        ("test-infra-demo{max-depth=1", "unclosed"),
        ("test-infra-demo{max-depth=1,max-depth=2}", "given twice"),
        ("identity,,infer-type", "expected a pass name"),
        ("identity,", "expected a pass name after ','"),
        ("identity}", "unexpected '}'"),
        ("test-infra-demo{fast=true}x", "expected ','"),
    ],
)
def test_pipeline_errors_name_the_problem(text, message):
    with pytest.raises(PassError, match=message) as info:
        parse_pipeline(text)
    assert info.value.span is not None
    assert str(info.value.span).startswith("<pipeline>:1:")


def test_error_span_points_at_the_unknown_pass():
    with pytest.raises(PassError) as info:
        parse_pipeline("identity,bogus")
    assert info.value.span.column == 10
    assert "^~~~~" in info.value.render()


def test_with_options_and_context_options():
    p = get_pass("test-infra-demo")
    assert p.with_options(max_depth=5).options.max_depth == 5
    assert p.with_options(**{"max-depth": "6"}).options.max_depth == 6
    assert p.with_options() is p
    with pytest.raises(PassError, match="expects int, got True"):
        p.with_options(max_depth=True)
    with pytest.raises(PassError, match="expects str"):
        p.with_options(mode=3)
    SEEN_OPTIONS.clear()
    ctx = PassContext(config={"test-infra-demo": {"max-depth": 9, "fast": True}})
    Sequential([p.with_options(scale=4.0)])(module(), ctx)
    assert [DemoOptions(max_depth=9, scale=4.0, fast=True)] == SEEN_OPTIONS
    with pytest.raises(PassError, match="has no option 'speed'"):
        PassContext(config={"test-infra-demo": {"speed": 1}})
    with pytest.raises(PassError, match="expects int"):
        PassContext(config={"test-infra-demo": {"max_depth": 1.5}})


# ------------------------------------------------------------------------ instruments


def test_timing_instrument_reports_every_pass():
    timing = TimingInstrument()
    ctx = PassContext(opt_level=2, instruments=[timing], disabled_pass=["identity"])
    parse_pipeline("identity,infer-type,test-infra-demo{max-depth=4}")(module(), ctx)
    assert [name for name, _ in timing.times] == ["infer-type", "test-infra-demo{max-depth=4}"]
    assert all(t >= 0 for _, t in timing.times)
    report = timing.report()
    lines = report.splitlines()
    assert lines[0].split() == ["pass", "ms", "%"]
    assert lines[1].startswith("infer-type")
    assert lines[3].startswith("total")
    assert "skipped identity: disabled by the PassContext" in report
    assert timing.total == pytest.approx(sum(t for _, t in timing.times))


def test_print_ir_prints_chosen_passes_to_a_stream():
    out = io.StringIO()
    ctx = PassContext(instruments=[PrintIR(["test-infra-wrong-math"], before=True, stream=out)])
    parse_pipeline("identity,test-infra-wrong-math,infer-type")(module(), ctx)
    text = out.getvalue()
    assert text.count("// IR before") == 1 and text.count("// IR after") == 1
    before, after = text.split("// IR after test-infra-wrong-math\n")
    assert before.startswith("// IR before test-infra-wrong-math\n")
    assert "multiply(%a, 2f)" in before
    assert "add(%a, 2f)" in after and "multiply" not in after
    every = io.StringIO()
    parse_pipeline("identity,infer-type")(
        module(), PassContext(instruments=[PrintIR(stream=every)])
    )
    assert every.getvalue().count("// IR after") == 2
    assert "// IR before" not in every.getvalue()


# ---------------------------------------------------------------- debug / well-formedness


def _free_var_pass(mod, ctx, options):
    """Breaks scoping: the body uses a variable bound nowhere."""
    fn = mod["main"]
    stray = Var("stray", T23)
    return mod.with_function("main", fn.replace(body=Call(get_op("add"), [fn.body, stray])))


def _ill_typed_pass(mod, ctx, options):
    """Breaks types: adds a (4,)-tensor to a (2, 3)-tensor."""
    fn = mod["main"]
    bad = Call(get_op("add"), [fn.body, const(np.zeros(4, "float32"))])
    return mod.with_function("main", fn.replace(body=bad))


def _signature_pass(mod, ctx, options):
    """Keeps a well-typed module but changes @main's result type to int32."""
    fn = mod["main"]
    cast = get_op("cast")
    body = Call(cast, [fn.body], cast.make_attrs(dtype="int32"))
    return mod.with_function("main", fn.replace(body=body, ret_type=None))


def _let_pass(mod, ctx, options):
    """Adds a let, although it promises graph form."""
    fn = mod["main"]
    v = Var("extra")
    return mod.with_function("main", fn.replace(body=Let(v, fn.body, v)))


BROKEN = {
    "test-infra-free-var": (_free_var_pass, "any", "free variable"),
    "test-infra-ill-typed": (_ill_typed_pass, "any", "does not type-check"),
    "test-infra-signature": (_signature_pass, "any", "changed the signature of @main"),
    "test-infra-let": (_let_pass, "graph", "promises graph normal form"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_debug_mode_names_the_pass_that_broke_the_program(name):
    fn, produces, message = BROKEN[name]
    broken = module_pass(name=name, produces=produces, register=False)(fn)
    seq = Sequential([identity_pass, infer_type_pass, broken, identity_pass])
    # without debug the broken pass goes through unnoticed
    seq(module(), PassContext())
    with pytest.raises(PassError, match=message) as info:
        seq(module(), PassContext(debug=True))
    assert f"pass '{name}'" in str(info.value)
    with pytest.raises(PassError, match=f"pass '{name}'"):
        seq(module(), PassContext(instruments=[DebugInstrument()]))


def test_debug_mode_checks_needed_normal_form():
    needs_anf = module_pass(name="test-infra-needs-anf", needs="anf", register=False)(
        lambda m, c, o: m
    )
    graph = relay.parse(
        """#[version = "0.0.5"]
def @main(%x: Tensor[(2,), float32]) { multiply(add(%x, %x), 2f) }
"""
    )
    assert needs_anf(module(), PassContext(debug=True)) is not None
    with pytest.raises(PassError, match="pass 'test-infra-needs-anf' needs anf normal form"):
        needs_anf(graph, PassContext(debug=True))
    needs_graph = module_pass(name="test-infra-needs-graph", needs="graph", register=False)(
        lambda m, c, o: m
    )
    with pytest.raises(PassError, match="has a let binding of %a"):
        needs_graph(module(), PassContext(debug=True))


def test_debug_mode_accepts_correct_passes():
    ctx = PassContext(debug=True)
    assert len(ctx.all_instruments) == 1
    mod = module()
    out = parse_pipeline("identity,infer-type,test-infra-wrong-math")(mod, ctx)
    assert "add(%a, 2f)" in out.astext()


def test_well_formed_problems():
    x = Var("x", T23)
    body = Call(get_op("add"), [x, x])
    ok = IRModule.from_expr(Function([x], body))
    assert well_formed_problems(ok) == []
    check_well_formed(ok)
    # a variable used outside its let
    v = Var("v", T23)
    inner = Let(v, x, v)
    outside = Function([x], Call(get_op("add"), [inner, v]))
    problems = well_formed_problems(IRModule.from_expr(outside))
    assert any("%v is used outside the scope" in p for p in problems)
    # bound twice
    twice = Function([x], Let(v, x, Let(v, x, v)))
    assert any("bound twice" in p for p in well_formed_problems(IRModule.from_expr(twice)))
    # a global that is not in the module
    ghost = Function([x], Call(GlobalVar("ghost"), [x]))
    assert any("@ghost is not" in p for p in well_formed_problems(IRModule.from_expr(ghost)))
    # a constructor of no ADT of the module
    ctor = Constructor("Stray", [], GlobalTypeVar("Nowhere"))
    stray = Function([x], Call(ctor, []))
    assert any("Stray does not" in p for p in well_formed_problems(IRModule.from_expr(stray)))
    with pytest.raises(PassError, match="not well-formed"):
        check_well_formed(IRModule.from_expr(stray), "this")


def test_well_formed_with_match_and_prelude():
    mod = relay.parse(
        """#[version = "0.0.5"]
def @f(%a: Tensor[(2,), float32]) -> Tensor[(2,), float32] { negative(%a) }
def @main(%x: Tensor[(2,), float32]) -> List[Tensor[(2,), float32]] {
  let %g = fn (%z: Tensor[(2,), float32]) { @f(%z) };
  match (Cons(%g(%x), Nil)) { Cons(%h, _) => Cons(%h, Nil), Nil => Nil }
}
"""
    )
    assert well_formed_problems(mod) == []
    # a pattern variable used outside its clause
    fn = mod["main"]
    h = next(v for v in relay.lang.bound_vars(fn) if v.name_hint == "h")
    broken = mod.with_function("main", fn.replace(body=Call(get_op("negative"), [h])))
    assert any("%h" in p for p in well_formed_problems(broken))


def test_normal_form_problems():
    mod = module()
    assert normal_form_problem(mod, "any") is None
    assert normal_form_problem(mod, "anf") is None
    assert "let binding of %a" in normal_form_problem(mod, "graph")
    graph = relay.parse(
        """#[version = "0.0.5"]
def @main(%x: Tensor[(2,), float32]) { multiply(add(%x, %x), 2f) }
"""
    )
    assert normal_form_problem(graph, "graph") is None
    assert "operand is a Call" in normal_form_problem(graph, "anf")


def test_deep_chain_through_debug_checks_with_default_recursion_limit():
    limit = sys.getrecursionlimit()
    x = Var("x", TensorType((), "float32"))
    add, mul = get_op("add"), get_op("multiply")
    bindings = []
    prev = x
    for i in range(100_000):
        v = Var(f"v{i}")
        bindings.append((v, Call(add if i % 2 else mul, [prev, x])))
        prev = v
    mod = IRModule.from_expr(Function([x], let_chain(bindings, prev)))
    assert well_formed_problems(mod) == []
    assert normal_form_problem(mod, "anf") is None
    assert "let binding" in normal_form_problem(mod, "graph")
    timing = TimingInstrument()
    out = parse_pipeline("identity,test-infra-log-a")(mod, PassContext(instruments=[timing]))
    assert (out is mod) is True
    assert len(timing.times) == 2
    assert sys.getrecursionlimit() == limit


def test_debug_pipeline_on_a_deep_chain():
    limit = sys.getrecursionlimit()
    x = Var("x", TensorType((), "float32"))
    body = x
    for i in range(10_000):
        body = Let(Var(f"v{i}"), Call(get_op("multiply"), [x, x]), body)
    mod = IRModule.from_expr(Function([x], body))
    timing = TimingInstrument()
    ctx = PassContext(debug=True, instruments=[timing])
    out = parse_pipeline("identity,infer-type,test-infra-wrong-math")(mod, ctx)
    assert out is not mod and len(timing.times) == 3
    assert sys.getrecursionlimit() == limit


# --------------------------------------------------------------------------- bisector


def test_bisect_finds_the_first_pass_that_changes_results():
    mod = module()
    result = bisect(mod, "identity,infer-type,test-infra-wrong-math,identity", inputs())
    assert result is not None
    assert result.pass_.name == "test-infra-wrong-math"
    assert result.index == 2
    assert result.before is mod
    assert not values_close(result.expected, result.actual)
    assert np.allclose(result.expected, interpret(mod, **inputs()))


def test_bisect_tolerates_float_rounding_and_reports_none():
    mod = module()
    assert bisect(mod, parse_pipeline("identity,test-infra-nudge,infer-type"), inputs()) is None
    strict = bisect(mod, "test-infra-nudge", inputs(), rtol=0.0, atol=0.0)
    assert strict is not None and strict.pass_.name == "test-infra-nudge"


def test_bisect_skips_disabled_passes():
    ctx = PassContext(disabled_pass=["test-infra-wrong-math"])
    assert bisect(module(), "test-infra-wrong-math,identity", inputs(), ctx) is None


def test_bisect_reports_a_pass_whose_result_fails_to_run():
    drop = module_pass(name="test-infra-drop-main", register=False)(
        lambda m, c, o: m.without_function("main")
    )
    result = bisect(module(), Sequential([identity_pass, drop]), inputs())
    assert result is not None and result.pass_ is drop and result.error is not None


def test_values_close():
    a = np.array([1.0, np.nan], "float32")
    assert values_close((a, np.int32(3)), (a.copy(), np.int32(3)))
    assert not values_close(a, a.astype("float64"))
    assert not values_close(np.array([1, 2]), np.array([1, 3]))
    assert not values_close((a,), (a, a))
    assert values_close(np.array([1.0], "float32"), np.array([1.0 + 1e-7], "float32"))


# ------------------------------------------------------------------ built-in passes


def test_infer_type_pass_checks_and_returns_module_unchanged():
    mod = module()
    assert infer_type_pass(mod, PassContext()) is mod
    bad = _ill_typed_pass(mod, None, None)
    with pytest.raises(TypeCheckError):
        infer_type_pass(bad, PassContext())
    assert identity_pass(mod) is mod
    assert infer_type_pass.options == NoOptions() and infer_type_pass.opt_level == 0


# ------------------------------------------------------------------ standard pipelines


def test_standard_pipeline_table():
    assert sorted(STANDARD_PIPELINES) == [0, 1, 2, 3]
    for level, text in STANDARD_PIPELINES.items():
        names = text.split(",")
        assert "fuse-ops" in names and "infer-type" in names
        missing = [n for n in names if n not in PASSES]
        if missing:
            with pytest.raises(PassError, match=f"unknown pass '{missing[0]}'"):
                standard_pipeline(level)
        else:
            assert str(standard_pipeline(level)) == text
    # each level adds passes to the one below
    for level in (1, 2, 3):
        assert set(STANDARD_PIPELINES[level - 1].split(",")) <= set(
            STANDARD_PIPELINES[level].split(",")
        )
    with pytest.raises(PassError, match="opt level 7"):
        standard_pipeline(7)


# ------------------------------------------------------------------ generated programs


@settings(max_examples=15)
@given(dataflow_programs(max_ops=6, max_elements=256), st.data())
def test_generated_programs_pass_debug_identity_and_bisect(mod, data):
    assert well_formed_problems(mod) == []
    ctx = PassContext(debug=True)
    assert parse_pipeline("identity,infer-type")(mod, ctx) is mod
    assert bisect(mod, "identity,infer-type", data.draw(inputs_for(mod)), ctx) is None
