"""The layout facet of operators: how each operator works on tensors in a new layout.

`convert-layout` (passes/convert_layout.py) carries, for every value of the program, a
`LayoutTag` saying how its new value relates to the original one: `LayoutTag("NCHW",
"NHWC")` means "the new value is `layout_transform(original, NCHW, NHWC)`"; `None` means
"the original layout". The `old` side is a string of distinct primal letters, one per
axis, that only *names* the axes (a consumer may rename them: `relabel`); the `new` side
is any layout with the same primal letters, possibly split (`NCHW16c`).

A layout rule (TVM's InferCorrectLayout) looks at a call whose arguments arrive with some
tags and returns a `Decision`: the tag each argument must have (the pass inserts
`layout_transform`s where they differ), the new attributes, and the tag of the result.
Returning `None` makes the call a barrier: its arguments go back to their original layout
and it runs unchanged. An operator without an entry in `LAYOUT_RULES` ("operator X has no
layout rule") is a barrier too, so a missing rule never gives a wrong result.

Rules only accept tags they understand. Elementwise and broadcasting operators follow
any layout; so do pools and global pools (unless a spatial axis is split). With a split
(packed) axis such as the `c` of `NCHW8c`, the rules that can say what the operator means
on it accept it: `nn.bias_add` becomes a broadcasting `add` of the bias packed the same
way, `concatenate` and `split` work along a split axis when every part's size divides by
its block, reductions and pads work on the axes that are not split. The other axis-based
rules (norms, slices, transpose, ...) need a pure permutation. Whether a split divides the
tensor is checked by the pass through the types (a `layout_transform` that would pad is
not created).

`packed_convolution` is not in the table: it is `alter-op-layout`'s rule for `nn.conv2d`
(TVM's x86 `FTVMAlterOpLayout`), which makes the call a convolution on packed layouts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Union

from attrs import frozen

from ..lang.attrs import Attrs
from ..lang.expr import Call
from ..lang.op import Op, get_op
from ..lang.opdefs import semantics
from ..lang.optable import OpTable
from ..lang.types import TensorType, TupleType, Type


@frozen
class LayoutTag:
    """The new value is the original (axes named by the primal letters `old`) in layout
    `new` (same primal letters, possibly with split sub-axes)."""

    old: str
    new: str

    def __attrs_post_init__(self) -> None:
        letters = semantics.layout_letters(self.old)
        if any(not c.isupper() for c in letters):
            raise ValueError(f"a tag's original layout is primal only, not {self.old!r}")
        primals = {c for c in semantics.layout_letters(self.new) if c.isupper()}
        if primals != set(letters):
            raise ValueError(f"layouts {self.old!r} and {self.new!r} have different axes")

    @property
    def rank(self) -> int:
        """The rank of the original value."""
        return len(self.old)

    def permutation(self) -> list[int] | None:
        """Where each original axis is in the new layout, or None if `new` splits an axis."""
        new = semantics.layout_letters(self.new)
        if len(new) != len(self.old):
            return None
        return [new.index(c) for c in self.old]

    def is_split(self, letter: str) -> bool:
        """Whether the new layout splits the primal axis `letter`."""
        return letter.lower() in semantics.layout_letters(self.new)

    def position(self, letter: str) -> int:
        """The axis of the new layout that holds the primal axis `letter` (its outer part
        when it is split)."""
        return semantics.layout_letters(self.new).index(letter)

    def block(self, letter: str) -> int:
        """The size of the inner part of the primal axis `letter` (1 if it is not split)."""
        for name, factor in semantics.parse_layout(self.new):
            if name == letter.lower():
                return int(factor)
        return 1


Tag = Union[LayoutTag, None, tuple["Tag", ...]]  # noqa: UP007 (a recursive alias)
"""The tag of a value: `None` (original layout), a `LayoutTag` (a tensor), or a tuple of
tags (a tuple value)."""


def make_tag(old: str, new: str) -> LayoutTag | None:
    """`LayoutTag(old, new)`, or None when the layouts are the same."""
    return None if old == new else LayoutTag(old, new)


def relabel(tag: LayoutTag, old: str) -> LayoutTag | None:
    """`tag` with its original axes renamed to the letters of `old` (same rank, primal
    letters only): the relation between the values does not depend on the names."""
    if old == tag.old:
        return tag
    rename = dict(zip(tag.old, old))
    rename.update({a.lower(): b.lower() for a, b in zip(tag.old, old)})
    new = "".join(rename.get(ch, ch) for ch in _tokens(tag.new))
    return make_tag(old, new)


def _tokens(layout: str) -> list[str]:
    """The layout as tokens that rename letter by letter (`NCHW16c` → N C H W 16 c)."""
    out: list[str] = []
    for ch in layout:
        if ch.isdigit() and out and out[-1].isdigit():
            out[-1] += ch
        else:
            out.append(ch)
    return out


def is_primal(layout: str) -> bool:
    """Whether `layout` is a valid layout of primal axes only (`NCHW`, not `NCHW16c`)."""
    try:
        return all(c.isupper() for c in semantics.layout_letters(layout))
    except semantics.SemanticsError:
        return False


def fresh_letters(used: str, count: int) -> str | None:
    """`count` upper-case letters not in `used` (None if there are not enough)."""
    free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in used]
    return "".join(free[:count]) if len(free) >= count else None


def drop_axes(tag: LayoutTag, axes: Sequence[int]) -> LayoutTag | None:
    """The tag of a value with the original axes `axes` removed (a reduction without
    keepdims, a squeeze); none of them may be split by `tag`."""
    gone = {tag.old[a] for a in axes}
    old = "".join(c for c in tag.old if c not in gone)
    new = "".join(c for c in tag.new if c not in gone)
    return make_tag(old, new) if old else None


# --------------------------------------------------------------------------- the facet


@frozen
class CallInfo:
    """What a layout rule sees: the original call, the tags its arguments arrive with,
    the original types of its arguments and result, and the layouts the user asked for
    this operator (`desired`, empty if none)."""

    call: Call
    in_tags: tuple[Tag, ...]
    in_types: tuple[Type, ...]
    out_type: Type
    desired: tuple[str, ...] = ()

    @property
    def attrs(self) -> Attrs:
        """The call's attributes (rules are only registered for operators that have
        some, or do not read them)."""
        assert self.call.attrs is not None
        return self.call.attrs

    def rank(self, i: int = 0) -> int:
        """The rank of argument `i` (-1 if it is not a tensor)."""
        t = self.in_types[i]
        return t.ndim if isinstance(t, TensorType) else -1

    def permuted(self, i: int = 0) -> LayoutTag | None:
        """The tag of argument `i` if it is a permutation of a tensor, else None."""
        tag = self.in_tags[i]
        if isinstance(tag, LayoutTag) and tag.permutation() is not None:
            return tag
        return None


@frozen
class Decision:
    """A rule's answer: the tag each argument must have, the call's new attributes (None:
    unchanged), the tag of its result and, rarely, another operator for the call (a
    `nn.bias_add` on a split channel axis becomes an `add`)."""

    args: tuple[Tag, ...]
    out: Tag
    attrs: Attrs | None = None
    op: Op | None = None
    """The operator the call becomes (None: its own); it then takes `attrs` as given."""


LayoutRule = Callable[[CallInfo], Decision | None]
"""A layout rule: the decision for a call, or None for "run it in the original layout"."""

LAYOUT_RULES: OpTable[LayoutRule] = OpTable("layout rule")
"""The layout rule of each operator (TVM's `FInferCorrectLayout`)."""


def _keep(info: CallInfo, tag: Tag) -> tuple[Tag, ...]:
    """`tag` for the first argument, the original layout for the others."""
    return (tag, *([None] * (len(info.call.args) - 1)))


# -------------------------------------------------------------------- elementwise families


def _words(text: str) -> list[str]:
    return text.split()


_UNARY = _words(
    "negative abs exp fast_exp log log2 log10 sqrt rsqrt sigmoid tanh fast_tanh erf fast_erf "
    "floor ceil round trunc sign sin cos tan asin acos atan sinh cosh asinh acosh atanh "
    "logical_not bitwise_not isnan isinf isfinite copy zeros_like ones_like clip cast "
    "reinterpret nn.relu nn.leaky_relu cast_like full_like"
)
_BINARY = _words(
    "add subtract multiply divide power maximum minimum floor_divide floor_mod mod "
    "trunc_divide trunc_mod equal not_equal less less_equal greater greater_equal "
    "logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor left_shift "
    "right_shift where"
)


@LAYOUT_RULES.register(*_UNARY)
def follow_first(info: CallInfo) -> Decision | None:
    """Elementwise on the first argument (the others, like `full_like`'s fill value or
    `cast_like`'s dtype source, are read whole): the result follows its layout."""
    tag = info.in_tags[0]
    if not isinstance(tag, LayoutTag):
        return None
    return Decision(_keep(info, tag), tag)


@LAYOUT_RULES.register(*_BINARY)
def broadcast(info: CallInfo) -> Decision | None:
    """Broadcasting elementwise: the result takes the layout of the first argument of
    full rank that has one; arguments of that rank are converted to it, lower-rank ones
    (aligned on the right, as broadcasting does) are expanded and converted, scalars stay.
    Integer arithmetic with a full-rank argument in the original layout stays there: that
    argument comes from an operator that was not packed (the int8 convolutions of a
    quantized model), as will the integer operators after it (a quantized ResNet's
    residual adds packed their conv's output, then unpacked the sum for the next conv)."""
    out = info.out_type
    if not isinstance(out, TensorType):
        return None
    if not out.dtype.startswith(("float", "bfloat")) and any(
        t is None and isinstance(ty, TensorType) and ty.ndim == out.ndim
        for t, ty in zip(info.in_tags, info.in_types)
    ):
        return None
    chosen = next(
        (
            t
            for t, ty in zip(info.in_tags, info.in_types)
            if isinstance(t, LayoutTag) and isinstance(ty, TensorType) and ty.ndim == out.ndim
        ),
        None,
    )
    if chosen is None:
        return None
    wanted = tuple(None if info.rank(i) <= 0 else chosen for i in range(len(info.in_types)))
    return Decision(wanted, chosen)


# ------------------------------------------------------------------------ one-axis rules


def _axis_letter(info: CallInfo, axis: int) -> tuple[LayoutTag, int] | None:
    """The permutation tag of the data and the new position of its original `axis`."""
    tag = info.permuted(0)
    if tag is None:
        return None
    perm = tag.permutation()
    assert perm is not None
    try:
        return tag, perm[semantics.normalize_axis(axis, tag.rank)]
    except semantics.SemanticsError:
        return None


@LAYOUT_RULES.register(
    "nn.prelu",
    "nn.softmax",
    "nn.fast_softmax",
    "nn.log_softmax",
    "nn.lrn",
    "nn.batch_norm",
    "nn.layer_norm",
)
def along_axis(info: CallInfo) -> Decision | None:
    """Operators that work along one `axis` of the data (the other arguments are vectors
    along it): the axis moves with the permutation. `nn.batch_norm`'s statistics outputs
    are vectors and keep no layout."""
    found = _axis_letter(info, int(info.attrs.axis))
    if found is None:
        return None
    tag, axis = found
    out: Tag = tag
    if isinstance(info.out_type, TupleType):
        out = (tag, *([None] * (len(info.out_type.fields) - 1)))
    return Decision(_keep(info, tag), out, info.attrs.replace(axis=axis))


_ADD = get_op("add")


@LAYOUT_RULES.register("nn.bias_add")
def bias_add(info: CallInfo) -> Decision | None:
    """`nn.bias_add`: the axis moves with a permutation. When the layout splits the axis
    (`NCHW8c`), the call becomes a broadcasting `add` of the bias packed like the data
    (a bias of C values along C of NCHW8c is the `[C/8, 1, 1, 8]` tensor)."""
    tag = info.in_tags[0]
    if not isinstance(tag, LayoutTag) or tag.permutation() is not None:
        return along_axis(info)
    try:
        letter = tag.old[semantics.normalize_axis(int(info.attrs.axis), tag.rank)]
    except semantics.SemanticsError:
        return None
    # the bias, expanded on the left to the data's rank, is the axis `letter` last
    bias = LayoutTag(tag.old.replace(letter, "") + letter, tag.new)
    return Decision((tag, bias), tag, None, _ADD)


@LAYOUT_RULES.register("nn.instance_norm", "nn.group_norm")
def channel_norm(info: CallInfo) -> Decision | None:
    """Norms over every axis but the batch axis 0 and the channel `axis`: the batch axis
    must stay first."""
    found = _axis_letter(info, int(info.attrs.axis))
    if found is None or found[0].new[0] != found[0].old[0]:
        return None
    tag, axis = found
    return Decision(_keep(info, tag), tag, info.attrs.replace(axis=axis))


@LAYOUT_RULES.register("nn.l2_normalize")
def l2_normalize(info: CallInfo) -> Decision | None:
    """`nn.l2_normalize` over a list of axes (None: all of them)."""
    tag = info.permuted(0)
    if tag is None:
        return None
    perm = tag.permutation()
    assert perm is not None
    axis = info.attrs.axis
    if axis is None:
        return Decision((tag,), tag)
    try:
        axes = semantics.listed_axes(axis, tag.rank)
    except semantics.SemanticsError:
        return None
    return Decision((tag,), tag, info.attrs.replace(axis=tuple(sorted(perm[a] for a in axes))))


def _static_size(t: Type, axis: int) -> int | None:
    """The size of axis `axis` of tensor type `t` when it is a known number."""
    if not isinstance(t, TensorType) or not 0 <= axis < t.ndim:
        return None
    d = t.shape[axis]
    return d if isinstance(d, int) else None


def _divides(tag: LayoutTag, axis: int, sizes: Sequence[int | None]) -> bool:
    """Whether every size (of original axis `axis`) divides by the block `tag` splits it
    into (always, when it does not split it)."""
    block = tag.block(tag.old[axis])
    return block == 1 or all(n is not None and n % block == 0 for n in sizes)


@LAYOUT_RULES.register("concatenate")
def concatenate(info: CallInfo) -> Decision | None:
    """`concatenate` of a tuple: every field takes one field's layout (the first that
    fits) and the axis moves. The joined axis may be split (`C` of `NCHW8c`) when every
    field's size along it divides by the block: the blocks are then joined whole."""
    tags = info.in_tags[0]
    fields = info.in_types[0]
    if not isinstance(tags, tuple) or not isinstance(fields, TupleType):
        return None
    candidates = [t for t in dict.fromkeys(tags) if isinstance(t, LayoutTag)]
    if not candidates or not all(
        isinstance(f, TensorType) and f.ndim == candidates[0].rank for f in fields.fields
    ):
        return None
    try:
        axis = semantics.normalize_axis(int(info.attrs.axis), candidates[0].rank)
    except semantics.SemanticsError:
        return None
    sizes = [_static_size(f, axis) for f in fields.fields]
    for chosen in candidates:
        if chosen.rank == candidates[0].rank and _divides(chosen, axis, sizes):
            wanted = tuple(chosen for _ in fields.fields)
            new_axis = chosen.position(chosen.old[axis])
            return Decision((wanted,), chosen, info.attrs.replace(axis=new_axis))
    return None


@LAYOUT_RULES.register("split")
def split(info: CallInfo) -> Decision | None:
    """`split`: every part keeps the layout and the axis moves. The axis may be split
    (`C` of `NCHW8c`) when every part's size divides by the block: the split points are
    then counted in blocks."""
    tag = info.in_tags[0]
    if not isinstance(tag, LayoutTag) or not isinstance(info.out_type, TupleType):
        return None
    try:
        axis = semantics.normalize_axis(int(info.attrs.axis), tag.rank)
    except semantics.SemanticsError:
        return None
    attrs = info.attrs.replace(axis=tag.position(tag.old[axis]))
    block = tag.block(tag.old[axis])
    if block > 1:
        sizes = [_static_size(t, axis) for t in info.out_type.fields]
        if not _divides(tag, axis, sizes):
            return None
        spec = info.attrs.indices_or_sections
        if not isinstance(spec, int):
            attrs = attrs.replace(indices_or_sections=tuple(int(i) // block for i in spec))
    out = tuple(tag for _ in info.out_type.fields)
    return Decision((tag,), out, attrs)


# --------------------------------------------------------------------- many-axis rules

_REDUCE = _words("sum mean max min prod all any variance")


@LAYOUT_RULES.register(*_REDUCE, "argmax", "argmin")
def reduce(info: CallInfo) -> Decision | None:
    """Reductions: the reduced axes move with the layout (listed explicitly, without
    `exclude`; none of them split); kept axes keep their order in the new layout.
    `argmax`/`argmin` only over one axis (their index over several axes depends on the
    order of the axes); `variance`'s mean must have the data's rank."""
    tag = info.in_tags[0]
    if not isinstance(tag, LayoutTag):
        return None
    a = info.attrs
    reduced = semantics.reduce_axes(tag.rank, a.axis, bool(a.exclude))
    if any(tag.is_split(tag.old[i]) for i in reduced):
        return None
    name = info.call.op.name if isinstance(info.call.op, Op) else ""
    if name in ("argmax", "argmin") and len(reduced) != 1:
        return None
    if len(info.in_types) > 1 and info.rank(1) != tag.rank:
        return None
    new_axes = tuple(sorted(tag.position(tag.old[i]) for i in reduced))
    attrs = a.replace(axis=new_axes, exclude=False)
    out = tag if a.keepdims else drop_axes(tag, reduced)
    return Decision(tuple(tag for _ in info.in_types), out, attrs)


@LAYOUT_RULES.register("transpose")
def transpose(info: CallInfo) -> Decision | None:
    """`transpose` absorbs the permutation: it reads the new layout and produces the
    original result directly."""
    tag = info.permuted(0)
    if tag is None:
        return None
    perm = tag.permutation()
    assert perm is not None
    axes = info.attrs.axes
    order = list(range(tag.rank))[::-1] if axes is None else list(axes)
    try:
        order = semantics.normalize_axes(order, tag.rank)
    except semantics.SemanticsError:
        return None
    return Decision((tag,), None, info.attrs.replace(axes=tuple(perm[i] for i in order)))


@LAYOUT_RULES.register("squeeze")
def squeeze(info: CallInfo) -> Decision | None:
    """`squeeze`: the dropped axes move with the permutation (None: the size-1 axes)."""
    tag = info.permuted(0)
    data = info.in_types[0]
    if tag is None or not isinstance(data, TensorType):
        return None
    perm = tag.permutation()
    assert perm is not None
    axis = info.attrs.axis
    if axis is None:
        if not all(isinstance(d, int) for d in data.shape):
            return None
        dropped = [i for i, d in enumerate(data.shape) if d == 1]
    else:
        try:
            dropped = semantics.normalize_axes(axis, tag.rank)
        except semantics.SemanticsError:
            return None
    attrs = info.attrs.replace(axis=tuple(sorted(perm[i] for i in dropped)))
    return Decision((tag,), drop_axes(tag, dropped), attrs)


@LAYOUT_RULES.register("expand_dims")
def expand_dims(info: CallInfo) -> Decision | None:
    """`expand_dims`: the new axes go first in the new layout, with fresh names."""
    tag = info.in_tags[0]
    if not isinstance(tag, LayoutTag):
        return None
    count = int(info.attrs.num_newaxis)
    try:
        axis = semantics.normalize_axis(int(info.attrs.axis), tag.rank, extra=1)
    except semantics.SemanticsError:
        return None
    fresh = fresh_letters(tag.old, count)
    if fresh is None:
        return None
    old = tag.old[:axis] + fresh + tag.old[axis:]
    attrs = info.attrs.replace(axis=0)
    return Decision((tag,), make_tag(old, fresh + tag.new), attrs)


@LAYOUT_RULES.register("strided_slice")
def strided_slice(info: CallInfo) -> Decision | None:
    """`strided_slice`: each sliced axis moves with the permutation (given explicitly in
    `axes`, in "end" mode)."""
    tag = info.permuted(0)
    if tag is None:
        return None
    perm = tag.permutation()
    assert perm is not None
    a = info.attrs
    if a.begin is None or a.end is None:
        return None
    try:
        sliced = semantics.strided_slice_axes(
            tag.rank, a.begin, a.end, a.strides, a.axes, str(a.slice_mode)
        )
    except semantics.SemanticsError:
        return None
    attrs = a.replace(
        axes=tuple(perm[ax] for ax, _, _, _ in sliced),
        begin=tuple(b for _, b, _, _ in sliced),
        end=tuple(e for _, _, e, _ in sliced),
        strides=tuple(s for _, _, _, s in sliced),
        slice_mode="end",
    )
    return Decision((tag,), tag, attrs)


@LAYOUT_RULES.register("nn.pad", "nn.mirror_pad")
def pad(info: CallInfo) -> Decision | None:
    """`nn.pad` / `nn.mirror_pad`: the (before, after) pair of each axis moves with it;
    an axis the layout splits must not be padded (its inner part never is)."""
    tag = info.in_tags[0]
    if not isinstance(tag, LayoutTag):
        return None
    pairs = [tuple(p) for p in info.attrs.pad_width]
    if len(pairs) != tag.rank:
        return None
    letters = semantics.layout_letters(tag.new)
    moved: list[tuple[int, ...]] = [(0, 0)] * len(letters)
    for letter, pair in zip(tag.old, pairs):
        if tag.is_split(letter) and any(int(v) for v in pair):
            return None
        moved[tag.position(letter)] = pair
    return Decision(_keep(info, tag), tag, info.attrs.replace(pad_width=tuple(moved)))


@LAYOUT_RULES.register("layout_transform")
def layout_transform(info: CallInfo) -> Decision | None:
    """A `layout_transform` of the program reads the value in its new layout directly
    (the pass drops it when it becomes the identity)."""
    tag = info.in_tags[0]
    src = str(info.attrs.src_layout)
    if not isinstance(tag, LayoutTag) or not is_primal(src) or len(src) != tag.rank:
        return None
    renamed = relabel(tag, src)
    if renamed is None:
        return None
    return Decision((renamed,), None, info.attrs.replace(src_layout=renamed.new))


# --------------------------------------------------------- operators with their own layout

CONV_KERNEL_AXES = {
    "nn.conv1d": "OIW",
    "nn.conv2d": "OIHW",
    "nn.conv3d": "OIDHW",
    "nn.conv1d_transpose": "IOW",
    "nn.conv2d_transpose": "IOHW",
}
"""The primal kernel axes of each convolution that `convert-layout` converts."""

POOL_AXES = {
    **{f"nn.{k}_pool{n}d": lay for k in ("max", "avg") for n, lay in ((1, "NCW"), (2, "NCHW"))},
    **{f"nn.{k}_pool3d": "NCDHW" for k in ("max", "avg")},
    **{f"nn.adaptive_{k}_pool1d": "NCW" for k in ("max", "avg")},
    **{f"nn.adaptive_{k}_pool2d": "NCHW" for k in ("max", "avg")},
    **{f"nn.adaptive_{k}_pool3d": "NCDHW" for k in ("max", "avg")},
    "nn.global_max_pool2d": "NCHW",
    "nn.global_avg_pool2d": "NCHW",
}
"""The primal data axes of each pool (they follow their input's layout, or the desired
one)."""

DATA_AXES: Mapping[str, str] = {
    **{name: "NC" + kernel[2:] for name, kernel in CONV_KERNEL_AXES.items()},
    **POOL_AXES,
}
"""The operators a user can ask `convert-layout` to convert, with their primal data axes."""


def default_kernel_layout(op_name: str, data_layout: str, depthwise: bool) -> str:
    """TVM's kernel layout for a convolution whose data is in `data_layout`: `OIHW` when
    the channels come before the spatial axes (also for split layouts), `HWIO` when they
    come after (`HWOI` for a depthwise convolution); `IOHW` / `HWIO` for transposed ones."""
    kernel = CONV_KERNEL_AXES[op_name]
    spatial = kernel[2:]
    letters = semantics.layout_letters(data_layout)
    channels_first = not is_primal(data_layout) or letters.index("C") < min(
        letters.index(s) for s in spatial
    )
    if channels_first:
        return kernel
    if op_name.endswith("_transpose"):
        return spatial + "IO"
    return spatial + ("OI" if depthwise else "IO")


def _is_depthwise(info: CallInfo) -> bool:
    data = info.in_types[0]
    groups = int(info.attrs.groups)
    if groups <= 1 or not isinstance(data, TensorType):
        return False
    letters = semantics.layout_letters(str(info.attrs.data_layout))
    channels = data.shape[letters.index("C")] if "C" in letters else None
    return channels == groups


@LAYOUT_RULES.register(*CONV_KERNEL_AXES)
def convolution(info: CallInfo) -> Decision | None:
    """A convolution the user asked for (`desired` = data layout, kernel layout or
    "default"): data and kernel are converted to those layouts and the result comes out
    in the data layout. Otherwise it runs in its own layouts."""
    a = info.attrs
    data_layout, kernel_layout = str(a.data_layout), str(a.kernel_layout)
    out_layout = str(a.out_layout) or data_layout
    if not info.desired or not all(map(is_primal, (data_layout, kernel_layout, out_layout))):
        return None
    name = info.call.op.name if isinstance(info.call.op, Op) else ""
    want_data = info.desired[0]
    want_kernel = info.desired[1] if len(info.desired) > 1 else "default"
    if want_kernel == "default":
        want_kernel = default_kernel_layout(name, want_data, _is_depthwise(info))
    attrs = a.replace(data_layout=want_data, kernel_layout=want_kernel, out_layout="")
    args = (make_tag(data_layout, want_data), make_tag(kernel_layout, want_kernel))
    return Decision(args, make_tag(out_layout, want_data), attrs)


@LAYOUT_RULES.register(*POOL_AXES)
def pool(info: CallInfo) -> Decision | None:
    """Pools follow their input's layout (unless the layout splits a spatial axis), or
    take the desired one; the result comes out in the same layout."""
    a = info.attrs
    layout = str(a.layout)
    out_layout = str(a.out_layout)
    if not is_primal(layout) or out_layout not in ("", layout):
        return None
    tag = info.in_tags[0]
    if info.desired:
        new = info.desired[0]
    elif isinstance(tag, LayoutTag) and tag.rank == len(layout):
        renamed = relabel(tag, layout)
        if renamed is None:
            return None
        new = renamed.new
    else:
        return None
    if any(c.lower() in new for c in "DHW" if c in layout):
        return None
    return Decision((make_tag(layout, new),), make_tag(layout, new), a.replace(layout=new))


PACKED_CONV2D = get_op("nn.contrib_conv2d_NCHWc")
PACKED_DEPTHWISE_CONV2D = get_op("nn.contrib_depthwise_conv2d_NCHWc")


def packed_convolution(info: CallInfo) -> Decision | None:
    """`alter-op-layout`'s rule for `nn.conv2d` (TVM's x86 `FTVMAlterOpLayout`): a call
    on NCHW data and an OIHW weight for which the pass chose `desired` = (data layout,
    kernel layout, out layout), e.g. `("NCHW3c", "OIHW3i8o", "NCHW8c")`, becomes
    `nn.contrib_conv2d_NCHWc` with those layouts, or `nn.contrib_depthwise_conv2d_NCHWc`
    when it is depthwise (groups = channels, kernel `OIHW1i{b}o`). Without a choice it
    runs in its own layouts."""
    a = info.attrs
    if len(info.desired) != 3 or str(a.data_layout) != "NCHW" or str(a.kernel_layout) != "OIHW":
        return None
    if str(a.out_layout) not in ("", "NCHW"):
        return None
    data, kernel, out = info.desired
    op = PACKED_DEPTHWISE_CONV2D if int(a.groups) > 1 else PACKED_CONV2D
    attrs = a.replace(data_layout=data, kernel_layout=kernel, out_layout=out)
    args = (make_tag("NCHW", data), make_tag("OIHW", kernel))
    return Decision(args, make_tag("NCHW", out), attrs, op)


def layout_rule(op: Op) -> LayoutRule:
    """The layout rule of `op`; `MissingFacetError` ("operator `X` has no layout rule")
    if it has none."""
    return LAYOUT_RULES.lookup(op)
