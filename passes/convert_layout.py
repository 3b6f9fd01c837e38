"""`convert-layout`: run convolutions (and pools) in the layouts the user asks for.

`ConvertLayout({"nn.conv2d": ["NHWC", "default"]})` (pipeline text
`convert-layout{desired-layouts="nn.conv2d=NHWC:default"}`) rewrites every `nn.conv2d`
to NHWC data with the default kernel layout for it (HWIO; HWOI when depthwise), as TVM's
ConvertLayout does. The operators after it keep working in the new layout as far as
their layout rules allow (passes/layout_rules.py: elementwise and broadcasting ops, bias
add, norms, pools, concatenate, split, slices, pads, reductions, transpose, squeeze,
expand_dims, ...), so a whole network needs a `layout_transform` only where data enters
the converted region and where it leaves it:

    def @main(%x: Tensor[(1, 3, 8, 8), float32]) {
      %0 = nn.conv2d(%x, <W: OIHW>, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
      %1 = nn.relu(%0);
      nn.max_pool2d(%1, pool_size=[2, 2], strides=[2, 2])
    }

becomes

    def @main(%x: Tensor[(1, 3, 8, 8), float32]) {
      %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NHWC");
      %1 = nn.conv2d(%0, <W: HWIO>, ..., data_layout="NHWC", kernel_layout="HWIO");
      %2 = nn.relu(%1);
      %3 = nn.max_pool2d(%2, ..., layout="NHWC");
      layout_transform(%3, src_layout="NHWC", dst_layout="NCHW")
    }

How: one post-order walk (iterative, shared nodes once) gives each node a new expression
and a tag (how its new value relates to the original; `layout_rules.LayoutTag`). A call
asks its operator's layout rule which tag each argument must have; the argument is
converted (`layout_transform`, memoized per value and layout, so a value read by several
consumers is converted once). A transform of a transform composes, and inverse pairs
cancel; constant weights are converted at compile time. An operator without a rule, a
call the rule declines, a call of a function, and `if`/`match`/references are barriers:
their operands go back to the original layout. Function results always do, so the
program's type never changes. Each rewritten call is checked against its type relation
(a call that would not type-check stays as it was), and a split layout (`NCHW16c`) is
only used where it divides the tensor.

The walk (`convert_function`) is shared with `alter-op-layout` (passes/alter_op_layout.py):
what a pass asks of a call is a function of the call (`Desire`: ConvertLayout's is the
layouts given for its operator, alter-op-layout's depends on each call's channels), and a
pass may use its own rules for some operators instead of the table's. It reports the
operators that received converted values but had no layout rule (`LayoutReport`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from attrs import field, frozen

from ..backend.runtime.op_impls.transform import convert_layout as convert_array
from ..lang.attrs import Attrs
from ..lang.expr import Call, Constant, Expr, Function, Let, Tuple, TupleGetItem, Var
from ..lang.module import IRModule
from ..lang.op import Op, get_op, lookup_op
from ..lang.opdefs import semantics
from ..lang.optable import MissingFacetError
from ..lang.structural import structural_equal
from ..lang.traversal import children, post_order, with_children
from ..lang.types import IncompleteType, TensorType, TupleType, Type
from ..typecheck import RelationContext, RelationError, infer_expr, relation_for
from ..typecheck.relations.layouts import Layout, convert_shape
from .context import PassContext
from .layout_rules import (
    CONV_KERNEL_AXES,
    DATA_AXES,
    CallInfo,
    Decision,
    LayoutRule,
    Tag,
    is_primal,
    layout_rule,
    relabel,
)
from .pass_base import PassError, function_pass

# ---------------------------------------------------------------------- desired layouts

DesiredLayouts = Mapping[str, Sequence[str]]
"""Layouts per operator name, as TVM's ConvertLayout takes them:
`{"nn.conv2d": ["NHWC", "default"], "nn.max_pool2d": ["NHWC"]}`."""


def desired_text(desired: DesiredLayouts) -> str:
    """The pipeline-option spelling of `desired`: `nn.conv2d=NHWC:default;...`."""
    if not isinstance(desired, Mapping):
        raise PassError(
            "ConvertLayout takes a dict from operator name to a list of layouts, such as "
            f'{{"nn.conv2d": ["NHWC", "default"]}}, not {type(desired).__name__}'
        )
    items = []
    for name, layouts in desired.items():
        if isinstance(layouts, str) or not isinstance(layouts, Sequence):
            raise PassError(
                f'the layouts for `{name}` are a list such as ["NHWC", "default"], not {layouts!r}'
            )
        items.append(f"{name}={':'.join(str(x) for x in layouts)}")
    text = ";".join(items)
    parse_desired(text)
    return text


def _layout(name: str, text: str, axes: str, what: str) -> str:
    try:
        letters = semantics.layout_letters(text)
    except semantics.SemanticsError as err:
        raise PassError(f"unknown layout for `{name}`: {err}") from None
    if sorted(c for c in letters if c.isupper()) != sorted(axes):
        raise PassError(
            f'unknown {what} layout "{text}" for `{name}`: it must have the axes '
            f"{', '.join(axes)} (each once, possibly split, as in {axes})"
        )
    return text


def parse_desired(text: str) -> dict[Op, tuple[str, ...]]:
    """The operators and layouts that `desired-layouts` text names, checked: a known
    operator that `convert-layout` converts, a data layout with the operator's axes, and
    for convolutions an optional kernel layout (or "default"). `PassError` otherwise."""
    out: dict[Op, tuple[str, ...]] = {}
    for item in filter(None, (part.strip() for part in text.split(";"))):
        name, eq, rest = item.partition("=")
        name = name.strip()
        layouts = tuple(x.strip() for x in rest.split(":")) if eq else ()
        op = lookup_op(name)
        if op is None:
            raise PassError(f"convert-layout: unknown operator `{name}`")
        if name not in DATA_AXES:
            raise PassError(
                f"convert-layout: operator `{name}` has no layout to convert; it converts "
                + ", ".join(sorted(DATA_AXES))
            )
        kernel = CONV_KERNEL_AXES.get(name)
        most = 2 if kernel else 1
        if not layouts or not layouts[0] or len(layouts) > most:
            takes = "a data layout and a kernel layout" if kernel else "one layout"
            raise PassError(f"convert-layout: `{name}` takes {takes}, not {list(layouts)}")
        data = _layout(name, layouts[0], DATA_AXES[name], "data")
        if not kernel:
            spatial = [c for c in semantics.layout_letters(data) if c.lower() in "dhw"]
            if any(c.islower() for c in spatial):
                raise PassError(f'convert-layout: `{name}` cannot split a spatial axis ("{data}")')
            out[op] = (data,)
            continue
        want_kernel = layouts[1] if len(layouts) > 1 else "default"
        if want_kernel != "default":
            _layout(name, want_kernel, kernel, "kernel")
        out[op] = (data, want_kernel)
    return out


def _check_desired(instance: object, attribute: object, value: str) -> None:
    parse_desired(value)


@frozen
class ConvertLayoutOptions:
    """`desired-layouts`: `op=data_layout[:kernel_layout];...`, e.g.
    `nn.conv2d=NHWC:default;nn.max_pool2d=NHWC`."""

    desired_layouts: str = field(default="", validator=_check_desired)


# --------------------------------------------------------------------------- the walk

Desire = Callable[[Call, Callable[[Expr], Type]], tuple[str, ...]]
"""What a pass asks of one operator call, given the call and the original types of the
function's expressions: the layouts its layout rule reads as `CallInfo.desired` (empty:
nothing, the call follows its arguments' layouts if its rule can)."""


@frozen
class LayoutReport:
    """What a conversion left in the original layout: operators that received values in
    a new layout and had no layout rule (`no_rule`), or whose rule declined the call
    (`declined`), with the number of calls; the values were converted back for them."""

    no_rule: Counter[str] = field(factory=Counter)
    declined: Counter[str] = field(factory=Counter)

    def lines(self, layout: str = "the original layout") -> list[str]:
        """One line per operator: `op X has no layout rule: kept ...`."""
        out = [
            f"op {name} has no layout rule: kept {layout}, with transforms around it "
            f"({n} call{'s' if n > 1 else ''})"
            for name, n in sorted(self.no_rule.items())
        ]
        out += [
            f"op {name}: its layout rule declined the layout: kept {layout}, with "
            f"transforms around it ({n} call{'s' if n > 1 else ''})"
            for name, n in sorted(self.declined.items())
        ]
        return out


class _NoLayout(Exception):
    """A conversion is impossible here (the call then runs in the original layout)."""


class _FixedTypes(RelationContext):
    """A relation context over fully known argument types (unify only compares)."""

    def __init__(self, op: Op) -> None:
        self.op = op
        self.final = True

    def unify(self, lhs: Type, rhs: Type) -> None:
        if not structural_equal(lhs, rhs):
            raise RelationError("the types differ")

    def fresh(self) -> IncompleteType:
        raise RelationError("an unknown type")

    def resolve(self, t: Type) -> Type:
        return t


def new_type(old: Type, tag: Tag) -> Type:
    """The type of a value of type `old` converted to `tag` (a lower-rank tensor is first
    expanded on the left); `_NoLayout` if the layout does not fit it."""
    if tag is None:
        return old
    if isinstance(tag, tuple):
        if not isinstance(old, TupleType) or len(old.fields) != len(tag):
            raise _NoLayout
        return TupleType([new_type(f, t) for f, t in zip(old.fields, tag)])
    if not isinstance(old, TensorType) or not 0 < old.ndim <= tag.rank:
        raise _NoLayout
    shape = (1,) * (tag.rank - old.ndim) + old.shape
    if tag.permutation() is None and not all(isinstance(d, int) for d in shape):
        raise _NoLayout  # a split of a size known only at run time might pad
    try:
        converted = convert_shape(shape, _parse(tag.old), _parse(tag.new), "the value")
    except RelationError:
        raise _NoLayout from None
    return TensorType(converted, old.dtype)


def _parse(layout: str) -> Layout:
    return Layout(layout, semantics.parse_layout(layout))


_LAYOUT_TRANSFORM = get_op("layout_transform")
_EXPAND_DIMS = get_op("expand_dims")


class _Converter:
    """One function's conversion (see the module docstring)."""

    def __init__(
        self,
        fn: Function,
        mod: IRModule | None,
        desire: Desire,
        rules: Mapping[Op, LayoutRule] | None = None,
    ):
        self.types = infer_expr(fn, mod)
        self.desire = desire
        self.rules = rules or {}
        self.report = LayoutReport()
        self.results: dict[int, tuple[Expr, Tag]] = {}
        self.converted: dict[tuple[int, Tag], Expr] = {}
        self.created: set[int] = set()
        self.keep: list[Expr] = []  # keeps the ids in `created` valid

    def run(self, fn: Function) -> Function:
        nodes = list(post_order(fn))
        bound: dict[int, list[Let]] = {}
        for node in nodes:
            if isinstance(node, Let):
                bound.setdefault(id(node.value), []).append(node)
        for node in nodes:
            self.results[id(node)] = self.visit(node)
            for let in bound.get(id(node), ()):
                self.bind(let)
        out = self.get(fn, None)
        assert isinstance(out, Function)
        return out

    def bind(self, let: Let) -> None:
        """The result of a `let`'s variable, once its value is converted."""
        tag = self.results[id(let.value)][1]
        var = let.var
        if tag is not None:
            annotation = var.type_annotation
            typed = new_type(annotation, tag) if annotation is not None else None
            var = Var(var.name_hint, typed, span=var.span)
        self.results[id(let.var)] = (var, tag)

    # ------------------------------------------------------------------ node results

    def visit(self, node: Expr) -> tuple[Expr, Tag]:
        results = self.results
        if isinstance(node, Call):
            if isinstance(node.op, Op):
                return self.visit_call(node)
            return with_children(node, [self.get(c, None) for c in children(node)]), None
        if isinstance(node, Tuple):
            fields = [results[id(f)] for f in node.fields]
            tags = tuple(t for _, t in fields)
            new = with_children(node, [x for x, _ in fields])
            return new, (tags if any(t is not None for t in tags) else None)
        if isinstance(node, TupleGetItem):
            x, t = results[id(node.tuple_value)]
            tag = t[node.index] if isinstance(t, tuple) else None
            return (node if x is node.tuple_value else node.replace(tuple_value=x)), tag
        if isinstance(node, Let):
            var = results[id(node.var)][0]
            value = results[id(node.value)][0]
            body, tag = results[id(node.body)]
            return node.replace(var=var, value=value, body=body), tag
        kids = children(node)
        if not kids:
            return node, None
        return with_children(node, [self.get(c, None) for c in kids]), None

    def visit_call(self, call: Call) -> tuple[Expr, Tag]:
        op = call.op
        assert isinstance(op, Op)
        arrived = [self.results[id(a)] for a in call.args]
        in_tags = tuple(t for _, t in arrived)
        desired = self.desire(call, self.types.type_of)
        if not desired and all(t is None for t in in_tags):
            new_args = [x for x, _ in arrived]
            return with_children(call, [op, *new_args]), None
        decision = self.decide(call, in_tags, desired)
        if decision is not None:
            try:
                return self.apply(call, decision), decision.out
            except _NoLayout:
                if any(t is not None for t in in_tags):
                    self.report.declined[op.name] += 1
        return with_children(call, [op, *(self.get(a, None) for a in call.args)]), None

    def decide(
        self, call: Call, in_tags: tuple[Tag, ...], desired: tuple[str, ...]
    ) -> Decision | None:
        """The operator's layout rule on this call (None: no rule, or it declines)."""
        assert isinstance(call.op, Op)
        rule = self.rules.get(call.op)
        if rule is None:
            try:
                rule = layout_rule(call.op)
            except MissingFacetError:  # no layout rule: a barrier
                self.report.no_rule[call.op.name] += 1
                return None
        info = CallInfo(
            call,
            in_tags,
            tuple(self.types.type_of(a) for a in call.args),
            self.types.type_of(call),
            desired,
        )
        try:
            decision = rule(info)
        except ValueError:  # an attribute the rule cannot read, a layout it cannot make
            decision = None
        if decision is None and any(t is not None for t in in_tags):
            self.report.declined[call.op.name] += 1
        return decision

    def apply(self, call: Call, decision: Decision) -> Expr:
        """`call` with its arguments converted as `decision` says, checked against the
        operator's type relation."""
        op = decision.op or call.op
        assert isinstance(op, Op)
        if len(decision.args) != len(call.args):
            raise _NoLayout
        if decision.op is not None:
            attrs = decision.attrs
        else:
            attrs = decision.attrs if decision.attrs is not None else call.attrs
        arg_types = [new_type(self.types.type_of(a), w) for a, w in zip(call.args, decision.args)]
        expected = new_type(self.types.type_of(call), decision.out)
        actual = _relation_type(op, arg_types, attrs)
        if actual is None or not structural_equal(actual, expected):
            raise _NoLayout
        args = [self.get(a, w) for a, w in zip(call.args, decision.args)]
        if op is _LAYOUT_TRANSFORM and attrs is not None and attrs.src_layout == attrs.dst_layout:
            return args[0]
        if op is call.op and attrs == call.attrs:
            return with_children(call, [op, *args])
        return call.replace(op=op, args=tuple(args), attrs=attrs)

    # -------------------------------------------------------------------- conversions

    def get(self, node: Expr, wanted: Tag) -> Expr:
        """The new expression of `node` with tag `wanted` (memoized)."""
        x, tag = self.results[id(node)]
        if tag == wanted:
            return x
        key = (id(node), wanted)
        hit = self.converted.get(key)
        if hit is None:
            hit = self.converted[key] = self.convert(x, tag, wanted, self.types.type_of(node))
        return hit

    def convert(self, x: Expr, tag: Tag, wanted: Tag, old: Type) -> Expr:
        """`x` (the new value, with `tag`) as a value with tag `wanted`."""
        if tag == wanted:
            return x
        if isinstance(old, TupleType):
            n = len(old.fields)
            tags = tag if isinstance(tag, tuple) else (None,) * n
            wants = wanted if isinstance(wanted, tuple) else (None,) * n
            fields = []
            for i, field_type in enumerate(old.fields):
                item = x.fields[i] if isinstance(x, Tuple) else TupleGetItem(x, i)
                fields.append(self.convert(item, tags[i], wants[i], field_type))
            return Tuple(fields)
        if not isinstance(old, TensorType) or isinstance(tag, tuple) or isinstance(wanted, tuple):
            raise _NoLayout
        if tag is not None and wanted is not None and tag.rank == wanted.rank:
            renamed = relabel(tag, wanted.old)
            new_type(old, wanted)
            return self.transform(x, renamed.new if renamed else wanted.old, wanted.new)
        if tag is not None:
            x = self.transform(x, tag.new, tag.old)
        if wanted is None:
            return x
        new_type(old, wanted)
        expanded = old.ndim < wanted.rank
        if expanded:
            x = self.expand(x, wanted.rank - old.ndim)
        out = self.transform(x, wanted.old, wanted.new)
        if expanded and isinstance(out, Constant) and out.data.ndim > old.ndim:
            # a broadcast operand: leading axes of size 1 go (down to its own rank)
            lead = 0
            while out.data.ndim - lead > old.ndim and out.data.shape[lead] == 1:
                lead += 1
            out = Constant(out.data.reshape(out.data.shape[lead:]), span=out.span)
        return out

    def expand(self, x: Expr, count: int) -> Expr:
        """`x` with `count` axes of size 1 in front."""
        if isinstance(x, Constant):
            return Constant(x.data.reshape((1,) * count + x.data.shape), span=x.span)
        return Call(_EXPAND_DIMS, (x,), _EXPAND_DIMS.make_attrs(axis=0, num_newaxis=count))

    def transform(self, x: Expr, src: str, dst: str) -> Expr:
        """`layout_transform(x, src, dst)`: nothing when the layouts are equal, computed
        now for a constant, composed with (or cancelled against) a transform `x` is."""
        if src == dst:
            return x
        if isinstance(x, Constant):
            packed = convert_array(x.data, src, dst)
            if packed.flags.writeable:  # fresh (a view of the constant is read-only)
                packed.setflags(write=False)  # so the constant keeps it without a copy
            return Constant(packed, span=x.span)
        if (
            isinstance(x, Call)
            and x.op is _LAYOUT_TRANSFORM
            and x.attrs is not None
            and x.attrs.dst_layout == src
            and (id(x) in self.created or (is_primal(x.attrs.src_layout) and is_primal(src)))
        ):
            first = str(x.attrs.src_layout)
            return x.args[0] if first == dst else self.make_transform(x.args[0], first, dst)
        return self.make_transform(x, src, dst)

    def make_transform(self, x: Expr, src: str, dst: str) -> Expr:
        call = Call(
            _LAYOUT_TRANSFORM, (x,), _LAYOUT_TRANSFORM.make_attrs(src_layout=src, dst_layout=dst)
        )
        self.created.add(id(call))
        self.keep.append(call)
        return call


def _relation_type(op: Op, arg_types: list[Type], attrs: Attrs | None) -> Type | None:
    """The result type of `op` on known argument types (None if it is ill-typed)."""
    try:
        return relation_for(op)(arg_types, attrs, _FixedTypes(op))
    except RelationError:
        return None


# ---------------------------------------------------------------------------- the pass


def convert_function(
    fn: Function,
    mod: IRModule | None,
    desire: Desire,
    rules: Mapping[Op, LayoutRule] | None = None,
) -> tuple[Function, LayoutReport]:
    """`fn` converted by one walk (module docstring): each operator call gets
    `desire(call, type_of)` as its `CallInfo.desired` and is decided by its rule in
    `rules`, else in the layout-rule table; with what stayed in the original layout."""
    converter = _Converter(fn, mod, desire, rules)
    return converter.run(fn), converter.report


def convert_layout_function(
    fn: Function, mod: IRModule | None, desired: Mapping[Op, tuple[str, ...]]
) -> Function:
    """`fn` with the operators of `desired` converted to their desired layouts."""
    if not desired or not any(isinstance(n, Call) and n.op in desired for n in post_order(fn)):
        return fn

    def desire(call: Call, type_of: Callable[[Expr], Type]) -> tuple[str, ...]:
        return desired.get(call.op, ()) if isinstance(call.op, Op) else ()

    return convert_function(fn, mod, desire)[0]


@function_pass(
    name="convert-layout", opt_level=3, options=ConvertLayoutOptions, tvm_name="ConvertLayout"
)
def convert_layout_pass(
    fn: Function, mod: IRModule, ctx: PassContext, options: ConvertLayoutOptions
) -> Function:
    """Convert convolutions and pools to the layouts of `desired-layouts` (TVM's
    ConvertLayout), with `layout_transform` only where the layout changes."""
    return convert_layout_function(fn, mod, parse_desired(options.desired_layouts))


__all__ = [
    "ConvertLayoutOptions",
    "Desire",
    "DesiredLayouts",
    "LayoutReport",
    "convert_function",
    "convert_layout_function",
    "convert_layout_pass",
    "desired_text",
    "parse_desired",
]
