"""Type inference of modules and expressions: the entry points.

* `infer_module(mod)` / `check_module(mod)`: every global function of the module.
* `infer_expr(expr, mod)`: one expression or function on its own, using the signatures
  of the module's globals; this is what a pass calls after rewriting one function, and it
  costs time in proportion to `expr` (plus, once per module, the inference of globals
  that have no full signature).

Globals: a global whose parameters and result are all annotated has that signature,
which its callers use without looking at its body (as in Relay). The others are inferred
first, in dependency order; a group of mutually recursive globals without full
signatures is inferred together in one solver. Each use of a global from outside its
group gets fresh type arguments and fresh copies of its shape variables (so a global
with `Tensor[(n), float32]` parameters can be called at several sizes).

Errors: all independent errors are collected (one diagnostic each, at the offending
expression); `check_module` and, by default, `infer_module`/`infer_expr` raise them
together as one `TypeCheckError`. Warnings (non-exhaustive `match`) never raise.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TypeVar

from ..lang.diagnostics import Diagnostic
from ..lang.expr import Expr, Function, GlobalVar
from ..lang.gcpause import fewer_collections
from ..lang.module import IRModule
from ..lang.traversal import post_order
from ..lang.types import FuncType
from .checker import Checker, Scope
from .result import ModuleTypes
from .solver import TypeSolver
from .subst import func_type, has_holes

N = TypeVar("N", bound=Hashable)

_SIGNATURES: weakref.WeakKeyDictionary[IRModule, dict[GlobalVar, FuncType]] = (
    weakref.WeakKeyDictionary()
)
"""Inferred signatures of globals without full annotations, per module (error-free only)."""


def annotated_signature(fn: Function) -> FuncType | None:
    """The signature a fully annotated function declares, or None if anything is missing."""
    if fn.ret_type is None or has_holes(fn.ret_type):
        return None
    params = []
    for p in fn.params:
        if p.type_annotation is None or has_holes(p.type_annotation):
            return None
        params.append(p.type_annotation)
    return func_type(params, fn.ret_type, fn.type_params)


def strongly_connected(nodes: Iterable[N], edges: Callable[[N], Iterable[N]]) -> list[list[N]]:
    """Tarjan's strongly connected components, iteratively; dependencies come first."""
    index: dict[N, int] = {}
    low: dict[N, int] = {}
    on_stack: set[N] = set()
    stack: list[N] = []
    out: list[list[N]] = []
    for root in nodes:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(edges(root)))]
        while work:
            v, it = work[-1]
            pushed = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(edges(w))))
                    pushed = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if pushed:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                component: list[N] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w is v or w == v:
                        break
                out.append(component)
    return out


class _Program:
    """The signatures of a module's globals, filled in as groups are inferred."""

    def __init__(self, mod: IRModule, known: Mapping[str, FuncType] | None = None) -> None:
        self.mod = mod
        self.order = {gv: i for i, gv in enumerate(mod.functions)}
        self.by_name = {gv.name_hint: gv for gv in mod.functions}
        self.signatures: dict[GlobalVar, FuncType] = {}
        self.result = ModuleTypes()
        for gv, fn in mod.functions.items():
            sig = annotated_signature(fn)
            if sig is not None:
                self.signatures[gv] = sig
        if known:
            for name, sig in known.items():
                target = self.by_name.get(name)
                if target is not None and target not in self.signatures:
                    self.signatures[target] = sig

    def canon(self, gv: GlobalVar) -> GlobalVar | None:
        """The module's `GlobalVar` for `gv` (by identity, else by name)."""
        return gv if gv in self.order else self.by_name.get(gv.name_hint)

    def references(self, gv: GlobalVar) -> list[GlobalVar]:
        """Globals without a signature yet that the body of `gv` mentions."""
        found: dict[GlobalVar, None] = {}
        for node in post_order(self.mod.functions[gv]):
            if isinstance(node, GlobalVar):
                target = self.canon(node)
                if target is not None and target not in self.signatures:
                    found[target] = None
        return list(found)

    def infer_unsigned(self, roots: Iterable[GlobalVar], record: bool) -> None:
        """Infer the globals without signatures reachable from `roots`, by groups."""
        todo = [g for g in roots if g not in self.signatures]
        if not todo:
            return
        if len(self.signatures) + 1 == len(self.order):  # only one: no order to find
            self.check_group(todo, record)
            return
        refs: dict[GlobalVar, list[GlobalVar]] = {}

        def edges(gv: GlobalVar) -> list[GlobalVar]:
            if gv not in refs:
                refs[gv] = self.references(gv)
            return refs[gv]

        for group in strongly_connected(todo, edges):
            group.sort(key=self.order.__getitem__)
            self.check_group(group, record)

    def check_group(self, group: list[GlobalVar], record: bool) -> None:
        """Infer a group of globals in one solver; record their signatures (and tables)."""
        solver = TypeSolver()
        scope = Scope(self.mod, self.signatures)
        checker = Checker(solver, scope)
        skeletons: dict[GlobalVar, FuncType] = {}
        for gv in group:
            fn = self.mod.functions[gv]
            if gv in self.signatures:
                continue
            params = [
                p.type_annotation if p.type_annotation is not None else solver.fresh()
                for p in fn.params
            ]
            ret = fn.ret_type if fn.ret_type is not None else solver.fresh()
            skeletons[gv] = func_type(params, ret, fn.type_params)
            scope.local[gv] = skeletons[gv]
            for p, t in zip(fn.params, params):
                checker.types[p] = t
        for gv in group:
            fn = self.mod.functions[gv]
            fn_type = checker.check(fn, where=f"@{gv.name_hint}")
            if gv in skeletons:
                checker.expect(
                    skeletons[gv], fn_type, fn.span, f"the definition of `@{gv.name_hint}`"
                )
        table, type_args = checker.finish()
        for gv, skeleton in skeletons.items():
            sig = solver.resolve(skeleton)
            assert isinstance(sig, FuncType)
            self.signatures[gv] = sig
        result = self.result
        result.errors.extend(solver.errors)
        if record:
            result.table.update(table)
            result.type_args.update(type_args)
            result.warnings.extend(checker.warnings)
        if skeletons and not solver.errors:
            cache = _SIGNATURES.setdefault(self.mod, {})
            for gv in skeletons:
                cache[gv] = self.signatures[gv]

    def finish(self, raise_errors: bool) -> ModuleTypes:
        """The result, with global signatures by name; raise the errors if asked to."""
        result = self.result
        result.global_types.update((gv.name_hint, sig) for gv, sig in self.signatures.items())
        result.errors.sort(key=_position)
        result.warnings.sort(key=_position)
        if raise_errors:
            result.raise_errors()
        return result


def _position(d: Diagnostic) -> tuple[int, str, int, int]:
    if d.span is None:
        return (1, "", 0, 0)
    return (0, d.span.source_name, d.span.line, d.span.column)


@fewer_collections()
def infer_module(mod: IRModule, *, raise_errors: bool = True) -> ModuleTypes:
    """The types of every expression of every global function of `mod`.

    Raises `TypeCheckError` carrying every error unless `raise_errors=False`, in which
    case the errors are in the result's `errors` and unknown types stay holes.
    """
    program = _Program(mod)
    program.infer_unsigned(list(mod.functions), record=True)
    for gv, fn in mod.functions.items():
        if annotated_signature(fn) is not None:
            program.check_group([gv], record=True)
    return program.finish(raise_errors)


def check_module(mod: IRModule) -> ModuleTypes:
    """Type-check `mod`; `TypeCheckError` with one diagnostic per independent error."""
    return infer_module(mod, raise_errors=True)


@fewer_collections()
def infer_expr(
    expr: Expr,
    mod: IRModule | None = None,
    *,
    global_types: Mapping[str, FuncType] | None = None,
    raise_errors: bool = True,
) -> ModuleTypes:
    """The types of `expr` (a closed expression or a function) and its subexpressions.

    Globals and ADTs are looked up in `mod`. A global's signature is its annotation when
    complete, else `global_types[name]` if given, else inferred once per module (cached).
    Free variables of `expr` take their annotated types.
    """
    module = mod if mod is not None else IRModule()
    program = _Program(module, global_types)
    cached = _SIGNATURES.get(module)
    if cached:
        for gv, sig in cached.items():
            program.signatures.setdefault(gv, sig)
    if len(program.signatures) < len(module.functions):
        wanted: dict[GlobalVar, None] = {}
        for node in post_order(expr):
            if isinstance(node, GlobalVar):
                target = program.canon(node)
                if target is not None:
                    wanted[target] = None
        program.infer_unsigned(wanted, record=False)
    solver = TypeSolver()
    checker = Checker(solver, Scope(module if mod is not None else None, program.signatures))
    checker.check(expr)
    table, type_args = checker.finish()
    result = program.result
    result.table.update(table)
    result.type_args.update(type_args)
    result.warnings.extend(checker.warnings)
    result.errors.extend(solver.errors)
    return program.finish(raise_errors)
