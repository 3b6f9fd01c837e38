"""`fold-constant`: evaluate the calls whose inputs are all constants, at compile time.

Before::

    def @main(%x: Tensor[(2), float32]) {
      %0 = add(meta[relay.Constant][0], meta[relay.Constant][1]);  /* [1, 2] + [3, 4] */
      %1 = (%0, 2f);
      multiply(%x, %1.0)
    }

After::

    def @main(%x: Tensor[(2), float32]) {
      multiply(%x, meta[relay.Constant][0])  /* [4, 6] */
    }

A call of an operator whose arguments are constants (or tuples of constants) is run with
the interpreter and replaced by its result: a `Constant` (rank 0 for a scalar result) or
a tuple of them. Projections of constant tuples fold, and `shape_of` of a value whose
shape is static becomes a constant; a `let` binding a constant is inlined into its uses.
Operators with effects or randomness (`debug`,
`nn.dropout`, annotations, device copies) never fold; nor do results with more than
`max-elements` elements in all, nor calls the interpreter cannot evaluate (they are left
for run time). `Primitive` (fused) functions are left alone.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from attrs import frozen

from ..backend.runtime import evaluate
from ..lang.diagnostics import Error
from ..lang.dtype import numpy_dtype
from ..lang.expr import Call, Constant, Expr, Function, Let, Tuple, TupleGetItem, Var
from ..lang.module import IRModule
from ..lang.op import Op
from ..lang.traversal import ExprMutator, post_order
from ..lang.types import TensorType
from ..typecheck import infer_module
from ..typecheck.result import ModuleTypes
from .context import PassContext
from .pass_base import module_pass

NEVER_FOLDED = frozenset(
    {
        "debug",
        "nn.dropout",
        "annotation.checkpoint",
        "annotation.stop_fusion",
        "on_device",
        "device_copy",
    }
)
"""Operators with side effects, randomness or placement meaning: never evaluated early."""

DEFAULT_MAX_ELEMENTS = 1_000_000


@frozen
class FoldConstantOptions:
    """Options of the `fold-constant` pass."""

    max_elements: int = DEFAULT_MAX_ELEMENTS
    """Results with more elements than this (all tensors of a tuple together) stay calls."""


def is_constant(expr: Expr) -> bool:
    """Whether `expr` is a constant or a (nested) tuple of constants."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Tuple):
            stack.extend(node.fields)
        elif not isinstance(node, Constant):
            return False
    return True


def _to_expr(value: object, budget: int) -> Expr | None:
    """`value` (an interpreter result) as constants, or None if it is not tensors or is
    larger than `budget` elements."""
    leaves: list[np.ndarray] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):
            stack.extend(item)
        elif isinstance(item, np.ndarray | np.generic):
            leaves.append(np.asarray(item))
        else:
            return None
    if sum(leaf.size for leaf in leaves) > budget:
        return None
    return _build(value)


def _build(value: object) -> Expr | None:
    # tuples nest only as deep as the type of one operator result: recursion is bounded
    if isinstance(value, tuple):
        fields = [_build(item) for item in value]
        if any(f is None for f in fields):
            return None
        return Tuple(tuple(f for f in fields if f is not None))
    try:
        return Constant(np.asarray(value))
    except ValueError:  # a dtype relay has no name for
        return None


def _fold_call(call: Call, mod: IRModule, max_elements: int) -> Expr | None:
    try:
        value = evaluate(call, mod=mod)
    except (Error, ArithmeticError, ValueError, TypeError):
        return None  # left for run time, where the same error will be reported
    return _to_expr(value, max_elements)


def _static_shape(types: ModuleTypes | None, expr: Expr) -> tuple[int, ...] | None:
    if types is None or expr not in types:
        return None
    ty = types.type_of(expr)
    if isinstance(ty, TensorType) and all(isinstance(d, int) for d in ty.shape):
        return tuple(int(d) for d in ty.shape)  # type: ignore[arg-type]
    return None


def _in_primitive(nodes: list[Expr]) -> set[int]:
    inside: set[int] = set()
    for node in nodes:
        if isinstance(node, Function) and node.is_primitive and id(node) not in inside:
            inside.update(id(n) for n in post_order(node.body))
    return inside


def fold_constant_expr(
    root: Expr,
    mod: IRModule,
    types: Callable[[], ModuleTypes | None] = lambda: None,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
) -> Expr:
    """`root` with its constant subexpressions evaluated; globals are looked up in `mod`.

    `types()` gives the types of the original nodes (or None), asked for only when a
    `shape_of` is met; they enable folding it.
    """
    nodes = list(post_order(root))
    bound_by: dict[int, list[Var]] = {}
    skip = _in_primitive(nodes)
    for node in nodes:
        if isinstance(node, Let) and id(node) not in skip:
            bound_by.setdefault(id(node.value), []).append(node.var)
    return _Folder(mod, types, max_elements, skip, bound_by).visit(root, nodes)


class _Folder(ExprMutator):
    """Folds each node rebuilt on folded children; a variable bound to a value that
    folded to a constant reads the constant, and its `let` goes."""

    def __init__(
        self,
        mod: IRModule,
        types: Callable[[], ModuleTypes | None],
        max_elements: int,
        skip: set[int],
        bound_by: dict[int, list[Var]],
    ) -> None:
        super().__init__()
        self.mod = mod
        self.types = types
        self.max_elements = max_elements
        self.skip = skip
        self.bound_by = bound_by

    def rewrite_node(self, node: Expr) -> Expr:
        memo = self.memo
        if isinstance(node, Let) and memo[id(node.var)] is not node.var:
            return memo[id(node.body)]  # the binding of a constant was inlined
        new = self.rebuilt(node)
        if id(node) in self.skip:
            return new
        result = _fold_node(node, new, self.mod, self.types, self.max_elements)
        variables = self.bound_by.get(id(node))
        if variables is not None and is_constant(result):
            for var in variables:
                memo[id(var)] = result
        return result


def _fold_node(
    node: Expr,
    new: Expr,
    mod: IRModule,
    types: Callable[[], ModuleTypes | None],
    max_elements: int,
) -> Expr:
    """`new` (`node` on folded children) folded, or `new` itself."""
    if isinstance(new, TupleGetItem) and isinstance(new.tuple_value, Tuple):
        if is_constant(new.tuple_value) and 0 <= new.index < len(new.tuple_value.fields):
            return new.tuple_value.fields[new.index]
    elif isinstance(new, Call) and isinstance(new.op, Op) and new.op.name not in NEVER_FOLDED:
        if new.op.name == "shape_of":
            assert isinstance(node, Call)
            known = types()
            shape = _static_shape(known, node.args[0]) if node.args else None
            out_type = known.type_of(node) if known is not None and node in known else None
            if shape is not None and isinstance(out_type, TensorType):
                dtype = numpy_dtype(out_type.dtype)
                return Constant(np.asarray(shape, dtype=dtype))
        elif all(is_constant(arg) for arg in new.args):
            folded = _fold_call(new, mod, max_elements)
            if folded is not None:
                return folded
    return new


@module_pass(name="fold-constant", opt_level=2, options=FoldConstantOptions)
def fold_constant_pass(mod: IRModule, ctx: PassContext, options: FoldConstantOptions) -> IRModule:
    """Evaluate constant subexpressions at compile time (TVM's `FoldConstant`)."""
    max_elements = options.max_elements
    # a module pass, not a function pass: one inference of the whole module (made only
    # if some `shape_of` needs it, and given up on if any function is ill-typed) serves
    # every function
    cache: list[ModuleTypes | None] = []

    def types() -> ModuleTypes | None:
        if not cache:
            inferred = infer_module(mod, raise_errors=False)
            cache.append(None if inferred.errors else inferred)
        return cache[0]

    out = mod
    for gv, fn in mod.functions.items():
        new = fold_constant_expr(fn, mod, types, max_elements)
        if new is not fn:
            assert isinstance(new, Function)
            out = out.with_function(gv, new)
    return out
