"""The scheduling target: vector lanes per dtype, threads, cache sizes from sysfs."""

from __future__ import annotations

from pathlib import Path

import pytest
from relay.backend.lower.target import (
    DEFAULT_L1_BYTES,
    Target,
    host_target,
    read_cache_sizes,
    vector_bits_for,
)


def test_vector_width_follows_the_widest_feature() -> None:
    assert vector_bits_for({"avx512f", "avx2", "sse2"}) == 512
    assert vector_bits_for({"avx2", "fma"}) == 256
    assert vector_bits_for({"sse4.2"}) == 128
    assert vector_bits_for(set()) == 128


@pytest.mark.parametrize(
    ("bits", "dtype", "lanes"),
    [
        (512, "float32", 16),
        (512, "int8", 64),
        (512, "float64", 8),
        (512, "float16", 32),
        (512, "bool", 64),
        (256, "float32", 8),
        (256, "int64", 4),
        (128, "float32", 4),
        (128, "uint8", 16),
        (128, "float32x4", 4),
    ],
)
def test_lanes_per_dtype(bits: int, dtype: str, lanes: int) -> None:
    assert Target(vector_bits=bits).lanes(dtype) == lanes


def test_target_is_a_value() -> None:
    a = Target(vector_bits=256, num_threads=4, features=("avx2",))
    assert a == Target(vector_bits=256, num_threads=4, features=("avx2",))
    assert hash(a) == hash(Target(vector_bits=256, num_threads=4, features=("avx2",)))
    assert a.has_feature("avx2") and not a.has_feature("avx512f")


def _cache_entry(root: Path, name: str, level: int, kind: str, size: str) -> None:
    d = root / name
    d.mkdir()
    (d / "level").write_text(f"{level}\n")
    (d / "type").write_text(f"{kind}\n")
    (d / "size").write_text(f"{size}\n")


def test_cache_sizes_from_sysfs(tmp_path: Path) -> None:
    _cache_entry(tmp_path, "index0", 1, "Data", "48K")
    _cache_entry(tmp_path, "index1", 1, "Instruction", "32K")
    _cache_entry(tmp_path, "index2", 2, "Unified", "2048K")
    _cache_entry(tmp_path, "index3", 3, "Unified", "16M")
    assert read_cache_sizes(tmp_path) == {1: 48 * 1024, 2: 2048 * 1024, 3: 16 * 1024 * 1024}


def test_unreadable_cache_info_gives_nothing(tmp_path: Path) -> None:
    assert read_cache_sizes(tmp_path / "missing") == {}
    _cache_entry(tmp_path, "index0", 1, "Data", "lots")
    assert read_cache_sizes(tmp_path) == {}


def test_host_target_is_cached_and_sane() -> None:
    t = host_target()
    assert t is host_target()
    assert t.vector_bits in (128, 256, 512)
    assert t.vector_bits == vector_bits_for(frozenset(t.features))
    assert t.num_threads >= 1
    assert t.l1_bytes >= 4096 and t.l2_bytes >= t.l1_bytes
    assert Target().l1_bytes == DEFAULT_L1_BYTES
