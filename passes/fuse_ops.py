"""Operator fusion: partition each function's dataflow graph into `Primitive` functions.

Follows TVM's `FuseOps` (see `dominators.py` for the graph): every operator call, tuple
and projection belongs to a group; a group becomes `fn(params) { ops }` with attribute
`Primitive=1`, called where the group's output was. Groups are grown with a union-find
over the post-dominator tree in three phases:

* phase 0: an out-elementwise-fusable op (conv2d, dense) takes the elementwise/broadcast
  chain after it when every path to its post-dominator is at most broadcast;
  elementwise/broadcast ops fuse into an injective, reduction or anchored sink;
* phase 1: injective ops and tuples fuse forward when every path is at most injective;
* phase 2: injective ops fuse into an intermediate tuple already fused into an injective
  op (the concatenate of inception blocks).

Beyond TVM: in phase 0 the `layout_transform` packing the data of an
`nn.contrib_conv2d_NCHWc` (its one use) joins the convolution's group
(`PACKED_DATA_CONVS`), where the schedule reads it into the padded input. Likewise in
phase 1 a group of data-movement ops only (`LAYOUT_OPS`) whose one use is an operand of a
`batch_matmul` (`PRODUCT_OPERAND_SINKS`) joins the product's group: the heads split off a
merged QKV projection are read in place instead of copied by a kernel of their own
(transformer layer, 1 thread: the three copies took ~125 µs, the two products read the
strided heads ~60 µs slower; whole layer 23.43 -> 23.34 ms CPU time).

Beyond TVM, row reductions: a reduction over the trailing axes of its data with `keepdims`
(`ROW_REDUCTIONS`; the data's leading axes are its rows) takes the element-wise/broadcast
ops after it that bring it back to its data's shape, and any reduction of the same rows on
the way: a layer norm as `simplify-inference` writes it (mean, subtract, square, mean,
sqrt, divide, scale, shift), a softmax spelled out (max, subtract, exp, sum, divide) or an
l2 normalize become one kernel whose reductions run inside its row loop (the reduce
schedule), instead of one kernel per reduction and a pass over memory between each.
Such a group ends at the first op that is not element-wise/broadcast on the data's shape
or a reshape keeping the rows (`_keeps_rows`); it never joins an anchored group.

Other reductions never fuse forward; no other group holds two ops above broadcast; a group
holds at most `max_depth` nodes; with `opt_level=0` every op is its own group. Scalar constants
are inlined in the groups, other constants become parameters.

Types: fusion reads the input's types from the pass context and, since every node it
makes has the type of a node it replaces, hands the result's types to the context
(`PassContext.remember_types`): the build plans and lowers the fused module without
inferring it again.

Before::

    fn (%x, %w, %b) { nn.relu(nn.bias_add(nn.conv2d(%x, %w), %b)) }

After::

    fn (%x, %w, %b) {
      (fn (%p0, %p1, %p2, Primitive=1) { nn.relu(nn.bias_add(nn.conv2d(%p0, %p1), %p2)) })(
        %x, %w, %b)
    }
"""

from __future__ import annotations

from collections.abc import Callable

from attrs import define, field, frozen

from ..lang.attrs import FuncAttrs
from ..lang.expr import Call, Expr, Function, Tuple, TupleGetItem, Var
from ..lang.module import IRModule
from ..lang.op import Op, OpPattern
from ..lang.opdefs.semantics.axes import reduce_axes
from ..lang.traversal import children, with_children
from ..lang.types import TensorType, Type
from ..typecheck.result import ModuleTypes
from ..typecheck.subst import func_type
from .context import PassContext
from .dominators import (
    IndexedGraph,
    PostDomTree,
    graph_post_order,
    is_opaque_leaf,
    is_simple_scalar,
    post_dominator_tree,
)
from .pass_base import module_pass

MAX_FUSE_DEPTH = 256
"""TVM's default `kMaxFusedOps` (`relay.FuseOps.max_depth`)."""

PACKED_DATA_CONVS = frozenset({"nn.contrib_conv2d_NCHWc"})
"""Convolutions that take the `layout_transform` packing their data into their kernel."""

PRODUCT_OPERAND_SINKS = frozenset({"nn.batch_matmul"})
"""Products that take the layout-only producers of their operands into their kernel."""

LAYOUT_OPS = frozenset({"reshape", "transpose", "strided_slice", "squeeze", "expand_dims"})
"""Operators that only move data (no arithmetic to recompute when read in a product)."""

ROW_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "prod"})
"""Reductions that take the ops broadcasting them back over their rows (module docstring)."""

ROW_RESHAPES = frozenset({"reshape", "expand_dims", "squeeze"})
"""Injective ops that may end a row-reduction group when they keep its rows."""

_Rows = tuple[tuple[int, ...], int]
"""The rows of a row reduction: (its data's shape, the number of leading row axes)."""

_Cond = Callable[[OpPattern, bool], bool]


@define(eq=False)
class _Group:
    parent: _Group | None
    pattern: OpPattern
    root: int
    """Index of the node whose value is the group's output (the sink)."""
    anchor: int | None = None
    num_nodes: int = 1
    rows: _Rows | None = None
    """Set on a group grown from a row reduction: the rows every reduction in it shares."""

    def find_root(self) -> _Group:
        root = self
        while root.parent is not None:
            root = root.parent
        node = self
        while node.parent is not None:  # path compression
            nxt = node.parent
            node.parent = root
            node = nxt
        return root


@define(eq=False)
class Partitioner:
    """TVM's `GraphPartitioner`: assigns every node of `graph` to a group."""

    graph: IndexedGraph
    opt_level: int
    max_depth: int
    types: ModuleTypes | None = None
    """The types of the graph's nodes; without them no row-reduction group is made."""
    groups: list[_Group] = field(factory=list)

    def partition(self) -> list[_Group]:
        """One group per node (shared objects: use `find_root` for the final group)."""
        for node in self.graph.nodes:
            g = _Group(None, node.pattern, node.index)
            if node.pattern == OpPattern.OUT_ELEMWISE_FUSABLE:
                g.anchor = node.index
            self.groups.append(g)
        if self.opt_level == 0:
            return self.groups
        tree = post_dominator_tree(self.graph)
        for phase in range(3):
            self._run_fuse(tree, phase)
        return self.groups

    # ------------------------------------------------------------------ graph walks

    def _reach(self, src: int, sink: int) -> list[int]:
        """Every node on a path from `src` (excluded) to `sink` (included)."""
        seen: set[int] = set()
        out: list[int] = []
        stack = [o for o, _ in reversed(self.graph.nodes[src].outputs)]
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            out.append(i)
            if i != sink:
                stack.extend(o for o, _ in reversed(self.graph.nodes[i].outputs))
        return out

    def _check_path(self, src: int, sink: int, cond: _Cond) -> bool:
        """Whether `cond` holds on every node between `src` and `sink`; nodes already in
        the sink's row-reduction group count as the sink (the data of a layer norm feeds
        both its reductions and its tail, which are one group)."""
        sink_root = self.groups[sink].find_root()
        rows_sink = sink_root.rows is not None
        for i in self._reach(src, sink):
            root = self.groups[i].find_root()
            if not cond(root.pattern, i == sink or (rows_sink and root is sink_root)):
                return False
        return True

    def _try_fuse(self, src: int, sink: int, cond: _Cond) -> None:
        """Merge every node on the paths from `src` to `sink` into the sink's group if the
        result stays within `max_depth` nodes and `cond` holds on every path."""
        if self._count_with_child(src, sink) <= self.max_depth and self._check_path(
            src, sink, cond
        ):
            self._commit_fuse(src, sink)

    def _commit_fuse(self, src: int, sink: int) -> None:
        target = self.groups[sink]
        for i in [src, *self._reach(src, sink)]:
            if i != sink:
                self._merge(self.groups[i], target)

    def _merge(self, child: _Group, parent: _Group) -> None:
        child = child.find_root()
        parent = parent.find_root()
        if child is parent:
            return
        parent.num_nodes += child.num_nodes
        child.parent = parent
        if child.anchor is not None:
            assert parent.anchor is None, "fusion merged two groups with anchors"
            parent.anchor = child.anchor
            parent.pattern = max(child.pattern, parent.pattern)

    def _packs_conv_data(self, nid: int, dom: int) -> bool:
        """Whether node `nid` is a `layout_transform` whose one consumer is the data operand
        of `dom`, a channel-blocked convolution: the packing then joins the convolution's
        kernel, where it becomes the read of the padded input (one pass over the data
        instead of a packing kernel and a padding copy). Weights are never packed this way
        (a weight read through a transposed index in every call)."""
        node, sink = self.graph.nodes[nid], self.graph.nodes[dom]
        if [o for o, _ in node.outputs] != [dom] or node.extern_ref:
            return False
        call, conv = node.expr, sink.expr
        return (
            isinstance(call, Call)
            and isinstance(call.op, Op)
            and call.op.name == "layout_transform"
            and isinstance(conv, Call)
            and isinstance(conv.op, Op)
            and conv.op.name in PACKED_DATA_CONVS
            and conv.args[0] is call
        )

    def _feeds_product(self, nid: int, dom: int) -> bool:
        """Whether node `nid`, the output of a group of `LAYOUT_OPS` only, is an operand of
        `dom`, a `PRODUCT_OPERAND_SINKS` call, and used nowhere else: the group then joins
        the product's kernel, which reads the operand through the moved indices (the heads
        split off a merged QKV projection read in place, no copy kernel)."""
        node, sink = self.graph.nodes[nid], self.graph.nodes[dom]
        call = sink.expr
        if [o for o, _ in node.outputs] != [dom] or node.extern_ref:
            return False
        if not (isinstance(call, Call) and isinstance(call.op, Op)):
            return False
        if call.op.name not in PRODUCT_OPERAND_SINKS or not any(a is node.expr for a in call.args):
            return False
        root = self.groups[nid].find_root()
        stack, seen = [nid], {nid}
        while stack:
            expr = self.graph.nodes[stack.pop()].expr
            if not (isinstance(expr, Call) and isinstance(expr.op, Op)):
                return False
            if expr.op.name not in LAYOUT_OPS:
                return False
            for arg in expr.args:
                i = self.graph.index_of.get(id(arg))
                if i is not None and i not in seen and self.groups[i].find_root() is root:
                    seen.add(i)
                    stack.append(i)
        return True

    def _count_with_child(self, child: int, sink: int) -> int:
        total = self.groups[sink].find_root().num_nodes + self.groups[child].num_nodes
        for i in self._reach(child, sink):
            if i != sink:
                total += self.groups[i].num_nodes
        return total

    # ------------------------------------------------------------------ row reductions

    def _shape(self, nid: int) -> tuple[int, ...] | None:
        """The static shape of node `nid`'s tensor value (None if not a static tensor)."""
        ty = None if self.types is None else self.types.table.get(self.graph.nodes[nid].expr)
        return _static_shape(ty)

    def _reduction_rows(self, nid: int) -> _Rows | None:
        """The rows of node `nid` if it is a row reduction: a `ROW_REDUCTIONS` call with
        `keepdims` over the trailing axes (at least one leading axis left) of static data."""
        call = self.graph.nodes[nid].expr
        if not (
            isinstance(call, Call)
            and isinstance(call.op, Op)
            and call.op.name in ROW_REDUCTIONS
            and call.attrs is not None
            and call.attrs.keepdims
            and self.types is not None
        ):
            return None
        shape = _static_shape(self.types.table.get(call.args[0]))
        if shape is None:
            return None
        axes = reduce_axes(len(shape), call.attrs.axis, bool(call.attrs.exclude))
        first = len(shape) - len(axes)
        if first < 1 or axes != tuple(range(first, len(shape))):
            return None
        return shape, first

    def _rows_of(self, group: _Group) -> _Rows | None:
        """The rows of a root group made of row reductions (None for other groups)."""
        if group.rows is not None:
            return group.rows
        if group.pattern != OpPattern.COMM_REDUCE:
            return None
        return self._reduction_rows(group.root)

    def _keeps_rows(self, nid: int, rows: _Rows) -> bool:
        """Whether node `nid` can end a group of reductions over `rows`: an element-wise or
        broadcast op with the data's shape, or a reshape-like op whose output is the data's
        shape with unit axes added or removed."""
        shape = self._shape(nid)
        node = self.graph.nodes[nid]
        if shape is None or not isinstance(node.expr, Call):
            return False
        if node.pattern <= OpPattern.BROADCAST:
            return shape == rows[0]
        op = node.expr.op
        if not (isinstance(op, Op) and op.name in ROW_RESHAPES):
            return False
        return _without_units(shape) == _without_units(rows[0]) and shape[-1] == rows[0][-1]

    def _fuse_row_tail(self, nid: int, dom: int) -> None:
        """Fuse the row-reduction group of `nid` into its post-dominator `dom` when every
        path between them is element-wise/broadcast or a reduction of the same rows and
        `dom` brings the values back to the rows (module docstring)."""
        rows = self._rows_of(self.groups[nid].find_root())
        if rows is None or self._count_with_child(nid, dom) > self.max_depth:
            return
        sink_root = self.groups[dom].find_root()
        if sink_root.pattern > OpPattern.INJECTIVE and self._rows_of(sink_root) != rows:
            return
        for i in self._reach(nid, dom):
            root = self.groups[i].find_root()
            if i == dom:
                if not self._keeps_rows(i, rows):
                    return
            elif root.pattern > OpPattern.BROADCAST and self._rows_of(root) != rows:
                return
        self._commit_fuse(nid, dom)
        merged = self.groups[dom].find_root()
        merged.pattern = OpPattern.COMM_REDUCE
        merged.rows = rows

    # ------------------------------------------------------------------ phases

    def _run_fuse(self, tree: PostDomTree, phase: int) -> None:
        groups = self.groups
        for nid in range(len(groups)):
            group = groups[nid]
            dom = tree.parent[nid]
            if group.pattern == OpPattern.OPAQUE or dom is None:
                continue
            dom_group = groups[dom]
            if phase == 2:
                # injective ops join an intermediate tuple already fused into an injective op
                dom_root = dom_group.find_root()
                if (
                    group.pattern <= OpPattern.INJECTIVE
                    and dom_group.pattern == OpPattern.TUPLE
                    and dom_root.pattern <= OpPattern.INJECTIVE
                ):
                    self._try_fuse(nid, dom, _injective)
                continue
            if group.find_root() is dom_group.find_root() or dom_group.pattern == OpPattern.TUPLE:
                continue
            dom_pattern = tree.pattern[nid]
            if group.pattern == OpPattern.OUT_ELEMWISE_FUSABLE:
                if phase == 0 and dom_pattern == OpPattern.ELEMWISE:
                    self._try_fuse(nid, dom, _broadcast)
            elif group.pattern <= OpPattern.BROADCAST:
                if dom_pattern <= OpPattern.INJECTIVE or dom_pattern == OpPattern.COMM_REDUCE:
                    self._try_fuse(nid, dom, _into_sink)
            elif (
                phase == 1
                and group.pattern == OpPattern.INJECTIVE
                and self._feeds_product(nid, dom)
            ):
                self._try_fuse(nid, dom, _into_sink)
            elif group.pattern in (OpPattern.INJECTIVE, OpPattern.TUPLE) and phase == 1:
                self._try_fuse(nid, dom, _injective)
            elif phase == 0 and self._packs_conv_data(nid, dom):
                self._try_fuse(nid, dom, _into_sink)
            elif group.pattern == OpPattern.COMM_REDUCE and phase == 0:
                self._fuse_row_tail(nid, dom)
            # Other COMM_REDUCE groups never fuse forward.


def _static_shape(ty: Type | None) -> tuple[int, ...] | None:
    """The shape of a tensor type whose dimensions are all numbers (else None)."""
    if not isinstance(ty, TensorType):
        return None
    dims = tuple(d for d in ty.shape if isinstance(d, int))
    return dims if len(dims) == len(ty.shape) else None


def _without_units(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for d in shape if d != 1)


def _injective(kind: OpPattern, is_sink: bool) -> bool:
    return kind <= OpPattern.INJECTIVE


def _broadcast(kind: OpPattern, is_sink: bool) -> bool:
    return kind <= OpPattern.BROADCAST


def _into_sink(kind: OpPattern, is_sink: bool) -> bool:
    if not is_sink:
        return kind <= OpPattern.INJECTIVE
    return kind <= OpPattern.COMM_REDUCE or kind == OpPattern.OUT_ELEMWISE_FUSABLE


# ---------------------------------------------------------------------- rewriting


@define(eq=False)
class _GroupInfo:
    params: list[Var] = field(factory=list)
    args: list[Expr] = field(factory=list)
    by_arg: dict[int, Var] = field(factory=dict)

    def param_for(self, arg: Expr, ty: Type | None, typed: ModuleTypes) -> Var:
        v = self.by_arg.get(id(arg))
        if v is None:
            v = Var(f"p{len(self.params)}", ty)
            if ty is not None:
                typed.table[v] = ty
            self.by_arg[id(arg)] = v
            self.params.append(v)
            self.args.append(arg)
        return v


def _carry_type(typed: ModuleTypes, types: ModuleTypes, old: Expr, new: Expr) -> None:
    """Record in `typed` that `new`, which replaces `old`, has `old`'s type (and type
    arguments); a new `Primitive` call also types its function."""
    ty = types.table.get(old)
    if ty is None or new is old:
        return
    typed.table[new] = ty
    wrapped = (
        isinstance(new, Call)
        and isinstance(new.op, Function)
        and not (isinstance(old, Call) and isinstance(old.op, Function))
    )
    inner = new
    if wrapped:  # a new Primitive function around the rewritten `old`
        fn = new.op  # type: ignore[attr-defined]
        param_types = [typed.table.get(p) for p in fn.params]
        if all(t is not None for t in param_types):
            typed.table[fn] = func_type(param_types, ty)  # type: ignore[arg-type]
        inner = fn.body
        typed.table[inner] = ty
    args = types.type_args.get(old) if isinstance(old, Call) else None
    if args is not None and isinstance(inner, Call):
        typed.type_args[inner] = args


def _fuse_body(
    body: Expr,
    params: tuple[Var, ...],
    types: ModuleTypes,
    opt_level: int,
    max_depth: int,
    typed: ModuleTypes,
) -> Expr:
    """`body` fused; the type of every node made is recorded in `typed`."""
    graph = IndexedGraph.build(body, params, types)
    groups = Partitioner(graph, opt_level, max_depth, types).partition()
    roots = [g.find_root() for g in groups]
    infos: dict[int, _GroupInfo] = {}
    memo: dict[int, Expr] = {}

    def group_of(e: Expr) -> _Group | None:
        i = graph.index_of.get(id(e))
        return None if i is None else roots[i]

    def new_args(args: tuple[Expr, ...], group: _Group) -> list[Expr]:
        out: list[Expr] = []
        info = infos.setdefault(id(group), _GroupInfo())
        for arg in args:
            new = memo[id(arg)]
            if group_of(arg) is group or is_simple_scalar(arg):
                out.append(new)
            else:
                out.append(info.param_for(new, types.table.get(arg), typed))
        return out

    def wrap(group: _Group, orig: Expr, inner: Expr) -> Expr:
        info = infos.setdefault(id(group), _GroupInfo())
        fn = Function(
            info.params,
            inner,
            types.table.get(orig),
            attrs=FuncAttrs({"Primitive": 1}),
            span=orig.span,
        )
        return Call(fn, info.args, span=orig.span)

    for e in graph_post_order(body):
        if is_opaque_leaf(e):
            memo[id(e)] = e
            continue
        group = group_of(e)
        if isinstance(e, Call) and isinstance(e.op, Op) and group is not None:
            call = e.replace(args=tuple(new_args(e.args, group)))
            is_root = graph.nodes[group.root].expr is e
            memo[id(e)] = wrap(group, e, call) if is_root else call
        elif isinstance(e, Tuple) and group is not None and graph.nodes[group.root].expr is not e:
            memo[id(e)] = e.replace(fields=tuple(new_args(e.fields, group)))
        elif isinstance(e, TupleGetItem) and group is not None:
            is_root = graph.nodes[group.root].expr is e
            if is_root and group_of(e.tuple_value) is not group:
                memo[id(e)] = e.replace(tuple_value=memo[id(e.tuple_value)])
            else:
                item = e.replace(tuple_value=new_args((e.tuple_value,), group)[0])
                memo[id(e)] = wrap(group, e, item) if is_root else item
        else:
            kids = children(e)
            memo[id(e)] = with_children(e, [memo[id(k)] for k in kids]) if kids else e
        _carry_type(typed, types, e, memo[id(e)])
    return memo[id(body)]


def fuse_function(
    fn: Function,
    types: ModuleTypes,
    opt_level: int = 3,
    max_depth: int = MAX_FUSE_DEPTH,
    typed: ModuleTypes | None = None,
) -> Function:
    """`fn` with its operators grouped into `Primitive` functions (types from `types`);
    the type of every node made is recorded in `typed` when given."""
    if fn.is_primitive or "Compiler" in fn.attrs:
        return fn
    made = typed if typed is not None else ModuleTypes()
    body = _fuse_body(fn.body, fn.params, types, opt_level, max_depth, made)
    if body is fn.body:
        return fn
    new = fn.replace(body=body)
    _carry_type(made, types, fn, new)
    return new  # type: ignore[no-any-return]


def fuse_module(
    mod: IRModule, types: ModuleTypes, opt_level: int = 3, max_depth: int = MAX_FUSE_DEPTH
) -> tuple[IRModule, ModuleTypes]:
    """`mod` (whose types are `types`) fused, and the types of the result: `types` with
    the nodes fusion made added (no inference)."""
    if max_depth < 1:
        raise ValueError("fuse-ops: max-depth must be at least 1")
    made = ModuleTypes()
    out = mod
    for gv, fn in mod.functions.items():
        new = fuse_function(fn, types, opt_level, max_depth, made)
        if new is not fn:
            out = out.with_function(gv, new)
    if out is mod:
        return mod, types
    return out, ModuleTypes(
        {**types.table, **made.table},
        dict(types.global_types),
        {**types.type_args, **made.type_args},
        list(types.warnings),
        list(types.errors),
    )


def _fuse_in_context(ctx: PassContext, mod: IRModule, opt_level: int, max_depth: int) -> IRModule:
    """`fuse_module` with the input's types from `ctx`, which learns the result's."""
    out, types = fuse_module(mod, ctx.module_types(mod), opt_level, max_depth)
    ctx.remember_types(out, types)
    return out


@frozen
class FuseOptions:
    """Options of the `fuse-ops` pass."""

    max_depth: int = MAX_FUSE_DEPTH
    """The most operators one fused function may hold."""
    fuse_opt_level: int = -1
    """TVM's fusion level: 0 puts every operator alone, 1 or more fuses; -1 (the default)
    takes the `PassContext`'s opt level."""


@module_pass(name="fuse-ops", opt_level=0, required=("infer-type",), options=FuseOptions)
def fuse_ops_pass(mod: IRModule, ctx: PassContext, options: FuseOptions) -> IRModule:
    """Fuse operators into `Primitive` functions (TVM's `FuseOps`). The fusion level is
    `fuse-opt-level`, or the context's opt level when that is -1 (level 0: every operator
    alone). The context gives the input's types and learns the result's."""
    level = options.fuse_opt_level if options.fuse_opt_level >= 0 else ctx.opt_level
    return _fuse_in_context(ctx, mod, level, options.max_depth)
