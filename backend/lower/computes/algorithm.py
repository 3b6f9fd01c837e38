"""Compute definitions of sorting, top-k, scans and einsum.

`argsort`, `sort` and `topk` are `extern` tensors: a loop-IR statement that runs a stable
bottom-up merge sort of element indices along the axis, row by row (`ceil(log2(n))` passes,
each merging neighbouring runs with two cursors; a NaN counts as larger than every number,
as numpy's stable sort does). Descending order takes the later element only when it is
strictly larger, so equal elements keep their order in both directions, as TVM's
`std::stable_sort` does. `cumsum`/`cumprod` are sequential scans in the output dtype (an
`extern` too: each element adds to the previous output). `einsum` is a compute: one sum over
the subscripts that are not in the output (numpy's forms: explicit and implicit outputs,
repeated subscripts, broadcasting `...`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ....lang.attrs import Attrs
from ....lang.opdefs.semantics import normalize_axis
from ....lang.optable import OpTable
from ....lang.types import Type
from ...te.tensor import Tensor, compute, extern, reduce_axis, sum_
from ...tir.buffer import Buffer, decl_buffer
from ...tir.dtypes import INDEX_DTYPE, is_float
from ...tir.expr import PrimExpr, Var, any_of, cast, const, min_
from ...tir.op import call, if_then_else
from ...tir.stmt import Allocate, BufferStore, For, ForKind, IfThenElse, LetStmt, Stmt, seq
from . import ComputeFn
from .nn import int_shape, tensor_type

COMPUTES: OpTable[ComputeFn] = OpTable("compute definition")
"""The compute definitions of this family (`computes.COMPUTES` joins the families)."""

# ---------------------------------------------------------------------------------- loops


def _loop(var: Var, lo: PrimExpr | int, extent: PrimExpr | int, body: Stmt) -> Stmt:
    return For(var, lo, extent, ForKind.SERIAL, body)


def over_rows(
    shape: Sequence[int], axis: int, fbody: Callable[[list[PrimExpr | None]], Stmt]
) -> Stmt:
    """`fbody(index)` inside serial loops over every axis but `axis` (its entry is None)."""
    loop_vars = {d: Var(f"i{d}", INDEX_DTYPE) for d in range(len(shape)) if d != axis}
    body = fbody([loop_vars.get(d) for d in range(len(shape))])
    for d in reversed(sorted(loop_vars)):
        body = _loop(loop_vars[d], 0, shape[d], body)
    return body


def _at(row: list[PrimExpr | None], axis: int, t: PrimExpr) -> tuple[PrimExpr, ...]:
    return tuple(t if d == axis else i for d, i in enumerate(row))  # type: ignore[misc]


# -------------------------------------------------------------------------------- sorting


def _less(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`a` sorts strictly before `b` ascending (a NaN after every number)."""
    if not is_float(a.dtype):
        return a < b
    return any_of(a < b, call("isnan", b) & ~call("isnan", a))


def sort_indices(
    data: Buffer, row: list[PrimExpr | None], axis: int, ascending: bool, name: str
) -> tuple[Buffer, Callable[[Stmt], Stmt], Stmt]:
    """A stable merge sort of the indices of one row of `data` along `axis`.

    Returns the buffer that holds the sorted indices at the end, a wrapper that allocates the
    scratch buffers around a statement, and the sorting statement."""
    n = int_shape_of(data)[axis]
    bufs = [decl_buffer((n,), INDEX_DTYPE, f"{name}_idx{k}") for k in range(2)]
    cursor = decl_buffer((2,), INDEX_DTYPE, f"{name}_cursor", scope="local")
    t = Var("t", INDEX_DTYPE)
    stmts: list[Stmt] = [_loop(t, 0, n, BufferStore(bufs[0], t, (t,)))]

    def value(src: Buffer, k: PrimExpr) -> PrimExpr:
        return data.load(*_at(row, axis, src.load(k)))

    passes = (n - 1).bit_length()
    for p in range(passes):
        width = 1 << p
        src, dst = bufs[p % 2], bufs[1 - p % 2]
        blk, lo, mid, hi = (Var(v, INDEX_DTYPE) for v in ("blk", "lo", "mid", "hi"))
        k = Var("k", INDEX_DTYPE)
        i, j = cursor.load(0), cursor.load(1)
        right, left = value(src, j), value(src, i)
        right_first = _less(right, left) if ascending else _less(left, right)
        take_left = if_then_else(
            i < mid, if_then_else(j < hi, ~right_first, const(True, "bool")), const(False, "bool")
        )
        merge = IfThenElse(
            take_left,
            seq(BufferStore(dst, src.load(i), (k,)), BufferStore(cursor, i + 1, (const(0),))),
            seq(BufferStore(dst, src.load(j), (k,)), BufferStore(cursor, j + 1, (const(1),))),
        )
        block = seq(
            BufferStore(cursor, lo, (const(0),)),
            BufferStore(cursor, mid, (const(1),)),
            _loop(k, lo, hi - lo, merge),
        )
        block = LetStmt(hi, min_(lo + 2 * width, const(n)), block)
        block = LetStmt(mid, min_(lo + width, const(n)), block)
        block = LetStmt(lo, blk * (2 * width), block)
        stmts.append(_loop(blk, 0, -(-n // (2 * width)), block))

    def allocate(body: Stmt) -> Stmt:
        return Allocate(bufs[0], Allocate(bufs[1], Allocate(cursor, body)))

    return bufs[passes % 2], allocate, seq(*stmts)


def int_shape_of(buffer: Buffer) -> tuple[int, ...]:
    """The static shape of a buffer."""
    return tuple(int(d.value) for d in buffer.shape)  # type: ignore[attr-defined]


def _sorted_extern(
    x: Tensor,
    axis: int,
    ascending: bool,
    count: int,
    outputs: Sequence[tuple[str, str]],
    name: str,
) -> list[Tensor]:
    """Outputs ("values" or "indices", dtype) holding the first `count` sorted entries."""
    shape = int_shape(x)
    out_shape = list(shape)
    out_shape[axis] = count

    def build(ins: list[Buffer], outs: list[Buffer]) -> Stmt:
        (data,) = ins

        def row_body(row: list[PrimExpr | None]) -> Stmt:
            order, allocate, sort = sort_indices(data, row, axis, ascending, name)
            t = Var("t", INDEX_DTYPE)
            writes = []
            for buf, (kind, dtype) in zip(outs, outputs):
                src = order.load(t)
                value = data.load(*_at(row, axis, src)) if kind == "values" else cast(dtype, src)
                writes.append(BufferStore(buf, value, _at(row, axis, t)))
            return allocate(seq(sort, _loop(t, 0, count, seq(*writes))))

        return over_rows(shape, axis, row_body)

    result = extern(
        [out_shape] * len(outputs), [x], build, [d for _, d in outputs], name=name, tag=name
    )
    return list(result) if len(outputs) > 1 else [result]


def _sort_attrs(attrs: Attrs | None, x: Tensor) -> tuple[int, bool]:
    assert attrs is not None
    return normalize_axis(int(attrs.axis), x.ndim), bool(attrs.is_ascend)


@COMPUTES.register("argsort")
def argsort(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Indices that stably sort the data along `axis`."""
    (x,) = inputs
    axis, ascending = _sort_attrs(attrs, x)
    _, dtype = tensor_type(out_type)
    n = int_shape(x)[axis]
    return _sorted_extern(x, axis, ascending, n, [("indices", dtype)], "argsort")


@COMPUTES.register("sort")
def sort(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """The data stably sorted along `axis`."""
    (x,) = inputs
    axis, ascending = _sort_attrs(attrs, x)
    n = int_shape(x)[axis]
    return _sorted_extern(x, axis, ascending, n, [("values", x.dtype)], "sort")


@COMPUTES.register("topk")
def topk(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """The first `k` of the stable sort along `axis` (descending unless `is_ascend`):
    `(values, indices)`, or one of them by `ret_type`."""
    assert attrs is not None
    (x,) = inputs
    axis, ascending = _sort_attrs(attrs, x)
    n = int_shape(x)[axis]
    k = n if attrs.k is None or int(attrs.k) < 1 else min(int(attrs.k), n)
    ret = str(attrs.ret_type)
    if ret == "both":
        _, index_dtype = tensor_type(out_type, 1)
        outputs = [("values", x.dtype), ("indices", index_dtype)]
    else:
        _, dtype = tensor_type(out_type)
        outputs = [("values" if ret == "values" else "indices", dtype)]
    return _sorted_extern(x, axis, ascending, k, outputs, "topk")


# ---------------------------------------------------------------------------------- scans


def unravel(flat: PrimExpr, shape: Sequence[int]) -> list[PrimExpr]:
    """The row-major multi-index of position `flat` in a tensor of `shape`."""
    index: list[PrimExpr] = []
    for d in reversed(shape):
        index.append(flat % d)
        flat = flat // d
    return index[::-1]


def _scan(attrs: Attrs | None, x: Tensor, out_type: Type, kind: str) -> Tensor:
    """`out[t] = out[t - 1] op x[t]` along the axis (exclusive: `op x[t - 1]`, from the
    identity), sequentially in the output dtype; a null axis scans the flattened data."""
    assert attrs is not None
    shape = int_shape(x)
    out_shape, dt = tensor_type(out_type)
    exclusive = bool(attrs.exclusive)
    flat = attrs.axis is None or x.ndim == 0
    axis = 0 if flat else normalize_axis(int(attrs.axis), x.ndim)
    identity = const(0 if kind == "cumsum" else 1, dt)
    if x.ndim == 0:  # one element: no scan, and no rank-0 buffer in a loop nest
        first = identity if exclusive else cast(dt, x[()])
        return compute(out_shape, lambda t: first, kind, "elemwise")  # type: ignore[no-any-return]

    def combine(a: PrimExpr, b: PrimExpr) -> PrimExpr:
        return a + b if kind == "cumsum" else a * b

    def build(ins: list[Buffer], outs: list[Buffer]) -> Stmt:
        (data,), (out,) = ins, outs

        def read(row: list[PrimExpr | None], t: PrimExpr) -> PrimExpr:
            if flat:
                return cast(dt, data.load(*unravel(t, shape)))
            return cast(dt, data.load(*_at(row, axis, t)))

        def row_body(row: list[PrimExpr | None]) -> Stmt:
            n = out_shape[axis]
            t = Var("t", INDEX_DTYPE)
            first = identity if exclusive else read(row, const(0))
            prev = out.load(*_at(row, axis, t - 1))
            step = combine(prev, read(row, t - 1 if exclusive else t))
            return seq(
                BufferStore(out, first, _at(row, axis, const(0))),
                _loop(t, 1, n - 1, BufferStore(out, step, _at(row, axis, t))),
            )

        return over_rows(out_shape, axis, row_body)

    return extern([out_shape], [x], build, [dt], name=kind, tag=kind)  # type: ignore[no-any-return]


@COMPUTES.register("cumsum")
def cumsum(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Cumulative sum along `axis` (null: of the flattened data), optionally exclusive."""
    return [_scan(attrs, inputs[0], out_type, "cumsum")]


@COMPUTES.register("cumprod")
def cumprod(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Cumulative product along `axis` (null: of the flattened data), optionally exclusive."""
    return [_scan(attrs, inputs[0], out_type, "cumprod")]


# --------------------------------------------------------------------------------- einsum

Token = str | int  # a subscript letter, or the k-th dimension covered by `...`


def parse_einsum(
    equation: str, shapes: Sequence[Sequence[int]]
) -> tuple[list[list[Token]], list[Token], dict[Token, int]]:
    """The subscripts of each operand and of the output, and each subscript's extent
    (dimensions under `...` broadcast from the right, as numpy does)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum `{equation}` has {len(terms)} operands, got {len(shapes)}")
    ell = max(
        (len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes) if "..." in t),
        default=0,
    )

    def tokens(term: str, ndim: int) -> list[Token]:
        head, dots, tail = term.partition("...")
        if not dots:
            return list(term)
        covered = ndim - len(head) - len(tail)
        return [*head, *range(ell - covered, ell), *tail]

    subs = [tokens(t, len(s)) for t, s in zip(terms, shapes)]
    extents: dict[Token, int] = {}
    for sub, shape in zip(subs, shapes):
        for tok, n in zip(sub, shape):
            extents[tok] = max(extents.get(tok, 1), n)
    if arrow:
        out = tokens(rhs, len(rhs.replace("...", "")) + ell)
    else:
        letters = [c for sub in subs for c in sub if isinstance(c, str)]
        out = [*range(ell), *sorted(c for c in set(letters) if letters.count(c) == 1)]
    return subs, out, extents


@COMPUTES.register("einsum")
def einsum(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Einstein summation of the operands (the fields of the tuple argument) by `equation`:
    the product of the operands, summed over the subscripts not in the output."""
    assert attrs is not None
    shapes = [int_shape(t) for t in inputs]
    subs, out, extents = parse_einsum(str(attrs.equation), shapes)
    out_shape, dt = tensor_type(out_type)
    summed = sorted({tok for sub in subs for tok in sub if tok not in out}, key=str)
    raxes = {tok: reduce_axis(extents[tok], f"r_{tok}") for tok in summed}

    def body(*idx: PrimExpr) -> PrimExpr:
        env: dict[Token, PrimExpr] = dict(zip(out, idx))
        env.update({tok: r.var for tok, r in raxes.items()})
        product: PrimExpr | None = None
        for t, sub, shape in zip(inputs, subs, shapes):
            index = [env[tok] if n == extents[tok] else const(0) for tok, n in zip(sub, shape)]
            value = cast(dt, t[tuple(index)])
            product = value if product is None else product * value
        assert product is not None
        return sum_(product, axis=list(raxes.values())) if raxes else product

    tag = "einsum" if raxes else "injective"
    return [compute(out_shape, body, "einsum", tag, {"equation": str(attrs.equation)})]
