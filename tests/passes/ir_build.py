"""Small builders and queries for tests that construct Relay programs by hand."""

from __future__ import annotations

from collections import Counter

from relay.lang import Call, Function, GlobalVar, IRModule, post_order
from relay.lang.op import get_op


def call(name: str, *args, **attrs) -> Call:
    """A call of operator `name` with its attributes (defaults for the ones not given)."""
    op = get_op(name)
    return Call(op, args, op.make_attrs(**attrs) if op.attrs_schema is not None else None)


def main(params, body) -> IRModule:
    """A module whose `@main` is `fn(params) { body }`."""
    return IRModule({GlobalVar("main"): Function(params, body)})


def ops_of(mod: IRModule) -> Counter[str]:
    """How many calls of each operator `@main` makes."""
    return Counter(
        n.op.name for n in post_order(mod["main"]) if isinstance(n, Call) and hasattr(n.op, "name")
    )


def calls_of(mod: IRModule, name: str) -> list[Call]:
    """The calls of operator `name` in `@main`."""
    return [n for n in post_order(mod["main"]) if isinstance(n, Call) and n.op is get_op(name)]
