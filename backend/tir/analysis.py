"""Questions about loop-IR code: structural equality and hashing (`prim_equal`, `prim_hash`,
the one value comparison of TIR and TE expressions), free and undefined variables, and
well-formedness (`verify`). Integer bounds and linear forms are in `arith`.

Every walk here uses an explicit stack; nothing recurses per statement.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from .buffer import Buffer
from .dtypes import INDEX_DTYPE, element_of, is_bool, is_int, is_uint, lanes_of
from .expr import (
    And,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    CmpOp,
    FloorDiv,
    FloorMod,
    IterVar,
    Let,
    Mod,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Reduce,
    Select,
    Var,
)
from .stmt import Allocate, BufferStore, For, IfThenElse, LetStmt, PrimFunc, Stmt
from .visitor import children, sub_expressions

Node = PrimExpr | Stmt

# ------------------------------------------------------------------- equality and hashing


def _is_node(x: Any) -> bool:
    return isinstance(x, (PrimExpr, Stmt))


def _same_leaf(a: Any, b: Any) -> bool:
    """Non-node fields: numbers and strings by value (NaN equals NaN), objects by identity."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (a != a and b != b)
    if isinstance(a, (int, str, bool, float)) or a is None:
        return type(a) is type(b) and a == b
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same_leaf(x, y) for x, y in zip(a, b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return dict(a) == dict(b)
    return a is b or (type(a) is type(b) and hasattr(a, "value") and a == b)


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in attrs.fields(cls))
    return names


def prim_equal(a: Node, b: Node) -> bool:
    """Structural equality of expressions (or statements): same node classes, dtypes and
    constants; variables and buffers by identity."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        cls = type(x)
        if cls is not type(y) or isinstance(x, Var):
            return False
        for name in _field_names(cls):
            vx, vy = getattr(x, name), getattr(y, name)
            if vx is vy:
                continue
            if _is_node(vx) or _is_node(vy):
                if not (_is_node(vx) and _is_node(vy)):
                    return False
                stack.append((vx, vy))
            elif isinstance(vx, tuple) and any(_is_node(v) for v in vx + tuple(vy)):
                if len(vx) != len(vy):
                    return False
                for ex, ey in zip(vx, vy):
                    if _is_node(ex) and _is_node(ey):
                        stack.append((ex, ey))
                    elif not _same_leaf(ex, ey):
                        return False
            elif isinstance(vx, IterVar) or isinstance(vy, IterVar) or not _same_leaf(vx, vy):
                return False
    return True


def _leaf_hash(v: Any) -> int:
    if isinstance(v, float):
        return hash("nan") if v != v else hash(v)
    if isinstance(v, (int, str, bool)) or v is None:
        return hash((type(v).__name__, v))
    if isinstance(v, Mapping):
        return hash(tuple(sorted((str(k), repr(x)) for k, x in v.items())))
    if hasattr(v, "value") and isinstance(getattr(v, "value", None), str):  # enums
        return hash(v)
    return id(v)


def prim_hash(node: Node) -> int:
    """A hash consistent with `prim_equal` (structurally equal nodes hash alike)."""
    if isinstance(node, Var):
        return hash(("Var", id(node)))
    done: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(node, False)]
    keep: list[Any] = []
    while stack:
        n, expanded = stack.pop()
        if id(n) in done:
            continue
        if isinstance(n, Var):
            done[id(n)] = hash(("Var", id(n)))
            keep.append(n)
            continue
        kids = children(n)
        if not expanded:
            stack.append((n, True))
            stack.extend((k, False) for k in kids if id(k) not in done)
            continue
        parts: list[int] = [hash(type(n).__name__)]
        for name in _field_names(type(n)):
            v = getattr(n, name)
            if _is_node(v):
                parts.append(done[id(v)])
            elif isinstance(v, tuple):
                parts.append(hash(tuple(done[id(x)] if _is_node(x) else _leaf_hash(x) for x in v)))
            elif name not in ("annotations",):
                parts.append(_leaf_hash(v))
        done[id(n)] = hash(tuple(parts))
        keep.append(n)
    return done[id(node)]


# ---------------------------------------------------------------------------- variables


def _binders(node: Any) -> list[Var]:
    if isinstance(node, (Let, LetStmt)):
        return [node.var]
    if isinstance(node, For):
        return [node.loop_var]
    if isinstance(node, Reduce):
        return [iv.var for iv in node.axis]
    return []


def free_vars(node: Node) -> list[Var]:
    """Variables used in `node` and bound nowhere inside it, in first-use order."""
    used: dict[int, Var] = {}
    bound: set[int] = set()
    for n in sub_expressions(node):
        if isinstance(n, Var):
            used.setdefault(id(n), n)
        else:
            bound.update(id(v) for v in _binders(n))
            if isinstance(n, Reduce):  # axis domains may use outer vars
                for iv in n.axis:
                    for d in (iv.dom.min, iv.dom.extent):
                        for m in sub_expressions(d):
                            if isinstance(m, Var):
                                used.setdefault(id(m), m)
    return [v for k, v in used.items() if k not in bound]


def uses_var(node: Node, var: Var) -> bool:
    """Whether `var` occurs in `node`."""
    return any(n is var for n in sub_expressions(node))


class _Scoped:
    """The variables (by id, with nesting counts) and buffer memories in scope during a
    scope-ordered walk."""

    def __init__(self) -> None:
        self.defined: dict[int, int] = {}
        self.buffers: dict[int, int] = {}

    @staticmethod
    def _drop(table: dict[int, int], v: Any) -> None:
        n = table.get(id(v), 0) - 1
        if n <= 0:
            table.pop(id(v), None)
        else:
            table[id(v)] = n


def _scoped_nodes(root: Node, scope: _Scoped) -> Iterator[Any]:
    """Nodes of `root` in scope order; `scope.defined`/`scope.buffers` are current at each."""
    stack: list[tuple[str, Any]] = [("node", root)]
    while stack:
        tag, item = stack.pop()
        if tag == "undef":
            scope._drop(scope.defined, item)
            continue
        if tag == "unbuf":
            scope._drop(scope.buffers, item)
            continue
        if tag == "def":
            scope.defined[id(item)] = scope.defined.get(id(item), 0) + 1
            continue
        if tag == "buf":
            scope.buffers[id(item)] = scope.buffers.get(id(item), 0) + 1
            continue
        node = item
        yield node
        if isinstance(node, (Let, LetStmt)):
            stack += [("undef", node.var), ("node", node.body), ("def", node.var)]
            stack.append(("node", node.value))
        elif isinstance(node, For):
            stack += [("undef", node.loop_var), ("node", node.body), ("def", node.loop_var)]
            stack += [("node", node.extent), ("node", node.min)]
        elif isinstance(node, Allocate):
            stack += [("unbuf", node.buffer.data), ("node", node.body), ("buf", node.buffer.data)]
            stack.extend(("node", d) for d in reversed(node.buffer.shape))
        elif isinstance(node, Reduce):
            axis = [iv.var for iv in node.axis]
            stack.extend(("undef", v) for v in axis)
            stack.extend(("node", k) for k in reversed(children(node)))
            stack.extend(("def", v) for v in axis)
            for iv in node.axis:
                stack += [("node", iv.dom.extent), ("node", iv.dom.min)]
        else:
            stack.extend(("node", k) for k in reversed(children(node)))


def undefined_vars(func: PrimFunc) -> list[Var]:
    """Variables used in `func.body` outside the scope of any binder (in first-use order);
    variables in the params' shapes count as defined."""
    scope = _Scoped()
    for b in func.params:
        for d in b.shape:
            for n in sub_expressions(d):
                if isinstance(n, Var):
                    scope.defined[id(n)] = 1
    out: dict[int, Var] = {}
    for node in _scoped_nodes(func.body, scope):
        if isinstance(node, Var) and id(node) not in scope.defined:
            out.setdefault(id(node), node)
    return list(out.values())


# ------------------------------------------------------------------------------- verify


class VerifyError(ValueError):
    """A PrimFunc is not well-formed (a compiler bug, not a user error)."""


def _snippet(node: Any) -> str:
    from .printer import astext

    text = astext(node)
    lines = text.splitlines()
    if len(lines) > 4:
        text = "\n".join([*lines[:4], "..."])
    return text


def _is_index(dtype: str) -> bool:
    return is_int(dtype) or is_uint(dtype)


def _check_expr(e: PrimExpr) -> str | None:
    """A message if the node's own dtypes are inconsistent."""
    if isinstance(e, (BinaryOp, CmpOp)):
        if e.a.dtype != e.b.dtype:
            return f"operands of {type(e).__name__} have dtypes {e.a.dtype} and {e.b.dtype}"
        if isinstance(e, (Mod, FloorDiv, FloorMod)) and is_bool(e.a.dtype):
            return f"{type(e).__name__} on bool"
    elif isinstance(e, (And, Or)):
        if e.a.dtype != e.b.dtype or not is_bool(e.a.dtype):
            return f"{type(e).__name__} needs bool operands, got {e.a.dtype} and {e.b.dtype}"
    elif isinstance(e, Not):
        if not is_bool(e.a.dtype):
            return f"Not needs a bool operand, got {e.a.dtype}"
    elif isinstance(e, Select):
        c = e.condition.dtype
        if not is_bool(c):
            return f"Select condition has dtype {c}"
        if lanes_of(c) not in (1, lanes_of(e.dtype)):
            return f"Select condition has {lanes_of(c)} lanes, values {lanes_of(e.dtype)}"
        if e.true_value.dtype != e.false_value.dtype:
            return "Select branches have different dtypes"
    elif isinstance(e, Cast):
        if lanes_of(e.dtype) != lanes_of(e.value.dtype):
            return f"Cast from {e.value.dtype} to {e.dtype} changes the lanes"
    elif isinstance(e, Let):
        if e.var.dtype != e.value.dtype:
            return f"Let binds `{e.var.name}: {e.var.dtype}` to a {e.value.dtype}"
    elif isinstance(e, Ramp):
        if e.base.dtype != e.stride.dtype or lanes_of(e.base.dtype) != 1:
            return f"Ramp base {e.base.dtype} and stride {e.stride.dtype} must be one scalar dtype"
        if e.lanes < 2:
            return f"Ramp with {e.lanes} lanes"
    elif isinstance(e, Broadcast):
        if lanes_of(e.value.dtype) != 1 or e.lanes < 2:
            return f"Broadcast of {e.value.dtype} to {e.lanes} lanes"
    elif isinstance(e, Call):
        if e.name == "if_then_else":
            if len(e.args) != 3 or not is_bool(e.args[0].dtype):
                return "if_then_else needs (bool, value, value)"
            if e.args[1].dtype != e.args[2].dtype or e.args[1].dtype != e.dtype:
                return "if_then_else branches differ in dtype"
        from .op import is_intrinsic

        if not is_intrinsic(e.name):
            return f"unknown intrinsic `{e.name}`"
    elif isinstance(e, BufferLoad):
        return _check_access(e.buffer, e.indices)
    return None


def _check_access(buffer: Buffer, indices: tuple[PrimExpr, ...]) -> str | None:
    if len(indices) not in (1, buffer.ndim):
        return (
            f"buffer `{buffer.name}` ({buffer.ndim}-d) accessed with {len(indices)} indices "
            "(need one per dimension, or one flat index)"
        )
    for i in indices[:-1]:
        if lanes_of(i.dtype) != 1:
            return f"only the last index of `{buffer.name}` may be a vector"
    for i in indices:
        if not _is_index(i.dtype):
            return f"index of `{buffer.name}` has dtype {i.dtype}"
    return None


def _check_stmt(s: Stmt) -> str | None:
    if isinstance(s, For):
        for what, v in (("loop variable", s.loop_var), ("min", s.min), ("extent", s.extent)):
            if v.dtype != INDEX_DTYPE:
                return f"loop {what} has dtype {v.dtype}, expected {INDEX_DTYPE}"
    elif isinstance(s, BufferStore):
        msg = _check_access(s.buffer, s.indices)
        if msg:
            return msg
        lanes = lanes_of(s.indices[-1].dtype) if s.indices else 1
        value = s.value.dtype
        if element_of(value) != element_of(s.buffer.dtype) or lanes_of(value) != lanes:
            return (
                f"store of a {value} into `{s.buffer.name}` ({s.buffer.dtype}) with "
                f"{lanes}-lane index"
            )
    elif isinstance(s, IfThenElse):
        if s.condition.dtype != "bool":
            return f"if condition has dtype {s.condition.dtype}"
    elif isinstance(s, LetStmt):
        if s.var.dtype != s.value.dtype:
            return f"`{s.var.name}: {s.var.dtype}` bound to a {s.value.dtype}"
    elif isinstance(s, Allocate) and s.buffer.data.dtype != "handle":
        return "allocated buffer's data pointer is not a handle"
    return None


def _outside_allocation(node: Node, scope: _Scoped) -> str | None:
    """A message if `node` loads from or stores to a buffer whose memory is not in scope."""
    if isinstance(node, (BufferLoad, BufferStore)) and id(node.buffer.data) not in scope.buffers:
        verb = "read" if isinstance(node, BufferLoad) else "written"
        return f"buffer `{node.buffer.name}` is {verb} outside its allocation"
    return None


def verify_problems(func: PrimFunc) -> list[str]:
    """Everything that makes `func` ill-formed (empty when it is well-formed)."""
    problems: list[str] = []
    scope = _Scoped()
    for b in func.params:
        scope.buffers[id(b.data)] = 1
        for d in b.shape:
            for n in sub_expressions(d):
                if isinstance(n, Var):
                    scope.defined[id(n)] = 1
    for node in _scoped_nodes(func.body, scope):
        msg: str | None = None
        if isinstance(node, Var):
            if id(node) not in scope.defined:
                msg = f"variable `{node.name}` is used outside the scope of its definition"
        elif isinstance(node, PrimExpr):
            msg = _check_expr(node)
            if msg is None:
                msg = _outside_allocation(node, scope)
        elif isinstance(node, Stmt):
            msg = _check_stmt(node)
            if msg is None:
                msg = _outside_allocation(node, scope)
        for v in _binders(node):
            if id(v) in scope.defined:
                msg = msg or f"variable `{v.name}` is bound again inside its own scope"
        if msg is not None:
            problems.append(f"{msg}\n  in: {_snippet(node)}")
    return problems


def verify(func: PrimFunc) -> None:
    """Raise `VerifyError` if `func` is ill-formed: a variable used outside its binder's
    scope (or re-bound inside it), a buffer used outside its allocation, inconsistent dtypes,
    loop bounds that are not `int64`, or an access whose arity is neither the buffer's rank
    nor one flat index."""
    problems = verify_problems(func)
    if problems:
        head = f"PrimFunc `{func.name}` is ill-formed ({len(problems)} problem(s)):\n"
        raise VerifyError(head + "\n".join(problems[:10]))


__all__ = [
    "VerifyError",
    "free_vars",
    "prim_equal",
    "prim_hash",
    "undefined_vars",
    "uses_var",
    "verify",
    "verify_problems",
]
