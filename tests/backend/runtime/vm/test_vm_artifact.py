"""VM models save to an artifact and load back (`relay.load`) as VM models that agree with
the original; damaged or edited artifacts are refused with an `ArtifactError`."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import relay
from relay.backend.build.artifact import ArtifactError
from relay.backend.runtime import ConstructorValue, interpret
from relay.backend.runtime.vm import VMModel
from relay.passes import values_close

sys.path.insert(0, str(Path(__file__).parent))
from artifact_edit import edited_artifact
from test_vm_models import model_and_inputs

TARGET = "llvm -num-threads=1"

CLOSURES = """#[version = "0.0.5"]
def @main(%xs: List[Tensor[(3), float32]], %w: Tensor[(3), float32]) {
  let %acc = ref(%w);
  let %step = fn (%x: Tensor[(3), float32]) {
    ref_write(%acc, add(multiply(%x, %w), ref_read(%acc)));
    negative(%x)
  };
  let %ys = @map(%step, %xs);
  let %zs = @map(fn (%y: Tensor[(3), float32]) { exp(%y) }, %ys);
  match (%zs) {
    Cons(%z, _) => (ref_read(%acc), %z, @length(%zs)),
    Nil => (ref_read(%acc), %w, 0),
  }
}
"""


@pytest.fixture(scope="module")
def lstm(tmp_path_factory):
    module, inputs = model_and_inputs("lstm")
    model = relay.build(module, target=TARGET)
    path = tmp_path_factory.mktemp("vm") / "lstm.relaymod"
    model.save(path)
    return model, inputs, path


@pytest.mark.parametrize("name", ["lstm", "treelstm"])
def test_example_round_trips_and_the_loaded_model_runs_in_the_vm(name, tmp_path):
    module, inputs = model_and_inputs(name)
    model = relay.build(module, target=TARGET)
    assert isinstance(model, VMModel)
    model.save(tmp_path / "m.relaymod")
    loaded = relay.load(tmp_path / "m.relaymod")
    assert isinstance(loaded, VMModel)
    expected = model.run(**inputs)
    assert values_close(expected, loaded.run(**inputs), 0.0, 0.0)
    assert values_close(interpret(module, **inputs), loaded.run(**inputs), 2e-4, 2e-5)
    stats = loaded.stats
    assert stats.executor == "vm" and stats.interpreted_calls == 0
    assert stats.native_calls == model.stats.native_calls > 0
    assert loaded.program.astext() == model.program.astext()


def test_closures_references_and_adt_inputs_round_trip(tmp_path):
    mod = relay.parse(CLOSURES)
    model = relay.build(mod, target=TARGET)
    assert isinstance(model, VMModel)
    model.save(tmp_path / "c.relaymod")
    loaded = relay.load(tmp_path / "c.relaymod")
    assert isinstance(loaded, VMModel)
    rng = np.random.default_rng(0)
    w = rng.standard_normal(3).astype("float32")
    for steps in (0, 1, 4):
        xs_orig = ConstructorValue(model.constructor("Nil"), ())
        xs_loaded = ConstructorValue(loaded.constructor("Nil"), ())
        for _ in range(steps):
            x = rng.standard_normal(3).astype("float32")
            xs_orig = ConstructorValue(model.constructor("Cons"), (x, xs_orig))
            xs_loaded = ConstructorValue(loaded.constructor("Cons"), (x, xs_loaded))
        expected = interpret(mod, xs=xs_orig, w=w)
        assert values_close(model.run(xs=xs_orig, w=w), loaded.run(xs=xs_loaded, w=w), 0.0, 0.0)
        assert values_close(expected, loaded.run(xs=xs_loaded, w=w), 1e-5, 1e-6)
    assert loaded.stats.executor == "vm" and loaded.stats.calls > 0


def test_a_flipped_byte_in_any_member_is_refused(lstm, tmp_path):
    _, _, path = lstm
    with zipfile.ZipFile(path) as z:
        members = {name: z.read(name) for name in z.namelist()}
    for name in ("kernels.o", "constants.npz", "params.npz"):
        changed = dict(members)
        data = bytearray(changed[name])
        data[len(data) // 2] ^= 0x40
        changed[name] = bytes(data)
        bad = tmp_path / f"bad_{name}.relaymod"
        with zipfile.ZipFile(bad, "w") as z:
            for member, blob in changed.items():
                z.writestr(member, blob)
        with pytest.raises(ArtifactError, match=f"{name} is not the one"):
            relay.load(bad)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 3] ^= 0xFF
    (tmp_path / "flipped.relaymod").write_bytes(bytes(raw))
    with pytest.raises(ArtifactError):
        relay.load(tmp_path / "flipped.relaymod")
    (tmp_path / "cut.relaymod").write_bytes(path.read_bytes()[:-100])
    with pytest.raises(ArtifactError):
        relay.load(tmp_path / "cut.relaymod")


def _shrink_an_output(meta):
    for fn in meta["functions"]:
        for ins in fn["code"]:
            if ins[0] == "AllocTensor":
                ins[2] = [1 for _ in ins[2]]
                return


def _shrink_both(meta):
    """Every output allocation and every kernel's output layouts shrunk alike: consistent,
    but not what the object code was compiled for."""
    for fn in meta["functions"]:
        for ins in fn["code"]:
            if ins[0] == "AllocTensor":
                ins[2] = [1 for _ in ins[2]]
    for kernel in meta["kernels"]:
        for layout in kernel["outputs"]:
            layout[0] = [1 for _ in layout[0]]


def _bad_register(meta):
    meta["functions"][meta["entry"]]["code"][0][1] = 10**6


def _bad_jump(meta):
    for fn in meta["functions"]:
        for ins in fn["code"]:
            if ins[0] in ("Goto", "JumpIfFalse", "JumpIfTagNot"):
                ins[-1] = len(fn["code"]) + 5
                return
    raise AssertionError("no jump")


def _unknown_instruction(meta):
    meta["functions"][0]["code"][0][0] = "Explode"


def _wrong_constructor(meta):
    for fn in meta["functions"]:
        for ins in fn["code"]:
            if ins[0] == "AllocADT":
                ins[2][2] = 99
                return
    raise AssertionError("no AllocADT")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_shrink_an_output, "not allocated with its output layouts"),
        (_shrink_both, "does not carry the digest"),
        (_bad_register, "register 1000000"),
        (_bad_jump, "past the end"),
        (_unknown_instruction, "not an instruction"),
        (_wrong_constructor, "constructor"),
        (lambda meta: meta.update(format="relaymod-vm-0"), "a compiled model|format"),
        (lambda meta: meta["target"].update(features=["+avx512-nonsense"]), "lacks|target"),
        (lambda meta: meta.update(signature="def @main("), "signature does not parse"),
    ],
)
def test_an_edited_model_json_is_refused_with_the_reason(lstm, tmp_path, edit, message):
    _, _, path = lstm
    with pytest.raises(ArtifactError, match=message):
        relay.load(edited_artifact(path, tmp_path / "edited.relaymod", edit))


def test_the_loaded_model_checks_its_inputs_as_the_original(lstm):
    _, inputs, path = lstm
    loaded = relay.load(path)
    bad = {**inputs, "x0": np.zeros((2, 64), np.float32)}
    with pytest.raises(relay.lang.diagnostics.InputError):
        loaded.run(**bad)
