"""Targets as values: the machine a model is compiled for, parsed once and passed down.

    t = Target.parse("llvm -mcpu=znver4 -mattr=+avx2,-avx512f -num-threads=2")
    str(t)              # canonical text: Target.parse(str(t)) == t
    Target.host()       # this machine, with every CPU this process may use
    t.lanes("float32")  # 16 with AVX-512, 8 with AVX2, 4 otherwise
    t.num_threads, t.l1_bytes, t.cpu, t.has_feature("avx2")

A target string has TVM's syntax: the kind first — `llvm` (native code) or `interp` (the
reference interpreter, no options) — then `-key=value` options:

| option | meaning | when absent |
| --- | --- | --- |
| `-mcpu=NAME` | the LLVM CPU name code is tuned for | the host CPU |
| `-mattr=+f,-g` | CPU features turned on (`+`) or off (`-`) | the host's features |
| `-num-threads=N` | threads the parallel loops use | `parse`'s `num_threads`, else all CPUs |
| `-vector-bits=N` | SIMD width schedules assume | 512 with `avx512f`, 256 with `avx2`, else 128 |
| `-l1-bytes=N`, `-l2-bytes=N`, `-l3-bytes=N` | data cache sizes | from sysfs, else defaults |
| `-bind-threads=1` | pin the pool's workers to CPUs (`threadpool.bind_threads`) | 0: free |

Features named in `-mattr` override the host's; the vector width follows the features.
`str(target)` prints the kind, the options that differ from what parsing derives on this
host, always `-num-threads`, and `-bind-threads=1` when set. Nothing here reads environment
variables: the API and CLI edge decide the default thread count
(`relay.driver.default_target`). Host facts (CPU name, features, cache sizes) are read once
per process.
"""

from __future__ import annotations

import difflib
import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
from attrs import field, frozen, validators

from ..lang.diagnostics import Error

DEFAULT_L1_BYTES = 32 * 1024
DEFAULT_L2_BYTES = 1024 * 1024
DEFAULT_L3_BYTES = 8 * 1024 * 1024
_CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")

KINDS = ("llvm", "interp")
"""The target kinds: native code through LLVM, or the reference interpreter."""

LLVM_OPTIONS = (
    "mcpu",
    "mattr",
    "num-threads",
    "vector-bits",
    "l1-bytes",
    "l2-bytes",
    "l3-bytes",
    "bind-threads",
)
"""The options of an `llvm` target, in the order `str` prints them."""


def _sorted_features(value: object) -> tuple[str, ...]:
    return tuple(sorted(set(value)))  # type: ignore[call-overload]


@frozen
class Target:
    """A machine to compile for (a value: compared and hashed by its fields).

    `kind` is `llvm` or `interp`; `cpu` the LLVM CPU name and `features` the enabled LLVM
    features (sorted); `vector_bits` the width of one SIMD register, `num_threads` how many
    threads the parallel loops use, `l1_bytes`/`l2_bytes`/`l3_bytes` the data cache sizes,
    `bind_threads` whether the pool's workers are pinned to CPUs when a model for it is
    built or loaded (process-wide: once on, pinning stays on)."""

    vector_bits: int = 128
    num_threads: int = field(default=1, validator=validators.ge(1))
    l1_bytes: int = DEFAULT_L1_BYTES
    l2_bytes: int = DEFAULT_L2_BYTES
    l3_bytes: int = DEFAULT_L3_BYTES
    cpu: str = "generic"
    features: tuple[str, ...] = field(default=(), converter=_sorted_features)
    kind: str = field(default="llvm", validator=validators.in_(KINDS))
    bind_threads: bool = field(default=False, validator=validators.instance_of(bool))

    def lanes(self, dtype: str) -> int:
        """Elements of `dtype` in one vector register (bool counts as one byte); at least 1."""
        base = dtype.split("x", 1)[0]
        bits = 8 if base == "bool" else int(base.lstrip("abcdefghijklmnopqrstuvwxyz"))
        return max(1, self.vector_bits // bits)

    def has_feature(self, name: str) -> bool:
        """Whether the LLVM feature `name` (`avx512f`, `avx512vnni`, `fma`, ...) is enabled."""
        return name in self.features

    @classmethod
    def host(cls, num_threads: int | None = None) -> Target:
        """This machine: its CPU, features and caches, and `num_threads` threads (default:
        the CPUs this process may run on)."""
        info = host_info()
        return cls(
            vector_bits=vector_bits_for(info.features),
            num_threads=num_threads if num_threads is not None else cpu_count(),
            l1_bytes=info.caches.get(1, DEFAULT_L1_BYTES),
            l2_bytes=info.caches.get(2, DEFAULT_L2_BYTES),
            l3_bytes=info.caches.get(3, DEFAULT_L3_BYTES),
            cpu=info.cpu,
            features=info.features,
        )

    @classmethod
    def parse(cls, text: str, num_threads: int | None = None) -> Target:
        """The target a string describes (module docstring); `num_threads` is the thread
        count when the string has no `-num-threads`. A malformed string, an unknown kind,
        option or feature is an `Error` listing the valid ones."""
        words = text.split()
        if not words:
            raise Error(f"empty target string (kinds: {', '.join(KINDS)})")
        kind, options = words[0], _options(words[1:], text)
        if kind not in KINDS:
            raise Error(f"unknown target kind `{kind}` in {text!r} (kinds: {', '.join(KINDS)})")
        if kind == "interp":
            if options:
                raise Error(f"target `interp` takes no options, got {text!r}")
            return cls(kind="interp")
        for key in options:
            if key not in LLVM_OPTIONS:
                valid = ", ".join(f"-{k}" for k in LLVM_OPTIONS)
                raise Error(f"unknown option `-{key}` of target `llvm` (options: {valid})")
        host = cls.host(num_threads)
        features = set(host.features)
        for flag in _list(options.get("mattr", "")):
            if flag[0] == "+":
                features.add(flag[1:])
            else:
                features -= dependent_features(flag[1:])
        target = cls(
            vector_bits=vector_bits_for(features),
            num_threads=host.num_threads,
            l1_bytes=host.l1_bytes,
            l2_bytes=host.l2_bytes,
            l3_bytes=host.l3_bytes,
            cpu=options.get("mcpu", host.cpu),
            features=tuple(features),
        )
        numbers = {
            "num-threads": "num_threads",
            "vector-bits": "vector_bits",
            "l1-bytes": "l1_bytes",
            "l2-bytes": "l2_bytes",
            "l3-bytes": "l3_bytes",
        }
        changes: dict[str, Any] = {
            numbers[k]: _positive(k, v) for k, v in options.items() if k in numbers
        }
        if "bind-threads" in options:
            value = options["bind-threads"]
            if value not in ("0", "1"):
                raise Error(f"option `-bind-threads` must be 0 or 1, got `{value}`")
            changes["bind_threads"] = value == "1"
        return attrs.evolve(target, **changes) if changes else target

    def __str__(self) -> str:
        """Canonical target text: the kind, then the options that differ from what parsing
        derives on this host, and always `-num-threads`."""
        if self.kind == "interp":
            return "interp"
        host = Target.host()
        parts = ["llvm"]
        if self.cpu != host.cpu:
            parts.append(f"-mcpu={self.cpu}")
        off = set(host.features) - set(self.features)
        # `-f` also turns off what needs f: features of this target among those come back
        removed = set().union(*(dependent_features(f) for f in off)) if off else set()
        on = set(self.features) - (set(host.features) - removed)
        flags = [f"-{f}" for f in sorted(off)] + [f"+{f}" for f in sorted(on)]
        if flags:
            parts.append(f"-mattr={','.join(flags)}")
        parts.append(f"-num-threads={self.num_threads}")
        if self.vector_bits != vector_bits_for(self.features):
            parts.append(f"-vector-bits={self.vector_bits}")
        for level, value in ((1, self.l1_bytes), (2, self.l2_bytes), (3, self.l3_bytes)):
            if value != getattr(host, f"l{level}_bytes"):
                parts.append(f"-l{level}-bytes={value}")
        if self.bind_threads:
            parts.append("-bind-threads=1")
        return " ".join(parts)

    def missing_features(self, available: tuple[str, ...] | None = None) -> list[str]:
        """The features this target needs that `available` (default: the host's) lacks."""
        have = set(host_info().features if available is None else available)
        return [f for f in self.features if f not in have]


def _options(words: list[str], text: str) -> dict[str, str]:
    """`-key=value` words as a mapping; an `Error` for anything else or a repeated key."""
    options: dict[str, str] = {}
    for word in words:
        key, eq, value = word.partition("=")
        if not key.startswith("-") or not eq or len(key) < 2 or not value:
            raise Error(f"bad target option `{word}` in {text!r} (expected -key=value)")
        if key[1:] in options:
            raise Error(f"target option `{key}` is given twice in {text!r}")
        options[key[1:]] = value
    return options


def _list(mattr: str) -> list[str]:
    """The `+feature`/`-feature` items of `-mattr`, each checked against LLVM's names."""
    flags = [f for f in mattr.split(",") if f]
    known = host_info().known
    for flag in flags:
        if flag[0] not in "+-" or len(flag) < 2:
            raise Error(f"bad -mattr item `{flag}` (expected +feature or -feature)")
        if known and flag[1:] not in known:
            near = difflib.get_close_matches(flag[1:], known, n=3)
            hint = f" (did you mean {', '.join(near)}?)" if near else ""
            raise Error(f"unknown CPU feature `{flag[1:]}` in -mattr{hint}")
    return flags


_AVX512F_EXTENSIONS = ("avx512bw", "avx512cd", "avx512dq", "avx512vl", "avx512ifma",
                       "avx512vnni", "avx512vpopcntdq", "avx512er", "avx512pf",
                       "avx512vp2intersect")  # fmt: skip
_AVX512BW_EXTENSIONS = ("avx512vbmi", "avx512vbmi2", "avx512bitalg", "avx512bf16", "avx512fp16")

FEATURE_REQUIRES: dict[str, tuple[str, ...]] = {
    "avx": ("sse4.2",),
    "avx2": ("avx",),
    "fma": ("avx",),
    "f16c": ("avx",),
    "avx512f": ("avx2", "fma", "f16c"),
    **{name: ("avx512f",) for name in _AVX512F_EXTENSIONS},
    **{name: ("avx512bw",) for name in _AVX512BW_EXTENSIONS},
    "avxvnni": ("avx2",),
    "avxvnniint8": ("avx2",),
    "avxifma": ("avx2",),
    "vaes": ("aes", "avx"),
    "vpclmulqdq": ("pclmul", "avx"),
    "amx-int8": ("amx-tile",),
    "amx-bf16": ("amx-tile",),
}
"""The x86 features each vector feature needs, as LLVM implies them: `-mattr=-avx512f`
turns off every AVX-512 extension too (a target keeping `avx512vnni` without `avx512f`
would pick instructions LLVM then refuses to select). `+feature` turns on that feature
alone."""


def dependent_features(name: str) -> set[str]:
    """`name` and every feature that needs it (`FEATURE_REQUIRES`, transitively)."""
    found, todo = set(), [name]
    while todo:
        feature = todo.pop()
        if feature not in found:
            found.add(feature)
            todo.extend(k for k, needs in FEATURE_REQUIRES.items() if feature in needs)
    return found


def _positive(key: str, value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise Error(f"target option -{key} needs a positive integer, got `{value}`")
    return int(value)


def vector_bits_for(features: set[str] | frozenset[str] | tuple[str, ...]) -> int:
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


def cpu_count() -> int:
    """The number of CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@frozen
class HostInfo:
    """What this machine is: the LLVM CPU name, its enabled features (sorted), every feature
    name LLVM knows for it (`known`: name → enabled), and cache sizes."""

    cpu: str
    features: tuple[str, ...]
    known: Mapping[str, bool]
    caches: Mapping[int, int]


@functools.cache
def host_info() -> HostInfo:
    """The host's CPU, features and caches (read once per process)."""
    try:
        import llvmlite.binding as llvm

        flags = dict(llvm.get_host_cpu_features())
        cpu = str(llvm.get_host_cpu_name())
    except Exception:  # no host information: be generic
        flags, cpu = {}, "generic"
    enabled = tuple(sorted(k for k, v in flags.items() if v))
    return HostInfo(cpu, enabled, flags, read_cache_sizes())


__all__ = [
    "DEFAULT_L1_BYTES",
    "DEFAULT_L2_BYTES",
    "DEFAULT_L3_BYTES",
    "KINDS",
    "LLVM_OPTIONS",
    "HostInfo",
    "Target",
    "cpu_count",
    "host_info",
    "read_cache_sizes",
    "vector_bits_for",
]
