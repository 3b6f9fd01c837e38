"""The model entry function (one native call runs every kernel in order) and saving object
code, then loading it without recompiling, in this process and in a fresh one."""

import ctypes
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from relay.backend import tir
from relay.backend.codegen import (
    BufferRef,
    CodegenError,
    EntryPlan,
    KernelCall,
    compile_module,
    load_library,
)
from relay.backend.runtime.native import aligned_copy, aligned_empty

N = 1000


def binary(name, fn, kind=tir.ForKind.SERIAL):
    a, b, c = (tir.decl_buffer((N,), "float32", x) for x in "abc")
    i = tir.Var("i")
    return tir.PrimFunc(
        name, (a, b, c), tir.For(i, 0, N, kind, tir.BufferStore(c, fn(a.load(i), b.load(i)), (i,)))
    )


def relu():
    a, b = tir.decl_buffer((N,), "float32", "a"), tir.decl_buffer((N,), "float32", "b")
    i = tir.Var("i")
    return tir.PrimFunc(
        "relu",
        (a, b),
        tir.For(
            i,
            0,
            N,
            tir.ForKind.PARALLEL,
            tir.BufferStore(b, tir.max_(a.load(i), tir.const(0.0)), (i,)),
        ),
    )


def model_plan():
    # out0 = relu((x0 + p0) * x1); out1 = x0 + p0; the intermediates live in the workspace
    ws = lambda off: BufferRef("workspace", 0, off)  # noqa: E731
    return EntryPlan(
        "run_model",
        (
            KernelCall("add", (BufferRef("input", 0), BufferRef("param", 0), ws(0))),
            KernelCall("mul", (ws(0), BufferRef("input", 1), ws(4096))),
            KernelCall("relu", (ws(4096), BufferRef("output", 0))),
            KernelCall(
                "add", (BufferRef("input", 0), BufferRef("param", 0), BufferRef("output", 1))
            ),
        ),
    )


def kernels():
    return [
        binary("add", lambda x, y: x + y),
        binary("mul", lambda x, y: x * y, tir.ForKind.PARALLEL),
        relu(),
    ]


def pointers(*arrays):
    table = (ctypes.c_void_p * max(len(arrays), 1))(*(a.ctypes.data for a in arrays))
    return table


def run_entry(lib, x0, x1, p0):
    out0, out1 = aligned_empty(N, "float32"), aligned_empty(N, "float32")
    workspace = aligned_empty(8192, "uint8")
    ins, outs, params = pointers(x0, x1), pointers(out0, out1), pointers(p0)
    lib.get("run_model")(
        ctypes.addressof(ins),
        ctypes.addressof(outs),
        ctypes.addressof(params),
        workspace.ctypes.data,
    )
    return out0, out1


def inputs():
    rng = np.random.default_rng(0)
    return [aligned_copy(rng.standard_normal(N).astype(np.float32)) for _ in range(3)]


def test_entry_runs_the_whole_model_in_one_call():
    lib = compile_module(kernels(), model_plan(), name="model")
    assert lib.entry == "run_model" and lib.functions["run_model"] == 4
    x0, x1, p0 = inputs()
    out0, out1 = run_entry(lib, x0, x1, p0)
    np.testing.assert_array_equal(out1, x0 + p0)
    np.testing.assert_allclose(out0, np.maximum((x0 + p0) * x1, 0), rtol=1e-6)


def test_entry_plans_are_validated():
    with pytest.raises(ValueError):
        BufferRef("scratch", 0)
    with pytest.raises(ValueError):
        BufferRef("input", -1)
    with pytest.raises(ValueError, match="multiple of 64"):
        BufferRef("workspace", 0, 100)
    bad_kernel = EntryPlan("e", (KernelCall("nope", (BufferRef("input", 0),)),))
    with pytest.raises(CodegenError, match="unknown kernel"):
        compile_module(kernels(), bad_kernel)
    bad_arity = EntryPlan("e", (KernelCall("relu", (BufferRef("input", 0),)),))
    with pytest.raises(CodegenError, match="takes 2"):
        compile_module(kernels(), bad_arity)
    with pytest.raises(CodegenError, match="clashes"):
        compile_module(kernels(), EntryPlan("relu", ()))


def test_load_library_in_this_process_reuses_the_pool():
    lib = compile_module(kernels(), model_plan())
    x0, x1, p0 = inputs()
    first = run_entry(lib, x0, x1, p0)
    before = len(os.listdir("/proc/self/task"))
    again = [load_library(lib.object_code) for _ in range(3)]
    for loaded in again:
        assert loaded.llvm_ir is None and loaded.names() == lib.names()
        for want, got in zip(first, run_entry(loaded, x0, x1, p0)):
            np.testing.assert_array_equal(got, want)
    assert len(os.listdir("/proc/self/task")) == before
    with pytest.raises(CodegenError):
        load_library(b"not an object file")
    with pytest.raises(CodegenError, match="damaged"):
        load_library(lib.object_code[:200] + b"__relay_manifest")


LOAD_SCRIPT = textwrap.dedent(
    """
    import ctypes, sys
    import numpy as np
    from relay.backend.codegen import load_library
    from relay.backend.runtime.native import aligned_copy, aligned_empty
    import relay.backend.codegen.compile as compile_mod

    called = []
    compile_mod.compile_module = lambda *a, **k: called.append(1)  # loading must not compile
    data = np.load(sys.argv[2])
    with open(sys.argv[1], "rb") as f:
        lib = load_library(f.read())
    x0, x1, p0 = (aligned_copy(data[k]) for k in ("x0", "x1", "p0"))
    n = len(x0)
    out0, out1 = aligned_empty(n, "float32"), aligned_empty(n, "float32")
    ws = aligned_empty(8192, "uint8")
    table = lambda *arrs: (ctypes.c_void_p * len(arrs))(*(a.ctypes.data for a in arrs))
    ins, outs, params = table(x0, x1), table(out0, out1), table(p0)
    lib.get("run_model")(ctypes.addressof(ins), ctypes.addressof(outs), ctypes.addressof(params), ws.ctypes.data)
    single = aligned_empty(n, "float32")
    lib.run("mul", x0, x1, single)
    np.savez(sys.argv[3], out0=out0, out1=out1, single=single)
    assert not called
    print("loaded", sorted(lib.names()))
    """
)


def test_saved_object_code_runs_in_a_fresh_process(tmp_path):
    lib = compile_module(kernels(), model_plan())
    x0, x1, p0 = inputs()
    obj = tmp_path / "model.o"
    obj.write_bytes(lib.object_code)
    np.savez(tmp_path / "in.npz", x0=x0, x1=x1, p0=p0)
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            LOAD_SCRIPT,
            str(obj),
            str(tmp_path / "in.npz"),
            str(tmp_path / "out.npz"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "loaded ['add', 'mul', 'relu', 'run_model', 'run_model_profiled']" in proc.stdout
    got = np.load(tmp_path / "out.npz")
    want0, want1 = run_entry(lib, x0, x1, p0)
    np.testing.assert_array_equal(got["out0"], want0)
    np.testing.assert_array_equal(got["out1"], want1)
    np.testing.assert_array_equal(got["single"], x0 * x1)
