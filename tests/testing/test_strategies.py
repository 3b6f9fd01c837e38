"""The program strategies of `relay.testing`: well-formedness, coverage, and the structural
equality and hashing of what they generate."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from relay.lang import (
    Call,
    Constant,
    Constructor,
    ExprMutator,
    Function,
    FuncType,
    GlobalTypeVar,
    GlobalVar,
    IncompleteType,
    IRModule,
    Let,
    Match,
    Op,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    RefType,
    ShapeVar,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    TypeCall,
    TypeData,
    TypeVar,
    Var,
    all_ops,
    children,
    free_vars,
    post_order,
    rewrite_post_order,
    structural_diff,
    structural_equal,
    structural_hash,
)
from relay.lang.expr import Expr, Pattern, pattern_vars
from relay.lang.types import AnyDim, Type
from relay.testing import (
    LITERAL_DTYPES,
    attrs_for,
    constants,
    exprs,
    func_attrs,
    literal_constants,
    metadata_constants,
    modules,
    patterns,
    types,
    usable_ops,
)

# ----------------------------------------------------------------- well-formedness


class IllFormed(AssertionError):
    """A generated program breaks a well-formedness rule."""


def type_nodes(t: Type) -> list[tuple[Type, frozenset[int]]]:
    """Every node of a type with the ids of the type variables bound around it."""
    out = []
    stack: list[tuple[Type, frozenset[int]]] = [(t, frozenset())]
    while stack:
        node, bound = stack.pop()
        out.append((node, bound))
        if isinstance(node, FuncType):
            inner = bound | {id(p) for p in node.type_params}
            stack.extend((a, inner) for a in (*node.arg_types, node.ret_type))
        elif isinstance(node, TupleType):
            stack.extend((f, bound) for f in node.fields)
        elif isinstance(node, TypeCall):
            stack.extend((a, bound) for a in node.args)
        elif isinstance(node, RefType):
            stack.append((node.value, bound))
    return out


class Checker:
    """Checks one module (or closed expression) iteratively."""

    def __init__(self, mod: IRModule | None) -> None:
        mod = mod or IRModule()
        self.ctors = {id(c) for d in mod.type_definitions.values() for c in d.constructors}
        self.adts = {id(g): len(d.type_vars) for g, d in mod.type_definitions.items()}
        self.globals = {id(g): len(f.params) for g, f in mod.functions.items()}
        self.binders: set[int] = set()
        for gtv, data in mod.type_definitions.items():
            if data.header is not gtv:
                raise IllFormed(f"type {gtv.name_hint} is registered under another name")
            for tag, ctor in enumerate(data.constructors):
                if ctor.belong_to is not gtv or ctor.tag != tag:
                    raise IllFormed(f"constructor {ctor.name_hint} does not belong to its ADT")
                for t in ctor.inputs:
                    if self.free_type_vars(t) - {id(v) for v in data.type_vars}:
                        raise IllFormed(f"{ctor.name_hint} uses an unbound type variable")
        names = [c.name_hint for d in mod.type_definitions.values() for c in d.constructors]
        if len(names) != len(set(names)):
            raise IllFormed(f"duplicate constructor names {names}")
        for function in mod.functions.values():
            self.check_closed(function)

    def free_type_vars(self, t: Type | None) -> set[int]:
        """Ids of unbound type variables in `t`; checks the arity of ADT applications."""
        if t is None:
            return set()
        free = set()
        for node, bound in type_nodes(t):
            if isinstance(node, TypeVar) and id(node) not in bound:
                free.add(id(node))
            elif isinstance(node, TypeCall):
                if self.adts.get(id(node.func)) != len(node.args):
                    raise IllFormed(f"{node.func.name_hint} applied to {len(node.args)} types")
            elif isinstance(node, GlobalTypeVar):
                raise IllFormed("a bare ADT name used as a type (must be a TypeCall)")
        return free

    def check_pattern(self, pattern: Pattern) -> None:
        stack = [pattern]
        while stack:
            p = stack.pop()
            if isinstance(p, PatternConstructor):
                if id(p.constructor) not in self.ctors:
                    raise IllFormed(f"pattern constructor {p.constructor.name_hint} not in module")
                if len(p.patterns) != len(p.constructor.inputs):
                    raise IllFormed(f"pattern {p.constructor.name_hint} has wrong arity")
            if isinstance(p, PatternConstructor | PatternTuple):
                stack.extend(p.patterns)

    def check_node(self, node: Expr) -> None:
        values = list(node.args) if isinstance(node, Call) else list(children(node))
        for child in values:
            if isinstance(child, Constructor) and not child.inputs:
                raise IllFormed(f"nullary constructor {child.name_hint} used uncalled")
        if isinstance(node, Constructor) and id(node) not in self.ctors:
            raise IllFormed(f"constructor {node.name_hint} is not the module's")
        if isinstance(node, GlobalVar) and id(node) not in self.globals:
            raise IllFormed(f"global @{node.name_hint} is not defined")
        if isinstance(node, Call):
            if node.type_args:
                raise IllFormed("type arguments are not part of the text format")
            callee = node.op
            expected = None
            if isinstance(callee, Op):
                if callee.num_inputs >= 0:
                    expected = callee.num_inputs
                schema = callee.attrs_schema
                if (node.attrs is None) != (schema is None) or (
                    node.attrs is not None and node.attrs.schema is not schema
                ):
                    raise IllFormed(f"call of {callee.name} without its attribute schema")
            elif isinstance(callee, Constructor):
                expected = len(callee.inputs)
            elif isinstance(callee, GlobalVar):
                expected = self.globals.get(id(callee))
            if expected is not None and expected != len(node.args):
                raise IllFormed(f"call of {callee} with {len(node.args)} arguments")
            if node.attrs is not None and not isinstance(callee, Op):
                raise IllFormed("attributes on a call of a non-operator")
        if isinstance(node, Match):
            for clause in node.clauses:
                self.check_pattern(clause.lhs)
        if isinstance(node, TupleGetItem) and node.index < 0:
            raise IllFormed("negative projection")

    def binders_of(self, node: Expr) -> list[Var]:
        if isinstance(node, Let):
            return [node.var]
        if isinstance(node, Function):
            return list(node.params)
        if isinstance(node, Match):
            return [v for c in node.clauses for v in pattern_vars(c.lhs)]
        return []

    def check_closed(self, root: Expr) -> None:
        """Every variable and type variable is used under its binder; binders are unique."""
        free: dict[int, frozenset[int]] = {}
        free_types: dict[int, frozenset[int]] = {}
        for node in post_order(root):
            self.check_node(node)
            for var in self.binders_of(node):
                if id(var) in self.binders:
                    raise IllFormed(f"%{var.name_hint} is bound twice")
                self.binders.add(id(var))
            kids = children(node)
            ftv = set().union(*(free_types[id(k)] for k in kids))
            if isinstance(node, Var):
                fv = {id(node)}
                ftv |= self.free_type_vars(node.type_annotation)
            elif isinstance(node, Let):
                fv = (free[id(node.value)] | free[id(node.body)]) - {id(node.var)}
            elif isinstance(node, Function):
                fv = set(free[id(node.body)]) - {id(p) for p in node.params}
                ftv |= self.free_type_vars(node.ret_type)
                ftv -= {id(t) for t in node.type_params}
            elif isinstance(node, Match):
                fv = set(free[id(node.data)])
                for clause in node.clauses:
                    fv |= free[id(clause.rhs)] - {id(v) for v in pattern_vars(clause.lhs)}
            else:
                fv = set().union(*(free[id(k)] for k in kids))
            free[id(node)] = frozenset(fv)
            free_types[id(node)] = frozenset(ftv)
        if free[id(root)]:
            raise IllFormed(f"{len(free[id(root)])} variables used outside their scope")
        if free_types[id(root)]:
            raise IllFormed("type variables used outside their scope")


def _rejects(mod: IRModule) -> bool:
    try:
        Checker(mod)
    except IllFormed:
        return True
    return False


def test_checker_rejects_ill_formed_programs() -> None:
    x = Var("x")
    main = GlobalVar("main")
    op = next(op for op in all_ops() if op.attrs_schema is not None and op.num_inputs >= 0)
    gtv = GlobalTypeVar("T")
    z = Constructor("Z", [], gtv, 0)
    adt = TypeData(gtv, [], [z])
    for bad in (
        Function([], x),  # free variable
        Function([x], Let(x, x, x)),  # bound twice
        Function([], Let(Var("y"), x, Tuple([]))),  # x not bound
        Function([], Call(op, [Tuple([])] * op.num_inputs)),  # no attribute object
        Function([], Call(GlobalVar("nowhere"), [])),  # undefined global
        Function([], Call(Constructor("W", [], gtv, 0), [])),  # another module's constructor
        Function([], Tuple([z])),  # nullary constructor not called
        Function([Var("t", TypeCall(gtv, [TensorType((), "int32")]))], Tuple([])),  # arity
        Function([Var("t", TypeVar("A"))], Tuple([])),  # unbound type variable
    ):
        assert _rejects(IRModule({main: bad}, {gtv: adt})), bad
    # a variable bound by a let is in scope in its own value (recursion)
    ok = Function([], Let(x, Function([], Call(x, [])), Call(z, [])))
    assert not _rejects(IRModule({main: ok}, {gtv: adt}))


@given(modules())
def test_modules_are_well_formed(mod: IRModule) -> None:
    Checker(mod)
    assert len(mod.functions) >= 1


@given(exprs())
def test_exprs_are_closed(expr: Expr) -> None:
    Checker(None).check_closed(expr)
    assert free_vars(expr) == []


@given(st.data())
def test_exprs_over_a_module_use_its_globals_and_constructors(data: st.DataObject) -> None:
    mod = data.draw(modules(max_depth=1))
    expr = data.draw(exprs(module=mod))
    Checker(mod).check_closed(expr)


@given(st.data())
def test_types_use_only_given_type_variables(data: st.DataObject) -> None:
    mod = data.draw(modules(max_depth=0, max_functions=1))
    a, b = TypeVar("A"), TypeVar("B")
    t = data.draw(types(max_depth=3, type_vars=[a, b], module=mod))
    assert Checker(mod).free_type_vars(t) <= {id(a), id(b)}


@given(st.data())
def test_patterns_bind_fresh_distinct_variables(data: st.DataObject) -> None:
    mod = data.draw(modules(max_depth=0, max_functions=1))
    pattern = data.draw(patterns(max_depth=3, module=mod))
    Checker(mod).check_pattern(pattern)
    bound = pattern_vars(pattern)
    assert len({id(v) for v in bound}) == len(bound)


@given(literal_constants())
def test_literal_constants_are_scalars_of_literal_dtypes(c: Constant) -> None:
    assert c.is_scalar and c.dtype in LITERAL_DTYPES


@given(metadata_constants())
def test_metadata_constants_have_no_literal_form(c: Constant) -> None:
    assert not (c.is_scalar and c.dtype in LITERAL_DTYPES)


def test_every_declared_operator_can_be_generated() -> None:
    ops = usable_ops()
    assert {op.name for op in ops} == {op.name for op in all_ops()}
    assert ops[0].name == "add"


@given(st.sampled_from(usable_ops()).flatmap(lambda op: st.tuples(st.just(op), attrs_for(op))))
def test_attrs_for_builds_valid_attributes(pair: tuple[Op, object]) -> None:
    op, attrs = pair
    if op.attrs_schema is None:
        assert attrs is None
    else:
        assert attrs.schema is op.attrs_schema  # type: ignore[attr-defined]
        assert op.attrs_schema.make(**attrs.as_dict()) == attrs  # type: ignore[attr-defined]


@given(func_attrs())
def test_func_attrs_primitive_is_one(attrs: object) -> None:
    assert attrs.get("Primitive", 1) == 1  # type: ignore[attr-defined]


# ----------------------------------------------------------------- coverage


def _type_features(t: Type | None, out: set[str]) -> None:
    if t is None:
        return
    for node, _ in type_nodes(t):
        if isinstance(node, TensorType):
            out.add("type:scalar" if not node.shape else "type:tensor")
            for d in node.shape:
                out.add(f"dim:{type(d).__name__}")
        elif isinstance(node, FuncType):
            out.add("type:fn[T]" if node.type_params else "type:fn")
        else:
            out.add(f"type:{type(node).__name__}")


_NAMES = {"x.y": "dotted", "1": "digit", "": "empty", "λ": "unicode", "名前": "unicode"}


def features(mod: IRModule) -> set[str]:
    """The constructs a module exercises."""
    out: set[str] = set()
    for data in mod.type_definitions.values():
        out.add("adt[T]" if data.type_vars else "adt")
        for ctor in data.constructors:
            for t in ctor.inputs:
                _type_features(t, out)
                if any(isinstance(n, TypeCall) and n.func is data.header for n, _ in type_nodes(t)):
                    out.add("adt:recursive")
    uses: dict[int, int] = {}
    for function in mod.functions.values():
        _type_features(function.ret_type, out)
        hints = []
        for node in post_order(function):
            for kid in children(node):
                uses[id(kid)] = uses.get(id(kid), 0) + 1
            out.add(type(node).__name__)
            if isinstance(node, Var):
                _type_features(node.type_annotation, out)
                hints.append(node.name_hint)
                out.add(_NAMES.get(node.name_hint, "name"))
            elif isinstance(node, Let):
                out.add("let:annotated" if node.var.type_annotation else "let:plain")
                if any(v is node.var for v in free_vars(node.value)):
                    out.add("let:recursive")
            elif isinstance(node, Function):
                out.update(f"fn:attr:{k}:{type(v).__name__}" for k, v in node.attrs.items)
                if node.type_params:
                    out.add("fn:type_params")
                if node.ret_type is not None:
                    out.add("fn:ret_type")
                if free_vars(node) and node is not function:
                    out.add("fn:closure")
            elif isinstance(node, Call):
                out.add(f"call:{type(node.op).__name__}")
                if isinstance(node.op, Op) and node.attrs is not None:
                    out.add("call:attrs")
                if isinstance(node.op, Call):
                    out.add("call:curried")
                for arg in node.args:
                    if isinstance(arg, GlobalVar | Constructor):
                        out.add(f"value:{type(arg).__name__}")
            elif isinstance(node, Match):
                out.add("match" if node.complete else "match?")
                for clause in node.clauses:
                    stack = [(clause.lhs, 0)]
                    while stack:
                        p, depth = stack.pop()
                        out.add(f"pattern:{type(p).__name__}")
                        if isinstance(p, PatternConstructor) and depth > 0:
                            out.add("pattern:nested_ctor")
                        if isinstance(p, PatternVar):
                            _type_features(p.var.type_annotation, out)
                        if isinstance(p, PatternConstructor | PatternTuple):
                            stack.extend((q, depth + 1) for q in p.patterns)
            elif isinstance(node, Tuple):
                out.add(f"tuple:{min(len(node.fields), 2)}")
            elif isinstance(node, Constant):
                out.add(constant_feature(node))
                if node.is_scalar and node.dtype in LITERAL_DTYPES and node.dtype != "bool":
                    value = float(node.data)
                    if value < 0:
                        out.add("const:negative")
                    if np.isinf(value):
                        out.add("const:inf")
                    if np.isnan(value):
                        out.add("const:nan")
        if len(hints) != len(set(hints)):
            out.add("name:duplicate")
        for node in post_order(function):
            if isinstance(node, GlobalVar | Constructor):
                continue  # atoms: sharing them is trivial
            if uses.get(id(node), 0) > 1 and not isinstance(node, Var | Constant):
                out.add("shared")
            if isinstance(node, Call) and any(
                isinstance(a, Call) and uses[id(a)] > 1 for a in node.args
            ):
                out.add("dag")
    return out


def constant_feature(c: Constant) -> str:
    """`const:<dtype>` for a literal, `const:meta` for an array, else `const:meta_scalar:…`."""
    if c.is_scalar and c.dtype in LITERAL_DTYPES:
        return f"const:{c.dtype}"
    return "const:meta" if c.data.ndim else f"const:meta_scalar:{c.dtype}"


EXPECTED = {
    *(f"const:{d}" for d in LITERAL_DTYPES),
    "const:meta", "const:meta_scalar:int8", "const:meta_scalar:uint8",
    "const:negative", "const:inf", "const:nan",
    "Let", "let:annotated", "let:plain", "let:recursive", "If", "Function",
    "fn:type_params", "fn:ret_type", "fn:closure", "fn:attr:Primitive:int",
    "call:Op", "call:attrs", "call:GlobalVar", "call:Var", "call:Function",
    "call:Constructor", "call:curried",
    "match", "match?", "pattern:PatternWildcard", "pattern:PatternVar",
    "pattern:PatternConstructor", "pattern:PatternTuple", "pattern:nested_ctor",
    "adt", "adt[T]", "adt:recursive",
    "tuple:0", "tuple:1", "tuple:2", "TupleGetItem", "RefCreate", "RefRead", "RefWrite",
    "type:scalar", "type:tensor", "dim:int", "dim:AnyDim", "dim:ShapeVar", "type:TupleType",
    "type:fn", "type:fn[T]", "type:TypeCall", "type:RefType", "type:IncompleteType",
    "type:TypeVar", "dotted", "digit", "empty", "unicode", "name:duplicate",
    "shared", "dag", "value:GlobalVar", "value:Constructor",
}  # fmt: skip


def test_modules_cover_every_construct() -> None:
    seen: set[str] = set()
    attr_kinds: set[str] = set()

    @settings(max_examples=300)
    @given(modules())
    def collect(mod: IRModule) -> None:
        found = features(mod)
        seen.update(found)
        attr_kinds.update(f.rsplit(":", 1)[1] for f in found if f.startswith("fn:attr:"))

    collect()
    missing = EXPECTED - seen
    assert not missing, f"never generated: {sorted(missing)}"
    assert {"str", "float", "tuple", "bool", "NoneType"} <= attr_kinds


# ----------------------------------------------------------------- structural equality


@given(modules())
def test_equal_to_itself_and_hash_is_stable(mod: IRModule) -> None:
    assert structural_equal(mod, mod)
    assert structural_hash(mod) == structural_hash(mod)


_TINY = modules(max_depth=1, max_functions=1, max_types=1, max_size=2)


@given(_TINY, _TINY)
def test_hash_agrees_with_equality_on_pairs(a: IRModule, b: IRModule) -> None:
    if structural_equal(a, b):
        assert structural_hash(a) == structural_hash(b)
    assert structural_equal(a, b) == structural_equal(b, a)


@given(exprs(max_depth=2, max_size=3), exprs(max_depth=2, max_size=3))
def test_hash_agrees_with_equality_on_expression_pairs(a: Expr, b: Expr) -> None:
    if structural_equal(a, b):
        assert structural_hash(a) == structural_hash(b)


class Renamer(ExprMutator):
    """Replaces every variable by a fresh one with another name hint (consistently)."""

    def visit_Var(self, var: Var) -> Var:
        return Var(var.name_hint + "_renamed", var.type_annotation)


def renamed(mod: IRModule) -> IRModule:
    renamer = Renamer()
    functions = {gv: renamer.visit(f) for gv, f in mod.functions.items()}
    return IRModule(functions, mod.type_definitions)  # type: ignore[arg-type]


@given(modules())
def test_renamed_copy_is_equal_and_hashes_equal(mod: IRModule) -> None:
    copy = renamed(mod)
    old = {id(n) for f in mod.functions.values() for n in post_order(f) if isinstance(n, Var)}
    new = [n for f in copy.functions.values() for n in post_order(f) if isinstance(n, Var)]
    assert not any(id(v) in old for v in new)
    assert all(v.name_hint.endswith("_renamed") for v in new)
    assert structural_diff(copy, mod) is None
    assert structural_hash(copy) == structural_hash(mod)


def changed(c: Constant) -> Constant:
    """A constant with other bytes: one bit flipped, or one more dimension if empty."""
    data = np.array(c.data)
    if data.size == 0:
        return Constant(data.reshape((*data.shape, 1)))
    data.reshape(-1).view(np.uint8)[0] ^= 1
    return Constant(data)


@given(modules(), st.data())
def test_changing_one_constant_is_a_named_difference(mod: IRModule, data: st.DataObject) -> None:
    sites = [
        (gv, node)
        for gv, f in mod.functions.items()
        for node in post_order(f)
        if isinstance(node, Constant)
    ]
    assume(sites)
    gv, target = data.draw(st.sampled_from(sites))
    replacement = changed(target)
    function = rewrite_post_order(mod.functions[gv], lambda e: replacement if e is target else None)
    mutated = mod.with_function(gv, function)  # type: ignore[arg-type]
    mismatch = structural_diff(mod, mutated)
    assert mismatch is not None
    assert mismatch.path.startswith(f"@{gv.name_hint}")
    assert "constant" in mismatch.reason
    assert not structural_equal(mutated, mod)


# ----------------------------------------------------------------- small strategies


@given(constants())
def test_constants_are_read_only_arrays(c: Constant) -> None:
    assert not c.data.flags.writeable


@given(types(max_depth=3))
def test_types_without_context_are_closed(t: Type) -> None:
    for node, bound in type_nodes(t):
        assert not isinstance(node, TypeVar) or id(node) in bound
        assert not isinstance(node, TypeCall)
        assert isinstance(
            node, TensorType | TupleType | FuncType | RefType | IncompleteType | TypeVar
        )
        if isinstance(node, TensorType):
            assert all(isinstance(d, int | AnyDim | ShapeVar) for d in node.shape)
