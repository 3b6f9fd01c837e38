"""The machine the kernels are scheduled for: vector width, threads and cache sizes.

    t = host_target()
    t.lanes("float32")   # 16 on an AVX-512 host, 8 with AVX2, 4 otherwise
    t.lanes("int8")      # 64 / 32 / 16
    t.num_threads, t.l1_bytes, t.l2_bytes

The vector width comes from llvmlite's host CPU features (`avx512f` → 512 bits, `avx2` →
256, else 128); the thread count from `RELAY_NUM_THREADS`, then `OMP_NUM_THREADS`, then the
CPUs this process may run on; the cache sizes from `/sys/devices/system/cpu/cpu0/cache`
when readable (defaults otherwise).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from attrs import frozen

from ..tir.dtypes import bits_of, element_of

DEFAULT_L1_BYTES = 32 * 1024
DEFAULT_L2_BYTES = 1024 * 1024
DEFAULT_L3_BYTES = 8 * 1024 * 1024
_CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")


@frozen
class Target:
    """A CPU to schedule for (a value: compared and hashed by its fields).

    `vector_bits` is the width of one SIMD register, `num_threads` how many threads the
    parallel loops may use, `l1_bytes`/`l2_bytes`/`l3_bytes` the data cache sizes per level,
    `cpu` the LLVM CPU name and `features` the enabled LLVM features (sorted)."""

    vector_bits: int = 128
    num_threads: int = 1
    l1_bytes: int = DEFAULT_L1_BYTES
    l2_bytes: int = DEFAULT_L2_BYTES
    l3_bytes: int = DEFAULT_L3_BYTES
    cpu: str = "generic"
    features: tuple[str, ...] = ()

    def lanes(self, dtype: str) -> int:
        """Elements of `dtype` in one vector register (bool counts as one byte); at least 1."""
        base = element_of(dtype)
        bits = 8 if base == "bool" else bits_of(base)
        return max(1, self.vector_bits // bits)

    def has_feature(self, name: str) -> bool:
        """Whether the LLVM feature `name` (`avx512f`, `avx512vnni`, `fma`, ...) is enabled."""
        return name in self.features


def vector_bits_for(features: set[str] | frozenset[str]) -> int:
    """The SIMD width a feature set gives: 512 with `avx512f`, 256 with `avx2`, else 128."""
    if "avx512f" in features:
        return 512
    if "avx2" in features:
        return 256
    return 128


def _parse_size(text: str) -> int | None:
    text = text.strip().upper()
    scale = 1
    if text.endswith("K"):
        scale, text = 1024, text[:-1]
    elif text.endswith("M"):
        scale, text = 1024 * 1024, text[:-1]
    try:
        return int(text) * scale
    except ValueError:
        return None


def read_cache_sizes(cache_dir: Path = _CACHE_DIR) -> dict[int, int]:
    """Data (or unified) cache size in bytes per level, from sysfs; empty if unreadable."""
    sizes: dict[int, int] = {}
    try:
        entries = sorted(cache_dir.glob("index*"))
        for entry in entries:
            kind = (entry / "type").read_text().strip()
            if kind not in ("Data", "Unified"):
                continue
            level = int((entry / "level").read_text().strip())
            size = _parse_size((entry / "size").read_text())
            if size is not None:
                sizes[level] = size
    except (OSError, ValueError):
        return {}
    return sizes


def _env_threads() -> int | None:
    for name in ("RELAY_NUM_THREADS", "OMP_NUM_THREADS"):
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return None


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _host_features() -> tuple[str, tuple[str, ...]]:
    try:
        import llvmlite.binding as llvm

        features = llvm.get_host_cpu_features()
        enabled = tuple(sorted(k for k, v in features.items() if v))
        return llvm.get_host_cpu_name(), enabled
    except Exception:  # no llvmlite or no host information: be generic
        return "generic", ()


@functools.cache
def host_target() -> Target:
    """The machine this process runs on (computed once)."""
    cpu, features = _host_features()
    caches = read_cache_sizes()
    return Target(
        vector_bits=vector_bits_for(frozenset(features)),
        num_threads=_env_threads() or _cpu_count(),
        l1_bytes=caches.get(1, DEFAULT_L1_BYTES),
        l2_bytes=caches.get(2, DEFAULT_L2_BYTES),
        l3_bytes=caches.get(3, DEFAULT_L3_BYTES),
        cpu=cpu,
        features=features,
    )
