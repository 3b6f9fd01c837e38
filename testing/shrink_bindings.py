"""Shrink a failing dataflow program to the bindings the failure needs.

Hypothesis shrinks the bytes a program is generated from; what it leaves often still holds
bindings that have nothing to do with the failure. `shrink_bindings` works on the program
itself, greedily, with three moves on `@main`'s body (graph form: calls, tuples,
projections, variables, constants):

* keep one field of a tuple result (drop unrelated outputs);
* bypass a call: replace it by one of its operands of the same type (drop context after);
* cut a call: replace it by a new parameter of its type, whose input is the value the call
  had on the failing inputs (drop context before; the rest computes exactly what it did).

A move is kept when the smaller program still fails the same check. Parameters nothing
reads are dropped with their inputs. Programs with `let`, functions, `if` or `match` in
`@main` are returned as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ..lang.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from ..lang.module import IRModule
from ..lang.op import Op
from ..lang.traversal import children, post_order, with_children
from ..lang.types import TensorType, Type

Inputs = dict[str, Any]
Fails = Callable[[IRModule, Mapping[str, Any]], bool]

_DATAFLOW = (Call, Tuple, TupleGetItem, Var, Constant, Op)


def is_dataflow(mod: IRModule) -> bool:
    """Whether `@main`'s body is only calls of operators, tuples, projections, variables and
    constants (the programs `shrink_bindings` can shrink)."""
    if "main" not in mod:
        return False
    for node in post_order(mod["main"].body):
        if not isinstance(node, _DATAFLOW):
            return False
        if isinstance(node, Call) and not isinstance(node.op, Op):
            return False
    return True


def _replace(root: Expr, mapping: dict[int, Expr]) -> Expr:
    """`root` with the nodes whose id is in `mapping` replaced (graph form, shared nodes
    stay shared)."""
    new: dict[int, Expr] = {}
    for node in post_order(root):
        key = id(node)
        if key in mapping:
            new[key] = mapping[key]
            continue
        kids = children(node)
        rebuilt = [new.get(id(k), k) for k in kids]
        changed = any(a is not b for a, b in zip(rebuilt, kids))
        new[key] = with_children(node, rebuilt) if changed else node
    return new[id(root)]


def _calls(body: Expr) -> list[Call]:
    return [n for n in post_order(body) if isinstance(n, Call)]


def _program(
    mod: IRModule, params: list[Var], body: Expr, inputs: Inputs
) -> tuple[IRModule, Inputs]:
    """`mod` with `@main(params) { body }`, keeping only the parameters the body reads."""
    used = {id(n) for n in post_order(body) if isinstance(n, Var)}
    kept = [p for p in params if id(p) in used]
    main = mod["main"]
    fn = Function(kept, body, None, main.type_params, main.attrs)
    return mod.with_function("main", fn), {p.name_hint: inputs[p.name_hint] for p in kept}


class _Shrinker:
    def __init__(self, mod: IRModule, inputs: Inputs, fails: Fails, budget: int) -> None:
        self.mod, self.inputs, self.fails, self.budget = mod, dict(inputs), fails, budget

    def attempt(self, params: list[Var], body: Expr, inputs: Inputs) -> bool:
        if self.budget <= 0:
            return False
        self.budget -= 1
        mod, kept_inputs = _program(self.mod, params, body, inputs)
        try:
            failed = self.fails(mod, kept_inputs)
        except Exception:  # a move that breaks the program some other way is not taken
            return False
        if failed:
            self.mod, self.inputs = mod, kept_inputs
        return failed

    def types(self) -> dict[Expr, Type]:
        from ..typecheck import infer_module

        return infer_module(self.mod).table

    def values(self, nodes: list[Call]) -> tuple[Any, ...]:
        """The value of each node of `@main` on the current inputs."""
        from ..backend.runtime import interpret

        main = self.mod["main"]
        probe = Function(main.params, Tuple(nodes), None, main.type_params, main.attrs)
        result = interpret(self.mod.with_function("main", probe), **self.inputs)
        return tuple(result)

    def fresh_name(self, taken: set[str]) -> str:
        i = 0
        while f"v{i}" in taken:
            i += 1
        taken.add(f"v{i}")
        return f"v{i}"

    def moves(self) -> Iterator[bool]:
        """Try each move once on the current program; yields whether it was taken (after
        a taken move the caller starts again on the smaller program)."""
        main = self.mod["main"]
        params, body = list(main.params), main.body
        if isinstance(body, Tuple):
            for field in body.fields:
                yield self.attempt(params, field, self.inputs)
        types = self.types()
        calls = _calls(body)
        for call in reversed(calls):  # bypass: from the result towards the inputs
            for operand in call.args:
                if types.get(operand) == types.get(call) and operand is not call:
                    yield self.attempt(params, _replace(body, {id(call): operand}), self.inputs)
        cuttable = [c for c in calls if isinstance(types.get(c), TensorType)]
        if not cuttable:
            return
        values = self.values(cuttable)
        taken = {p.name_hint for p in params}
        for call, value in zip(cuttable, values):
            if all(isinstance(a, Var | Constant) for a in call.args) and call is body:
                continue  # already the smallest program around this call
            param = Var(self.fresh_name(set(taken)), types[call])
            inputs = {**self.inputs, param.name_hint: value}
            yield self.attempt([*params, param], _replace(body, {id(call): param}), inputs)


def shrink_bindings(
    mod: IRModule, inputs: Mapping[str, Any], fails: Fails, budget: int = 200
) -> tuple[IRModule, Inputs]:
    """The smallest program (and its inputs) found from `mod` that still `fails`.

    `fails(mod, inputs)` says whether a candidate still shows the failure; it is called
    at most `budget` times. Only dataflow `@main`s are shrunk (`is_dataflow`); any other
    module comes back unchanged.
    """
    if not is_dataflow(mod):
        return mod, dict(inputs)
    shrinker = _Shrinker(mod, dict(inputs), fails, budget)
    progress = True
    while progress and shrinker.budget > 0:
        progress = any(shrinker.moves())
    return shrinker.mod, shrinker.inputs


__all__ = ["is_dataflow", "shrink_bindings"]
