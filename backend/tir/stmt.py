"""Statements of the loop IR and `PrimFunc`, a function over buffers."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from attrs import field, frozen

from .buffer import Buffer
from .expr import PrimExpr, Var, as_tuple, convert


class Stmt:
    """Base of every loop-IR statement."""

    __slots__ = ()


class ForKind(enum.Enum):
    """How a loop runs: in order, split across the thread pool, as vector lanes, or
    unrolled."""

    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unrolled"


@frozen(eq=False)
class BufferStore(Stmt):
    """`buffer[indices] = value` (a `Ramp` index stores a vector)."""

    buffer: Buffer
    value: PrimExpr
    indices: tuple[PrimExpr, ...] = field(converter=as_tuple)


@frozen(eq=False)
class For(Stmt):
    """`for loop_var in [min, min + extent): body`, run as `kind` says."""

    loop_var: Var
    min: PrimExpr = field(converter=convert)
    extent: PrimExpr = field(converter=convert)
    kind: ForKind
    body: Stmt
    annotations: Mapping[str, Any] = field(factory=dict)


@frozen(eq=False)
class SeqStmt(Stmt):
    """Statements in order."""

    stmts: tuple[Stmt, ...] = field(converter=as_tuple)


@frozen(eq=False)
class IfThenElse(Stmt):
    """`if condition: then_case else: else_case` (`else_case` may be None)."""

    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None


@frozen(eq=False)
class LetStmt(Stmt):
    """`var = value` visible in `body`."""

    var: Var
    value: PrimExpr
    body: Stmt


@frozen(eq=False)
class Allocate(Stmt):
    """Memory for `buffer` (all of its `shape`) that lives while `body` runs."""

    buffer: Buffer
    body: Stmt


@frozen(eq=False)
class Evaluate(Stmt):
    """Evaluate an expression for its effect (an intrinsic call)."""

    value: PrimExpr


@frozen(eq=False)
class PrimFunc:
    """A kernel: `params` are the buffers it reads and writes (inputs first, then outputs,
    with their full shapes, used to check arguments), `body` the loop nest.
    `attrs` holds facts for later stages (e.g. `{"num_outputs": 1}`)."""

    name: str
    params: tuple[Buffer, ...] = field(converter=as_tuple)
    body: Stmt
    attrs: Mapping[str, Any] = field(factory=dict)


def seq(*stmts: Stmt) -> Stmt:
    """Statements in order, flattening nested sequences; one statement stays itself."""
    flat: list[Stmt] = []
    for s in stmts:
        if isinstance(s, SeqStmt):
            flat.extend(s.stmts)
        else:
            flat.append(s)
    return flat[0] if len(flat) == 1 else SeqStmt(tuple(flat))
