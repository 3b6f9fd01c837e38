"""Compiled models: what runs native kernels, one entry point, over a static memory plan.

A `CompiledModel` is made by `backend.build` (`compile_plan`, or `load_artifact` from a
saved artifact) and holds the plan, the kernels, the parameters, the workspace layout, the
native library and the target it was compiled for. `run` checks the arguments (name,
shape, dtype, contiguity) before any native code runs, then makes one native call. A
kernel whose operators have no compute definition runs in the interpreter instead; the
model then steps through its kernels from Python. `save(path)` writes an artifact with the
writer the build handed in.

Memory: a model says how many bytes it needs (`model_memory`) and refuses to be made when
that is more than the machine has, before allocating anything. Threads: `run` may be
called from several threads at once. Each call takes a workspace of its own from a small
pool (intermediates are never shared), its outputs are fresh arrays owned by the caller,
and nothing reads the caller's inputs after `run` returns. The native calls release the
GIL and run side by side; a parallel loop reached while another call's loop holds the
thread pool runs inline on its own thread (see `backend.codegen.threadpool`).
Inputs may be any CPU tensor with `__dlpack__` (read in place), and `run(..., out=...)`
writes the result into the caller's buffers, directly from the kernels when it can
(`backend.runtime.dlpack`).

Threads: a model runs with its own thread count, its target's `-num-threads` at first,
changed on the loaded model by `set_num_threads(n)` (no rebuild; other models keep
theirs): each call enters native code through the thread pool's `__relay_pool_enter`
(`backend.pool_abi`), which puts the count in force on the calling thread for the call.

The call path: `run(*arrays)` with numpy arrays exactly as the model takes them (shape,
dtype, C strides, aligned) and a result made of the kernels' outputs takes a fast path
(`_run_fast`): per input a few attribute checks, per output one `np.empty`, and one native
call that reads the arrays' data pointers itself. Anything else goes through the checked
path with its diagnostics. `bench/bench_call_overhead.py` measures what a call costs
beyond its kernels.
`bench/bench_concurrency.py` measures calls per second with one and several callers.
"""

from __future__ import annotations

import _ctypes
import ctypes
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from attrs import define, field, frozen

from ...lang.diagnostics import Error, InputError
from ...lang.dtype import dtype_of_array, numpy_dtype
from ...lang.expr import Function
from ...lang.tuples import tuple_leaves
from ...typecheck.show import shape_text
from .. import pool_abi
from ..kernel_cost import KernelCost
from ..target import Target, cpu_count
from . import dlpack, native
from .native import NativeLibrary, aligned_empty, data_address
from .plan import GraphPlan, MemoryPlan, OutputTree, flatten_tree

PROFILED_SUFFIX = "_profiled"
"""The profiling twin of a model's entry function is named `<entry>_profiled`
(`backend.codegen.entry` makes it; this layer does not import codegen)."""


@frozen
class KernelInfo:
    """One compiled kernel: its symbol, how many constants it lifted (passed after its
    inputs), or the primitive function run by the interpreter when it has no native code;
    `cost` what it does (None for an artifact saved without it)."""

    name: str
    lifted: tuple[int, ...] = ()
    fallback: Function | None = None
    cost: KernelCost | None = None


@frozen
class CompileStats:
    """Figures from compilation: seconds per stage, kernels, memory saved by planning."""

    seconds: Mapping[str, float]
    kernels: int
    fallback_kernels: int
    workspace_bytes: int
    saved_bytes: int


@define
class _CallFrame:
    """What one call of a model uses alone: its workspace (and the pointer to it), and the
    block the pool's entry functions read (`backend.pool_abi`: a header, then the input and
    output pointer tables, of which `in_ptrs`/`out_ptrs` are views), at `address`.
    `config` is the model's `_config` the header's function and thread words were last
    written for (None: written for something else)."""

    workspace: np.ndarray
    workspace_ptr: ctypes.c_void_p
    in_ptrs: Any
    out_ptrs: Any
    block: Any
    address: int
    config: Any = None


@frozen
class _Entry:
    """How calls reach the entry function of `library`: through the pool's `enter` (and
    `enter_arrays`) with the entry's (and its profiling twin's) address, or, when the
    library's functions are not native function pointers (a wrapper), by calling `plain`
    directly."""

    library: Any
    plain: Callable[..., None]
    address: int | None
    profiled_address: int | None
    enter: Callable[[int], None] | None
    enter_arrays: Callable[[int, int, int], int] | None


@define
class CompiledModel:
    """A model compiled to native code for `target`; `run(**inputs)` executes it.

    `slot_kind[s]` says where slot `s` lives (`input`, `output`, `param` or `workspace`,
    with an index); `saver` writes the artifact `save` makes. `run` is safe to call from
    several threads at once: each call has its own workspace (module docstring)."""

    plan: GraphPlan
    kernels: tuple[KernelInfo, ...]
    params: tuple[np.ndarray, ...]
    memory: MemoryPlan
    slot_kind: dict[int, tuple[str, int]]
    output_slots: tuple[int, ...]
    library: NativeLibrary
    entry_name: str | None
    stats: CompileStats
    target: Target
    saver: Callable[[CompiledModel, str | os.PathLike[str]], None] | None = None
    profiler: Callable[..., Any] | None = None
    _workspace: np.ndarray = field(init=False)
    _idle_frames: list[_CallFrame] = field(init=False, factory=list)
    _max_idle_frames: int = field(init=False, default=1)
    _param_ptrs: Any = field(init=False, default=None)
    _param_bounds: tuple[np.ndarray, np.ndarray] = field(init=False, default=None)
    _input_specs: list[tuple[str, tuple[int, ...], np.dtype, str]] = field(init=False, factory=list)
    _output_specs: list[tuple[tuple[int, ...], np.dtype]] = field(init=False, factory=list)
    _result_specs: Any = field(init=False, default=None)
    _threads: int = field(init=False, default=1)
    _entry: _Entry | None = field(init=False, default=None)
    _fast_inputs: tuple[tuple[tuple[int, ...], np.dtype, tuple[int, ...]], ...] | None = field(
        init=False, default=None
    )
    _fast_outputs: tuple[tuple[tuple[int, ...], np.dtype], ...] = field(init=False, default=())
    _single_output: bool = field(init=False, default=False)
    _config: Any = field(init=False, default=None)
    _align: Any = field(init=False, default=None)
    _out_strides: tuple[tuple[int, ...], ...] = field(init=False, default=())
    _param_spans: tuple[tuple[int, int], ...] = field(init=False, default=())
    _out_is_input: bool = field(init=False, default=False)
    _out_base: int = field(init=False, default=0)
    """Where the output pointer table starts in a frame's block, in words."""

    def __attrs_post_init__(self) -> None:
        for name, s in zip(self.plan.input_names, self.plan.input_slots):
            slot = self.plan.slots[s]
            shown = tensor_text(slot.shape, slot.dtype)
            self._input_specs.append((name, slot.shape, numpy_dtype(slot.dtype), shown))
        for s in self.output_slots:
            slot = self.plan.slots[s]
            self._output_specs.append((slot.shape, numpy_dtype(slot.dtype)))
        slots = self.plan.slots
        specs = {
            s: dlpack.TensorSpec(slots[s].shape, numpy_dtype(slots[s].dtype))
            for s in flatten_tree(self.plan.output)
        }
        self._result_specs = _map_tree(self.plan.output, specs)
        self._threads = min(self.target.num_threads, pool_abi.MAX_THREADS)
        self._out_base = pool_abi.HEADER + max(1, len(self.plan.input_names))
        self._plan_fast_path()
        check_model_fits(self.plan, self.memory, sum(p.nbytes for p in self.params))
        # Workspace offsets are multiples of 64 bytes from a 64-byte aligned base; parameters,
        # like inputs, need only element alignment.
        self._max_idle_frames = max(1, cpu_count())
        self.params = tuple(np.require(p, requirements="C") for p in self.params)
        self._param_ptrs = (ctypes.c_void_p * max(1, len(self.params)))(
            *[data_address(p) for p in self.params]
        )
        first = self._new_frame()
        self._workspace = first.workspace
        self._idle_frames.append(first)
        starts = np.array([data_address(p) for p in self.params], dtype=np.uint64)
        sizes = np.array([p.nbytes for p in self.params], dtype=np.uint64)
        self._param_bounds = (starts, starts + sizes)
        self._param_spans = tuple((int(a), int(a + n)) for a, n in zip(starts, sizes))
        self._out_is_input = "out" in self.plan.input_names

    @property
    def native(self) -> bool:
        """Whether every kernel runs as native code in one entry call."""
        return self.entry_name is not None

    @property
    def num_threads(self) -> int:
        """The most threads a call of this model uses (`set_num_threads`; at first the
        target's `-num-threads`)."""
        return self._threads

    def set_num_threads(self, n: int) -> None:
        """Run this model's calls on at most `n` threads from now on, without a rebuild
        (other models keep their own counts; calls already running keep theirs).

        Each parallel loop was planned at build time for the target's thread count `N`
        (`backend.lower.parallel_plan`): a call uses `min(n, the loop's planned threads)`
        threads for it, in the planned tasks. Below `N` the loops stay correct and share
        their tasks among fewer threads (as balanced as the task count allows); above `N`
        no loop takes more threads than its plan, so rebuild for `-num-threads=n` to use
        them. Loops whose extent is known only at run time take up to `n`."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InputError(f"the number of threads must be an integer of at least 1, got {n!r}")
        self._threads = min(n, pool_abi.MAX_THREADS)
        self._config = (self._entry, self._threads)  # frames rewrite their header

    @property
    def input_names(self) -> tuple[str, ...]:
        """`@main`'s parameter names, in order."""
        return self.plan.input_names

    def _check_inputs(self, args: tuple[Any, ...], inputs: Mapping[str, Any]) -> list[np.ndarray]:
        names = self.plan.input_names
        given: Any
        if not inputs and len(args) == len(names):
            given = args  # all by position: the common case, no mapping to build
        else:
            if len(args) > len(names):
                raise InputError(f"the model takes {len(names)} arguments, got {len(args)}")
            given = dict(enumerate(args))
            for key, value in inputs.items():
                if key not in names:
                    known = ", ".join(names) or "none"
                    raise InputError(f"unexpected argument `{key}` (the model's inputs: {known})")
                k = names.index(key)
                if k in given:
                    raise InputError(f"argument `{key}` is given twice")
                given[k] = value
        arrays = []
        for k, (name, shape, dt, expected) in enumerate(self._input_specs):
            if given is not args and k not in given:
                raise InputError(f"missing argument `{name}` ({expected})")
            value = given[k]
            if type(value) is np.ndarray and value.dtype == dt and value.shape == shape:
                flags = value.flags
                if flags.c_contiguous and flags.aligned:
                    arrays.append(value)
                    continue
            if dlpack.is_dlpack(value):
                value = dlpack.from_dlpack(value, f"argument `{name}`")
            if isinstance(value, (bool, int, float, np.generic)) and shape == ():
                value = np.asarray(value, dtype=dt)
            if not isinstance(value, np.ndarray):
                raise InputError(
                    f"argument `{name}`: expected {expected}, got a {type(value).__name__}"
                )
            if value.dtype != dt or value.shape != shape:
                try:
                    got = tensor_text(value.shape, dtype_of_array(value))
                except ValueError:  # a numpy dtype relay has no name for
                    got = f"an array of numpy dtype {value.dtype}, shape {shape_text(value.shape)}"
                raise InputError(f"argument `{name}`: expected {expected}, got {got}")
            if not value.flags.c_contiguous:
                raise InputError(
                    f"argument `{name}`: the array is not C-contiguous; the model reads "
                    "inputs in place and does not copy them (pass np.ascontiguousarray(...), "
                    "or .contiguous() for a torch tensor)"
                )
            if not value.flags.aligned:
                raise InputError(
                    f"argument `{name}`: the array's data is not aligned to its element size "
                    f"({value.dtype.itemsize} bytes); pass a copy (np.array(...))"
                )
            arrays.append(value)
        return arrays

    def run(self, *args: Any, out: Any = None, **inputs: Any) -> Any:
        """Run the model on inputs given by position or by `@main`'s parameter names: numpy
        arrays, or any C-contiguous CPU tensor with `__dlpack__` (a torch tensor), read in
        place without a copy. Returns fresh arrays owned by the caller: an array, or a
        tuple shaped like `@main`'s result type.

        `out` (keyword only) receives the result instead: a buffer (an array or any
        `__dlpack__` object) for a tensor result, a tuple of them shaped like a tuple
        result; `run` then returns `out`. A C-contiguous buffer that overlaps no input is
        written directly by the kernels; any other is filled by one copy at the end. When
        `@main` itself has a parameter named `out`, `out=` is that input."""
        if self._fast_inputs is not None and not (out is not None and self._out_is_input):
            given: tuple[Any, ...] | None = args
            if inputs:
                given = None if args else self._by_name(inputs)
            if given is not None:
                result = self._run_fast(given, out)
                if result is not None:
                    return result
        if out is not None and self._out_is_input:
            inputs = {**inputs, "out": out}
            out = None
        return self._execute(args, inputs, out, None)

    def _plan_fast_path(self) -> None:
        """Enable `_run_fast` for a native model whose result is its kernel outputs in
        order (a tensor, or a flat tuple of distinct outputs): what it checks per input
        (shape, dtype, C-contiguous strides) and allocates per output."""
        tree = self.plan.output
        leaves = [tree] if isinstance(tree, int) else list(tree)
        if self.entry_name is None or not leaves or leaves != list(self.output_slots):
            return
        if native.array_data_offset() is None:  # array objects cannot be handed over
            return
        inputs = [(shape, dt, c_strides(shape, dt)) for _, shape, dt, _ in self._input_specs]
        self._fast_inputs = tuple(inputs)
        self._fast_outputs = tuple(self._output_specs)
        self._out_strides = tuple(c_strides(shape, dt) for shape, dt in self._output_specs)
        self._single_output = isinstance(tree, int)

    def _by_name(self, inputs: Mapping[str, Any]) -> tuple[Any, ...] | None:
        """The arguments given all by name, in `@main`'s order (None when some are missing
        or unknown: the checked path says which)."""
        names = self.plan.input_names
        if len(inputs) != len(names):
            return None
        try:
            return tuple([inputs[name] for name in names])
        except KeyError:
            return None

    def _run_fast(self, args: tuple[Any, ...], out: Any = None) -> Any:
        """`run(*arrays)` (or by name, or with `out=` buffers) when every argument is a
        numpy array exactly as the model takes it (shape, dtype object, C strides, aligned
        data), every `out` buffer one the kernels can write (`_fast_buffers`) and the entry
        is reached through the pool: one native call, no other checks; None when anything
        differs (the checked path then runs and explains what is wrong)."""
        specs = self._fast_inputs
        if specs is None or len(args) != len(specs):
            return None
        for value, (shape, dt, strides) in zip(args, specs):
            if (
                type(value) is not np.ndarray
                or value.dtype is not dt
                or value.shape != shape
                or value.strides != strides
            ):
                return None
        entry = self._entry
        if entry is None or entry.library is not self.library:
            entry = self._resolve_entry()
        enter = entry.enter_arrays
        if enter is None:
            return None
        frames = self._idle_frames
        frame = frames.pop() if frames else self._new_frame()
        try:
            if frame.config is not self._config:
                self._configure(frame, entry)
            if out is None:
                outputs = [np.empty(shape, dt) for shape, dt in self._fast_outputs]
            else:
                buffers = self._fast_buffers(out, args)
                if buffers is None:
                    return None
                outputs = buffers
            block = frame.block
            if len(args) > 1 or len(outputs) > 1:  # the tables hold the others
                k = pool_abi.HEADER + 1
                for value in args[1:]:
                    block[k] = id(value)
                    k += 1
                k = self._out_base + 1
                for array in outputs[1:]:
                    block[k] = id(array)
                    k += 1
            refused = enter(frame.address, id(args[0]) if args else 0, id(outputs[0]))
        finally:
            if len(frames) < self._max_idle_frames:  # `_give_back`, inline
                frames.append(frame)
        if refused:  # a misaligned input
            return None
        if out is not None:
            return out
        return outputs[0] if self._single_output else tuple(outputs)

    def _fast_buffers(self, out: Any, args: tuple[Any, ...]) -> list[np.ndarray] | None:
        """`out` as the kernels' output buffers: a numpy array per output (a tuple or list
        of them for a tuple result) exactly as the output is (shape, dtype object, C
        strides), writeable, element-aligned, overlapping no input, parameter or other
        buffer; None otherwise (the checked path copies or explains)."""
        if self._single_output:
            buffers = [out]
        elif type(out) is tuple or type(out) is list:
            buffers = list(out)
        else:
            return None
        if len(buffers) != len(self._fast_outputs):
            return None
        spans = list(self._param_spans)
        for value in args:
            start = data_address(value)
            spans.append((start, start + value.nbytes))
        for buffer, (shape, dt), strides in zip(buffers, self._fast_outputs, self._out_strides):
            if (
                type(buffer) is not np.ndarray
                or buffer.dtype is not dt
                or buffer.shape != shape
                or buffer.strides != strides
                or not buffer.flags.writeable
            ):
                return None
            start = data_address(buffer)
            end = start + buffer.nbytes
            if start % dt.itemsize:
                return None
            for low, high in spans:
                if start < high and end > low and low < high:
                    return None
            spans.append((start, end))
        return buffers

    def _configure(self, frame: _CallFrame, entry: _Entry) -> None:
        """Write the entry function and this model's thread count into `frame`'s header."""
        frame.block[pool_abi.FUNCTION] = entry.address or 0
        frame.block[pool_abi.THREADS] = self._threads
        frame.config = self._config

    def _resolve_entry(self) -> _Entry:
        """How calls reach the entry function of the current `library` (cached until the
        library is replaced)."""
        library = self.library
        assert self.entry_name is not None
        plain = library.get(self.entry_name)
        enter = native.pool_enter()
        address = profiled = None
        if enter is not None and isinstance(plain, _ctypes.CFuncPtr):
            address = ctypes.cast(plain, ctypes.c_void_p).value
            twin = self.profiled_entry
            twin_fn = library.get(twin) if twin is not None else None
            if isinstance(twin_fn, _ctypes.CFuncPtr):
                profiled = ctypes.cast(twin_fn, ctypes.c_void_p).value
        arrays = native.pool_enter_arrays() if address else None
        entry = _Entry(library, plain, address, profiled, enter if address else None, arrays)
        self._entry = entry
        self._config = (entry, self._threads)
        return entry

    def _call_entry(self, frame: _CallFrame, stamps: np.ndarray | None) -> None:
        """Call the entry function (its profiling twin with `stamps`) on `frame`'s pointer
        tables with this model's thread count in force."""
        entry = self._entry
        if entry is None or entry.library is not self.library:
            entry = self._resolve_entry()
        if entry.enter is not None:
            block = frame.block
            frame.config = None  # the fast path rewrites the header
            block[pool_abi.THREADS] = self._threads
            if stamps is None:
                block[pool_abi.FUNCTION] = entry.address
                entry.enter(frame.address)
                return
            block[pool_abi.FUNCTION] = entry.profiled_address
            block[pool_abi.STAMPS] = stamps.ctypes.data
            try:
                entry.enter(frame.address)
            finally:
                block[pool_abi.STAMPS] = 0
            return
        # a library whose functions are wrapped: called directly, the count set around
        args: list[Any] = [frame.in_ptrs, frame.out_ptrs, self._param_ptrs, frame.workspace_ptr]
        fn = entry.plain
        if stamps is not None:
            fn = self.library.get(self.entry_name + PROFILED_SUFFIX)  # type: ignore[operator]
            args.append(ctypes.c_void_p(stamps.ctypes.data))
        before = native.set_call_threads(self._threads)
        try:
            fn(*args)
        finally:
            native.set_call_threads(before)

    @property
    def profiled_entry(self) -> str | None:
        """The profiling twin of the entry function (`backend.codegen.entry`), when the
        library has one (models built before it existed do not)."""
        if self.entry_name is None:
            return None
        name = self.entry_name + PROFILED_SUFFIX
        return name if name in getattr(self.library, "functions", {}) else None

    def run_profiled(self, stamps: np.ndarray, *args: Any, **inputs: Any) -> Any:
        """`run` through the profiling entry: `stamps` (int64, one more than the plan has
        steps) receives the monotonic clock in ns before the first kernel and after each
        (taken from Python when the model steps through its kernels from Python)."""
        if self.entry_name is not None and self.profiled_entry is None:
            raise Error("this model has no profiling entry (rebuild it with this version)")
        if stamps.dtype != np.int64 or stamps.shape != (len(self.plan.steps) + 1,):
            raise ValueError(f"stamps must be int64 of shape ({len(self.plan.steps) + 1},)")
        return self._execute(args, inputs, None, stamps)

    def profile(self, *args: Any, repeat: int = 10, warmup: int = 1, **inputs: Any) -> Any:
        """Run the model `warmup` + `repeat` times through its profiling entry with the
        thread pool's trace on and return a `Profile` (`relay.backend.profile`): per kernel
        call order, time, FLOPs, bytes and share of peak, per worker tasks and busy time, the
        time outside the kernels; `print(profile)` shows the table. When `@main` has a
        parameter named `repeat` or `warmup`, that keyword is the input."""
        options = {"repeat": repeat, "warmup": warmup}
        for name in [n for n in options if n in self.plan.input_names]:
            inputs = {**inputs, name: options.pop(name)}  # the input; the option's default
        if self.profiler is None:
            raise Error("this model cannot be profiled (it was made without a build)")
        return self.profiler(self, args, inputs, **options)

    def _execute(
        self, args: tuple[Any, ...], inputs: Mapping[str, Any], out: Any, stamps: Any
    ) -> Any:
        arrays = self._check_inputs(args, inputs)
        buffers = self._check_out(out) if out is not None else None
        direct = self._direct_outputs(buffers, arrays) if buffers else {}
        outputs = [
            buffers[direct[s]] if buffers is not None and s in direct else np.empty(shape, dt)
            for s, (shape, dt) in zip(self.output_slots, self._output_specs)
        ]
        by_slot = dict(zip(self.output_slots, outputs))
        frame = self._take_frame()
        workspace = frame.workspace
        try:
            if self.entry_name is not None:
                in_ptrs, out_ptrs = frame.in_ptrs, frame.out_ptrs
                for k, array in enumerate(arrays):
                    in_ptrs[k] = data_address(array)
                for k, array in enumerate(outputs):
                    out_ptrs[k] = data_address(array)
                self._call_entry(frame, stamps)
            else:
                self._run_steps(arrays, by_slot, workspace, stamps)
            if buffers is not None:
                self._fill_out(buffers, direct, arrays, by_slot, workspace)
                return out
            # Inputs and parameters in the result are copies: nothing the caller gets
            # aliases an input (or the model), and no input is read after `run` returns.
            return self._result(self.plan.output, arrays, by_slot, set(), workspace)
        finally:
            self._give_back(frame)

    def _check_out(self, out: Any) -> list[np.ndarray]:
        """The caller's output buffers, depth first, checked against the result's tree."""
        return dlpack.out_buffers(out, self._result_specs)

    def _direct_outputs(
        self, buffers: list[np.ndarray], arrays: list[np.ndarray]
    ) -> dict[int, int]:
        """The caller buffers the kernels can write directly, as kernel output slot →
        position in `buffers`: the first use of the slot in the result, a C-contiguous,
        element-aligned buffer that overlaps no input, parameter or other buffer (kernel
        arguments are `noalias`)."""
        direct: dict[int, int] = {}
        kernel_outputs = set(self.output_slots)
        for k, (s, buffer) in enumerate(zip(flatten_tree(self.plan.output), buffers)):
            if s not in kernel_outputs or s in direct:
                continue
            flags = buffer.flags
            if not (flags.c_contiguous and flags.aligned):
                continue
            rest = buffers[:k] + buffers[k + 1 :]
            if any(np.may_share_memory(buffer, o) for o in (*arrays, *rest)):
                continue
            if self._overlaps_params(buffer):
                continue
            direct[s] = k
        return direct

    def _overlaps_params(self, buffer: np.ndarray) -> bool:
        """Whether `buffer`'s bytes (C-contiguous) overlap any parameter's."""
        if not self.params or buffer.nbytes == 0:
            return False
        lo = data_address(buffer)
        starts, ends = self._param_bounds
        return bool(np.any((starts < lo + buffer.nbytes) & (ends > lo)))

    def _fill_out(
        self,
        buffers: list[np.ndarray],
        direct: dict[int, int],
        arrays: list[np.ndarray],
        by_slot: dict[int, np.ndarray],
        workspace: np.ndarray,
    ) -> None:
        """Copy into each caller buffer the kernels did not write directly. An input that
        is part of the result and overlaps a buffer is read before any buffer is written."""
        pending = []
        for k, (s, buffer) in enumerate(zip(flatten_tree(self.plan.output), buffers)):
            if direct.get(s) == k:
                continue
            source = self._slot_array(s, arrays, by_slot, workspace)
            if self.slot_kind[s][0] == "input" and any(
                np.may_share_memory(source, b) for b in buffers
            ):
                source = source.copy()
            pending.append((buffer, source))
        for buffer, source in pending:
            np.copyto(buffer, source)

    def _new_frame(self) -> _CallFrame:
        workspace = aligned_empty((max(1, self.memory.workspace_bytes),), np.uint8)
        word = ctypes.sizeof(ctypes.c_uint64)
        n_in, n_out = max(1, len(self.plan.input_names)), max(1, len(self.output_slots))
        block = (ctypes.c_uint64 * (pool_abi.HEADER + n_in + n_out))()
        in_ptrs = (ctypes.c_void_p * n_in).from_buffer(block, pool_abi.HEADER * word)
        out_ptrs = (ctypes.c_void_p * n_out).from_buffer(block, self._out_base * word)
        tables = (in_ptrs, out_ptrs, self._param_ptrs)
        for k, table in zip(pool_abi.ARGUMENTS, tables):
            block[k] = ctypes.addressof(table)
        block[pool_abi.ARGUMENTS[3]] = data_address(workspace)
        block[pool_abi.INPUTS] = len(self.plan.input_names)
        block[pool_abi.OUTPUTS] = len(self.output_slots)
        if self._align is None:
            masks = [dt.itemsize - 1 for _, _, dt, _ in self._input_specs]
            self._align = (ctypes.c_uint64 * n_in)(*masks)
        block[pool_abi.ALIGN] = ctypes.addressof(self._align)
        block[pool_abi.OBJECT_DATA] = native.array_data_offset() or 0
        return _CallFrame(
            workspace,
            ctypes.c_void_p(data_address(workspace)),
            in_ptrs,
            out_ptrs,
            block,
            ctypes.addressof(block),
        )

    def _take_frame(self) -> _CallFrame:
        """A frame no other call is using: an idle one, else a new one. (`list.pop` and
        `list.append` are atomic under the GIL, so the pool needs no lock; two calls may
        at worst both append, one frame more than the bound.)"""
        try:
            return self._idle_frames.pop()
        except IndexError:
            return self._new_frame()

    def _give_back(self, frame: _CallFrame) -> None:
        """Keep `frame` for later calls (about one per CPU stays allocated)."""
        if len(self._idle_frames) < self._max_idle_frames:
            self._idle_frames.append(frame)

    def _slot_array(
        self,
        s: int,
        arrays: list[np.ndarray],
        outputs: dict[int, np.ndarray],
        workspace: np.ndarray,
    ) -> np.ndarray:
        slot = self.plan.slots[s]
        kind, index = self.slot_kind[s]
        if kind == "input":
            return arrays[index]
        if kind == "param":
            return self.params[index]
        if kind == "output":
            return outputs[s]
        offset = self.memory.offsets[s]
        view = workspace[offset : offset + slot.nbytes].view(numpy_dtype(slot.dtype))
        return view.reshape(slot.shape)

    def _run_steps(
        self,
        arrays: list[np.ndarray],
        by_slot: dict[int, np.ndarray],
        workspace: np.ndarray,
        stamps: np.ndarray | None = None,
    ) -> None:
        before = native.set_call_threads(self._threads)
        try:
            self._run_kernels(arrays, by_slot, workspace, stamps)
        finally:
            native.set_call_threads(before)

    def _run_kernels(
        self,
        arrays: list[np.ndarray],
        by_slot: dict[int, np.ndarray],
        workspace: np.ndarray,
        stamps: np.ndarray | None,
    ) -> None:
        if stamps is not None:
            stamps[0] = time.monotonic_ns()
        for k, step in enumerate(self.plan.steps):
            info = self.kernels[step.kernel]
            ins = [self._slot_array(s, arrays, by_slot, workspace) for s in step.inputs]
            outs = [self._slot_array(s, arrays, by_slot, workspace) for s in step.outputs]
            if info.fallback is not None:
                _run_fallback(info.fallback, ins, outs)
            else:
                lifted = [self.params[j] for j in info.lifted]
                ptrs = [a.ctypes.data for a in (*ins, *lifted, *outs)]
                self.library.get(info.name)(*[ctypes.c_void_p(p) for p in ptrs])
            if stamps is not None:
                stamps[k + 1] = time.monotonic_ns()

    def _result(
        self,
        tree: OutputTree,
        arrays: list[np.ndarray],
        outputs: dict[int, np.ndarray],
        handed: set[int],
        workspace: np.ndarray,
    ) -> Any:
        """The result shaped like `tree`: a kernel output the first time its slot appears,
        a copy for inputs, parameters and repeated slots (results never alias)."""
        if isinstance(tree, int):
            array = self._slot_array(tree, arrays, outputs, workspace)
            if tree in outputs and tree not in handed:
                handed.add(tree)
                return array
            return array.copy()
        return tuple(self._result(t, arrays, outputs, handed, workspace) for t in tree)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the artifact (object code, plan, parameters, target in one zip file) that
        `relay.load(path)` runs again without recompiling."""
        if self.saver is None:
            raise Error("this compiled model cannot be saved (it was made without a build)")
        self.saver(self, path)


def c_strides(shape: tuple[int, ...], dt: np.dtype) -> tuple[int, ...]:
    """The strides numpy gives a C-contiguous array of `shape` and `dt`."""
    strides, step = [], dt.itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def model_memory(plan: GraphPlan, memory: MemoryPlan, param_bytes: int) -> dict[str, int]:
    """Bytes a model needs to run once, by use: `inputs`, `outputs` (every leaf of the
    result), `parameters` and `workspace` (exact integers, never wrapped)."""
    return {
        "inputs": sum(plan.slots[s].nbytes for s in plan.input_slots),
        "outputs": sum(plan.slots[s].nbytes for s in flatten_tree(plan.output)),
        "parameters": param_bytes,
        "workspace": memory.workspace_bytes,
    }


def check_model_fits(plan: GraphPlan, memory: MemoryPlan, param_bytes: int) -> None:
    """An `Error` saying how many bytes the model needs when this machine cannot hold them
    (checked before anything of that size is allocated)."""
    needs = model_memory(plan, memory, param_bytes)
    detail = ", ".join(f"{what} {n}" for what, n in needs.items())
    native.check_fits(sum(needs.values()), "the model", detail)


def _map_tree(tree: OutputTree, leaves: Mapping[int, Any]) -> Any:
    """`tree` with each slot index replaced by `leaves[slot]` (iteratively)."""
    if isinstance(tree, int):
        return leaves[tree]
    done: dict[int, tuple[Any, ...]] = {}
    stack: list[tuple[tuple[Any, ...], bool]] = [(tree, False)]
    while stack:
        node, expanded = stack.pop()
        if not expanded:
            stack.append((node, True))
            stack.extend((t, False) for t in node if not isinstance(t, int))
            continue
        done[id(node)] = tuple(leaves[t] if isinstance(t, int) else done[id(t)] for t in node)
    return done[id(tree)]


def _run_fallback(fn: Function, ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
    """Run primitive function `fn` in the interpreter, writing its results into `outs`."""
    from ...lang.module import IRModule
    from .interpreter import Interpreter
    from .values import Closure

    result = Interpreter(IRModule()).call(Closure(fn, None, None), list(ins))
    for o, v in zip(outs, tuple_leaves(result)):
        o[...] = v


def tensor_text(shape: tuple[int, ...], dtype: str) -> str:
    """A tensor type as the text format writes it: `Tensor[(2, 3), float32]`, or just the
    dtype for a scalar."""
    return f"Tensor[{shape_text(shape)}, {dtype}]" if shape else dtype
