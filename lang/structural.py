"""Structural equality and hashing, up to renaming of bound variables.

`structural_diff(a, b)` compares two expressions, types, patterns or modules and returns
`None` when they are equal, or a `Mismatch` that says *where* they first differ (a path
such as `@main.body.let[2].value.args[0]`) and why. `structural_equal` is its boolean form
and `structural_hash` a hash consistent with it (equal ⇒ same hash).

Rules:
* Bound variables (let variables, parameters, pattern variables, type parameters) are
  equal when they are bound at corresponding places; names are irrelevant.
* Free variables are equal only if they are the same object, unless `map_free_vars`,
  where they are matched in order of first appearance.
* Globals, ADTs and constructors are equal by name; operators by identity.
* Shared subgraphs are compared once (a DAG and its unfolded tree are equal).
* Every walk is iterative: depth of the program never matters.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from attrs import frozen

from .adt import Constructor, TypeData
from .attrs import Attrs, FuncAttrs
from .expr import (
    Call,
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
    pattern_vars,
)
from .module import IRModule
from .op import Op
from .traversal import children, post_order
from .types import (
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
)


@frozen
class Mismatch:
    """Where two structures first differ: a path from the root, a reason and both sides."""

    path: str
    reason: str
    lhs: Any
    rhs: Any

    def __str__(self) -> str:
        return f"at {self.path or '<root>'}: {self.reason}"


class _Comparer:
    def __init__(self, map_free_vars: bool) -> None:
        self.map_free_vars = map_free_vars
        self.forward: dict[int, object] = {}
        self.backward: dict[int, object] = {}
        self.done: set[tuple[int, int]] = set()
        # tasks: (lhs, rhs, frame index); frames: (parent frame, label, element index or
        # None); labels are put together only for the path of a mismatch
        self.frames: list[tuple[int, str, int | None]] = [(-1, "", None)]
        self.stack: list[tuple[object, object, int]] = []
        self.keep: list[object] = []

    # ------------------------------------------------------------------ helpers
    def path(self, frame: int) -> str:
        parts: list[str] = []
        while frame > 0:
            parent, label, index = self.frames[frame]
            parts.append(label if index is None else f"{label}[{index}]")
            frame = parent
        text = ""
        for label in reversed(parts):
            text += label if label.startswith("[") or not text else "." + label
        return text

    def push(self, a: object, b: object, frame: int, label: str) -> None:
        frames = self.frames
        self.stack.append((a, b, len(frames)))
        frames.append((frame, label, None))

    def bind(self, a: object, b: object) -> bool:
        """Record that binders `a` and `b` correspond; False if that contradicts a mapping."""
        fa, fb = self.forward.get(id(a)), self.backward.get(id(b))
        if fa is None and fb is None:
            self.forward[id(a)] = b
            self.backward[id(b)] = a
            self.keep.extend((a, b))
            return True
        return fa is b and fb is a

    def use(self, a: object, b: object) -> bool:
        """Whether the uses of variables `a` and `b` correspond."""
        fa = self.forward.get(id(a))
        if fa is not None:
            return fa is b
        if id(b) in self.backward:
            return False
        if a is b:
            return True
        return self.map_free_vars and self.bind(a, b)

    def bind_var(self, a: Var, b: Var, frame: int, label: str) -> str | None:
        if not self.bind(a, b):
            return f"binders {a.name_hint!r} and {b.name_hint!r} do not correspond"
        self.push_optional_type(a.type_annotation, b.type_annotation, frame, label + ".type")
        return None

    def push_optional_type(self, a: Type | None, b: Type | None, frame: int, label: str) -> None:
        if a is None and b is None:
            return
        self.push(a, b, frame, label)

    def push_all(self, xs: Any, ys: Any, frame: int, label: str) -> str | None:
        if len(xs) != len(ys):
            return f"{label}: {len(xs)} vs {len(ys)} elements"
        frames, push = self.frames, self.stack.append
        for i in reversed(range(len(xs))):
            push((xs[i], ys[i], len(frames)))
            frames.append((frame, label, i))
        return None

    # ------------------------------------------------------------------ driver
    def run(self, a: object, b: object) -> Mismatch | None:
        stack = self.stack
        stack.append((a, b, 0))
        pop, compare = stack.pop, self.compare
        while stack:
            x, y, frame = pop()
            reason = compare(x, y, frame)
            if reason is not None:
                return Mismatch(self.path(frame), reason, x, y)
        return None

    def compare(self, a: Any, b: Any, frame: int) -> str | None:
        cls = type(a)
        if a is b and cls is not Var and not isinstance(a, TypeVar | ShapeVar):
            return None
        if cls is not type(b):
            return f"{cls.__name__} vs {type(b).__name__}"
        fast = _COMPARE_EXPR.get(cls)
        if fast is not None:  # the common expression classes: a method each
            if cls is Var:
                return fast(self, a, b, frame)
            key = (id(a), id(b))
            if key in self.done:
                return None
            self.done.add(key)
            self.keep.extend((a, b))
            return fast(self, a, b, frame)
        if isinstance(a, Expr) and not isinstance(a, Var):
            key = (id(a), id(b))
            if key in self.done:
                return None
            self.done.add(key)
            self.keep.extend((a, b))
        match a:
            case Var():
                if not self.use(a, b):
                    return f"variable %{a.name_hint} vs %{b.name_hint}"
                other: Var = b
                if self.forward.get(id(a)) is other and id(a) not in self.done_vars:
                    self.done_vars.add(id(a))
                    self.push_optional_type(a.type_annotation, other.type_annotation, frame, "type")
                return None
            case GlobalVar():
                return None if a.name_hint == b.name_hint else f"@{a.name_hint} vs @{b.name_hint}"
            case Op():
                return f"operator {a.name} vs {b.name}"  # identical ops returned above
            case Constructor():
                if a.name_hint != b.name_hint:
                    return f"constructor {a.name_hint} vs {b.name_hint}"
                return None
            case Constant():
                return _compare_arrays(a.data, b.data)
            case Tuple():
                return self.push_all(a.fields, b.fields, frame, "fields")
            case TupleGetItem():
                if a.index != b.index:
                    return f"projection .{a.index} vs .{b.index}"
                self.push(a.tuple_value, b.tuple_value, frame, "tuple")
                return None
            case Call():
                if a.attrs != b.attrs:
                    return f"attributes {_attrs_text(a.attrs)} vs {_attrs_text(b.attrs)}"
                reason = self.push_all(a.args, b.args, frame, "args")
                if reason is None:
                    reason = self.push_all(a.type_args, b.type_args, frame, "type_args")
                self.push(a.op, b.op, frame, "op")
                return reason
            case Let():
                reason = self.bind_var(a.var, b.var, frame, "var")
                self.push(a.body, b.body, frame, "body")
                self.push(a.value, b.value, frame, "value")
                return reason
            case If():
                self.push(a.false_branch, b.false_branch, frame, "else")
                self.push(a.true_branch, b.true_branch, frame, "then")
                self.push(a.cond, b.cond, frame, "cond")
                return None
            case Function():
                return self.compare_function(a, b, frame)
            case Match():
                return self.compare_match(a, b, frame)
            case RefCreate():
                self.push(a.value, b.value, frame, "value")
                return None
            case RefRead():
                self.push(a.ref, b.ref, frame, "ref")
                return None
            case RefWrite():
                self.push(a.value, b.value, frame, "value")
                self.push(a.ref, b.ref, frame, "ref")
                return None
            case Type():
                return self.compare_type(a, b, frame)
            case Pattern():
                return self.compare_pattern(a, b, frame)
            case IRModule():
                return self.compare_module(a, b, frame)
            case TypeData():
                return self.compare_type_data(a, b, frame)
            case ShapeVar():
                return None if self.use(a, b) else f"shape variable {a.name_hint} vs {b.name_hint}"
            case AnyDim():
                return None
            case int() | str() | float() | bool() | None:
                return None if a == b else f"{a!r} vs {b!r}"
            case Attrs() | FuncAttrs():
                return None if a == b else f"attributes {a} vs {b}"
        raise TypeError(f"structural equality: unhandled class {type(a).__name__}")

    done_vars: set[int]

    def compare_var(self, a: Var, b: Var, frame: int) -> str | None:
        if not self.use(a, b):
            return f"variable %{a.name_hint} vs %{b.name_hint}"
        if self.forward.get(id(a)) is b and id(a) not in self.done_vars:
            self.done_vars.add(id(a))
            self.push_optional_type(a.type_annotation, b.type_annotation, frame, "type")
        return None

    def compare_call(self, a: Call, b: Call, frame: int) -> str | None:
        if a.attrs != b.attrs:
            return f"attributes {_attrs_text(a.attrs)} vs {_attrs_text(b.attrs)}"
        reason = self.push_all(a.args, b.args, frame, "args")
        if reason is None and (a.type_args or b.type_args):
            reason = self.push_all(a.type_args, b.type_args, frame, "type_args")
        self.push(a.op, b.op, frame, "op")
        return reason

    def compare_let(self, a: Let, b: Let, frame: int) -> str | None:
        reason = self.bind_var(a.var, b.var, frame, "var")
        self.push(a.body, b.body, frame, "body")
        self.push(a.value, b.value, frame, "value")
        return reason

    def compare_function(self, a: Function, b: Function, frame: int) -> str | None:
        if a.attrs != b.attrs:
            return f"function attributes {dict(a.attrs.items)} vs {dict(b.attrs.items)}"
        if len(a.params) != len(b.params):
            return f"{len(a.params)} vs {len(b.params)} parameters"
        if len(a.type_params) != len(b.type_params):
            return f"{len(a.type_params)} vs {len(b.type_params)} type parameters"
        for x, y in zip(a.type_params, b.type_params):
            if not self.bind(x, y):
                return "type parameters do not correspond"
        self.push(a.body, b.body, frame, "body")
        self.push_optional_type(a.ret_type, b.ret_type, frame, "ret_type")
        for i in reversed(range(len(a.params))):
            reason = self.bind_var(a.params[i], b.params[i], frame, f"params[{i}]")
            if reason is not None:
                return reason
        return None

    def compare_match(self, a: Match, b: Match, frame: int) -> str | None:
        if a.complete != b.complete:
            return "match vs match?"
        if len(a.clauses) != len(b.clauses):
            return f"{len(a.clauses)} vs {len(b.clauses)} clauses"
        for i in reversed(range(len(a.clauses))):
            ca, cb = a.clauses[i], b.clauses[i]
            self.push(ca.rhs, cb.rhs, frame, f"clauses[{i}].rhs")
            self.push(ca.lhs, cb.lhs, frame, f"clauses[{i}].lhs")
        self.push(a.data, b.data, frame, "data")
        return None

    def compare_pattern(self, a: Any, b: Any, frame: int) -> str | None:
        match a:
            case PatternWildcard():
                return None
            case PatternVar():
                return self.bind_var(a.var, b.var, frame, "var")
            case PatternConstructor():
                if a.constructor.name_hint != b.constructor.name_hint:
                    return f"constructor {a.constructor.name_hint} vs {b.constructor.name_hint}"
                return self.push_all(a.patterns, b.patterns, frame, "patterns")
            case PatternTuple():
                return self.push_all(a.patterns, b.patterns, frame, "patterns")
        raise TypeError(f"structural equality: unhandled pattern {type(a).__name__}")

    def compare_type(self, a: Any, b: Any, frame: int) -> str | None:
        match a:
            case TensorType():
                if a.dtype != b.dtype:
                    return f"dtype {a.dtype} vs {b.dtype}"
                if len(a.shape) != len(b.shape):
                    return f"rank {len(a.shape)} vs {len(b.shape)}"
                for i, (x, y) in enumerate(zip(a.shape, b.shape)):
                    if type(x) is not type(y) or (isinstance(x, int) and x != y):
                        return f"dimension {i}: {x!r} vs {y!r}"
                    if isinstance(x, ShapeVar) and not self.use(x, y):
                        return f"dimension {i}: shape variable {x.name_hint} vs {y!r}"
                return None
            case TupleType():
                return self.push_all(a.fields, b.fields, frame, "fields")
            case FuncType():
                if len(a.type_params) != len(b.type_params):
                    return "different numbers of type parameters"
                for pa, pb in zip(a.type_params, b.type_params):
                    if not self.bind(pa, pb):
                        return "type parameters do not correspond"
                self.push(a.ret_type, b.ret_type, frame, "ret_type")
                return self.push_all(a.arg_types, b.arg_types, frame, "arg_types")
            case TypeVar():
                return None if self.use(a, b) else f"type variable {a.name_hint} vs {b.name_hint}"
            case GlobalTypeVar():
                return (
                    None if a.name_hint == b.name_hint else f"type {a.name_hint} vs {b.name_hint}"
                )
            case TypeCall():
                self.push(a.func, b.func, frame, "func")
                return self.push_all(a.args, b.args, frame, "args")
            case RefType():
                self.push(a.value, b.value, frame, "value")
                return None
            case IncompleteType():
                return None
        raise TypeError(f"structural equality: unhandled type {type(a).__name__}")

    def compare_type_data(self, a: TypeData, b: TypeData, frame: int) -> str | None:
        if a.header.name_hint != b.header.name_hint:
            return f"type {a.header.name_hint} vs {b.header.name_hint}"
        if len(a.type_vars) != len(b.type_vars):
            return "different numbers of type parameters"
        for x, y in zip(a.type_vars, b.type_vars):
            if not self.bind(x, y):
                return "type parameters do not correspond"
        if len(a.constructors) != len(b.constructors):
            return f"{len(a.constructors)} vs {len(b.constructors)} constructors"
        for i in reversed(range(len(a.constructors))):
            ca, cb = a.constructors[i], b.constructors[i]
            if ca.name_hint != cb.name_hint:
                return f"constructor {ca.name_hint} vs {cb.name_hint}"
            reason = self.push_all(ca.inputs, cb.inputs, frame, f"{ca.name_hint}")
            if reason is not None:
                return reason
        return None

    def compare_module(self, a: IRModule, b: IRModule, frame: int) -> str | None:
        a_types = {g.name_hint: d for g, d in a.type_definitions.items()}
        b_types = {g.name_hint: d for g, d in b.type_definitions.items()}
        if set(a_types) != set(b_types):
            return f"type definitions {sorted(a_types)} vs {sorted(b_types)}"
        a_funcs = {g.name_hint: f for g, f in a.functions.items()}
        b_funcs = {g.name_hint: f for g, f in b.functions.items()}
        if set(a_funcs) != set(b_funcs):
            return f"global functions {sorted(a_funcs)} vs {sorted(b_funcs)}"
        for name in sorted(a_funcs, reverse=True):
            self.push(a_funcs[name], b_funcs[name], frame, f"@{name}")
        for name in sorted(a_types, reverse=True):
            self.push(a_types[name], b_types[name], frame, name)
        return None


_COMPARE_EXPR: dict[type, Any] = {
    Var: _Comparer.compare_var,
    Call: _Comparer.compare_call,
    Let: _Comparer.compare_let,
}
"""The comparisons of the most common expression classes, by exact class (the others go
through `compare`'s `match`, which gives them the same answers)."""


def _attrs_text(attrs: Attrs | None) -> str:
    return "{}" if attrs is None else str(dict(attrs.non_default_items()))


def _compare_arrays(a: np.ndarray, b: np.ndarray) -> str | None:
    if a.dtype != b.dtype:
        return f"constant dtype {a.dtype} vs {b.dtype}"
    if a.shape != b.shape:
        return f"constant shape {a.shape} vs {b.shape}"
    if a.tobytes() != b.tobytes():
        return "constant values differ"
    return None


def structural_diff(a: object, b: object, map_free_vars: bool = False) -> Mismatch | None:
    """None if `a` and `b` are equal up to renaming of bound variables, else where they differ."""
    comparer = _Comparer(map_free_vars)
    comparer.done_vars = set()
    return comparer.run(a, b)


def structural_equal(a: object, b: object, map_free_vars: bool = False) -> bool:
    """Whether `a` and `b` are equal up to renaming of bound variables."""
    return structural_diff(a, b, map_free_vars) is None


def assert_structural_equal(a: object, b: object, map_free_vars: bool = False) -> None:
    """Raise AssertionError naming the first difference unless `a` and `b` are equal."""
    mismatch = structural_diff(a, b, map_free_vars)
    if mismatch is not None:
        raise AssertionError(f"structures differ {mismatch}")


# ------------------------------------------------------------------------------ hashing


def _h(*parts: object) -> int:
    return hash(parts)


class _Hasher:
    """Context-free hashes: each node's hash depends only on the subtree below it."""

    def __init__(self) -> None:
        self.binder_tags: dict[int, int] = {}
        self.memo: dict[int, int] = {}

    def tag_binders(self, root: Expr, order: list[Expr] | None = None) -> None:
        tags = self.binder_tags
        let_tag = _h("let")
        for node in post_order(root) if order is None else order:
            cls = type(node)
            if cls is Let:
                tags[id(node.var)] = let_tag  # type: ignore[attr-defined]
            elif cls is Call or cls is Var or cls is Constant:
                continue
            elif isinstance(node, Function):
                for i, p in enumerate(node.params):
                    tags[id(p)] = _h("param", i)
                for i, tp in enumerate(node.type_params):
                    tags[id(tp)] = _h("tparam", i)
            elif isinstance(node, Let):
                tags[id(node.var)] = _h("let")
            elif isinstance(node, Match):
                for clause in node.clauses:
                    for i, v in enumerate(pattern_vars(clause.lhs)):
                        tags[id(v)] = _h("pvar", i)

    def type_hash(self, t: object) -> int:
        match t:
            case None:
                return 0
            case TensorType():
                dims = tuple(d if isinstance(d, int) else type(d).__name__ for d in t.shape)
                return _h("T", dims, t.dtype)
            case TupleType():
                return _h("TT", *(self.type_hash(f) for f in t.fields))
            case FuncType():
                for i, p in enumerate(t.type_params):
                    self.binder_tags.setdefault(id(p), _h("tparam", i))
                return _h(
                    "FT", self.type_hash(t.ret_type), *(self.type_hash(a) for a in t.arg_types)
                )
            case TypeVar():
                return _h("TV", self.binder_tags.get(id(t), 1))
            case GlobalTypeVar():
                return _h("GTV", t.name_hint)
            case TypeCall():
                return _h("TC", t.func.name_hint, *(self.type_hash(a) for a in t.args))
            case RefType():
                return _h("RT", self.type_hash(t.value))
            case IncompleteType():
                return _h("IT")
        raise TypeError(f"structural hash: unhandled type {type(t).__name__}")

    def local(self, node: Expr) -> int:
        match node:
            case Var():
                return _h(
                    "var", self.binder_tags.get(id(node), 7), self.type_hash(node.type_annotation)
                )
            case GlobalVar():
                return _h("gv", node.name_hint)
            case Op():
                return _h("op", node.name)
            case Constructor():
                return _h("ctor", node.name_hint)
            case Constant():
                return _h("const", node.data.dtype.str, node.data.shape, node.data.tobytes())
            case TupleGetItem():
                return _h("proj", node.index)
            case Call():
                return _h("call", node.attrs, *(self.type_hash(t) for t in node.type_args))
            case Function():
                return _h("fn", node.attrs, self.type_hash(node.ret_type), len(node.type_params))
            case Match():
                return _h("match", node.complete, *(self.pattern_hash(c.lhs) for c in node.clauses))
        return _h(type(node).__name__)

    def pattern_hash(self, p: Pattern) -> int:
        match p:
            case PatternConstructor():
                return _h(
                    "pc", p.constructor.name_hint, *(self.pattern_hash(q) for q in p.patterns)
                )
            case PatternTuple():
                return _h("pt", *(self.pattern_hash(q) for q in p.patterns))
        return _h(type(p).__name__)

    def expr_hash(self, root: Expr) -> int:
        order = list(post_order(root))
        self.tag_binders(root, order)
        memo = self.memo
        tags = self.binder_tags
        local = self.local
        hashed = memo.__getitem__
        var_types: dict[int, int] = {}  # hashes of annotations (by id; kept alive by nodes)
        call_tag, let_tag = _h("call", None), _h("Let")
        for node in order:
            cls = type(node)
            if cls is Var:
                ann = node.type_annotation  # type: ignore[attr-defined]
                th = var_types.get(id(ann))
                if th is None:
                    th = self.type_hash(ann)
                    if ann is None or type(ann) is TensorType:  # no type variables in it
                        var_types[id(ann)] = th
                memo[id(node)] = hash((hash(("var", tags.get(id(node), 7), th)),))
            elif cls is Call and node.attrs is None and not node.type_args:  # type: ignore[attr-defined]
                op_hash = hashed(id(node.op))  # type: ignore[attr-defined]
                args = map(hashed, map(id, node.args))  # type: ignore[attr-defined]
                memo[id(node)] = hash((call_tag, op_hash, *args))
            elif cls is Let:
                var, value, body = node.var, node.value, node.body  # type: ignore[attr-defined]
                memo[id(node)] = hash(
                    (let_tag, hashed(id(var)), hashed(id(value)), hashed(id(body)))
                )
            else:
                memo[id(node)] = _h(local(node), *map(hashed, map(id, children(node))))
        return memo[id(root)]


def structural_hash(node: object) -> int:
    """A hash consistent with `structural_equal` (with or without `map_free_vars`)."""
    hasher = _Hasher()
    match node:
        case Expr():
            return hasher.expr_hash(node)
        case Type():
            return hasher.type_hash(node)
        case IRModule():
            parts = [_h("fn", g.name_hint, hasher.expr_hash(f)) for g, f in node.functions.items()]
            for g, d in node.type_definitions.items():
                for i, tv in enumerate(d.type_vars):
                    hasher.binder_tags[id(tv)] = _h("tparam", i)
                ctors = tuple(
                    (c.name_hint, *(hasher.type_hash(t) for t in c.inputs)) for c in d.constructors
                )
                parts.append(_h("type", g.name_hint, ctors))
            return _h("module", *sorted(parts))
        case Pattern():
            return hasher.pattern_hash(node)
    raise TypeError(f"structural hash: unhandled class {type(node).__name__}")
