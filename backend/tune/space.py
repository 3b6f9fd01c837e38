"""Configuration spaces of the schedule templates: knobs, configs, and the space of a kernel.

    space = space_for(outputs, target)      # the knobs of the anchor's schedule
    space.default()                          # today's default schedule, as a config
    space.random(rng), space.neighbors(config, rng, 4), space.config_at(i)

A `Config` is a point of a space: one value per knob, hashable. The schedule functions
take it as a mapping (`Config.as_dict`, `lower_primitive(config=...)`) and fall back to
their heuristics for the knobs it does not name, so the default config gives exactly the
default schedule (the same TIR).

Templates with knobs:
- dense (`schedule_gemm`'s register-blocked nest): `rows` and `vectors` of the register
  block, `k_inner` (the reduction split by 1, 2 or 4, the inner part unrolled),
  `parallel`, `parallel_rows` (row blocks share the parallel loop), `unroll`.
- dense in the GEMV form (`schedule_gemv`: batch-1 products): for few rows `columns`
  (vectors of columns per parallel block) and `tile` (columns per register tile), and
  `parallel`.
- conv2d_NCHWc: `ocv` output-channel vectors by `owb` output columns, `icb` input channel
  blocks per weight block (`NCHWcBlocking`).
- depthwise_conv2d_NCHWc: `by_rows` (each task one output row, else one channel-block
  plane) and `owb`, the output columns (vector accumulators) per register block.
- Winograd (`schedules.winograd`): the batched GEMM's register block `rows` x `vectors`,
  `k_inner` and `parallel_rows` (as dense's), the vector width along a row of tiles in the
  input transform (`input_vector`) and the output transform (`output_vector`), whether
  LLVM may unroll the output transform's loops (`output_unroll`), and whether the input
  transform runs parallel over channels (`input_parallel`). `unroll` is
  left out (its off value only loses: the register block and the transforms' position
  selects need it), so is the tile size (an attribute of the operator, fixed with the
  transformed weight: another tile is another task).
- int8 dense and conv2d (the tensorized nests of `schedules.int8`): the register tile,
  `rows` x `vectors` (dense), `channels` x `vectors` of columns (the conv's column form,
  stride 1 along the width) or `columns` x `vectors` of channels (its channel form).
- softmax and log-softmax (`schedules.softmax`): `row_block` (rows whose stages are
  computed together: 1, 2, 4 or 8) and `interleave` (machine vectors per operation of the
  exponentials: 1, 2 or 4); reductions and the normalizations scheduled as reductions
  (layer, instance and group norm, ...: `schedules.reduce`): `row_block`. A block that
  does not divide the rows, or a width that does not divide a row, is the same schedule
  as 1; a kernel without row loops (a reduction to one value) is the same for every point.
Every other kernel (int8 depthwise, NCHW depthwise, pools, injective kernels) has a space
of one point: no knobs, the default schedule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np
from attrs import frozen

from ..lower.computes import made_by
from ..lower.lower_func import choose_inlined
from ..lower.schedules import PARALLEL_MIN_WORK, extents, pick_anchor, stage_order
from ..lower.schedules.conv2d import schedule_conv2d
from ..lower.schedules.conv2d_nchwc import (
    analyze_blocked,
    choose_nchwc_blocking,
    depthwise_by_rows,
    depthwise_columns,
    schedule_conv2d_nchwc,
    schedule_depthwise_nchwc,
)
from ..lower.schedules.dense import (
    GEMV_MAX_ROWS,
    analyze_product,
    blocking_rows,
    choose_blocking,
    fits_registers,
    gemv_column_vectors,
    gemv_parallel,
    gemv_tile,
    schedule_dense,
    split_width,
)
from ..lower.schedules.int8 import (
    analyze_conv2d_int8,
    analyze_dense_int8,
    column_width,
    conv2d_int8_tile,
    dense_int8_tile,
)
from ..lower.schedules.reduce import schedule_reduce
from ..lower.schedules.softmax import EXP_INTERLEAVE, ROW_BLOCK, schedule_softmax
from ..lower.schedules.winograd import (
    gemm_blocking,
    row_tiles,
    schedule_winograd,
    stages_of,
    winograd_defaults,
)
from ..target import Target
from ..te.tensor import Tensor

Value: TypeAlias = int | str | bool
"""A knob's value."""


@frozen
class Knob:
    """A schedule decision and the values it may take."""

    name: str
    choices: tuple[Value, ...]


@frozen
class Config:
    """A point of a space: `(knob name, value)` pairs in the space's knob order."""

    values: tuple[tuple[str, Value], ...]

    def get(self, name: str) -> Value:
        """The value of knob `name` (KeyError when the config has no such knob)."""
        for key, value in self.values:
            if key == name:
                return value
        raise KeyError(name)

    def as_dict(self) -> dict[str, Value]:
        """The knobs as a dict (what schedule functions take)."""
        return dict(self.values)

    def to_json(self) -> dict[str, Value]:
        """A JSON object of the knobs (key order kept)."""
        return dict(self.values)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Config:
        """The config of a `to_json` object."""
        return cls(tuple((str(k), _plain(v)) for k, v in data.items()))

    def __str__(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.values) or "default"


def _plain(v: Any) -> Value:
    if isinstance(v, bool | int | str):
        return v
    raise ValueError(f"a knob value must be an int, str or bool, not {v!r}")


class ConfigSpace:
    """The cartesian product of `knobs`; `default_values` is the default schedule's point."""

    def __init__(self, knobs: Sequence[Knob], default_values: Sequence[Value] = ()) -> None:
        self.knobs: tuple[Knob, ...] = tuple(knobs)
        defaults = tuple(default_values) or tuple(k.choices[0] for k in self.knobs)
        if len(defaults) != len(self.knobs):
            raise ValueError("one default value per knob")
        for knob, value in zip(self.knobs, defaults):
            if value not in knob.choices:
                raise ValueError(f"default {value!r} is not a choice of knob {knob.name}")
        self._defaults = defaults
        self.size: int = math.prod(len(k.choices) for k in self.knobs)

    def _make(self, values: Sequence[Value]) -> Config:
        return Config(tuple((k.name, v) for k, v in zip(self.knobs, values)))

    def default(self) -> Config:
        """The default schedule's point."""
        return self._make(self._defaults)

    def random(self, rng: np.random.Generator) -> Config:
        """A uniformly random point."""
        return self.config_at(int(rng.integers(self.size)))

    def neighbors(self, config: Config, rng: np.random.Generator, count: int) -> list[Config]:
        """Up to `count` distinct points differing from `config` in exactly one knob."""
        values = [config.get(k.name) for k in self.knobs]
        options = [(i, c) for i, k in enumerate(self.knobs) for c in k.choices if c != values[i]]
        picked: list[int] = list(rng.permutation(len(options))[:count]) if options else []
        out = []
        for j in picked:
            i, c = options[int(j)]
            changed = list(values)
            changed[i] = c
            out.append(self._make(changed))
        return out

    def index(self, config: Config) -> int:
        """The position of `config` in the space (mixed radix, first knob most significant)."""
        i = 0
        for knob in self.knobs:
            i = i * len(knob.choices) + knob.choices.index(config.get(knob.name))
        return i

    def config_at(self, i: int) -> Config:
        """The point at position `i` (`index`'s inverse)."""
        if not 0 <= i < self.size:
            raise IndexError(f"config index {i} outside a space of {self.size}")
        values: list[Value] = []
        for knob in reversed(self.knobs):
            i, r = divmod(i, len(knob.choices))
            values.append(knob.choices[r])
        return self._make(values[::-1])

    def contains(self, config: Config) -> bool:
        """Whether `config` names exactly this space's knobs (in order) with allowed values."""
        if [k for k, _ in config.values] != [k.name for k in self.knobs]:
            return False
        return all(config.get(k.name) in k.choices for k in self.knobs)

    def normalize(self, config: Config) -> Config | None:
        """`config` with its knobs in this space's order (a log stores them sorted), or
        None when it is not a point of this space (other knobs, a value not allowed)."""
        values = config.as_dict()
        if set(values) != {k.name for k in self.knobs}:
            return None
        ordered = self._make([values[k.name] for k in self.knobs])
        return ordered if self.contains(ordered) else None

    def __repr__(self) -> str:
        knobs = ", ".join(f"{k.name}{list(k.choices)}" for k in self.knobs)
        return f"ConfigSpace(size={self.size}: {knobs})"


EMPTY = ConfigSpace(())
"""The space of a kernel without knobs: one point, the default schedule."""


def _knob(name: str, choices: Sequence[Value], default: Value) -> tuple[Knob, Value]:
    ordered = list(dict.fromkeys(choices))
    if default not in ordered:
        ordered.append(default)
    if all(isinstance(c, int) and not isinstance(c, bool) for c in ordered):
        ordered.sort(key=lambda c: int(c))
    return Knob(name, tuple(ordered)), default


def _space(pairs: Sequence[tuple[Knob, Value]]) -> ConfigSpace:
    return ConfigSpace([k for k, _ in pairs], [v for _, v in pairs])


def _int(e: Any) -> int:
    return int(getattr(e, "value", e))


def dense_space(anchor: Tensor, target: Target) -> ConfigSpace:
    """The knobs of a dense anchor's register-blocked nest (module docstring); `EMPTY` for
    8-bit operands and anchors that are not plain products; the GEMV form's own knobs
    (`_gemv_space`) for few rows or columns."""
    p = analyze_product(anchor.op)
    if p is None or anchor.op.num_outputs != 1 or 0 in extents(anchor.op):
        return EMPTY
    if any(ld.producer.dtype in ("int8", "uint8") for ld in (p.lhs, p.rhs)):
        return _dense_int8_space(anchor, target)
    k_len = _int(p.k.dom.extent)
    if k_len == 0:
        return EMPTY
    lanes = target.lanes(anchor.dtype)
    sizes = [_int(iv.dom.extent) for iv in p.op.axis]
    rows = sizes[-2] if len(sizes) >= 2 else 1
    cols = sizes[-1]
    if p.rhs_layout == "k" and (rows <= GEMV_MAX_ROWS or cols < lanes):
        return _gemv_space(anchor, rows, cols, k_len, target)
    blocking = choose_blocking(rows, cols, lanes, target)
    if p.rhs_layout == "packed" and fits_registers(p.block, lanes, target):
        blocking = type(blocking)(blocking_rows(rows, p.block // lanes, target), p.block, lanes)
    vecs = blocking.nb // lanes
    col_vectors = max(1, -(-cols // lanes))
    col_blocks = math.prod(sizes[:-2]) * -(-cols // blocking.nb)
    threads = target.num_threads
    parallel = threads > 1 and math.prod(extents(anchor.op)) * k_len >= PARALLEL_MIN_WORK
    pairs = [
        _knob("rows", [r for r in (1, 2, 3, 4, 6, 8) if r <= rows], blocking.mr),
        _knob("vectors", [v for v in (1, 2, 3, 4) if v <= col_vectors], vecs),
        _knob("k_inner", [k for k in (1, 2, 4) if k <= k_len], 1),
        _knob("unroll", [True, False], True),
    ]
    if threads > 1:
        pairs.append(_knob("parallel", [True, False], parallel))
        if len(sizes) >= 2:
            pairs.append(_knob("parallel_rows", [True, False], col_blocks < 4 * threads))
    return _space(pairs)


def _tile_knobs(
    names: tuple[str, str], default: tuple[int, int], most: tuple[int, int]
) -> ConfigSpace:
    """A register tile's two knobs (`names`: rows-like, then vectors-like), each at most
    `most` (rows 1-8, vectors 1-4)."""
    return _space(
        [
            _knob(names[0], [r for r in (1, 2, 3, 4, 6, 8) if r <= most[0]], default[0]),
            _knob(names[1], [v for v in (1, 2, 3, 4) if v <= most[1]], default[1]),
        ]
    )


def _dense_int8_space(anchor: Tensor, target: Target) -> ConfigSpace:
    """The register tile (`rows`, `vectors`) of the tensorized int8 dense nest; `EMPTY`
    when the nest does not handle the anchor."""
    d = analyze_dense_int8(anchor.op, target)
    if d is None:
        return EMPTY
    most = (d.m, -(-d.n // d.plan.lanes))
    return _tile_knobs(("rows", "vectors"), dense_int8_tile(d, target), most)


def conv2d_int8_space(anchor: Tensor, target: Target) -> ConfigSpace:
    """The register tile of a tensorized int8 conv2d (`int8.conv2d_int8_tile`: `channels`
    or `columns`, and `vectors`); `EMPTY` for float convolutions and other forms."""
    found = analyze_conv2d_int8(anchor.op, target)
    if found is None:
        return EMPTY
    c, plan = found
    tile = conv2d_int8_tile(c, plan, target)
    out_channels, width = _int(c.weight.shape[0]), c.out_shape[3]
    if "channels" in tile:  # the column form: channels x vectors of columns
        most = (out_channels, -(-column_width(c) // plan.lanes))
        return _tile_knobs(("channels", "vectors"), (tile["channels"], tile["vectors"]), most)
    most = (width, -(-out_channels // plan.lanes))
    return _tile_knobs(("columns", "vectors"), (tile["columns"], tile["vectors"]), most)


def _gemv_space(anchor: Tensor, rows: int, cols: int, k_len: int, target: Target) -> ConfigSpace:
    """The knobs of the GEMV nest (`dense.schedule_gemv`) of a product with `rows` x `cols`
    outputs and reduction `k_len`: for few rows the column block and register tile, and
    whether it runs parallel (on a multi-thread target)."""
    lanes = target.lanes(anchor.dtype)
    pairs = []
    if rows <= GEMV_MAX_ROWS:
        col_vectors = -(-cols // lanes)
        if col_vectors > 1:
            choices = [v for v in (1, 2, 4, 8) if v <= col_vectors]
            pairs.append(_knob("columns", choices, gemv_column_vectors(cols, lanes)))
        pairs.append(
            _knob("tile", [t for t in (1, 2, 4, 8, 16) if t <= cols], gemv_tile(rows, cols, target))
        )
    if target.num_threads > 1:
        width = split_width(k_len, lanes)
        split_len = -(-k_len // width) * width
        pairs.append(_knob("parallel", [True, False], gemv_parallel(anchor.op, split_len, target)))
    return _space(pairs) if pairs else EMPTY


def nchwc_space(anchor: Tensor, target: Target) -> ConfigSpace:
    """The knobs of a conv2d_NCHWc anchor's register block (module docstring); `EMPTY` for
    the forms the nest does not handle."""
    b = analyze_blocked(anchor.op, depthwise=False)
    if b is None:
        return EMPTY
    default = choose_nchwc_blocking(b, target)
    _, oc_o, _, ow, _ = b.conv.out_shape
    ci_o = _int(b.conv.weight.shape[1])
    return _space(
        [
            _knob("ocv", [d for d in (1, 2, 3, 4) if oc_o % d == 0], default.ocv),
            _knob("owb", list(range(1, min(ow, 8) + 1)), default.owb),
            _knob("icb", [d for d in range(1, ci_o + 1) if ci_o % d == 0], default.icb),
        ]
    )


def depthwise_nchwc_space(anchor: Tensor, target: Target) -> ConfigSpace:
    """The knobs of a depthwise_conv2d_NCHWc anchor (module docstring); `EMPTY` for the
    forms the nest does not handle."""
    b = analyze_blocked(anchor.op, depthwise=True)
    if b is None:
        return EMPTY
    ow = b.conv.out_shape[3]
    rows = depthwise_by_rows(b, target)
    return _space(
        [
            _knob("by_rows", [True, False], rows),
            _knob(
                "owb",
                [d for d in (1, 2, 3, 4, 6, 8, 12) if d <= ow],
                depthwise_columns(ow, rows, target),
            ),
        ]
    )


def winograd_space(anchor: Tensor, target: Target) -> ConfigSpace:
    """The knobs of a Winograd convolution (module docstring); `EMPTY` for the direct
    fallback of the operator."""
    st = stages_of(anchor)
    if st is None:
        return EMPTY
    gemm = st["winograd_gemm"]
    p = analyze_product(gemm.op)
    if p is None or 0 in extents(gemm.op):
        return EMPTY
    sizes = [_int(iv.dom.extent) for iv in p.op.axis]
    k_len = _int(p.k.dom.extent)
    lanes = target.lanes(gemm.dtype)
    blocking = gemm_blocking(p, target)
    vectors = blocking.nb // lanes
    defaults = winograd_defaults(st, target)
    threads = target.num_threads
    parallel = threads > 1 and math.prod(sizes) * k_len >= PARALLEL_MIN_WORK
    col_blocks = math.prod(sizes[:-2]) * -(-sizes[-1] // blocking.nb)
    tiles = row_tiles(st)
    widths = [w for w in (4, lanes, 2 * lanes) if tiles % w == 0]
    pairs = [
        _knob("rows", [r for r in (1, 2, 3, 4, 6, 8) if r <= sizes[-2]], blocking.mr),
        _knob("vectors", [v for v in (1, 2, 3, 4) if v * lanes <= sizes[-1]], vectors),
        _knob("k_inner", [k for k in (1, 2, 4) if k <= k_len], 1),
    ]
    if parallel:
        pairs.append(_knob("parallel_rows", [True, False], col_blocks < 4 * threads))
    pairs += [
        _knob("input_vector", widths, defaults["input_vector"]),
        _knob("output_vector", widths, defaults["output_vector"]),
        _knob("output_unroll", [True, False], defaults["output_unroll"]),
    ]
    if threads > 1:
        pairs.append(_knob("input_parallel", [True, False], defaults["input_parallel"]))
    return _space(pairs)


ROW_BLOCKS = (1, 2, 4, 8)
"""The `row_block` values of the row-wise templates (softmax, reductions)."""


def reduce_space(anchor: Tensor, target: Target) -> ConfigSpace:
    """The knob of a reduction kernel's rows (module docstring)."""
    return _space([_knob("row_block", ROW_BLOCKS, 1)])


def softmax_space(anchor: Tensor, target: Target) -> ConfigSpace:
    """The knobs of a softmax kernel's rows and exponentials (module docstring)."""
    return _space(
        [
            _knob("row_block", ROW_BLOCKS, ROW_BLOCK),
            _knob("interleave", (1, 2, 4), EXP_INTERLEAVE),
        ]
    )


TEMPLATES = {
    schedule_dense: dense_space,
    schedule_conv2d_nchwc: nchwc_space,
    schedule_depthwise_nchwc: depthwise_nchwc_space,
    schedule_conv2d: conv2d_int8_space,
    schedule_winograd: winograd_space,
    schedule_softmax: softmax_space,
    schedule_reduce: reduce_space,
}
"""Schedule functions with knobs, and the function giving a kernel's space."""


def anchor_of(outputs: Sequence[Tensor]) -> tuple[Tensor, Any, str]:
    """(the anchor tensor, its schedule function, the anchor operator's name or `copy`) of a
    kernel computing `outputs`, as `lower_func.schedule_outputs` picks them."""
    inlined = {id(op) for op in choose_inlined(outputs)}
    anchor, schedule = pick_anchor(stage_order(outputs), outputs, inlined)
    op = made_by(anchor.op)
    return anchor, schedule, op.name if op is not None else "copy"


def space_for(outputs: Sequence[Tensor], target: Target) -> ConfigSpace:
    """The config space of the kernel computing `outputs` (`EMPTY` when its template has no
    knobs)."""
    anchor, schedule, _ = anchor_of(outputs)
    make = TEMPLATES.get(schedule)
    return make(anchor, target) if make is not None else EMPTY


__all__ = [
    "EMPTY",
    "TEMPLATES",
    "Config",
    "ConfigSpace",
    "Knob",
    "Value",
    "anchor_of",
    "conv2d_int8_space",
    "dense_space",
    "depthwise_nchwc_space",
    "nchwc_space",
    "reduce_space",
    "softmax_space",
    "space_for",
    "winograd_space",
]
