"""The machine's fp32 peak and memory bandwidth, probed once per machine and thread count.

`machine_peak(threads)` returns a `MachinePeak`: from the cache file when it holds figures
for this machine, else measured by `backend.codegen.probe` (well under two seconds) and
written to the cache. The cache is one JSON file, `machine.json` in the cache directory
(`$RELAY_CACHE_DIR`, else `$XDG_CACHE_HOME/relay`, else `~/.cache/relay`):

    {"format": "relay-machine-peak", "entries": {KEY: {"fp32_gflops": ..., ...}}}

KEY names the CPU model, LLVM's CPU name and a digest of its features, the thread count
and the probe's version, so another machine sharing a home directory, another thread count
or a changed probe measures again. The file is replaced atomically (a temporary file in
the same directory, then `os.replace`); an unreadable, corrupt or foreign file is ignored
and rewritten, and a cache that cannot be written only costs measuring again next time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import platform
import tempfile
from pathlib import Path
from typing import Any

import attrs

from ..codegen import probe
from ..target import host_info
from .data import MachinePeak

CACHE_FILE = "machine.json"
CACHE_FORMAT = "relay-machine-peak"
_FIGURES = ("fp32_gflops", "fp32_gflops_1thread", "bandwidth_gbs")


def cache_dir() -> Path:
    """Where relay keeps cached measurements: `$RELAY_CACHE_DIR`, else
    `$XDG_CACHE_HOME/relay`, else `~/.cache/relay` (not created here)."""
    explicit = os.environ.get("RELAY_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "relay"
    return Path.home() / ".cache" / "relay"


def cpu_model() -> str:
    """The CPU's model name (`/proc/cpuinfo`, else `platform`), e.g. `AMD EPYC 7B13`."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, sep, value = line.partition(":")
                if sep and key.strip() in ("model name", "Hardware", "cpu model") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def cache_key(threads: int) -> str:
    """The cache entry of this machine's figures for `threads` threads."""
    info = host_info()
    features = hashlib.sha256(",".join(info.features).encode()).hexdigest()[:16]
    return f"{cpu_model()}|{info.cpu}|{features}|threads={threads}|probe={probe.PROBE_VERSION}"


def measure(threads: int) -> MachinePeak:
    """Probe the machine now: fp32 peak with `threads` threads and with one, and the read
    bandwidth with `threads` threads."""
    if threads < 1:
        raise ValueError(f"the number of threads must be at least 1, got {threads}")
    one = probe.measure_fp32_peak(1)
    peak = one if threads == 1 else probe.measure_fp32_peak(threads)
    return MachinePeak(
        fp32_gflops=peak,
        fp32_gflops_1thread=one,
        bandwidth_gbs=probe.measure_bandwidth(threads),
        threads=threads,
        cpu=cpu_model(),
    )


def machine_peak(threads: int, refresh: bool = False) -> MachinePeak:
    """This machine's peaks for `threads` threads: cached figures when the cache has them
    (`source` is the cache file), else measured now (`source` is `measured`) and cached.
    `refresh` measures again; each cached figure is then the best of the old and the new
    one, since a peak is the most the machine has shown (a probe taken while other
    processes load the cores reads low and must not lower it)."""
    path = cache_dir() / CACHE_FILE
    key = cache_key(threads)
    entries = _read_entries(path)
    cached = _peak_from(entries.get(key), threads)
    if not refresh and cached is not None:
        return MachinePeak(**{**cached, "source": str(path)})
    peak = measure(threads)
    if cached is not None:
        best = {name: max(getattr(peak, name), cached[name]) for name in _FIGURES}
        peak = attrs.evolve(peak, **best)
    entries[key] = {name: getattr(peak, name) for name in (*_FIGURES, "threads", "cpu")}
    _write_entries(path, entries)
    return peak


def _read_entries(path: Path) -> dict[str, Any]:
    """The entries of the cache file; empty when it is missing, unreadable or not ours."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(document, dict) or document.get("format") != CACHE_FORMAT:
        return {}
    entries = document.get("entries")
    return dict(entries) if isinstance(entries, dict) else {}


def _peak_from(entry: object, threads: int) -> dict[str, Any] | None:
    """The fields of a `MachinePeak` from a cache entry, or None if it is malformed."""
    if not isinstance(entry, dict) or entry.get("threads") != threads:
        return None
    cpu = entry.get("cpu")
    numbers: dict[str, Any] = {name: entry.get(name) for name in _FIGURES}
    if not isinstance(cpu, str) or not all(map(_positive_number, numbers.values())):
        return None
    return {**{k: float(v) for k, v in numbers.items()}, "threads": threads, "cpu": cpu}


def _positive_number(value: object) -> bool:
    """Whether `value` is a finite positive int or float (not a bool)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def _write_entries(path: Path, entries: dict[str, Any]) -> None:
    """Replace the cache file atomically; give up silently if the directory is unwritable."""
    text = json.dumps({"format": CACHE_FORMAT, "entries": entries}, indent=1, sort_keys=True)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".machine.", suffix=".tmp", dir=path.parent)
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


__all__ = [
    "CACHE_FILE",
    "CACHE_FORMAT",
    "cache_dir",
    "cache_key",
    "cpu_model",
    "machine_peak",
    "measure",
]
