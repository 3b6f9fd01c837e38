"""Measuring candidate configs on a Ray cluster (`executors.Executor`; Ray is optional).

    executor = RayExecutor("ray://head:10001")       # the Ray Client
    executor = RayExecutor(None)                     # whatever ray.init() picks
    executor = RayExecutor("auto")                   # join a running cluster as a driver
    executor = RayExecutor("local")                  # a new Ray instance on this machine
    for result in executor.submit(task, configs, options):
        ...

Connecting: an address with a port is first tried over TCP (`connect_timeout` seconds), so
a cluster that does not answer is a quick `ExecutorError`, not a hang; the Ray Client's
own handshake gives up after ~30 s. A Ray already initialized in this process (`ray.init`
called before) is used as it is and left running by `close`. A probe task then checks
that the cluster's workers import relay of this version: every node needs relay-lang
installed (code is not shipped).

A measurement is one Ray task (`measure_on_node`, `max_retries=0`): it receives the task
pickled with operators by name (`measure.dumps`, put in the object store once per task),
builds, checks against the interpreter and times the config in the Ray worker process
(`measure.measure_here`: the same contract as the local worker) and returns the result
with the measuring node's `host_description`, which is what the log records. Each
measurement reserves as many CPUs as the kernel's threads (capped by the largest node), so
two measurements never share a node's cores; build and timing are one task (the compiled
kernel lives in the worker's memory).

Failures: at most as many measurements are in flight as the cluster has slots, so one starts
about when it is submitted, and its `timeout` counts from then; past it the task is
cancelled with force (its worker killed) and the result is a `timeout` error. A worker
that dies (a segfault, killed, its node lost) gives a `crash` error; the tuner goes on.
These two are made here, so their records carry this machine's host description.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from attrs import evolve

from .executors import ExecutorError
from .measure import MeasureOptions, MeasureResult, dumps, host_description, loads, measure_here
from .space import Config
from .task import Task

INSTALL_HINT = "pip install 'relay-lang[ray]'"
"""What to run when Ray (or its client) is missing."""

CLIENT_PORT = 10001
"""The Ray Client server's default port on the head node."""

GCS_PORT = 6379
"""The head node's default GCS port (`ray start --head`)."""


# ------------------------------------------------------------------ on the Ray workers

_REFERENCES: dict[str, Any] = {}
"""The interpreter's outputs per task key, kept by a Ray worker between measurements."""


def measure_on_node(
    payload: bytes, config: Config, options: MeasureOptions, fault: str | None
) -> MeasureResult:
    """A Ray task: `config` of the pickled task built, checked and timed in this worker;
    the result carries this node's host description. Never raises for the config's own
    failures (they are the result's error)."""
    os.environ["RELAY_COMPILE_JOBS"] = "1"  # compile in this worker, no process pool
    task = loads(payload)
    if len(_REFERENCES) > 16 and task.key not in _REFERENCES:
        _REFERENCES.clear()
    result = measure_here(task, config, options, _REFERENCES, fault)
    return evolve(result, host=host_description())


def relay_version() -> str:
    """The installed relay-lang's version ("unknown" when it is not installed as a package)."""
    from importlib import metadata

    try:
        return metadata.version("relay-lang")
    except metadata.PackageNotFoundError:
        return "unknown"


def probe_node() -> dict[str, Any]:
    """A Ray task: relay's version and the host description of the worker running it."""
    return {"relay": relay_version(), "host": host_description(), "python": sys.version.split()[0]}


# ------------------------------------------------------------------------- connecting


def spec_of(address: str | None) -> str:
    """The executor spec naming a Ray `address` (`make_executor`'s form), for messages."""
    if address is None:
        return "ray"
    return address if address.startswith("ray://") else f"ray:{address}"


def _host_port(text: str, default_port: int, spec: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep:
        return text, default_port
    if not port.isdigit() or not host:
        raise ExecutorError(f"executor {spec!r}: expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def _check_reachable(host: str, port: int, timeout: float, spec: str) -> None:
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        raise ExecutorError(
            f"executor {spec!r}: no Ray cluster answers at {host}:{port} "
            f"(within {timeout:g} s: {exc.strerror or exc})"
        ) from None


def _import_ray(spec: str) -> Any:
    try:
        import ray
    except ImportError:
        raise ExecutorError(
            f"executor {spec!r} needs Ray, which is not installed: {INSTALL_HINT}"
        ) from None
    return ray


def connect(ray: Any, address: str | None, connect_timeout: float) -> bool:
    """Connect this process to Ray at `address` (module docstring); whether this call
    initialized Ray (and so should shut it down)."""
    spec = spec_of(address)
    kwargs: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
    if address is not None and address.startswith("ray://"):
        try:
            import grpc  # noqa: F401  (the Ray Client's transport)
        except ImportError:
            raise ExecutorError(
                f"executor {spec!r}: the Ray Client needs grpcio, which is not installed: "
                f"{INSTALL_HINT}"
            ) from None
        host, port = _host_port(address[len("ray://") :], CLIENT_PORT, spec)
        _check_reachable(host, port, connect_timeout, spec)
    elif address not in (None, "auto", "local"):
        host, port = _host_port(address, GCS_PORT, spec)
        _check_reachable(host, port, connect_timeout, spec)
    elif address == "local":
        kwargs["include_dashboard"] = False  # a new local instance
    if ray.is_initialized():  # this process's session (ray.init called before): used as is
        return False
    try:
        ray.init(address=address, **kwargs)
    except Exception as exc:  # Ray's own connection errors vary by version and form
        first = str(exc).strip().splitlines()[-1:] or [type(exc).__name__]
        raise ExecutorError(f"executor {spec!r}: could not connect to Ray: {first[0]}") from None
    return True


# ------------------------------------------------------------------------ the executor


class RayExecutor:
    """Measurements as Ray tasks on a cluster (module docstring)."""

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        connect_timeout: float = 10.0,
        probe_timeout: float = 120.0,
    ) -> None:
        self.spec = spec = spec_of(address)
        self.ray = _import_ray(spec)
        self.owns_ray = connect(self.ray, address, connect_timeout)
        self._payloads: dict[str, Any] = {}
        self._measure = self.ray.remote(measure_on_node)
        try:
            self.node = self._probe(probe_timeout)
        except BaseException:
            self.close()
            raise

    def _probe(self, timeout: float) -> dict[str, Any]:
        """Run `probe_node` on the cluster; an `ExecutorError` when the workers cannot."""
        ray = self.ray
        ref = ray.remote(probe_node).options(num_cpus=0, max_retries=0).remote()
        ready, _ = ray.wait([ref], timeout=timeout)
        if not ready:
            ray.cancel(ref, force=True)
            raise ExecutorError(
                f"executor {self.spec!r}: no Ray worker answered within {timeout:g} s"
            )
        try:
            info: dict[str, Any] = ray.get(ref)
        except ray.exceptions.RayError as exc:
            exc = getattr(exc, "cause", None) or exc
            raise ExecutorError(
                f"executor {self.spec!r}: the cluster's workers cannot run relay (is relay-lang "
                f"{relay_version()} installed on every node?): {_first_line(exc)}"
            ) from None
        if info.get("relay") != relay_version():
            raise ExecutorError(
                f"executor {self.spec!r}: the cluster's workers run relay {info.get('relay')}, "
                f"this process {relay_version()}"
            )
        return info

    def _cpus(self, task: Task) -> int:
        """CPUs one measurement reserves: the kernel's threads, at most the largest node's."""
        want = max(1, int(task.target.num_threads))
        try:
            largest = max(
                float(n.get("Resources", {}).get("CPU", 0.0))
                for n in self.ray.nodes()
                if n.get("Alive", True)
            )
        except Exception:  # node listing unavailable (e.g. through some clients)
            largest = float(self.ray.cluster_resources().get("CPU", want))
        return max(1, min(want, int(largest)))

    def _slots(self, cpus: int) -> int:
        total = float(self.ray.cluster_resources().get("CPU", cpus))
        return max(1, int(total // cpus))

    def _payload(self, task: Task) -> Any:
        ref = self._payloads.get(task.key)
        if ref is None:
            ref = self._payloads[task.key] = self.ray.put(dumps(task))
        return ref

    def submit(
        self,
        task: Task,
        configs: Sequence[Config],
        options: MeasureOptions,
        faults: Mapping[Config, str] | None = None,
    ) -> Iterator[MeasureResult]:
        """Each config measured as a Ray task; results yielded as they complete (module
        docstring: timeouts, crashes)."""
        ray = self.ray
        cpus = self._cpus(task)
        slots = self._slots(cpus)
        remote = self._measure.options(num_cpus=cpus, max_retries=0)
        payload = self._payload(task)
        waiting = list(configs)
        running: dict[Any, tuple[Config, float]] = {}
        try:
            while waiting or running:
                while waiting and len(running) < slots:
                    config = waiting.pop(0)
                    ref = remote.remote(payload, config, options, (faults or {}).get(config))
                    running[ref] = (config, time.monotonic() + options.timeout)
                first_deadline = min(deadline for _, deadline in running.values())
                wait_for = max(0.0, first_deadline - time.monotonic())
                ready, _ = ray.wait(list(running), num_returns=1, timeout=wait_for)
                for ref in ready:
                    config, _ = running.pop(ref)
                    yield self._collect(ref, config)
                now = time.monotonic()
                for ref, (config, deadline) in list(running.items()):
                    if deadline <= now:
                        del running[ref]
                        self._cancel(ref)
                        yield MeasureResult(
                            config,
                            error=f"no result within {options.timeout:g} s (the Ray task was "
                            "cancelled and its worker killed)",
                            error_kind="timeout",
                        )
        finally:
            for ref in running:
                self._cancel(ref)

    def _cancel(self, ref: Any) -> None:
        with contextlib.suppress(Exception):  # already finished, or its worker gone
            self.ray.cancel(ref, force=True)

    def _collect(self, ref: Any, config: Config) -> MeasureResult:
        """The finished task's result, or its failure as an error result."""
        errors = self.ray.exceptions
        try:
            result: MeasureResult = self.ray.get(ref)
            return result
        except errors.RayTaskError as exc:  # an exception escaped the measurement
            cause = getattr(exc, "cause", None) or exc
            return MeasureResult(
                config, error=f"{type(cause).__name__}: {_first_line(cause)}", error_kind="build"
            )
        except errors.RayError as exc:  # the worker or its node died
            return MeasureResult(
                config,
                error=f"the Ray worker measuring it died ({type(exc).__name__}: "
                f"{_first_line(exc)})",
                error_kind="crash",
            )

    def close(self) -> None:
        """Drop the task payloads; shut Ray down when this executor initialized it."""
        self._payloads.clear()
        if self.owns_ray and self.ray.is_initialized():
            self.ray.shutdown()
        self.owns_ray = False

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _first_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return lines[0].strip() if lines else type(exc).__name__


__all__ = ["RayExecutor", "connect", "measure_on_node", "probe_node", "relay_version", "spec_of"]
