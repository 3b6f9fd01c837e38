"""Call generators of the algorithms (`sort`, `argsort`, `topk`, the scans, `einsum`)."""

from __future__ import annotations

from ...lang.op import Op
from ...lang.optable import OpTable
from ...lang.types import TensorType
from .core import Generator, OpCall, Tape, _axis, _call, _input, _shape, kind

GENERATORS: OpTable[Generator] = OpTable("test generator")
"""The call generators of this family (`typed_ops.GENERATORS` joins the families)."""


@GENERATORS.register("argsort", "sort")
def _sort(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3), kinds="fi")
    if x is None:
        return None
    dtype = t.pick(("int32", "int64")) if op.name == "argsort" else x.dtype
    return _call(op, [x], axis=_axis(t, x.ndim), is_ascend=not t.maybe(3), dtype=dtype)


@GENERATORS.register("topk")
def _topk(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3), kinds="fi")
    if x is None:
        return None
    axis = _axis(t, x.ndim)
    return _call(
        op,
        [x],
        k=t.choose(-1, _shape(x)[axis]),
        axis=axis,
        ret_type=t.pick(("both", "values", "indices")),
        is_ascend=t.maybe(3),
        dtype=t.pick(("int32", "int64")),
    )


@GENERATORS.register("cumsum", "cumprod")
def _scan(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 0), kinds="fi")
    if x is None:
        return None
    axis = _axis(t, x.ndim) if x.ndim and not t.maybe(2) else None
    dtype = t.pick((None, x.dtype, *[d for d in t.dtypes if kind(d) != "b"]))
    return _call(op, [x], axis=axis, dtype=dtype, exclusive=t.maybe(3))


@GENERATORS.register("einsum")
def _einsum(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3), kinds="f")
    if x is None:
        return None
    sizes: dict[str, int] = {}
    term = ""
    for d in _shape(x):  # a letter per axis; equal sizes may share one (a diagonal)
        same = [c for c, s in sizes.items() if s == d]
        letter = t.pick(same) if same and t.maybe(2) else "abcdefg"[len(sizes)]
        sizes[letter] = d
        term += letter
    terms, parts = [term], [x]
    if t.maybe(6):
        other = ""
        for _ in range(t.choose(1, 3)):
            if t.maybe(6):
                other += t.pick(sorted(sizes))
            else:
                letter = "pqr"[len([c for c in sizes if c in "pqr"])]
                sizes.setdefault(letter, t.choose(1, 3))
                other += letter
        terms.append(other)
        parts.append(TensorType(tuple(sizes[c] for c in other), x.dtype))
    equation = ",".join(terms)
    if t.maybe(6):
        used = sorted(set("".join(terms)))
        out = [used.pop(t.choose(0, len(used) - 1)) for _ in range(t.choose(0, len(used)))]
        equation += "->" + "".join(out)
    return _call(op, parts, tuple_arg=True, equation=equation)
