"""The persistent compile cache (`codegen.cache`, on with `$RELAY_CACHE_DIR`): a second
build of the same kernels for the same target loads the stored object code; another target
misses; a damaged entry is a miss that is compiled again and rewritten; the key tells apart
kernels that differ only in which variable they use."""

import numpy as np
import pytest
import relay
from relay.backend.codegen import cache
from relay.backend.target import Target
from relay.backend.tir.buffer import decl_buffer
from relay.backend.tir.expr import BufferLoad, IntImm, Var
from relay.backend.tir.stmt import BufferStore, For, ForKind, PrimFunc

CONV = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 10, 10), float32], %w: Tensor[(8, 4, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
  nn.relu(%0)
}
"""


def _inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "x": rng.standard_normal((1, 4, 10, 10)).astype("float32"),
        "w": rng.standard_normal((8, 4, 3, 3)).astype("float32"),
    }


def _build(target: str = "llvm -num-threads=1"):
    model = relay.build(relay.parse(CONV), target=target)
    return model, dict(model.stats.seconds)


def _entries(tmp_path) -> list:
    return sorted((tmp_path / "kernels").glob("*.o"))


@pytest.fixture
def cache_on(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    return tmp_path


def test_second_build_loads_the_stored_code(cache_on):
    expected = relay.interpret(relay.parse(CONV), **_inputs())
    first, seconds = _build()
    assert "cached" not in seconds and "tir+codegen" in seconds
    assert len(_entries(cache_on)) == 1
    second, seconds = _build()
    assert "cached" in seconds and "tir+codegen" not in seconds
    assert second.library.llvm_ir is None  # loaded, not compiled
    np.testing.assert_allclose(second.run(**_inputs()), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(second.run(**_inputs()), first.run(**_inputs()))


def test_another_target_misses(cache_on):
    _build("llvm -num-threads=1")
    _, seconds = _build("llvm -num-threads=2")
    assert "cached" not in seconds
    assert len(_entries(cache_on)) == 2


def test_the_key_covers_the_targets_features():
    host = Target.host()
    other = Target(kind=host.kind, cpu=host.cpu, features=host.features[1:])
    func = _copy_kernel(use_outer=False)
    assert cache.library_key([func], None, "m", host, True) != cache.library_key(
        [func], None, "m", other, True
    )


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_a_damaged_entry_is_compiled_again_and_rewritten(cache_on, damage):
    expected = relay.interpret(relay.parse(CONV), **_inputs())
    _build()
    (path,) = _entries(cache_on)
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        path.write_bytes(data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:])
    else:
        path.write_bytes(b"not object code")
    assert cache.read_entry(path) is None
    model, seconds = _build()
    assert "cached" not in seconds
    np.testing.assert_allclose(model.run(**_inputs()), expected, rtol=1e-5, atol=1e-5)
    assert cache.read_entry(path) is not None  # rewritten
    _, seconds = _build()
    assert "cached" in seconds


def test_off_without_the_environment_variable(tmp_path, monkeypatch):
    monkeypatch.delenv(cache.CACHE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    _, seconds = _build()
    assert "cached" not in seconds and "tir" in seconds
    assert cache.cache_dir() is None


def _copy_kernel(use_outer: bool) -> PrimFunc:
    """`for i: for j: out[i*4 + j] = inp[(i if use_outer else j)]`, with both loop
    variables named `i` (so only the variables' identities tell the kernels apart)."""
    inp = decl_buffer((4,), "float32", "inp")
    out = decl_buffer((16,), "float32", "out")
    i, j = Var("i", "int64"), Var("i", "int64")
    value = BufferLoad(inp, (i if use_outer else j,))
    store = BufferStore(out, value, (i * 4 + j,))
    inner = For(j, IntImm(0), IntImm(4), ForKind.SERIAL, store)
    body = For(i, IntImm(0), IntImm(4), ForKind.SERIAL, inner)
    return PrimFunc("copy", (inp, out), body)


def test_the_key_tells_variables_apart_not_their_names():
    a, b = _copy_kernel(use_outer=True), _copy_kernel(use_outer=False)
    assert cache.kernel_text(a) != cache.kernel_text(b)
    assert cache.kernel_text(a) == cache.kernel_text(_copy_kernel(use_outer=True))
    host = Target.host()
    assert cache.library_key([a], None, "m", host, True) != cache.library_key(
        [b], None, "m", host, True
    )
