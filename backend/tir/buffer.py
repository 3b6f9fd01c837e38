"""Buffers: typed, dense, row-major memory regions that loops read and write."""

from __future__ import annotations

from attrs import field, frozen

from .dtypes import INDEX_DTYPE
from .expr import PrimExpr, Var, convert


def _shape(dims: tuple[object, ...] | list[object]) -> tuple[PrimExpr, ...]:
    return tuple(convert(d) if not isinstance(d, PrimExpr) else d for d in dims)  # type: ignore[arg-type]


@frozen(eq=False)
class Buffer:
    """A dense row-major buffer of `dtype` elements with `shape`.

    `data` is the pointer variable (dtype `handle`); two buffers with the same `data` alias
    the same memory (flattening makes a 1-D view of a buffer this way). `scope` is `global`
    (function arguments and heap allocations) or `local` (small, on the stack). Compared by
    identity.
    """

    name: str
    dtype: str
    shape: tuple[PrimExpr, ...] = field(converter=_shape)
    data: Var = field()
    scope: str = "global"

    @data.default
    def _data_default(self) -> Var:
        return Var(self.name, "handle")

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    def load(self, *indices: PrimExpr | int) -> PrimExpr:
        """`self[indices]` as a `BufferLoad`."""
        from .expr import BufferLoad

        return BufferLoad(
            self, tuple(convert(i) if not isinstance(i, PrimExpr) else i for i in indices)
        )  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"Buffer({self.name}: {self.dtype}, ndim={len(self.shape)}, scope={self.scope})"


def decl_buffer(
    shape: tuple[object, ...] | list[object], dtype: str, name: str, scope: str = "global"
) -> Buffer:
    """A fresh buffer with its own data pointer."""
    return Buffer(name, dtype, tuple(shape), scope=scope)


def flat_view(buffer: Buffer, size: PrimExpr) -> Buffer:
    """A one-dimensional buffer of `size` elements aliasing `buffer`'s memory."""
    return Buffer(buffer.name, buffer.dtype, (size,), data=buffer.data, scope=buffer.scope)


__all__ = ["INDEX_DTYPE", "Buffer", "decl_buffer", "flat_view"]
