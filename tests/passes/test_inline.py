"""`inline`: golden inlining of `Inline=1` globals, fresh binders, effects, generated programs."""

import relay
from relay.lang import Call, Function, GlobalVar, IRModule, post_order
from relay.lang.freevars import bound_vars
from relay.lang.structural import assert_structural_equal
from relay.passes import PassContext, inline_pass, parse_pipeline
from relay.testing import check_pass, dataflow_programs, functional_programs

HEADER = '#[version = "0.0.5"]\n'


def parse(text):
    return relay.parse(HEADER + text)


def test_inline_substitutes_arguments_and_drops_the_global():
    before = parse("""
def @double(%x: float32, Inline=1) -> float32 { add(%x, %x) }
def @main(%y: float32) -> float32 { @double(exp(%y)) }
""")
    after = parse("def @main(%y: float32) -> float32 { %0 = exp(%y); add(%0, %0) }")
    assert_structural_equal(inline_pass(before), after)


def test_inline_is_iterative_and_renames_binders():
    before = parse("""
def @double(%x: float32, Inline=1) -> float32 { add(%x, %x) }
def @quad(%x: float32, Inline=1) -> float32 { let %d = @double(%x); @double(%d) }
def @main(%y: float32) -> float32 { add(@quad(exp(%y)), @quad(%y)) }
""")
    after = parse("""
def @main(%y: float32) -> float32 {
  %0 = exp(%y);
  %1 = (let %d = add(%0, %0); add(%d, %d));
  %2 = (let %e = add(%y, %y); add(%e, %e));
  add(%1, %2)
}
""")
    out = inline_pass(before)
    assert_structural_equal(out, after)
    binders = bound_vars(out["main"])
    assert len(binders) == len(set(binders))


def test_inline_binds_effectful_arguments_once():
    before = parse("""
def @twice(%r, Inline=1) { (%r, %r) }
def @main(%y: float32) { @twice(ref(%y)) }
""")
    after = parse("""
def @main(%y: float32) { let %r = ref(%y); (%r, %r) }
""")
    assert_structural_equal(inline_pass(before), after)


def test_inline_leaves_recursive_polymorphic_and_unmarked_globals():
    text = """
def @loop(%i: int32, Inline=1) -> int32 { if (less(%i, 10)) { @loop(add(%i, 1)) } else { %i } }
def @id[A](%v: A, Inline=1) -> A { %v }
def @plain(%x: int32) -> int32 { add(%x, 1) }
def @main(%n: int32) -> int32 { @id(@plain(@loop(%n))) }
"""
    mod = parse(text)
    assert inline_pass(mod) is mod


def test_inline_keeps_a_global_that_is_still_referred_to():
    before = parse("""
def @inc(%x: int32, Inline=1) -> int32 { add(%x, 1) }
def @main(%n: int32) -> (int32, fn (int32) -> int32) { (@inc(%n), @inc) }
""")
    out = inline_pass(before)
    assert "inc" in [gv.name_hint for gv in out.functions]
    calls = [n for n in post_order(out["main"]) if isinstance(n, Call)]
    assert all(not isinstance(c.op, GlobalVar) for c in calls)


def test_inline_from_pipeline_text():
    before = parse("""
def @sq(%x: float32, Inline=1) -> float32 { multiply(%x, %x) }
def @main(%y: float32) -> float32 { @sq(%y) }
""")
    with PassContext(opt_level=1):
        out = parse_pipeline("inline")(before)
    assert_structural_equal(out, parse("def @main(%y: float32) -> float32 { multiply(%y, %y) }"))


def _outline_main(mod):
    """`@main` moved into an `Inline=1` global `@body` that the new `@main` calls."""
    main = mod["main"]
    body_fn = main.replace(attrs=main.attrs.with_attr("Inline", 1))
    params = [relay.lang.Var(p.name_hint, p.type_annotation) for p in main.params]
    gv = GlobalVar("body")
    new_main = Function(params, Call(gv, params), main.ret_type)
    return mod.with_function(gv, body_fn).with_function("main", new_main)


def _mark_all_inline(mod):
    out = mod
    for gv, fn in mod.functions.items():
        if gv.name_hint != "main":
            out = out.with_function(gv, fn.replace(attrs=fn.attrs.with_attr("Inline", 1)))
    return out


def test_inlining_an_outlined_main_gives_it_back():
    def check(mod):
        out = inline_pass(_outline_main(mod))
        assert_structural_equal(out, mod)
        return out

    check_pass(check, dataflow_programs(), max_examples=30)


def test_inline_keeps_values_on_functional_programs():
    def transform(mod):
        return inline_pass(_mark_all_inline(_outline_main(mod)))

    check_pass(transform, functional_programs(), max_examples=40)


def test_inline_handles_a_deep_body():
    x = relay.lang.Var("x", relay.lang.TensorType((), "float32"))
    body = x
    for _ in range(10_000):
        body = Call(relay.lang.get_op("negative"), (body,))
    mod = IRModule.from_expr(Function((x,), body))
    out = inline_pass(_outline_main(mod))
    assert_structural_equal(out, mod)
