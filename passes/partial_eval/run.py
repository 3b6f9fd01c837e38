"""The `partial-evaluate` pass: options, preparation of the module, and clean-up."""

from __future__ import annotations

from attrs import frozen

from ...lang.adt import Constructor
from ...lang.expr import Constant, Expr, Function, GlobalVar, Let, Match, RefCreate, Var
from ...lang.freevars import distinct_binders
from ...lang.module import IRModule
from ...lang.op import Op
from ...lang.traversal import post_order, scope_operands
from ...typecheck import infer_module
from ..context import PassContext
from ..fold_constant import DEFAULT_MAX_ELEMENTS
from ..pass_base import module_pass
from ..to_anf import to_anf_function
from .evaluator import PartialEvaluator

DEFAULT_FUEL = 1000


@frozen
class PartialEvalOptions:
    """Options of the `partial-evaluate` pass."""

    fuel: int = DEFAULT_FUEL
    """How many calls may be unfolded while evaluating one global function (its
    specializations included); once spent, calls stay calls."""
    memo: bool = True
    """Specialize a global called with static data that is not unfolded once per function
    and static arguments (a new global `@f_1`, shared by every such call)."""
    max_elements: int = DEFAULT_MAX_ELEMENTS
    """Operator results with more elements than this are not computed at compile time."""


def prepare(mod: IRModule) -> tuple[IRModule, bool]:
    """`mod` with every function in A-normal form and each variable bound once, and
    whether it has higher-order or structured values (functions, ADT values, references:
    whose residual code may need type annotations)."""
    functions: dict[GlobalVar, Function] = {}
    structured = False
    for gv, fn in mod.functions.items():
        if not fn.is_primitive:
            nodes = list(post_order(fn))
            if not _in_anf(nodes):
                fn = to_anf_function(fn)
                nodes = list(post_order(fn))
            renamed = distinct_binders(fn, nodes)
            assert isinstance(renamed, Function)
            fn = renamed
            structured = structured or any(isinstance(n, _STRUCTURED) for n in nodes[:-1])
        functions[gv] = fn
    return IRModule(functions, mod.type_definitions), structured


_STRUCTURED = (Constructor, Function, Match, RefCreate)
_ATOMS = (Var, GlobalVar, Constant, Op, Constructor)


def _in_anf(nodes: list[Expr]) -> bool:
    """Whether the nodes of a function (in post order) are in A-normal form: operands are
    atoms and no compound node is shared."""
    seen: set[int] = set()
    for node in nodes:
        for operand in scope_operands(node):
            if not isinstance(operand, _ATOMS):
                return False
        if isinstance(node, Let):
            if id(node.value) in seen:
                return False
            seen.add(id(node.value))
    return True


def partial_evaluate_module(
    mod: IRModule,
    fuel: int = DEFAULT_FUEL,
    memo: bool = True,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
) -> IRModule:
    """Partially evaluate every global function of `mod` (see the package docstring)."""
    prepared, structured = prepare(mod)
    # types annotate residual bindings of structured values; plain tensor programs (such
    # as long chains of operators) need none, and inference is skipped for them
    types = infer_module(prepared, raise_errors=False).table if structured else {}
    evaluator = PartialEvaluator(prepared, types, max(fuel, 0), memo, max_elements)
    functions: dict[GlobalVar, Function] = {}
    for gv, fn in prepared.functions.items():
        functions[gv] = fn if fn.is_primitive else evaluator.residual_global(fn)
    functions.update(evaluator.specializations)
    return IRModule(functions, mod.type_definitions)


@module_pass(
    name="partial-evaluate",
    opt_level=1,
    options=PartialEvalOptions,
    produces="anf",
    tvm_name="PartialEvaluate",
)
def partial_evaluate_pass(mod: IRModule, ctx: PassContext, options: PartialEvalOptions) -> IRModule:
    """Partially evaluate the module: compute what is known at compile time (static
    tensors, tuples, closures, ADT values, references) and leave the rest as residual
    code in A-normal form; known calls are unfolded within a fuel bound."""
    return partial_evaluate_module(mod, options.fuel, options.memo, options.max_elements)
