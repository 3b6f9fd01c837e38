"""The rewrite driver: applies rules (`rules.Rule`: a pattern and a callback) to a program.

It is the one place that owns traversal order; every rewriting pass runs through it.

* **Order.** `bottom-up` (the default) tries the rules at a node after its children were
  rewritten, on the node rebuilt with them; `top-down` tries them at a node first, then
  rewrites the children of what it became. Walks are iterative and memoized on node
  identity, so shared subgraphs stay shared and a 100,000-binding chain needs no
  recursion.
* **At a node** the first rule whose pattern matches and whose callback returns a new
  expression wins. With `settle=True` the rules are tried again on the replacement
  until none fires, so each node leaves the sweep settled.
* **Sweeps.** With `fixpoint=True`, sweeps repeat until one in which no rule fires. A
  settled sweep leaves nothing else to do unless a rule lacked a type or a consumer it
  needed (of a node built during the sweep), so after a settled sweep another runs only
  then. `max_sweeps` bounds the sweeps (and, when settling, the rewrites of one node);
  past it `RewriteBudgetError` names the last rules that fired.
* **Types** of the sweep's root are inferred when first needed (by a type pattern or a
  callback's `ctx.type_of`), then carried to rebuilt nodes and inferred locally for new
  ones (`retype.SweepTypes`), so a sweep stays linear and does every rewrite it can see.
  With `retype=False` only the input's nodes have types (rules that read them through
  `ctx.original` then pay nothing for typing their replacements).
* **Trace.** Pass a list as `trace` to get a `RewriteRecord` per rewrite, and one as
  `misses` to get a `RuleMiss` each time a rule that could fire at a node (by its root
  operator or node class) did not, saying why (`explain`; computed only then).
* **Callbacks** get the captures by name, and `ctx` (the `RewriteContext`) and `types`
  (`rules.CaptureTypes`: the captures' types in this sweep) if they ask for them.

    rewrite(fold + other_rule, mod, max_iterations=20, trace=True)
    apply_rules(rules, fn, mod, settle=True)        # what the passes call
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal, TypeVar, overload

from attrs import define

from ...lang.diagnostics import Error
from ...lang.expr import Expr, Function
from ...lang.module import IRModule
from ...lang.traversal import ExprMutator, children, post_order, with_children
from ...lang.types import Type
from ...typecheck import ModuleTypes, infer_expr
from .explain import ExplainingMatcher, Explanation
from .matcher import Matcher, consumers
from .retype import SweepTypes
from .rules import Candidate, CaptureTypes, Rule, RuleIndex, RuleSet, as_rules
from .show import expr_summary

E = TypeVar("E", bound=Expr | IRModule)
Order = Literal["bottom-up", "top-down"]
ORDERS = ("bottom-up", "top-down")


@define(frozen=True, repr=False)
class RewriteRecord:
    """One rewrite: which `rule` replaced `before` with `after`, in which `iteration`."""

    rule: str
    before: Expr
    after: Expr
    iteration: int

    def __repr__(self) -> str:
        before, after = expr_summary(self.before), expr_summary(self.after)
        return f"RewriteRecord({self.rule!r}, sweep {self.iteration}: {before} -> {after})"


@define(frozen=True, repr=False)
class RuleMiss:
    """A rule tried at a node that did not fire there, in sweep `iteration`: its pattern
    did not match (`explanation` says where and why) or its callback made no change
    (`explanation.matched` is then true)."""

    rule: str
    expr: Expr
    iteration: int
    explanation: Explanation

    def __str__(self) -> str:
        if self.explanation.matched:
            reason = f"matched {self.explanation.summary}, but the callback made no change"
        else:
            reason = str(self.explanation)
        return f"rule {self.rule!r} (sweep {self.iteration}): {reason}"

    def __repr__(self) -> str:
        return f"RuleMiss({str(self)!r})"


class RewriteBudgetError(Error):
    """A rewrite did not reach a fixpoint within its budget of sweeps or of rewrites."""


def _firing(names: Iterable[str]) -> str:
    return ", ".join(sorted(set(names)))


class RewriteContext:
    """What a callback with a `ctx` parameter is given.

    `original` is the node being rewritten as it was before this sweep (its children not
    yet rewritten): rules that look the node up in a table computed on the input use it,
    and `rewritten(e)` gives the result of another node of the input visited already.
    `mod` is the module of globals, `iteration` the sweep's number.
    """

    def __init__(self, sweep: _Sweep, mod: IRModule | None, iteration: int) -> None:
        self._sweep = sweep
        self.mod = mod
        self.iteration = iteration
        self.original: Expr | None = None

    def rewritten(self, e: Expr) -> Expr:
        """The result of `e`, a node of the sweep's input visited already (bottom-up: a
        descendant of `original`, or a node before it in evaluation order)."""
        return self._sweep.rewritten(e)

    def type_of(self, e: Expr) -> Type | None:
        """The type of `e` in this sweep, or None if it is not known (the driver then
        counts the sweep as lacking information, see the module docstring)."""
        types = self._sweep.types()
        t = types.table.get(e) if types is not None else None
        if t is None:
            self._sweep.lacked = True
        return t


class _Sweep(ExprMutator):
    """One sweep of the rules over `root` (see the module docstring)."""

    def __init__(
        self,
        index: RuleIndex,
        root: Expr,
        mod: IRModule | None,
        settle: bool,
        retype: bool,
        max_rewrites: int,
        iteration: int,
        tracing: bool,
        misses: list[RuleMiss] | None = None,
    ) -> None:
        super().__init__()
        self.index = index
        self.root = root
        self.mod = mod
        self.settle = settle
        self.retype = retype
        self._base: ModuleTypes | None = None
        self.max_rewrites = max_rewrites
        self.fired = 0
        self.fired_rules: set[str] = set()
        self.records: list[tuple[Rule, Expr, Expr]] | None = [] if tracing else None
        self.misses = misses
        self.iteration = iteration
        self._explainer: ExplainingMatcher | None = None
        self.lacked = False
        self.ctx = RewriteContext(self, mod, iteration)
        self.matcher = Matcher(self.types, lambda: consumers(root))
        self._types: SweepTypes | None = None
        self._types_done = False
        # bottom-up: the nodes (by id) where a rule fired, with the node as rebuilt
        self._fired_at: dict[int, Expr] = {}
        self._bottom_up = True
        # top-down: (old, new, result) of the nodes visited before types were needed
        self._pending: list[tuple[Expr, Expr, Expr]] = []
        self._current: tuple[Expr, Expr, Expr] = (root, root, root)

    # ------------------------------------------------------------------ types
    def types(self) -> ModuleTypes | None:
        """The types of this sweep's nodes, inferred on first use."""
        if not self._types_done:
            self._types_done = True
            base = self._base = infer_expr(self.root, self.mod)
            if not self.retype:
                return base
            sweep = self._types = SweepTypes(base)
            memo, fired_at = self.memo, self._fired_at
            for node in self._keep if self._bottom_up else ():
                # bottom-up: the nodes visited so far, children before parents
                result = memo[id(node)]
                rebuilt = fired_at.get(id(node), result)
                if rebuilt is not node:
                    sweep.carry(node, rebuilt)
                if result is not rebuilt:
                    sweep.add(result)
            for old, new, result in self._pending:
                sweep.carry(old, new)
                if result is not new:
                    sweep.add(result)
            self._pending.clear()
            old, new, result = self._current
            sweep.carry(old, new)
            if result is not new:
                sweep.add(result)
        return self._base

    def _rebuilt_from(self, old: Expr, new: Expr, result: Expr) -> None:
        """Record that `old` became `new` on new children, then `result` by the rules."""
        if self._types is not None:
            if new is not old:
                self._types.carry(old, new)
            if result is not new:
                self._types.add(result)
        elif new is not old or result is not new:
            self._pending.append((old, new, result))

    # ------------------------------------------------------------------ rules
    def _first(self, e: Expr, candidates: tuple[Candidate, ...]) -> tuple[Rule, Expr] | None:
        """The first of `candidates` that rewrites `e`, and its replacement."""
        compiled = self.index.compiled
        for r, trivial in candidates:
            if trivial is None:
                fast = compiled[r]
                if fast is not None:
                    captures = fast(e, self.matcher)
                else:
                    found = self.matcher.match(r.pattern, e)
                    captures = None if found is None else found.captures
                if captures is None:
                    if self.misses is not None:
                        self._missed(r, e)
                    continue
            else:
                captures = {trivial: e} if trivial else {}
            if r.wants_ctx or r.wants_types:
                extra: dict[str, object] = {}
                if r.wants_ctx:
                    extra["ctx"] = self.ctx
                if r.wants_types:
                    extra["types"] = CaptureTypes(captures, self.ctx.type_of)
                replacement = r.callback(**extra, **captures)
            else:
                replacement = r.callback(**captures)
            if replacement is not None and replacement is not e:
                return r, replacement
            if self.misses is not None:
                self._missed(r, e)
        return None

    def _missed(self, r: Rule, e: Expr) -> None:
        """Record why `r` did not fire at `e` (only when misses are asked for)."""
        assert self.misses is not None
        if self._explainer is None:
            root = self.root
            self._explainer = ExplainingMatcher(self.types, lambda: consumers(root))
        explanation = self._explainer.explain(r.pattern, e)
        self.misses.append(RuleMiss(r.name, e, self.iteration, explanation))

    def apply(self, node: Expr, rebuilt: Expr, candidates: tuple[Candidate, ...]) -> Expr:
        """`rebuilt` (`node` on rewritten children) after the rules (settled if asked);
        `candidates` are the rules that can fire at `rebuilt`."""
        if not candidates:
            return rebuilt
        self.ctx.original = node
        self._current = (node, rebuilt, rebuilt)
        found = self._first(rebuilt, candidates)
        return rebuilt if found is None else self._fired(node, rebuilt, found)

    def _fired(self, node: Expr, rebuilt: Expr, found: tuple[Rule, Expr]) -> Expr:
        """The result at `node` once a first rule fired on `rebuilt` (settled if asked)."""
        self._fired_at[id(node)] = rebuilt
        result = rebuilt
        names: list[str] = []
        for _ in range(self.max_rewrites):
            r, replacement = found
            self.fired += 1
            self.fired_rules.add(r.name)
            names.append(r.name)
            if self.records is not None:
                self.records.append((r, result, replacement))
            if self._types is not None:
                self._types.add(replacement)
            result = replacement
            if not self.settle:
                return result
            self._current = (node, rebuilt, result)
            again = self._first(result, self.index.at(result))
            if again is None:
                return result
            found = again
        raise RewriteBudgetError.at(
            node.span,
            f"the rules did not settle at one node in {self.max_rewrites} rewrites",
            "last rules that fired: " + _firing(names[-8:]),
        )

    # ------------------------------------------------------------------ walks
    def rewrite_node(self, node: Expr) -> Expr:
        """Bottom-up: the rules at `node` rebuilt on its rewritten children."""
        rebuilt = self.rebuilt(node)
        types = self._types
        if types is not None and rebuilt is not node:
            types.carry(node, rebuilt)
        return self.apply(node, rebuilt, self.index.at(rebuilt))

    def top_down(self) -> Expr:
        """Top-down: the rules at each node first, then the children of the result."""
        self._bottom_up = False
        memo, keep = self.memo, self._keep
        tops: dict[int, Expr] = {}
        stack: list[tuple[Expr, bool]] = [(self.root, False)]
        while stack:
            node, expanded = stack.pop()
            key = id(node)
            if expanded:
                top = tops[key]
                kids = children(top)
                # a replacement may contain `node` itself: that child is kept as it is
                new = with_children(top, [memo.get(id(k), k) for k in kids]) if kids else top
                self._rebuilt_from(top, new, new)
                memo[key] = new
                continue
            if key in memo or key in tops:
                continue
            top = self.apply(node, node, self.index.at(node))
            if self._types is None and top is not node:
                self._pending.append((node, node, top))
            tops[key] = top
            keep.extend((node, top))
            stack.append((node, True))
            for kid in reversed(children(top)):
                if id(kid) not in memo and id(kid) not in tops:
                    stack.append((kid, False))
        return memo[id(self.root)]

    def bottom_up(self, nodes: Sequence[Expr] | None = None) -> Expr:
        """Bottom-up: `rewrite_node` at every node, children first (inlined: this loop
        runs once per node of every rewriting pass); `nodes`, if given, is
        `post_order(root)`."""
        memo, keep = self.memo, self._keep
        at, apply, rebuilt_of = self.index.at, self.apply, self.rebuilt
        for node in post_order(self.root) if nodes is None else nodes:
            key = id(node)
            if key in memo:
                continue
            rebuilt = rebuilt_of(node)
            types = self._types
            if types is not None and rebuilt is not node:
                types.carry(node, rebuilt)
            candidates = at(rebuilt)
            memo[key] = apply(node, rebuilt, candidates) if candidates else rebuilt
            keep.append(node)  # keeps ids in `memo` valid while we run
        return memo[id(self.root)]

    def run(self, order: Order, nodes: Sequence[Expr] | None = None) -> Expr:
        """The root after this sweep (`nodes`: see `bottom_up`)."""
        result = self.top_down() if order == "top-down" else self.bottom_up(nodes)
        self.lacked = self.lacked or self.matcher.unknown
        return result


def _has_candidates(index: RuleIndex, nodes: Iterable[Expr]) -> bool:
    at = index.at
    return any(at(node) for node in nodes)


def apply_rules(
    rules: Rule | RuleSet | Iterable[Rule],
    expr: Expr,
    mod: IRModule | None = None,
    *,
    order: Order = "bottom-up",
    settle: bool = False,
    retype: bool = True,
    fixpoint: bool = True,
    max_sweeps: int = 100,
    trace: list[RewriteRecord] | None = None,
    misses: list[RuleMiss] | None = None,
    nodes: Sequence[Expr] | None = None,
) -> Expr:
    """`expr` with `rules` applied as the module docstring describes; globals and their
    types are looked up in `mod`. Returns `expr` itself when no rule fires. `trace` and
    `misses` (lists) receive a record per rewrite and per rule that did not fire. A
    caller that walked `expr` already passes `nodes`, its `post_order` (the first sweep
    uses it instead of walking again)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    index = RuleIndex(as_rules(rules))
    fired: set[str] = set()
    for iteration in range(max_sweeps):
        if not _has_candidates(index, post_order(expr) if nodes is None else nodes):
            return expr
        sweep = _Sweep(
            index, expr, mod, settle, retype, max_sweeps, iteration, trace is not None, misses
        )
        expr = sweep.run(order, nodes)
        nodes = None
        fired = sweep.fired_rules
        if trace is not None and sweep.records is not None:
            trace.extend(RewriteRecord(r.name, b, a, iteration) for r, b, a in sweep.records)
        if not sweep.fired or not fixpoint or (settle and not sweep.lacked):
            return expr
    raise RewriteBudgetError.at(
        expr.span,
        f"rewrite did not reach a fixpoint in {max_sweeps} iterations",
        "rules still firing: " + _firing(fired),
    )


@overload
def rewrite(
    rules: Rule | RuleSet,
    expr_or_module: E,
    max_iterations: int = ...,
    trace: Literal[False] = ...,
    *,
    order: Order = ...,
    settle: bool = ...,
    misses: list[RuleMiss] | None = ...,
) -> E: ...


@overload
def rewrite(
    rules: Rule | RuleSet,
    expr_or_module: E,
    max_iterations: int = ...,
    *,
    trace: Literal[True],
    order: Order = ...,
    settle: bool = ...,
    misses: list[RuleMiss] | None = ...,
) -> tuple[E, list[RewriteRecord]]: ...


def rewrite(
    rules: Rule | RuleSet,
    expr_or_module: Expr | IRModule,
    max_iterations: int = 100,
    trace: bool = False,
    *,
    order: Order = "bottom-up",
    settle: bool = False,
    misses: list[RuleMiss] | None = None,
) -> Any:
    """Apply `rules` (bottom-up by default), sweep after sweep, until no rule fires.

    Types for type/shape/dtype constraints are inferred once per sweep, on demand. Every
    function of a module is rewritten. Raises `RewriteBudgetError` naming the rules that
    kept firing if `max_iterations` sweeps do not reach a fixpoint. With `trace=True`,
    returns `(result, records)` where each `RewriteRecord` says which rule rewrote what.
    A list given as `misses` receives a `RuleMiss` saying why, each time a rule was
    tried at a node and did not fire.
    """
    records: list[RewriteRecord] | None = [] if trace else None

    def run(e: Expr, mod: IRModule | None) -> Expr:
        return apply_rules(
            rules,
            e,
            mod,
            order=order,
            settle=settle,
            max_sweeps=max_iterations,
            trace=records,
            misses=misses,
        )

    result: Expr | IRModule
    if isinstance(expr_or_module, IRModule):
        result = expr_or_module
        for gv in list(expr_or_module.functions):
            new = run(result.functions[gv], result)
            if not isinstance(new, Function):
                raise Error.at(new.span, f"a rule replaced the function @{gv.name_hint}")
            result = result.with_function(gv, new)
    else:
        result = run(expr_or_module, None)
    if records is not None:
        return result, records
    return result
