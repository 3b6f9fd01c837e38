"""Winograd convolution: TVM's Cook-Toom weight-transform matrix G, and the A and B
matrices that go with it (what `nn.contrib_conv2d_winograd_without_weight_transform`
computes with a transformed weight U: `AT [U * (BT d BT^T)] AT^T` per tile `d`).

TVM's interpolation points, by degree `tile_size + kernel_size - 2` (Barabasz et al.,
"Error analysis ... of Winograd convolution", as tabulated by TVM); G is `(alpha,
kernel_size)` with `alpha = tile_size + kernel_size - 1`.

The transformed weight comes as `(alpha, alpha, CO, CI)`, or packed by blocks of `b` output
channels as `(alpha, alpha, ceil(CO / b), CI, b)` (`pack_weight`; TVM's ARM schedules take
the same form): `U5[e, n, k // b, c, k % b] = U[e, n, k, c]`, the rows past CO zero. The
operator's `channels` attribute says CO (`unpack_weight`).
"""

from __future__ import annotations

from fractions import Fraction
from functools import cache

import numpy as np

from .error import SemanticsError

_H, _Q, _T = 1 / 2, 1 / 4, 1 / 3
_BASE = [0.0, -1.0, 1.0, _H]
_POINTS: dict[int, list[float]] = {
    3: [0.0, -1.0, 1.0],
    4: _BASE,
    5: [*_BASE, -2.0],
    6: [*_BASE, -2.0, -_H],
    7: [*_BASE, -_H, 2.0, -2.0],
    8: [*_BASE, -_H, 2.0, -2.0, -_Q],
    9: [*_BASE, -_H, 2.0, -2.0, -_Q, 4.0],
    10: [*_BASE, -_H, 2.0, -2.0, -_Q, 3 * _Q, -4 * _T],
    11: [*_BASE, -_H, 2.0, -2.0, -_Q, 4.0, 3 * _Q, -4 * _T],
    12: [*_BASE, -_H, 2.0, -2.0, -_Q, 4.0, 3 * _Q, -4 * _T, _Q],
    13: [*_BASE, -_H, 2.0, -2.0, -_Q, 4.0, _Q, -3 * _Q, 4 * _T, -4.0],
}


def winograd_g(tile_size: int, kernel_size: int) -> tuple[tuple[float, ...], ...]:
    """TVM's Winograd weight-transform matrix G, `(alpha, kernel_size)` rows, in float64.

    Tile sizes 2 to 8 and kernel sizes 3 to 7 are supported (TVM's table).
    """
    if not 1 < tile_size < 9 or not 2 < kernel_size < 8:
        raise SemanticsError(
            f"winograd: unsupported tile size {tile_size} / kernel size {kernel_size}"
        )
    alpha = tile_size + kernel_size - 1
    points = np.asarray(_POINTS[alpha - 1])
    diffs = points[:, None] - points[None, :]
    np.fill_diagonal(diffs, 1.0)
    scale = np.prod(diffs, axis=1)
    if scale[0] < 0:
        scale[0] = -scale[0]
    g = np.zeros((alpha, kernel_size))
    g[:-1] = points[:, None] ** np.arange(kernel_size)[None, :] / scale[:, None]
    g[-1, -1] = 1.0
    return tuple(tuple(row) for row in g.tolist())


@cache
def winograd_matrices(tile: int, kernel: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(AT `(m, alpha)`, BT `(alpha, alpha)`, G `(alpha, r)`) of F(m, r) in float64, with
    `y = AT [(G g G^T) * (BT d BT^T)] AT^T` the correlation of an `alpha x alpha` input `d`
    with an `r x r` kernel `g`. G is TVM's (`semantics.winograd_g`): row `i < alpha - 1` is
    `a_i^j / f_i` for the interpolation point `a_i`, the last row picks `g[r-1]` (the point
    at infinity). A follows from the same points (`a_i^k`, last row `[0, ..., 0, 1]`) and BT
    is the unique solution of the 1-D identity `sum_e A[e, k] G[e, j] BT[e, l] = [l == k+j]`."""
    g = np.asarray(winograd_g(tile, kernel))
    alpha = tile + kernel - 1
    points = g[:-1, 1] / g[:-1, 0]
    a = np.zeros((alpha, tile))
    a[:-1] = points[:, None] ** np.arange(tile)[None, :]
    a[-1, -1] = 1.0
    system = np.array([a[:, k] * g[:, j] for k in range(tile) for j in range(kernel)])
    bt = np.zeros((alpha, alpha))
    for col in range(alpha):
        rhs = np.array([float(col == k + j) for k in range(tile) for j in range(kernel)])
        solution = np.linalg.lstsq(system, rhs, rcond=None)[0]
        if not np.allclose(system @ solution, rhs, atol=1e-9):  # pragma: no cover
            raise ValueError(f"no Winograd B matrix for F({tile}, {kernel})")
        bt[:, col] = solution
    return _snapped(a.T), _snapped(bt), g


def _snapped(matrix: np.ndarray) -> np.ndarray:
    """`matrix` with entries within 1e-9 of a fraction of denominator at most 1024 made that
    fraction (the solver's noise removed: entries of 1, -1 and 0 become exact)."""
    out = np.array(matrix, dtype=np.float64)
    for index, value in np.ndenumerate(out):
        near = float(Fraction(value).limit_denominator(1024))
        if abs(near - value) < 1e-9:
            out[index] = near
    return out


def pack_weight(u: np.ndarray, block: int, axis: int = 2) -> np.ndarray:
    """`u` with its output-channel axis `axis` packed by `block`: the axis padded with zero
    rows to whole blocks, split into (blocks, block), the block moved after the next axis.
    The transformed weight `(alpha, alpha, CO, CI)` becomes `(alpha, alpha, ceil(CO /
    block), CI, block)` (module docstring); an OIHW weight's `(CO, CI, H*W)` (`axis=0`)
    becomes `(ceil(CO / block), CI, block, H*W)`, the order of that form's channels."""
    co = u.shape[axis]
    blocks = -(-co // block)
    pads = [(0, 0)] * u.ndim
    pads[axis] = (0, blocks * block - co)
    split = np.pad(u, pads).reshape(*u.shape[:axis], blocks, block, *u.shape[axis + 1 :])
    order = list(range(split.ndim))
    order[axis + 1], order[axis + 2] = order[axis + 2], order[axis + 1]
    return np.ascontiguousarray(split.transpose(order))


def unpack_weight(u: np.ndarray, channels: int) -> np.ndarray:
    """The `(alpha, alpha, CO, CI)` weight of a packed one (`pack_weight`), `channels` = CO."""
    alpha, alpha2, blocks, ci, block = u.shape
    if channels > blocks * block:
        raise SemanticsError(
            f"a packed Winograd weight of {blocks} blocks of {block} has fewer than "
            f"{channels} output channels"
        )
    flat = u.transpose(0, 1, 2, 4, 3).reshape(alpha, alpha2, blocks * block, ci)
    return flat[:, :, :channels]
