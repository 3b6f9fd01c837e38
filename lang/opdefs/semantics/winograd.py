"""Winograd convolution: TVM's Cook-Toom weight-transform matrix G.

TVM's interpolation points, by degree `tile_size + kernel_size - 2` (Barabasz et al.,
"Error analysis ... of Winograd convolution", as tabulated by TVM); G is `(alpha,
kernel_size)` with `alpha = tile_size + kernel_size - 1`.
"""

from __future__ import annotations

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
