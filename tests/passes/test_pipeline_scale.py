"""The opt-level-3 pipeline at scale: a 100,000-binding program and every example model go
through it with Python's default recursion limit (never raised), and each result
type-checks with the type of `@main` unchanged."""

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest
import relay
from relay.backend.runtime import interpret
from relay.lang import (
    Call,
    Expr,
    Function,
    GlobalVar,
    IRModule,
    Let,
    Op,
    TensorType,
    Var,
    const,
    get_op,
    let_chain,
    post_order,
    structural_equal,
)
from relay.passes import (
    STANDARD_PIPELINES,
    PassContext,
    TimingInstrument,
    parse_pipeline,
    simplify_expr_pass,
    standard_pipeline,
    values_close,
)
from relay.passes.pattern import Rule, is_constant, is_op, rewrite, wildcard
from relay.typecheck import annotated_signature, check_module

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.relay"))
DEFAULT_RECURSION_LIMIT = 1000  # CPython's default
T = TensorType((4, 4), "float32")


def chain(n: int) -> IRModule:
    """`n` `let` bindings cycling through eight steps that give every O3 pass work:
    `add(x, %b)`, `multiply(x, 0.5 + 0.25)` (fold-constant), `nn.relu`, `exp`,
    `multiply(x, 1f)` and `add(x, zeros)` (simplify-expr removes both), `add(x, %w * %w)`
    (cse shares `%w * %w`), `negative`."""
    x, b, w = Var("x", T), Var("b", T), Var("w", T)

    def full(value: float) -> Expr:
        return const(np.full((4, 4), value, "float32"))

    def step(k: int, prev: Expr) -> Expr:
        return [
            lambda: Call(get_op("add"), (prev, b)),
            lambda: Call(get_op("multiply"), (prev, Call(get_op("add"), (full(0.5), full(0.25))))),
            lambda: Call(get_op("nn.relu"), (prev,)),
            lambda: Call(get_op("exp"), (prev,)),
            lambda: Call(get_op("multiply"), (prev, const(np.float32(1.0)))),
            lambda: Call(get_op("add"), (prev, Call(get_op("multiply"), (w, w)))),
            lambda: Call(get_op("add"), (prev, full(0.0))),
            lambda: Call(get_op("negative"), (prev,)),
        ][k]()

    prev: Expr = x
    bindings = []
    for i in range(n):
        var = Var(f"v{i}")
        bindings.append((var, step(i % 8, prev)))
        prev = var
    return IRModule({GlobalVar("main"): Function((x, b, w), let_chain(bindings, prev), T)})


def run_o3(mod: IRModule, timing: TimingInstrument | None = None, debug: bool = False) -> IRModule:
    instruments = () if timing is None else (timing,)
    with PassContext(opt_level=3, instruments=instruments, debug=debug) as ctx:
        return standard_pipeline(3)(mod, ctx)


def groups(fn: Function) -> list[list[str]]:
    """The operator names of each `Primitive` function called in `fn`."""
    return [
        [n.op.name for n in post_order(e.op.body) if isinstance(n, Call) and isinstance(n.op, Op)]
        for e in post_order(fn)
        if isinstance(e, Call) and isinstance(e.op, Function) and e.op.is_primitive
    ]


def assert_same_main_type(before: IRModule, after: IRModule) -> None:
    old = check_module(before).global_types["main"]
    new = check_module(after).global_types["main"]
    assert structural_equal(old, new), (old, new)


def test_o3_pipeline_on_a_100000_binding_chain():
    assert sys.getrecursionlimit() == DEFAULT_RECURSION_LIMIT
    n = 100_000
    mod = chain(n)
    timing = TimingInstrument()
    out = run_o3(mod, timing)
    assert sys.getrecursionlimit() == DEFAULT_RECURSION_LIMIT
    # the chain's @main is fully annotated: its type is its annotated signature
    signature = annotated_signature(mod["main"])
    assert signature is not None
    assert structural_equal(check_module(out).global_types["main"], signature)
    # every pass of the level-3 pipeline ran (fuse-ops runs its required infer-type first)
    names = [name for name, _ in timing.times]
    planned = STANDARD_PIPELINES[3].split(",")
    assert names == [*planned[:-1], "infer-type", "fuse-ops"]
    main = out["main"]
    assert not any(isinstance(node, Let) for node in post_order(main))  # graph form
    fused = groups(main)
    # per 8 bindings 6 operators remain (x * 1 and x + 0 are gone, 0.5 + 0.25 is folded):
    # 75,000 chain operators in groups of at most 256 (fuse-ops' max depth), cut from the
    # input up, and one group for %w * %w, computed once for the 12,500 adds that use it
    assert sorted(len(g) for g in fused)[:2] == [1, 75_000 % 256]
    assert len(fused) == 1 + -(-75_000 // 256) == 294
    assert max(len(g) for g in fused) == 256
    counts = {name: sum(g.count(name) for g in fused) for name in ("add", "multiply", "exp")}
    assert counts == {"add": 25_000, "multiply": 12_501, "exp": 12_500}
    small = chain(64)
    inputs = {p.name_hint: np.full((4, 4), 0.3, "float32") for p in small["main"].params}
    assert values_close(interpret(small, **inputs), interpret(run_o3(small), **inputs))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_o3_pipeline_on_example_models(path: Path):
    assert sys.getrecursionlimit() == DEFAULT_RECURSION_LIMIT
    mod = relay.parse_file(str(path))
    # with the debug instrument: after every pass the module is well-formed, type-checks
    # and keeps @main's signature (it would raise a PassError naming the pass otherwise)
    out = run_o3(mod, debug=True)
    assert sys.getrecursionlimit() == DEFAULT_RECURSION_LIMIT
    assert_same_main_type(mod, out)
    assert set(out.functions) <= set(mod.functions)
    # every global function that computes with tensors now calls Primitive functions
    assert sum(len(groups(fn)) for fn in out.functions.values()) > 0


def _multiply_by_one_chain(n: int) -> tuple[Var, Expr]:
    """`relu(x) * 1f` nested `n` times, in graph form (no let: every node is rebuilt above
    a rewrite)."""
    x = Var("x", T)
    body: Expr = x
    for _ in range(n):
        body = Call(get_op("multiply"), (Call(get_op("nn.relu"), (body,)), const(np.float32(1))))
    return x, body


def test_simplify_expr_rewrites_a_graph_chain_in_one_sweep(monkeypatch):
    # `x * 1f -> x` needs types (the result type must be x's). The nodes a rewrite rebuilds
    # keep their types, so one sweep with one type inference does every rewrite; before,
    # each sweep did one (quadratic, and over the sweep budget on long chains)
    module = importlib.import_module("relay.passes.pattern.rewrite")
    inferred = []
    real = module.infer_expr

    def counting(*args, **kwargs):
        inferred.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "infer_expr", counting)
    x, body = _multiply_by_one_chain(3_000)
    out = simplify_expr_pass(IRModule.from_expr(Function([x], body)))
    assert len(inferred) == 1
    ops = [n.op.name for n in post_order(out["main"]) if isinstance(n, Call)]
    assert ops == ["nn.relu"] * 3_000


def test_rewrite_with_a_type_constraint_does_a_graph_chain_in_one_sweep():
    # the generic driver: a rule whose pattern constrains the type of the node it rewrites
    x, body = _multiply_by_one_chain(3_000)
    by_one = Rule(
        is_op("multiply")(wildcard().named("a"), is_constant().named("c")).has_shape((4, 4)),
        lambda a, c: a if np.all(c.data == 1) else None,
        "by_one",
    )
    out, records = rewrite(by_one, Function([x], body), max_iterations=3, trace=True)
    assert len(records) == 3_000 and {r.iteration for r in records} == {0}
    assert {n.op.name for n in post_order(out) if isinstance(n, Call)} == {"nn.relu"}


def test_infer_type_and_fuse_ops_share_one_inference(monkeypatch):
    module = importlib.import_module("relay.passes.context")
    checked = []
    real = module.check_module

    def counting(mod):
        checked.append(mod)
        return real(mod)

    monkeypatch.setattr(module, "check_module", counting)
    x, body = _multiply_by_one_chain(10)
    mod = IRModule.from_expr(Function([x], body))
    timing = TimingInstrument()
    with PassContext(opt_level=3, instruments=(timing,), debug=True) as ctx:
        out = parse_pipeline("infer-type,fuse-ops")(mod, ctx)
    # fuse-ops requires infer-type, which runs again; the debug instrument checks the
    # input and every result: the module is inferred once, and so is the fused result
    # (fuse-ops hands its result's types to the context; the debug checker infers them)
    assert [name for name, _ in timing.times] == ["infer-type", "infer-type", "fuse-ops"]
    assert checked == [mod, out]
    assert ctx.module_types(out) is ctx.module_types(out)
    # without the debug checker, the fused module's types are fuse-ops' own: one inference
    checked.clear()
    with PassContext(opt_level=3) as ctx:
        out = parse_pipeline("infer-type,fuse-ops")(mod, ctx)
    assert checked == [mod]
    assert ctx.module_types(out).type_of(out["main"].body) == T


def test_every_example_model_is_covered():
    names = {p.stem for p in EXAMPLES}
    assert {"mlp", "lenet", "resnet18", "mobilenet_v2", "transformer_layer"} <= names
    assert {"lstm", "treelstm"} <= names
