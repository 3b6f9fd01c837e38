"""The loop IR (TIR): expressions, buffers, statements and `PrimFunc` kernels.

Nodes live in `expr`, `buffer`, `stmt`; intrinsics in `op`; walks and rewrites of
expressions and statements in `visitor`; structural equality and `verify` in `analysis`;
the integer-arithmetic engine (canonical forms, bounds, the simplifier's rules) in `arith`;
the reference evaluator in `evaluate`; the passes that prepare a kernel for code generation
in `transform`.
"""

from .analysis import (
    VerifyError,
    free_vars,
    prim_equal,
    prim_hash,
    undefined_vars,
    verify,
)
from .arith import const_int_bound, simplify
from .buffer import Buffer, decl_buffer, flat_view
from .dtypes import INDEX_DTYPE
from .evaluate import evaluate_expr, run_primfunc
from .expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    CmpOp,
    CommReducer,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    IterKind,
    IterVar,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Range,
    Reduce,
    Select,
    StringImm,
    Sub,
    Var,
    all_of,
    any_of,
    cast,
    const,
    convert,
    eq,
    max_,
    min_,
    ne,
    select,
    truncdiv,
    truncmod,
)  # fmt: skip
from .printer import astext
from .stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
    seq,
)  # fmt: skip
from .transform import lower_pipeline
from .transform.simplify import simplify_stmt

__all__ = [
    "EQ", "GE", "GT", "INDEX_DTYPE", "LE", "LT", "NE", "Add", "Allocate", "And", "BinaryOp",
    "Broadcast", "Buffer", "BufferLoad", "BufferStore", "Call", "Cast", "CmpOp", "CommReducer",
    "Div", "Evaluate", "FloatImm", "FloorDiv", "FloorMod", "For", "ForKind", "IfThenElse", "IntImm",
    "IterKind", "IterVar", "Let", "LetStmt", "Max", "Min", "Mod", "Mul", "Not", "Or", "PrimExpr",
    "PrimFunc", "Ramp", "Range", "Reduce", "Select", "SeqStmt", "Stmt", "StringImm", "Sub", "Var",
    "VerifyError", "all_of", "any_of", "astext", "cast", "const", "const_int_bound", "convert",
    "decl_buffer", "eq", "evaluate_expr", "flat_view", "free_vars", "lower_pipeline", "max_",
    "min_", "ne", "prim_equal", "prim_hash", "run_primfunc", "select", "seq", "simplify",
    "simplify_stmt", "truncdiv", "truncmod", "undefined_vars", "verify"
]  # fmt: skip
