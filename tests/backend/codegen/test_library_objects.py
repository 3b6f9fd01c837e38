"""A library made of several object files (`compile.link_objects`, as a build in worker
processes makes it): each kernel computes exactly what it computes when compiled in one
object, however many objects load into one engine; the archive round-trips through
`load_library`; symbols are renamed in place; damaged archives are clear errors."""

import numpy as np
import pytest
from relay.backend.codegen.compile import (
    compile_module,
    kernel_object,
    link_objects,
    load_library,
    object_members,
    pack_objects,
    rename_symbols,
    undefined_symbols,
)
from relay.backend.codegen.llvm_types import CodegenError
from relay.backend.runtime.native import aligned_empty
from relay.backend.tir.buffer import decl_buffer
from relay.backend.tir.expr import BufferLoad, IntImm, Var
from relay.backend.tir.stmt import BufferStore, For, ForKind, PrimFunc
from relay.backend.tir.transform import lower_pipeline

N = 64


def _affine_kernel(name: str, scale: float, shift: float) -> PrimFunc:
    """`out[i] = inp[i] * scale + shift` over `N` floats in a parallel loop: its machine code
    reads constants from the object's constant pool and calls the thread pool (outside
    symbols). Position-independent large-model objects reach both through a GOT, and
    several of them loaded in one engine crashed (RuntimeDyld resolves every object's
    constant-pool offsets against the first object's GOT)."""
    inp = decl_buffer((N,), "float32", "inp")
    out = decl_buffer((N,), "float32", "out")
    i = Var("i", "int64")
    value = BufferLoad(inp, (i,)) * scale + shift
    return PrimFunc(
        name,
        (inp, out),
        For(i, IntImm(0), IntImm(N), ForKind.PARALLEL, BufferStore(out, value, (i,))),
    )


COEFFS = [(1.5, 0.25), (-3.0, 7.0), (0.125, -2.5), (10.0, 1.0)]


def _run(library, name: str) -> np.ndarray:
    inp = aligned_empty((N,), "float32")
    inp[:] = np.arange(N, dtype="float32") * 0.5 - 7.0
    out = aligned_empty((N,), "float32")
    library.run(name, inp, out)
    return out


def _parts() -> tuple[list[PrimFunc], list[bytes]]:
    funcs = [_affine_kernel(f"aff{k}", s, b) for k, (s, b) in enumerate(COEFFS)]
    objects = [kernel_object([lower_pipeline(f)], name=f.name) for f in funcs]
    return funcs, objects


def test_each_object_of_a_library_reads_its_own_constants():
    funcs, objects = _parts()
    library = link_objects(objects, funcs, name="lib")
    one_piece = compile_module([lower_pipeline(f) for f in funcs], name="lib")
    x = np.arange(N, dtype="float32") * 0.5 - 7.0
    for f, (scale, shift) in zip(funcs, COEFFS, strict=True):
        got = _run(library, f.name)
        np.testing.assert_array_equal(got, _run(one_piece, f.name))
        np.testing.assert_allclose(got, x * np.float32(scale) + np.float32(shift), rtol=1e-6)
    assert len(object_members(library.object_code)) == len(objects) + 1  # and the entry's
    again = load_library(library.object_code)
    for f in funcs:
        np.testing.assert_array_equal(_run(again, f.name), _run(library, f.name))


def test_parts_are_renamed_in_their_object_code():
    funcs, objects = _parts()
    final = [_affine_kernel(f"model_abc_{f.name}", s, b) for f, (s, b) in zip(funcs, COEFFS)]
    renames = {f.name: g.name for f, g in zip(funcs, final, strict=True)}
    library = link_objects(objects, final, name="lib", renames=renames)
    assert sorted(library.names()) == sorted(renames.values())
    for f, g in zip(funcs, final, strict=True):
        np.testing.assert_array_equal(
            _run(library, g.name), _run(link_objects([objects[funcs.index(f)]], [f]), f.name)
        )
    renamed = rename_symbols(objects[0], {"aff0": "a_much_longer_name_than_before"})
    assert "aff0" not in renamed.split(b"\0")
    with pytest.raises(CodegenError, match="no part of the library defines aff1"):
        link_objects(objects[:1], funcs[:2], name="lib")


def test_an_archive_unpacks_to_its_members_and_damage_is_an_error():
    members = [b"\x7fELF" + bytes(range(k + 3)) for k in range(3)]  # odd and even sizes
    packed = pack_objects(members)
    assert packed.startswith(b"!<arch>\n")
    assert object_members(packed) == members
    assert pack_objects(members[:1]) == members[0]
    with pytest.raises(CodegenError, match="damaged"):
        object_members(packed[:-2])
    with pytest.raises(CodegenError, match="damaged"):
        object_members(packed[:8] + b"x" * 60)
    with pytest.raises(CodegenError, match="damaged"):
        load_library(packed + b"__relay_manifest")


def test_symbols_defined_by_one_member_are_not_undefined():
    funcs, objects = _parts()
    library = link_objects(objects, funcs, name="lib")
    needed = undefined_symbols(library.object_code)
    assert not any(name.startswith("aff") for name in needed)
