"""The reference interpreter on every language construct (IR built in Python)."""

import numpy as np
import pytest
from relay.backend.runtime import (
    Closure,
    ConstructorValue,
    EvalError,
    MatchError,
    MissingImplementationError,
    RefValue,
    evaluate,
    format_value,
    interpret,
    value_equal,
)
from relay.backend.runtime.op_impls import IMPLS, implementation_for
from relay.lang import (
    Call,
    Clause,
    Constructor,
    Error,
    Function,
    GlobalTypeVar,
    GlobalVar,
    If,
    IRModule,
    Let,
    Match,
    Op,
    OpPattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    SourceFile,
    Span,
    TensorType,
    Tuple,
    TupleGetItem,
    TypeCall,
    TypeData,
    TypeVar,
    Var,
    const,
    get_op,
)
from relay.lang.optable import MissingFacetError


def op(name, *args, **attrs):
    o = get_op(name)
    return Call(o, args, o.make_attrs(**attrs))


def i32(value):
    return const(value, "int32")


def scalar(dtype="int32"):
    return TensorType((), dtype)


def list_adt():
    gtv = GlobalTypeVar("List")
    a = TypeVar("A")
    cons = Constructor("Cons", [a, TypeCall(gtv, [a])], gtv, 0)
    nil = Constructor("Nil", [], gtv, 1)
    return TypeData(gtv, [a], [cons, nil]), cons, nil


def test_constants_and_operators():
    result = evaluate(op("add", i32(1), op("multiply", i32(2), i32(3))))
    assert isinstance(result, np.ndarray) and result.shape == () and result.dtype == np.int32
    assert result == 7


def test_interpret_positional_and_named_inputs():
    x, y = Var("x", scalar("float32")), Var("y", scalar("float32"))
    mod = IRModule.from_expr(Function([x, y], op("subtract", x, y)))
    a, b = np.float32(5), np.float32(2)
    assert interpret(mod, np.asarray(a), np.asarray(b)) == 3
    assert interpret(mod, x=np.asarray(a), y=np.asarray(b)) == 3
    assert interpret(mod, np.asarray(a), y=np.asarray(b)) == 3
    assert interpret(mod, y=1.0, x=4.0) == 3  # Python numbers take the annotated dtype
    assert interpret(mod, y=1.0, x=4.0).dtype == np.float32


def test_let_and_tuples():
    x = Var("x")
    t = Var("t")
    body = Let(
        x,
        i32(2),
        Let(t, Tuple([x, Tuple([i32(3), i32(4)])]), TupleGetItem(TupleGetItem(t, 1), 0)),
    )
    assert evaluate(body) == 3
    pair = evaluate(Tuple([i32(1), Tuple([])]))
    assert isinstance(pair, tuple) and pair[1] == () and pair[0] == 1


def test_if_needs_scalar_condition():
    assert evaluate(If(op("less", i32(1), i32(2)), i32(10), i32(20))) == 10
    assert evaluate(If(op("less", i32(3), i32(2)), i32(10), i32(20))) == 20
    bad = If(const(np.array([True, False])), i32(1), i32(2))
    with pytest.raises(EvalError, match="condition of `if`"):
        evaluate(bad)


def test_closures_capture_their_environment():
    # let y = 10; let f = fn (x) { x + y }; let y2 = 100; f(5)
    x, y, f, y2 = Var("x"), Var("y"), Var("f"), Var("y2")
    expr = Let(
        y,
        i32(10),
        Let(f, Function([x], op("add", x, y)), Let(y2, i32(100), Call(f, [i32(5)]))),
    )
    assert evaluate(expr) == 15


def test_closure_returned_from_a_global_outlives_its_call():
    # def @make_adder(%n) { fn (%x) { %x + %n } }
    n, x = Var("n"), Var("x")
    make_adder = GlobalVar("make_adder")
    mod = IRModule({make_adder: Function([n], Function([x], op("add", x, n)))})
    a3, a4 = Var("a3"), Var("a4")
    main = Let(
        a3,
        Call(make_adder, [i32(3)]),
        Let(a4, Call(make_adder, [i32(4)]), Tuple([Call(a3, [i32(1)]), Call(a4, [i32(1)])])),
    )
    mod = mod.with_function("main", Function([], main))
    expected = (np.asarray(4, np.int32), np.asarray(5, np.int32))
    assert value_equal(interpret(mod), expected)
    closure = interpret(mod.with_function("main", Function([], Call(make_adder, [i32(1)]))))
    assert isinstance(closure, Closure) and "closure" in repr(closure)


def test_higher_order_functions_take_globals_closures_and_constructors():
    f, x, g = Var("f"), Var("x"), Var("g")
    twice = GlobalVar("twice")
    inc = GlobalVar("inc")
    v = Var("v")
    data, cons, nil = list_adt()
    mod = IRModule(
        {
            twice: Function([f, x], Call(f, [Call(f, [x])])),
            inc: Function([v], op("add", v, i32(1))),
        },
        {data.header: data},
    )
    w = Var("w")
    main = Tuple(
        [
            Call(twice, [inc, i32(5)]),
            Call(twice, [Function([w], op("multiply", w, i32(3))), i32(2)]),
            Call(g, [i32(7), Call(nil, [])]),
        ]
    )
    mod = mod.with_function("main", Function([g], main))
    a, b, c = interpret(mod, g=cons)
    assert a == 7 and b == 18
    assert isinstance(c, ConstructorValue) and c.constructor is cons and c.fields[0] == 7
    assert format_value(c) == "Cons(7:int32, Nil)"


def test_recursion_through_globals():
    n = Var("n", scalar())
    fact = GlobalVar("fact")
    body = If(
        op("equal", n, i32(0)),
        i32(1),
        op("multiply", n, Call(fact, [op("subtract", n, i32(1))])),
    )
    mod = IRModule({fact: Function([n], body)})
    m = Var("m", scalar())
    mod = mod.with_function("main", Function([m], Call(fact, [m])))
    assert interpret(mod, 10) == 3628800


def test_mutual_recursion():
    even, odd = GlobalVar("even"), GlobalVar("odd")
    n1, n2 = Var("n"), Var("n")
    mod = IRModule(
        {
            even: Function(
                [n1],
                If(
                    op("equal", n1, i32(0)),
                    const(True),
                    Call(odd, [op("subtract", n1, i32(1))]),
                ),
            ),
            odd: Function(
                [n2],
                If(
                    op("equal", n2, i32(0)),
                    const(False),
                    Call(even, [op("subtract", n2, i32(1))]),
                ),
            ),
        }
    )
    k = Var("k")
    mod = mod.with_function("main", Function([k], Tuple([Call(even, [k]), Call(odd, [k])])))
    is_even, is_odd = interpret(mod, np.asarray(1001, np.int32))
    assert not is_even and is_odd and is_even.dtype == np.bool_


def test_recursive_let():
    # let %sum_to = fn (%n) { if (%n == 0) { 0 } else { %n + %sum_to(%n - 1) } }; %sum_to(100)
    f, n = Var("sum_to"), Var("n")
    fn = Function(
        [n],
        If(
            op("equal", n, i32(0)),
            i32(0),
            op("add", n, Call(f, [op("subtract", n, i32(1))])),
        ),
    )
    assert evaluate(Let(f, fn, Call(f, [i32(100)]))) == 5050


def _sum_pairs_match(cons, nil, xs):
    a, b, c = Var("a"), Var("b"), Var("c")
    return Match(
        xs,
        [
            Clause(
                PatternConstructor(
                    cons,
                    [PatternVar(a), PatternConstructor(cons, [PatternVar(b), PatternWildcard()])],
                ),
                op("add", a, b),
            ),
            Clause(PatternConstructor(cons, [PatternVar(c), PatternConstructor(nil)]), c),
            Clause(PatternConstructor(nil), i32(0)),
        ],
    )


def test_adts_with_nested_patterns():
    _, cons, nil = list_adt()
    xs = Var("xs")
    match = _sum_pairs_match(cons, nil, xs)

    def build(*items):
        value = ConstructorValue(nil, ())
        for item in reversed(items):
            value = ConstructorValue(cons, (np.asarray(item, np.int32), value))
        return value

    assert evaluate(match, {xs: build(1, 2, 3)}) == 3
    assert evaluate(match, {xs: build(5)}) == 5
    assert evaluate(match, {xs: build()}) == 0
    # constructors called in the program
    built = Call(cons, [i32(4), Call(cons, [i32(6), Call(nil, [])])])
    assert evaluate(Let(xs, built, match)) == 10


def test_tuple_patterns_and_missing_match_is_a_diagnosed_error():
    _, cons, nil = list_adt()
    source = SourceFile("prog.relay", "match (%p) { ... }\n")
    span = Span(source, 1, 1, 1, 6)
    p, a = Var("p"), Var("a")
    match = Match(
        p,
        [Clause(PatternTuple([PatternConstructor(nil), PatternVar(a)]), a)],
        complete=False,
        span=span,
    )
    nil_value = ConstructorValue(nil, ())
    assert evaluate(match, {p: (nil_value, np.asarray(9, np.int32))}) == 9
    other = (ConstructorValue(cons, (np.asarray(1, np.int32), nil_value)), np.asarray(9))
    with pytest.raises(MatchError) as info:
        evaluate(match, {p: other})
    assert isinstance(info.value, Error)
    assert "prog.relay:1:1" in str(info.value) and "no clause matches" in str(info.value)
    assert "^" in str(info.value)


def test_references_with_sequencing():
    r, u1, u2 = Var("r"), Var("u1"), Var("u2")
    expr = Let(
        r,
        RefCreate(i32(0)),
        Let(
            u1,
            RefWrite(r, i32(1)),
            Let(u2, RefWrite(r, op("add", RefRead(r), i32(41))), Tuple([u1, RefRead(r)])),
        ),
    )
    unit, value = evaluate(expr)
    assert unit == () and value == 42
    assert isinstance(evaluate(RefCreate(i32(1))), RefValue)


def test_counter_closure_over_a_reference():
    r, inc, a, b = Var("r"), Var("inc"), Var("a"), Var("b")
    bump = Function([], RefWrite(r, op("add", RefRead(r), i32(1))))
    expr = Let(
        r,
        RefCreate(i32(0)),
        Let(inc, bump, Let(a, Call(inc, []), Let(b, Call(inc, []), RefRead(r)))),
    )
    assert evaluate(expr) == 2


def _count_op(monkeypatch):
    """A counting identity operator, outside the operator registry (no global side effect)."""
    counter = {"calls": 0}
    test_op = Op("test.interp_count", 1, None, OpPattern.OPAQUE)

    def impl(args, attrs):
        counter["calls"] += 1
        return args[0]

    monkeypatch.setitem(IMPLS, test_op, impl)
    return test_op, counter


def test_shared_nodes_are_evaluated_once_per_activation(monkeypatch):
    test_op, counter = _count_op(monkeypatch)
    x = Var("x")
    shared = Call(test_op, [op("add", x, i32(1))])
    body = op("add", op("multiply", shared, shared), shared)
    counter["calls"] = 0
    assert evaluate(body, {x: np.asarray(2, np.int32)}) == 12
    assert counter["calls"] == 1
    # inside a function: once per call of the function
    f, y = Var("f"), Var("y")
    inner = Call(test_op, [y])
    fn = Function([y], op("add", inner, inner))
    counter["calls"] = 0
    expr = Let(f, fn, op("add", Call(f, [i32(1)]), Call(f, [i32(2)])))
    assert evaluate(expr) == 6
    assert counter["calls"] == 2


def test_a_chain_of_60_shared_doublings_is_instant():
    x = Var("x", scalar("float32"))
    node = x
    for _ in range(60):
        node = op("add", node, node)
    mod = IRModule.from_expr(Function([x], node))
    assert interpret(mod, 1.0) == np.float32(2.0**60)
    # the same with the shared node behind a tuple projection (not an atom)
    node = Tuple([x])
    for _ in range(60):
        item = TupleGetItem(node, 0)
        node = Tuple([op("add", item, item)])
    assert evaluate(TupleGetItem(node, 0), {x: np.asarray(1, np.float32)}) == 2.0**60


def test_input_errors_name_the_argument():
    x = Var("x", TensorType((2, 3), "float32"))
    y = Var("y", scalar("int32"))
    mod = IRModule.from_expr(Function([x, y], Tuple([x, y])))
    good = np.zeros((2, 3), np.float32)
    with pytest.raises(Error) as info:
        interpret(mod, good)
    assert "missing argument `y`" in str(info.value)
    with pytest.raises(Error, match="unexpected argument `z`"):
        interpret(mod, good, y=1, z=2)
    with pytest.raises(Error, match="takes 2 arguments, got 3"):
        interpret(mod, good, 1, 2)
    with pytest.raises(Error, match="argument `x` is given twice"):
        interpret(mod, good, x=good, y=1)
    with pytest.raises(Error) as info:
        interpret(mod, np.zeros((3, 3), np.float32), y=1)
    message = str(info.value)
    assert "argument `x`" in message
    assert "Tensor[(2, 3), float32]" in message and "Tensor[(3, 3), float32]" in message
    with pytest.raises(Error) as info:
        interpret(mod, good.astype(np.float64), y=1)
    assert "argument `x`" in str(info.value) and "float64" in str(info.value)
    with pytest.raises(Error, match="argument `y`"):
        interpret(mod, good, y=np.asarray([1, 2], np.int32))
    with pytest.raises(Error, match="argument `y`: expected int32, got float64"):
        interpret(mod, good, y=1.5)  # a float is not silently truncated to int32
    with pytest.raises(Error, match="argument `y`"):
        interpret(mod, good, y=2**40)  # out of range for int32
    from relay.lang import InputError

    with pytest.raises(InputError):
        interpret(mod, good)
    with pytest.raises(InputError, match="no function @nope"):
        interpret(mod, good, 1, main="nope")


def test_tuple_inputs_are_checked_field_by_field():
    from relay.lang import TupleType

    p = Var("p", TupleType([scalar("int32"), TensorType((2,), "float32")]))
    mod = IRModule.from_expr(Function([p], TupleGetItem(p, 1)))
    vec = np.ones(2, np.float32)
    assert np.array_equal(interpret(mod, (np.asarray(1, np.int32), vec)), vec)
    with pytest.raises(Error, match=r"argument `p`\.1"):
        interpret(mod, (np.asarray(1, np.int32), np.ones(3, np.float32)))


def test_runtime_errors_are_diagnosed():
    source = SourceFile("bad.relay", "%x + %y\n")
    span = Span(source, 1, 1, 1, 8)
    x = Var("x")
    with pytest.raises(EvalError, match="unbound variable `%x`"):
        evaluate(op("add", x, i32(1)))
    call = Call(get_op("add"), [const(np.ones(2, np.float32)), const(np.ones(3, np.float32))])
    call = call.replace(span=span)
    with pytest.raises(EvalError) as info:
        evaluate(call)
    assert "bad.relay:1:1" in str(info.value) and "`add`" in str(info.value)
    f = Var("f")
    with pytest.raises(EvalError, match="takes 1 arguments, got 2"):
        evaluate(Let(f, Function([x], x), Call(f, [i32(1), i32(2)])))
    with pytest.raises(EvalError, match="cannot call"):
        evaluate(Call(i32(1), []))


def test_operator_without_implementation_names_the_operator():
    name = "test.interp_unimplemented"
    test_op = Op(name, 1, None, OpPattern.OPAQUE)  # not registered: no global side effect
    with pytest.raises(MissingFacetError, match=f"`{name}` has no reference"):
        implementation_for(test_op)
    with pytest.raises(MissingImplementationError, match=f"`{name}` has no reference"):
        evaluate(Call(test_op, [i32(1)]))


def test_scalars_print_with_the_digits_of_their_dtype():
    assert format_value(np.array(0.5648738145828247, np.float32)) == "0.5648738:float32"
    assert format_value(np.array(0.1)) == "0.1:float64"
    assert format_value(np.array(True)) == "True:bool"
