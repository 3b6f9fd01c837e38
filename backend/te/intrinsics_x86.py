"""The x86 dot-product intrinsics int8 kernels tensorize with (declared on import).

Each replaces `out[j] = sum_g int32(a[g]) * int32(b[j, g])`: `a` is broadcast to every
lane, `b` holds one group of `G` values per lane (`L` lanes of int32):

| name | a, b | L x G | body (instruction) | needs |
| --- | --- | --- | --- | --- |
| `avx512_vnni_u8s8` | uint8, int8 | 16 x 4 | `vpdpbusd` zmm | avx512vnni |
| `avx512_vnni_s8u8` | int8, uint8 | 16 x 4 | `vpdpbusd` zmm (operands swapped) | avx512vnni |
| `avx_vnni_u8s8` | uint8, int8 | 8 x 4 | `vpdpbusd` ymm | avxvnni (or avx512vnni + avx512vl) |
| `avx_vnni_s8u8` | int8, uint8 | 8 x 4 | `vpdpbusd` ymm (operands swapped) | as above |
| `avx512bw_i16` | int16, int16 | 16 x 2 | `vpmaddwd` zmm + `vpaddd` | avx512bw |
| `avx2_i16` | int16, int16 | 8 x 2 | `vpmaddwd` + `vpaddd` | avx2 |

and `portable(...)` declares the same computes over the plain-LLVM body `dot.{L}x{G}` (exact on
any host: what a schedule made for an instruction the host lacks runs on in tests).
"""

from __future__ import annotations

from ..tir.expr import cast
from .tensor import compute, placeholder, reduce_axis, sum_
from .tensorize import TensorIntrinsic, declare


def dot_intrinsic(
    name: str, lanes: int, group: int, a_dtype: str, b_dtype: str, body: str,
    features: tuple[str, ...] = (),
) -> TensorIntrinsic:  # fmt: skip
    """Declare `out[j] = sum_g int32(a[g]) * int32(b[j, g])` (`lanes` x `group`)."""
    a = placeholder((group,), a_dtype, "a")
    b = placeholder((lanes, group), b_dtype, "b")
    g = reduce_axis(group, "g")
    out = compute(
        (lanes,),
        lambda j: sum_(cast("int32", a[g.var]) * cast("int32", b[j, g.var]), axis=g),
        name=name,
    )
    return declare(name, out, body, features)


AVX512_VNNI_U8S8 = dot_intrinsic(
    "avx512_vnni_u8s8", 16, 4, "uint8", "int8", "x86.vpdpbusd.512.au8", ("avx512vnni",)
)
AVX512_VNNI_S8U8 = dot_intrinsic(
    "avx512_vnni_s8u8", 16, 4, "int8", "uint8", "x86.vpdpbusd.512.bu8", ("avx512vnni",)
)
AVX_VNNI_U8S8 = dot_intrinsic(
    "avx_vnni_u8s8", 8, 4, "uint8", "int8", "x86.vpdpbusd.256.au8", ("avxvnni",)
)
AVX_VNNI_S8U8 = dot_intrinsic(
    "avx_vnni_s8u8", 8, 4, "int8", "uint8", "x86.vpdpbusd.256.bu8", ("avxvnni",)
)
AVX2_I16 = dot_intrinsic("avx2_i16", 8, 2, "int16", "int16", "x86.pmaddwd.256", ("avx2",))
AVX512BW_I16 = dot_intrinsic(
    "avx512bw_i16", 16, 2, "int16", "int16", "x86.pmaddwd.512", ("avx512bw",)
)


def portable(intrinsic: TensorIntrinsic) -> TensorIntrinsic:
    """The same compute as `intrinsic` over the plain-LLVM body (`<name>_portable`)."""
    a, b = intrinsic.inputs
    lanes, group = (int(getattr(d, "value", 0)) for d in b.shape)
    return dot_intrinsic(
        f"{intrinsic.name}_portable", lanes, group, a.dtype, b.dtype, f"dot.{lanes}x{group}"
    )


PORTABLE = {i.name: portable(i) for i in (AVX512_VNNI_U8S8, AVX512_VNNI_S8U8, AVX_VNNI_U8S8,
                                         AVX_VNNI_S8U8, AVX2_I16, AVX512BW_I16)}  # fmt: skip
"""The portable twin of each intrinsic, by the intrinsic's name."""

__all__ = [
    "AVX2_I16",
    "AVX512BW_I16",
    "AVX512_VNNI_S8U8",
    "AVX512_VNNI_U8S8",
    "AVX_VNNI_S8U8",
    "AVX_VNNI_U8S8",
    "PORTABLE",
    "dot_intrinsic",
    "portable",
]
