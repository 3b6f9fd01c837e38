"""Visitors and mutators: memoized on identity, iterative on deep programs."""

from relay.lang import (
    Call,
    Clause,
    ExprMutator,
    ExprVisitor,
    Function,
    Let,
    Match,
    PatternTuple,
    PatternVar,
    TensorType,
    Tuple,
    Var,
    const,
    free_vars,
    get_op,
    let_chain,
    post_order,
    rewrite_post_order,
    structural_equal,
    substitute,
)

ADD, MUL = get_op("add"), get_op("multiply")
F32 = TensorType((3,), "float32")


def test_post_order_visits_shared_nodes_once_children_first():
    x = Var("x")
    shared = Call(ADD, [x, x])
    root = Tuple([shared, shared])
    order = list(post_order(root))
    assert order.count(shared) == 1
    assert order.index(x) < order.index(shared) < order.index(root)


def test_visitor_dispatch_by_class():
    class CountCalls(ExprVisitor):
        def __init__(self):
            self.calls = 0

        def visit_Call(self, call):
            self.calls += 1

    x = Var("x")
    e = Call(ADD, [Call(MUL, [x, x]), Call(MUL, [x, x])])
    counter = CountCalls()
    counter.visit(e)
    assert counter.calls == 3


def test_mutator_rewrites_bottom_up_and_keeps_sharing():
    class AddToMul(ExprMutator):
        def visit_Call(self, call):
            return call.replace(op=MUL) if call.op is ADD else call

    x = Var("x")
    shared = Call(ADD, [x, x])
    root = Tuple([shared, shared])
    out = AddToMul().visit(root)
    assert out.fields[0] is out.fields[1]
    assert out.fields[0].op is MUL


def test_identity_mutator_returns_same_object():
    x = Var("x", F32)
    f = Function([x], Let(Var("y"), Call(ADD, [x, x]), x))
    assert ExprMutator().visit(f) is f


def test_replacing_a_var_updates_binder_and_uses():
    x = Var("x", F32)
    y = Var("y")
    f = Function([x], Let(y, Call(ADD, [x, x]), Tuple([y, y])))
    fresh = Var("renamed")

    out = rewrite_post_order(f, lambda e: fresh if e is y else None)
    assert out.body.var is fresh
    assert out.body.body.fields == (fresh, fresh)
    assert structural_equal(out, f)


def test_match_pattern_vars_are_children():
    a, b = Var("a"), Var("b")
    m = Match(
        Tuple([const(1), const(2)]),
        [Clause(PatternTuple([PatternVar(a), PatternVar(b)]), Call(ADD, [a, b]))],
    )
    new_a = Var("a2")
    out = rewrite_post_order(m, lambda e: new_a if e is a else None)
    assert out.clauses[0].lhs.patterns[0].var is new_a
    assert out.clauses[0].rhs.args[0] is new_a
    assert structural_equal(out, m)


def test_free_vars_and_substitute():
    x, y, z = Var("x"), Var("y"), Var("z")
    e = Let(z, Call(ADD, [x, y]), Call(ADD, [z, x]))
    assert free_vars(e) == [x, y]
    out = substitute(e, {x: const(1.0)})
    assert free_vars(out) == [y]


def test_deep_chain_visit_and_mutate():
    x = Var("x", F32)
    binds, cur = [], x
    for i in range(100_000):
        v = Var(f"v{i}")
        binds.append((v, Call(ADD, [cur, cur])))
        cur = v
    f = Function([x], let_chain(binds, cur))

    class CountLets(ExprVisitor):
        n = 0

        def visit_Let(self, let):
            self.n += 1

    counter = CountLets()
    counter.visit(f)
    assert counter.n == 100_000

    class AddToMul(ExprMutator):
        def visit_Call(self, call):
            return call.replace(op=MUL)

    out = AddToMul().visit(f)
    assert out.body.value.op is MUL and not structural_equal(out, f)


def test_deep_nested_call_mutate():
    e = Var("x")
    for _ in range(10_000):
        e = Call(ADD, [e, const(1.0)])

    class AddToMul(ExprMutator):
        def visit_Call(self, call):
            return call.replace(op=MUL)

    out = AddToMul().visit(e)
    assert out.op is MUL and out.args[0].op is MUL


def test_mutator_rewrite_node_sees_the_original_and_can_drop_a_let():
    # a subclass keyed by the input's nodes: drop `let %y = ...` and read its value at uses
    x, y = Var("x", F32), Var("y")
    value = Call(ADD, [x, x])
    let = Let(y, value, Call(MUL, [y, y]))

    class InlineY(ExprMutator):
        def rewrite_node(self, node):
            if node is let:
                return self.rewritten(node.body)
            result = self.rebuilt(node)
            if node is value:
                self.memo[id(y)] = result  # the uses of y read the value
            return result

    out = InlineY().visit(let)
    assert structural_equal(out, Call(MUL, [value, value]))
    assert out.args[0] is value


def test_post_order_by_follows_the_given_children_once_each_children_first():
    from relay.lang.expr import Call, Var
    from relay.lang.op import get_op
    from relay.lang.traversal import children, post_order_by

    add = get_op("add")
    x = Var("x")
    shared = Call(add, [x, x])
    left, right = Call(add, [shared, x]), Call(add, [x, shared])
    root = Call(add, [left, right])
    order = post_order_by(root, children)
    assert len(order) == len({id(n) for n in order}) == 6  # the op, x, shared, left, right, root
    position = {id(n): k for k, n in enumerate(order)}
    for node in order:
        assert all(position[id(c)] < position[id(node)] for c in children(node))
    # a custom notion of children: nothing below `left`, so `shared` is reached from `right`
    custom = post_order_by(root, lambda n: () if n is left else children(n))
    assert custom[-1] is root and custom.index(left) < custom.index(shared)
    assert custom.index(shared) < custom.index(right)
    deep = x
    for _ in range(100_000):
        deep = Call(add, [deep, x])
    assert len(post_order_by(deep, children)) == 100_002  # the calls, x and the op
