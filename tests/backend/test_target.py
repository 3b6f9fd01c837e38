"""Targets as values: vector lanes per dtype, threads, cache sizes from sysfs, and the
target-string syntax (parse, print, round trip, errors)."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
import relay
from relay.backend.target import (
    DEFAULT_L1_BYTES,
    Target,
    dependent_features,
    host_info,
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


def test_host_target_is_sane() -> None:
    t = Target.host()
    assert t == Target.host() and host_info() is host_info()
    assert t.vector_bits in (128, 256, 512)
    assert t.vector_bits == vector_bits_for(frozenset(t.features))
    assert t.num_threads >= 1
    assert t.l1_bytes >= 4096 and t.l2_bytes >= t.l1_bytes
    assert Target().l1_bytes == DEFAULT_L1_BYTES


def test_host_target_takes_a_thread_count() -> None:
    assert Target.host(3) == attrs.evolve(Target.host(), num_threads=3)
    with pytest.raises(ValueError):
        Target.host(0)


@pytest.mark.parametrize(
    "text",
    [
        "llvm",
        "llvm -num-threads=1",
        "llvm -num-threads=2",
        "llvm -mcpu=znver4",
        "llvm -mattr=+avx512f,-avx2 -num-threads=2",
        "llvm -mcpu=skylake-avx512 -mattr=-fma",
        "llvm -vector-bits=128 -l1-bytes=4096 -l2-bytes=65536 -l3-bytes=1048576",
        "  llvm   -num-threads=4  ",
        "interp",
    ],
)
def test_parse_print_round_trip(text: str) -> None:
    t = Target.parse(text)
    assert Target.parse(str(t)) == t
    assert str(Target.parse(str(t))) == str(t)


@pytest.mark.parametrize(
    "target",
    [
        Target(vector_bits=512, num_threads=2),
        Target(vector_bits=256, num_threads=4, features=("avx2",)),
        Target.host(7),
        Target(kind="interp"),
    ],
)
def test_any_target_value_prints_to_text_that_parses_back_to_it(target: Target) -> None:
    assert Target.parse(str(target)) == target


def test_parse_fills_in_the_host_and_applies_options() -> None:
    host = Target.host()
    assert Target.parse("llvm", num_threads=3) == Target.host(3)
    assert Target.parse("llvm -num-threads=2", num_threads=3).num_threads == 2
    t = Target.parse("llvm -mcpu=znver4 -mattr=-avx2,+avx512f -num-threads=2")
    assert t.cpu == "znver4" and t.num_threads == 2
    assert t.has_feature("avx512f") and not t.has_feature("avx2")
    assert set(t.features) == (set(host.features) - dependent_features("avx2")) | {"avx512f"}
    assert t.vector_bits == 512 and t.lanes("float32") == 16  # the width follows features
    # `-f` turns off what needs f too, as LLVM does; the flags apply in order
    assert not Target.parse("llvm -mattr=+avx512f,-avx2").has_feature("avx512f")
    no512 = Target.parse("llvm -mattr=+avx512vnni,+avx512bw,-avx512f")
    assert not {"avx512vnni", "avx512bw", "avx512vl", "avx512f"} & set(no512.features)
    assert no512.vector_bits <= 256
    narrow = Target.parse("llvm -mattr=-avx512f,-avx2")
    assert narrow.vector_bits == 128 and narrow.cpu == host.cpu
    assert str(Target.parse("llvm -num-threads=2")) == "llvm -num-threads=2"
    assert Target.parse("interp").kind == "interp" and str(Target.parse("interp")) == "interp"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty target string"),
        ("cuda", r"unknown target kind `cuda`.*kinds: llvm, interp"),
        ("llvm -foo=1", r"unknown option `-foo`.*-mcpu, -mattr, -num-threads"),
        ("llvm -mattr=avx2", "bad -mattr item `avx2`"),
        ("llvm -mattr=+avx51f", r"unknown CPU feature `avx51f`.*avx512f"),
        ("llvm mcpu", "bad target option `mcpu`"),
        ("llvm -mcpu=", "bad target option `-mcpu=`"),
        ("llvm -num-threads=0", "-num-threads needs a positive integer"),
        ("llvm -num-threads=two", "-num-threads needs a positive integer"),
        ("llvm -num-threads=1 -num-threads=2", "given twice"),
        ("interp -num-threads=2", "takes no options"),
    ],
)
def test_bad_target_strings_are_errors_naming_what_is_valid(text: str, message: str) -> None:
    with pytest.raises(relay.Error, match=message):
        Target.parse(text)


def test_missing_features_are_named() -> None:
    t = Target(features=("avx2", "avx512f", "sse2"))
    assert t.missing_features(("avx2", "sse2")) == ["avx512f"]
    assert Target.host().missing_features() == []
