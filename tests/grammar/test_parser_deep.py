"""Deep and long programs parse with Python's default recursion limit."""

from __future__ import annotations

import sys

from relay.grammar import parse, parse_expr
from relay.lang.expr import Call, Constant, Function, If, Let, Tuple, TupleGetItem
from relay.lang.op import get_op

N_BINDINGS = 100_000
DEPTH = 10_000


def test_recursion_limit_is_the_default() -> None:
    assert sys.getrecursionlimit() <= 1000


def test_100k_graph_bindings() -> None:
    lines = ["def @main(%x: Tensor[(4), float32]) {", "  %0 = add(%x, %x);"]
    lines += [f"  %{i} = add(%{i - 1}, %{i - 1});" for i in range(1, N_BINDINGS)]
    lines += [f"  %{N_BINDINGS - 1}", "}"]
    mod = parse("\n".join(lines))
    fn = mod["main"]
    node = fn.body
    count = 0
    while isinstance(node, Call):
        assert node.args[0] is node.args[1]  # a graph variable is one shared node
        node = node.args[0]
        count += 1
    assert count == N_BINDINGS
    assert node is fn.params[0]
    column = len(f"  %{N_BINDINGS - 1} = ") + 1
    assert (fn.body.span.line, fn.body.span.column) == (N_BINDINGS + 1, column)


def test_100k_let_chain_with_type_comments() -> None:
    lines = ["def @main(%x: Tensor[(4), float32]) {", "  let %a0 = add(%x, %x);"]
    lines += [
        f"  let %a{i} = add(%a{i - 1}, %x) /* ty=Tensor[(4), float32] */;"
        for i in range(1, N_BINDINGS)
    ]
    lines += [f"  %a{N_BINDINGS - 1}", "}"]
    mod = parse("\n".join(lines))
    node = mod["main"].body
    previous = None
    count = 0
    while isinstance(node, Let):
        if previous is not None:
            assert node.value.args[0] is previous
        previous = node.var
        node = node.body
        count += 1
    assert count == N_BINDINGS
    assert node is previous


def test_deeply_nested_calls() -> None:
    e = parse_expr("add(" * DEPTH + "1" + ", 2)" * DEPTH)
    depth = 0
    while isinstance(e, Call):
        assert e.op is get_op("add")
        e = e.args[0]
        depth += 1
    assert depth == DEPTH and isinstance(e, Constant)


def test_deeply_nested_parentheses_and_tuples() -> None:
    e = parse_expr("(" * DEPTH + "1" + ")" * DEPTH)
    assert isinstance(e, Constant) and e.span is not None and e.span.column == DEPTH + 1
    e = parse_expr("(" * DEPTH + "1," + ")," * (DEPTH - 1) + ")")
    depth = 0
    while isinstance(e, Tuple):
        e = e.fields[0]
        depth += 1
    assert depth == DEPTH


def test_deeply_nested_functions_blocks_and_ifs() -> None:
    e = parse_expr("fn (%x) {" * DEPTH + "%x" + "}" * DEPTH)
    depth = 0
    while isinstance(e, Function):
        e = e.body
        depth += 1
    assert depth == DEPTH
    e = parse_expr("if (True) {" * DEPTH + "1" + "} else { 2 }" * DEPTH)
    assert isinstance(e, If)
    e = parse_expr("{ " * DEPTH + "1" + " }" * DEPTH)
    assert isinstance(e, Constant)


def test_long_infix_chains_and_projections() -> None:
    e = parse_expr(" + ".join(["1"] * DEPTH))
    depth = 0
    while isinstance(e, Call):
        e = e.args[0]
        depth += 1
    assert depth == DEPTH - 1
    e = parse_expr("free_var %t; %t" + ".0" * DEPTH)
    depth = 0
    while isinstance(e, TupleGetItem):
        e = e.tuple_value
        depth += 1
    assert depth == DEPTH


def test_deep_syntax_error_is_a_diagnostic() -> None:
    from relay.lang.diagnostics import ParseError

    try:
        parse_expr("add(" * DEPTH + "1")
    except ParseError as error:
        assert error.span is not None and error.span.column == 4 * DEPTH + 2
        assert "expected `)`" in error.message
    else:  # pragma: no cover
        raise AssertionError("no error")
