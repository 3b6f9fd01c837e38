"""Printing and parsing are inverse: `parse(print(m))` is structurally equal to `m` for
generated modules and expressions, printing is idempotent, and hashes agree.

Symbolic dimensions (`ShapeVar`) are free in a module (nothing binds them) and parsing
makes new ones, so the comparison maps free variables (`map_free_vars=True`); generated
programs have no other free variables.
"""

from __future__ import annotations

from hypothesis import given
from relay.grammar import parse, parse_expr
from relay.lang import IRModule, assert_structural_equal, structural_hash
from relay.lang.expr import Expr
from relay.lang.printer import print_expr, print_module
from relay.testing import exprs, modules


@given(modules())
def test_parse_of_print_is_structurally_equal(mod: IRModule) -> None:
    text = print_module(mod)
    assert_structural_equal(parse(text), mod, map_free_vars=True)


@given(modules())
def test_printing_is_idempotent(mod: IRModule) -> None:
    text = print_module(mod)
    assert print_module(parse(text)) == text


@given(modules())
def test_hash_survives_the_round_trip(mod: IRModule) -> None:
    assert structural_hash(parse(print_module(mod))) == structural_hash(mod)


@given(exprs())
def test_expression_round_trip(expr: Expr) -> None:
    text = print_expr(expr)
    parsed = parse_expr(text)
    assert_structural_equal(parsed, expr, map_free_vars=True)
    assert print_expr(parsed) == text
    assert structural_hash(parsed) == structural_hash(expr)
