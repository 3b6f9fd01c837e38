"""Type and shape inference: unification, operator type relations, the relation solver.

Entry points: `infer_module`, `check_module`, `infer_expr` (they return `ModuleTypes`;
types are never stored in IR nodes). Operator relations live in `typecheck.relations`.
"""

from .infer import annotated_signature, check_module, infer_expr, infer_module
from .relations import (
    RELATIONS,
    Relation,
    RelationContext,
    RelationError,
    relation_for,
)
from .result import ModuleTypes
from .show import type_text
from .solver import Constraint, TypeSolver, UnifyError

__all__ = [
    "RELATIONS",
    "Constraint",
    "ModuleTypes",
    "Relation",
    "RelationContext",
    "RelationError",
    "TypeSolver",
    "UnifyError",
    "annotated_signature",
    "check_module",
    "infer_expr",
    "infer_module",
    "relation_for",
    "type_text",
]
