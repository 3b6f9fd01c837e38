"""The IR: expressions, types, ADTs, modules, operators, attributes, spans and diagnostics.

Everything here is immutable. Binders (`Var`, `GlobalVar`, `TypeVar`, `GlobalTypeVar`,
`ShapeVar`, `Constructor`) are compared by identity; equality up to renaming is
`structural_equal`.
"""

from . import opdefs as _opdefs  # noqa: F401  (declares every operator)
from .adt import Constructor, TypeData
from .attrs import REQUIRED, AttrField, Attrs, AttrsSchema, FuncAttrs, Kind
from .diagnostics import (
    AttrsError,
    Diagnostic,
    Error,
    InputError,
    ParseError,
    TypeCheckError,
)
from .expr import (
    Call,
    Clause,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    const,
    let_chain,
    pattern_vars,
)
from .freevars import bound_vars, free_vars
from .module import IRModule
from .op import Op, OpPattern, all_ops, get_op, lookup_op, register_op
from .span import SourceFile, Span
from .structural import (
    Mismatch,
    assert_structural_equal,
    structural_diff,
    structural_equal,
    structural_hash,
)
from .traversal import (
    ExprMutator,
    ExprVisitor,
    children,
    post_order,
    pre_order,
    rewrite_post_order,
    substitute,
    with_children,
)
from .types import (
    ANY,
    AnyDim,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    ShapeVar,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
    scalar_type,
)

__all__ = [name for name in dir() if not name.startswith("_")]
