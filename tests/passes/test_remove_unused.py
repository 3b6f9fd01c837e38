"""`remove-unused-functions`: only globals reachable from the entry stay."""

import relay
from relay.lang.structural import assert_structural_equal
from relay.passes import PassContext, get_pass, parse_pipeline, remove_unused_functions_pass
from relay.testing import check_pass

HEADER = '#[version = "0.0.5"]\n'

BEFORE = """def @unused(%x: float32) -> float32 {
  @also_unused(%x)
}
def @also_unused(%x: float32) -> float32 {
  %x
}
def @helper(%x: float32) -> float32 {
  @leaf(%x)
}
def @leaf(%x: float32) -> float32 {
  add(%x, %x)
}
def @passed(%x: float32) -> float32 {
  %x
}
def @main(%y: float32) {
  let %f = @passed;
  %f(@helper(%y))
}
"""


def names(mod):
    return sorted(gv.name_hint for gv in mod.functions)


def test_unreachable_globals_are_dropped():
    mod = relay.parse(HEADER + BEFORE)
    with PassContext(opt_level=1):
        out = parse_pipeline("remove-unused-functions")(mod)
    assert names(out) == ["helper", "leaf", "main", "passed"]
    for name in names(out):
        assert_structural_equal(out[name], mod[name])
    assert relay.backend.runtime.interpret(out, y=2.0) == 4.0


def test_entry_option_and_missing_entry():
    mod = relay.parse(HEADER + BEFORE)
    assert names(remove_unused_functions_pass.with_options(entry="unused")(mod)) == [
        "also_unused",
        "unused",
    ]
    assert remove_unused_functions_pass.with_options(entry="nothing")(mod) is mod
    p = get_pass("remove-unused-functions")
    assert p.opt_level == 1
    out = p.with_options(entry="helper")(mod, PassContext(opt_level=3))
    assert names(out) == ["helper", "leaf"]


def test_nothing_to_drop_returns_same_module():
    mod = relay.parse(HEADER + "def @main(%x: float32) { %x }")
    assert remove_unused_functions_pass(mod) is mod


def test_property():
    check_pass(get_pass("remove-unused-functions"), idempotent=True)
