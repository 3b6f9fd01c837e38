"""Huge shapes: a tensor type whose byte size exceeds memory (or a 64-bit size) is a fine
type — `relay check` accepts it — but building or running such a model says how many
bytes it needs and refuses cleanly, before allocating anything."""

import numpy as np
import pytest
import relay
from relay.backend.runtime import native
from relay.backend.runtime.plan import Slot, tensor_nbytes
from relay.cli import main as cli_main
from relay.lang.types import TensorType
from relay.runio import random_input

HUGE = """#[version = "0.0.5"]
def @main(%x: Tensor[(100000, 100000, 100000), float32],
          %y: Tensor[(100000, 100000, 100000), float32]) {
  %0 = add(%x, %y);
  nn.relu(%0)
}
"""
HUGE_BYTES = 3 * 100000**3 * 4  # two inputs and the output

OVERFLOW = """#[version = "0.0.5"]
def @main(%x: Tensor[(100000000000, 100000000000, 100000000000), float32]) {
  nn.relu(%x)
}
"""

# Small inputs, an output of 4 TB: only the plan knows how much the model needs.
WIDE = """#[version = "0.0.5"]
def @main(%x: Tensor[(1000000, 1), float32], %y: Tensor[(1, 1000000), float32]) {
  add(%x, %y)
}
"""

# A fused-away intermediate of 4e33 bytes: nothing is stored, but its loops would overflow.
FUSED = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 1), float32]) {
  %0 = broadcast_to(%x, shape=[100000000000, 100000000000, 100000000000]);
  %1 = nn.relu(%0);
  sum(%1)
}
"""

SMALL = """#[version = "0.0.5"]
def @main(%x: Tensor[(512, 512), float32], %y: Tensor[(512, 512), float32]) {
  %0 = add(%x, %y);
  %1 = nn.relu(%0);
  %2 = multiply(%1, %x);
  nn.dense(%2, %y)
}
"""
SMALL_BYTES = 4 * 512 * 512 * 4  # two inputs, one workspace intermediate, the output


@pytest.fixture
def files(tmp_path):
    paths = {}
    for name, text in {"huge": HUGE, "overflow": OVERFLOW, "wide": WIDE, "small": SMALL}.items():
        paths[name] = tmp_path / f"{name}.relay"
        paths[name].write_text(text)
    return paths


def test_byte_sizes_are_exact_and_never_wrap():
    assert Slot((2**40, 2**40), "float32", "input", 0).nbytes == 2**82
    assert tensor_nbytes((100000, 100000, 100000), "float64") == 8 * 10**15
    assert tensor_nbytes((), "int8") == 1


def test_check_accepts_huge_types(files, capsys):
    for name in ("huge", "overflow"):
        assert cli_main(["check", str(files[name])]) == 0
        assert "Tensor[(100000" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("command", "needed"),
    [
        (["build"], f"the model needs {HUGE_BYTES} bytes"),  # inputs, outputs, workspace
        (["run"], "the model needs 4000000000000000 bytes"),  # its random input `x`
        (["run", "--target", "interp"], "the model needs 4000000000000000 bytes"),
    ],
)
def test_build_and_run_say_how_many_bytes_and_refuse(files, capsys, command, needed):
    assert cli_main([*command, str(files["huge"])]) == 1
    err = capsys.readouterr().err
    assert needed in err and "GiB) of memory" in err and "more than this machine has" in err
    assert "Traceback" not in err and "internal error" not in err


def test_a_byte_size_past_64_bits_is_an_error_not_a_wrap(files, capsys):
    tensor = 4 * 10**33
    for command, needed in (
        (["build"], 2 * tensor),  # the input and the output
        (["run"], tensor),  # its random input
        (["run", "--target", "interp"], tensor),
    ):
        assert cli_main([*command, str(files["overflow"])]) == 1
        err = capsys.readouterr().err
        assert f"the model needs {needed} bytes" in err, err
        assert "more than a 64-bit size can hold" in err


def test_a_fused_intermediate_past_64_bits_is_an_error_at_its_expression(tmp_path, capsys):
    source = tmp_path / "fused.relay"
    source.write_text(FUSED)
    assert cli_main(["build", str(source), "-o", str(tmp_path / "f.relaymod")]) == 1
    err = capsys.readouterr().err
    assert f"{source}:3:8: error: the model computes a Tensor[(100000000000," in err
    assert "4000000000000000000000000000000000 bytes, more than a 64-bit size" in err
    assert "^~~~" in err and not (tmp_path / "f.relaymod").exists()


def test_the_build_counts_outputs_and_the_workspace_not_just_inputs(files, capsys):
    with pytest.raises(relay.Error) as info:
        relay.build(relay.parse(WIDE))
    message = info.value.message
    assert f"the model needs {8_000_000 + 4 * 10**12} bytes" in message
    assert "outputs 4000000000000" in message and "inputs 8000000" in message
    assert cli_main(["run", str(files["wide"])]) == 1
    assert "the model needs 4000008000000 bytes" in capsys.readouterr().err


def test_the_limit_is_this_machines_memory(monkeypatch):
    assert native.memory_limit_bytes() > 2**20
    module = relay.parse(SMALL)
    model = relay.build(module, target="llvm -num-threads=1")
    assert model.memory.workspace_bytes == 512 * 512 * 4
    monkeypatch.setattr(native, "memory_limit_bytes", lambda: SMALL_BYTES - 1)
    with pytest.raises(relay.Error, match=f"the model needs {SMALL_BYTES} bytes"):
        relay.build(module, target="llvm -num-threads=1")
    monkeypatch.setattr(native, "memory_limit_bytes", lambda: SMALL_BYTES)
    assert relay.build(module, target="llvm -num-threads=1").native


def test_loading_an_artifact_too_big_for_this_machine_is_refused(tmp_path, monkeypatch, capsys):
    module = relay.parse(SMALL)
    path = tmp_path / "small.relaymod"
    relay.build(module, target="llvm -num-threads=1").save(path)
    monkeypatch.setattr(native, "memory_limit_bytes", lambda: 2**20)
    with pytest.raises(relay.Error, match=f"the model needs {SMALL_BYTES} bytes"):
        relay.load(path)
    assert cli_main(["run", str(path)]) == 1
    assert f"the model needs {SMALL_BYTES} bytes" in capsys.readouterr().err


def test_random_inputs_are_refused_before_allocating():
    rng = np.random.default_rng(0)
    huge = TensorType((100000, 100000, 100000), "float32")
    with pytest.raises(relay.Error, match=r"the model needs 4000000000000000 bytes .* input `x`"):
        random_input("x", huge, rng)
    assert random_input("x", TensorType((2, 3), "float32"), rng).shape == (2, 3)


def test_the_memory_limit_honours_a_cgroup_limit(tmp_path, monkeypatch):
    physical = native.memory_limit_bytes()
    unlimited, limited = tmp_path / "max", tmp_path / "limit"
    unlimited.write_text("max\n")
    limited.write_text("1048576\n")
    monkeypatch.setattr(native, "_CGROUP_LIMITS", (unlimited,))
    assert native.memory_limit_bytes() == physical
    monkeypatch.setattr(native, "_CGROUP_LIMITS", (unlimited, limited))
    assert native.memory_limit_bytes() == min(physical, 1048576)
