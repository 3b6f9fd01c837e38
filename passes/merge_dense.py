"""`merge-dense`: sibling dense layers on one input become one dense on concatenated weights.

Before (an attention layer's query, key and value projections, weights bound)::

    %q = nn.bias_add(nn.dense(%x, <Wq: 512x512>, units=512), <bq>);
    %k = nn.bias_add(nn.dense(%x, <Wk: 512x512>, units=512), <bk>);
    %v = nn.bias_add(nn.dense(%x, <Wv: 512x512>, units=512), <bv>);

After::

    %0 = nn.bias_add(nn.dense(%x, <[Wq; Wk; Wv]: 1536x512>, units=1536), <[bq, bk, bv]>, axis=1);
    %q = strided_slice(%0, begin=[0], end=[512], strides=[1], axes=[1]);
    %k = strided_slice(%0, begin=[512], end=[1024], strides=[1], axes=[1]);
    %v = strided_slice(%0, begin=[1024], end=[1536], strides=[1], axes=[1]);

One kernel reads the input once and has three times the columns to share among the
threads, instead of three kernels (TVM's `CombineParallelDense` with `to_batch=False`).
The weights are concatenated here, so only `nn.dense` calls whose weight is a constant
merge (`relay.build(..., params=...)` binds them): at least `min-branches` of them (2 by
default) with the same data expression, weight dtype, `out_dtype` and reduction length,
all evaluated unconditionally in the same function body (not in an `if` branch, a `match`
arm or a nested function). When every one of them is used only by a `nn.bias_add` on its
last axis with a constant bias, the biases are concatenated as well and the slices are
taken after the bias add (so the dense keeps its fused bias). Each output element is the
same sum of products as before; a compiled kernel may still round differently when the
merged layer takes another schedule (a narrow layer's GEMV form becoming a GEMM).

Runs at opt level 3, after constant folding and before `alter-op-layout` (which then packs
the merged weight once).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
from attrs import field, frozen

from ..lang.expr import Call, Constant, Expr, Function, Let
from ..lang.module import IRModule
from ..lang.op import get_op
from ..lang.traversal import ExprMutator, children, post_order, post_order_by, scope_operands
from ..lang.types import TensorType
from ..typecheck import infer_expr
from .context import PassContext
from .pass_base import PassError, function_pass

_DENSE = get_op("nn.dense")
_BIAS_ADD = get_op("nn.bias_add")
_STRIDED_SLICE = get_op("strided_slice")


def _check_branches(instance: object, attribute: object, value: int) -> None:
    if value < 2:
        raise PassError(f"merge-dense: min-branches must be at least 2, not {value}")


@frozen
class MergeDenseOptions:
    """`min_branches`: how many sibling dense layers merge at least (2 or more)."""

    min_branches: int = field(default=2, validator=_check_branches)


def _unconditional(node: Expr) -> Sequence[Expr]:
    """The sub-expressions evaluated whenever `node` is: a `let`'s value and body, the
    operands of the others (no branch, arm or function body)."""
    if isinstance(node, Let):
        return (node.value, node.body)
    return scope_operands(node)


def _group_key(call: Expr) -> Hashable | None:
    """What sibling dense calls that can merge share, or None if `call` cannot merge."""
    if not isinstance(call, Call) or call.op is not _DENSE or call.attrs is None:
        return None
    weight = call.args[1]
    if not isinstance(weight, Constant) or weight.data.ndim != 2:
        return None
    data = weight.data
    return (id(call.args[0]), data.dtype.str, str(call.attrs.out_dtype), data.shape[1])


@frozen(eq=False)
class _Branch:
    """One dense of a group: the node that its slice replaces (the dense, or its bias add
    when the biases merge), its columns, and its bias (or None)."""

    dense: Call
    replaced: Expr
    units: int
    bias: np.ndarray | None


@frozen(eq=False)
class _Group:
    """Sibling dense calls on `data` that become one: the branches in program order, and
    the rank of the dense's output (its last axis is the one sliced)."""

    data: Expr
    branches: tuple[_Branch, ...]
    rank: int

    @property
    def with_bias(self) -> bool:
        """Whether the biases merge too."""
        return self.branches[0].bias is not None


def _bias_of(dense: Call, users: list[Expr], rank: int) -> tuple[Expr, np.ndarray] | None:
    """(the bias add, its constant bias) when `dense`'s only user adds a constant bias on
    its last axis; else None."""
    if len(users) != 1:
        return None
    user = users[0]
    if not isinstance(user, Call) or user.op is not _BIAS_ADD or user.args[0] is not dense:
        return None
    bias = user.args[1]
    if not isinstance(bias, Constant) or bias.data.ndim != 1 or user.attrs is None:
        return None
    axis = int(user.attrs.axis)
    if (axis + rank if axis < 0 else axis) != rank - 1:
        return None
    return user, bias.data


def _groups(fn: Function, mod: IRModule | None, min_branches: int) -> list[_Group]:
    """The groups of `fn`'s body that merge, in program order."""
    candidates: dict[Hashable, list[Call]] = {}
    for node in post_order_by(fn.body, _unconditional):
        key = _group_key(node)
        if key is not None:
            assert isinstance(node, Call)
            candidates.setdefault(key, []).append(node)
    found = [calls for calls in candidates.values() if len(calls) >= min_branches]
    if not found:
        return []
    users: dict[int, list[Expr]] = {}
    for node in post_order(fn):
        for child in children(node):
            users.setdefault(id(child), []).append(node)
    types = infer_expr(fn, mod).table
    groups = []
    for calls in found:
        out_type = types.get(calls[0])
        if not isinstance(out_type, TensorType):
            continue
        rank = out_type.ndim
        biases = [_bias_of(c, users.get(id(c), []), rank) for c in calls]
        merge_bias = (
            all(b is not None for b in biases)
            and len({b[1].dtype.str for b in biases if b is not None}) == 1
        )
        branches = []
        for call, bias in zip(calls, biases):
            assert isinstance(call.args[1], Constant)
            units = int(call.args[1].data.shape[0])
            if merge_bias and bias is not None and bias[1].shape[0] == units:
                branches.append(_Branch(call, bias[0], units, bias[1]))
            else:
                merge_bias = False
                branches.append(_Branch(call, call, units, None))
        if not merge_bias:
            branches = [_Branch(b.dense, b.dense, b.units, None) for b in branches]
        groups.append(_Group(calls[0].args[0], tuple(branches), rank))
    return groups


def _merged(group: _Group, data: Expr) -> Expr:
    """The one dense (and bias add) computing every branch of `group` on `data`."""
    first = group.branches[0].dense
    assert first.attrs is not None
    weights = [b.dense.args[1] for b in group.branches]
    weight = np.concatenate([w.data for w in weights if isinstance(w, Constant)], axis=0)
    units = int(weight.shape[0])
    attrs = _DENSE.make_attrs(units=units, out_dtype=first.attrs.out_dtype)
    out: Expr = Call(_DENSE, (data, Constant(weight)), attrs, span=first.span)
    if group.with_bias:
        bias = np.concatenate([b.bias for b in group.branches if b.bias is not None])
        axis_attrs = _BIAS_ADD.make_attrs(axis=group.rank - 1)
        out = Call(_BIAS_ADD, (out, Constant(bias)), axis_attrs, span=first.span)
    return out


def _slice(merged: Expr, begin: int, end: int, axis: int) -> Call:
    attrs = _STRIDED_SLICE.make_attrs(begin=[begin], end=[end], strides=[1], axes=[axis])
    return Call(_STRIDED_SLICE, (merged,), attrs)


class _Merger(ExprMutator):
    """Replaces each branch's node by its slice of the group's merged dense (built once,
    on the rewritten data, when the first branch is met)."""

    def __init__(self, groups: list[_Group]) -> None:
        super().__init__()
        self._branch: dict[int, tuple[_Group, int]] = {}
        for group in groups:
            offset = 0
            for branch in group.branches:
                self._branch[id(branch.replaced)] = (group, offset)
                offset += branch.units
        self._merged: dict[int, Expr] = {}

    def rewrite_node(self, node: Expr) -> Expr:
        found = self._branch.get(id(node))
        if found is None:
            return self.rebuilt(node)
        group, offset = found
        merged = self._merged.get(id(group))
        if merged is None:
            merged = self._merged[id(group)] = _merged(group, self.rewritten(group.data))
        units = next(b.units for b in group.branches if b.replaced is node)
        return _slice(merged, offset, offset + units, group.rank - 1)


def merge_dense_function(
    fn: Function, mod: IRModule | None = None, min_branches: int = 2
) -> Function:
    """`fn` with its sibling constant-weight dense layers merged (module docstring)."""
    groups = _groups(fn, mod, min_branches)
    if not groups:
        return fn
    body = _Merger(groups).visit(fn.body)
    return fn.replace(body=body)


@function_pass(
    name="merge-dense",
    opt_level=3,
    options=MergeDenseOptions,
    tvm_name="CombineParallelDense",
)
def merge_dense_pass(
    fn: Function, mod: IRModule, ctx: PassContext, options: MergeDenseOptions
) -> Function:
    """Merge sibling dense layers with constant weights on one input into one dense on the
    concatenated weights, sliced after it (module docstring)."""
    return merge_dense_function(fn, mod, options.min_branches)


__all__ = [
    "MergeDenseOptions",
    "merge_dense_function",
    "merge_dense_pass",
]
