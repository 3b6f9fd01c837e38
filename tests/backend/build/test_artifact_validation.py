"""Loading an artifact trusts nothing in it: a truncated file, a non-zip, a damaged or
edited `model.json`, replaced object code or parameters, or code for another machine is
refused with an `ArtifactError` naming the file and the reason — never a crash, a
traceback, or native code run on buffers the plan got wrong."""

import builtins
import io
import json
import pickle
import shutil
import zipfile

import numpy as np
import pytest
import relay
from relay.backend.build import artifact
from relay.backend.build.artifact import ArtifactError, digest_members, load_artifact
from relay.backend.target import Target
from relay.cli import main as cli_main

MLP = """#[version = "0.0.5"]
def @main(%x: Tensor[(4, 64), float32], %w1: Tensor[(32, 64), float32],
          %w2: Tensor[(16, 32), float32]) {
  %0 = nn.dense(%x, %w1);
  %1 = nn.relu(%0);
  %2 = nn.dense(%1, %w2);
  nn.relu(%2)
}
"""

OTHER = """#[version = "0.0.5"]
def @main(%x: Tensor[(4, 64), float32]) {
  nn.relu(%x)
}
"""


def _weights():
    rng = np.random.default_rng(1)
    return {
        "w1": rng.standard_normal((32, 64)).astype("float32"),
        "w2": rng.standard_normal((16, 32)).astype("float32"),
    }


def _x():
    return np.random.default_rng(2).standard_normal((4, 64)).astype("float32")


def _oracle(x):
    w = _weights()
    return np.maximum(np.maximum(x @ w["w1"].T, 0) @ w["w2"].T, 0)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """An artifact of the MLP with its weights bound (parameters, a workspace
    intermediate, an output), and one of an unrelated model."""
    root = tmp_path_factory.mktemp("artifacts")
    model = relay.build(relay.parse(MLP), target="llvm -num-threads=1", params=_weights())
    path = root / "mlp.relaymod"
    model.save(path)
    other = root / "other.relaymod"
    relay.build(relay.parse(OTHER), target="llvm -num-threads=1").save(other)
    return path, other


def _members(path):
    with zipfile.ZipFile(path) as z:
        return {name: z.read(name) for name in z.namelist()}


def _write(path, members):
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)


def _edited(src, dst, edit=None, replace=None, resign=False):
    """A copy of artifact `src` at `dst` with `edit(meta)` applied to model.json, members
    replaced, and (when `resign`) the digests recomputed as a careful forger would."""
    members = _members(src)
    members.update(replace or {})
    if edit is not None or resign:
        meta = json.loads(members["model.json"])
        if edit is not None:
            edit(meta)
        if resign:
            meta["digests"] = digest_members(members)
        members["model.json"] = json.dumps(meta).encode()
    _write(dst, members)
    return dst


def _workspace_slot(meta):
    return next(int(s) for s, (place, _) in meta["slot_kind"].items() if place == "workspace")


def _output_slot(meta):
    return meta["output_slots"][0]


def test_the_pristine_artifact_loads_and_runs(saved):
    path, _ = saved
    meta = json.loads(_members(path)["model.json"])
    assert any(place == "workspace" for place, _ in meta["slot_kind"].values())
    np.testing.assert_allclose(load_artifact(path).run(x=_x()), _oracle(_x()), rtol=1e-4, atol=1e-4)


def test_a_truncated_artifact_is_refused(saved, tmp_path):
    path, _ = saved
    data = path.read_bytes()
    for keep in (0, 10, len(data) // 3, len(data) // 2, len(data) - 30, len(data) - 1):
        cut = tmp_path / f"cut{keep}.relaymod"
        cut.write_bytes(data[:keep])
        with pytest.raises(
            ArtifactError,
            match=f"{cut}: (not a compiled model artifact, or a truncated one|the artifact is damaged)",
        ):
            load_artifact(cut)


def test_a_file_that_is_not_a_zip_or_lacks_a_member_is_refused(saved, tmp_path):
    path, _ = saved
    junk = tmp_path / "junk.relaymod"
    junk.write_bytes(np.random.default_rng(0).bytes(5000))
    with pytest.raises(ArtifactError, match="not a compiled model artifact"):
        load_artifact(junk)
    with pytest.raises(ArtifactError, match="is a directory"):
        load_artifact(tmp_path)
    for member in ("model.json", "kernels.o", "params.npz"):
        members = _members(path)
        del members[member]
        partial = tmp_path / f"no-{member}.relaymod"
        _write(partial, members)
        with pytest.raises(ArtifactError, match=f"the artifact has no {member}"):
            load_artifact(partial)


def test_a_corrupted_member_is_refused(saved, tmp_path):
    path, _ = saved
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("kernels.o")
    # Flip bytes inside the compressed object code: the zip's CRC or inflate fails.
    start = info.header_offset + 30 + len(info.filename) + 40
    data[start : start + 16] = bytes(b ^ 0xFF for b in data[start : start + 16])
    flipped = tmp_path / "flipped.relaymod"
    flipped.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match=r"(damaged|truncated|not the one this artifact)"):
        load_artifact(flipped)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"{not json", "model.json is not JSON"),
        (b"[1, 2]", "model.json is not a JSON object"),
        (b"\xff\xfe", "model.json is not JSON"),
        (b"[" * 100000 + b"]" * 100000, "model.json is not"),
    ],
)
def test_model_json_that_is_not_the_expected_json_is_refused(saved, tmp_path, text, message):
    path, _ = saved
    bad = tmp_path / "bad.relaymod"
    _edited(path, bad, replace={"model.json": text})
    with pytest.raises(ArtifactError, match=message):
        load_artifact(bad)


def test_an_older_format_is_refused_with_a_hint(saved, tmp_path):
    path, _ = saved

    def edit(meta):
        meta["format"] = "relaymod-1"

    with pytest.raises(ArtifactError, match=r"format 'relaymod-1'.*rebuild it"):
        load_artifact(_edited(path, tmp_path / "old.relaymod", edit))


def _set(*keys, value):
    def edit(meta):
        node = meta
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return edit


def _drop(*keys):
    def edit(meta):
        node = meta
        for key in keys[:-1]:
            node = node[key]
        del node[keys[-1]]

    return edit


def _deep_output(meta):
    tree = meta["plan"]["output"]
    for _ in range(300):
        tree = [tree]
    meta["plan"]["output"] = tree


SCHEMA_CASES = [
    (_drop("plan", "slots"), "plan has no `slots`"),
    (_drop("digests"), "model.json has no `digests`"),
    (_set("plan", "slots", value={"a": 1}), "plan.slots is dict, not a list"),
    (
        lambda m: m["plan"]["slots"][0].__setitem__(0, ["4", 64]),
        r"plan.slots\[0\].shape\[0\] is '4'",
    ),
    (
        lambda m: m["plan"]["slots"][0].__setitem__(0, [4, -64]),
        r"shape\[1\] is -64, not an integer",
    ),
    (lambda m: m["plan"]["slots"][0].__setitem__(0, [4.0, 64]), r"shape\[0\] is 4.0"),
    (lambda m: m["plan"]["slots"][0].__setitem__(1, "object"), "'object', not a tensor dtype"),
    (lambda m: m["plan"]["slots"][0].__setitem__(2, "pickle"), "'pickle', not one of"),
    (lambda m: m["plan"]["slots"][0].append(1), r"plan.slots\[0\] is not \[shape, dtype, kind"),
    (lambda m: m["plan"]["steps"][0].__setitem__(0, True), r"steps\[0\].kernel is True"),
    (_set("plan", "input_names", value="x"), "plan.input_names is str, not a list"),
    (_set("target", "num_threads", value="8"), "target.num_threads is '8'"),
    (_set("target", "features", value=[1]), "target.features is 1, not a string"),
    (_set("target", "kind", value="cuda"), "target is not a valid target"),
    (_set("slot_kind", value={"x": ["input", 0]}), "not keyed by a slot number"),
    (_set("memory", "workspace_bytes", value=None), "memory.workspace_bytes is None"),
    (_set("entry", value=7), "entry is 7, not a string"),
    (_deep_output, "plan.output nests deeper than"),
]


@pytest.mark.parametrize(("edit", "message"), SCHEMA_CASES)
def test_model_json_of_the_wrong_shape_is_refused_naming_the_field(saved, tmp_path, edit, message):
    path, _ = saved
    bad = _edited(path, tmp_path / "bad.relaymod", edit)
    with pytest.raises(ArtifactError, match=f"the artifact is damaged: .*{message}"):
        load_artifact(bad)


def _grow_workspace_slot(meta):
    s = _workspace_slot(meta)
    meta["plan"]["slots"][s][0] = [400, 32]


def _move_workspace_slot(meta):
    s = _workspace_slot(meta)
    meta["memory"]["offsets"][s] = meta["memory"]["workspace_bytes"]


def _shrink_workspace(meta):
    meta["memory"]["workspace_bytes"] = 64


def _misalign(meta):
    meta["memory"]["offsets"][_workspace_slot(meta)] += 4


def _grow_workspace(meta):
    meta["memory"]["workspace_bytes"] += 4096


def _grow_output(meta):
    meta["plan"]["slots"][_output_slot(meta)][0] = [400, 16]


def _shrink_output(meta):
    meta["plan"]["slots"][_output_slot(meta)][0] = [1, 16]


def _shrink_input(meta):
    meta["plan"]["slots"][meta["plan"]["input_slots"][0]][0] = [1, 64]


def _step_reads_missing_slot(meta):
    meta["plan"]["steps"][0][1].append(99)


def _step_runs_missing_kernel(meta):
    meta["plan"]["steps"][0][0] = 5


def _duplicate_input(meta):
    meta["plan"]["input_names"].append(meta["plan"]["input_names"][0])
    meta["plan"]["input_slots"].append(meta["plan"]["input_slots"][0])


def _output_names_input_slot(meta):
    meta["plan"]["output"] = 99


def _write_twice(meta):
    steps = meta["plan"]["steps"]
    steps[1][2] = list(steps[0][2])


def _read_before_write(meta):
    steps = meta["plan"]["steps"]
    steps[0], steps[1] = steps[1], steps[0]


def _constant_shape(meta):
    slot = next(s for s in meta["plan"]["slots"] if s[2] == "constant")
    slot[0] = [64, 64]


def _lift_foreign_param(meta):
    meta["kernels"][0]["lifted"] = [0]


def _move_output_to_workspace(meta):
    s = _output_slot(meta)
    meta["slot_kind"][str(s)] = ["workspace", 0]


PLAN_CASES = [
    (_grow_workspace_slot, "ends past the end of the workspace"),
    (_move_workspace_slot, "ends past the end of the workspace"),
    (_shrink_workspace, "ends past the end of the workspace"),
    (_misalign, "not a multiple of 64"),
    (_grow_workspace, "workspace layout .* is not the one the plan gives"),
    (_grow_output, "not the one the object code was compiled for"),
    (_shrink_output, "not the one the object code was compiled for"),
    (_shrink_input, "not the one the object code was compiled for"),
    (_step_reads_missing_slot, "step 0 names slot 99, but the plan has"),
    (_step_runs_missing_kernel, "step 0 runs kernel 5 of 2"),
    (_duplicate_input, "input names appear twice: x"),
    (_output_names_input_slot, "the result names slot 99"),
    (_write_twice, "step 1 writes slot .* not a fresh kernel result"),
    (_read_before_write, "step 0 reads slot .* before any step writes it"),
    (_constant_shape, "holds a parameter of shape"),
    (_lift_foreign_param, r"uses parameters \[0\], expected from \d+ on"),
    (_move_output_to_workspace, "(ends past|slot_kind, output_slots)"),
]


@pytest.mark.parametrize(("edit", "message"), PLAN_CASES)
def test_a_tampered_plan_is_refused_before_any_native_call(saved, tmp_path, edit, message):
    path, _ = saved
    bad = _edited(path, tmp_path / "tampered.relaymod", edit)
    with pytest.raises(ArtifactError, match=message):
        load_artifact(bad)


def test_replaced_object_code_is_refused(saved, tmp_path):
    path, other = saved
    foreign = _members(other)["kernels.o"]
    swapped = _edited(path, tmp_path / "swapped.relaymod", replace={"kernels.o": foreign})
    with pytest.raises(ArtifactError, match=r"kernels.o is not the one this artifact was saved"):
        load_artifact(swapped)
    # Even with the digest forged, the other model's code does not define what the plan calls.
    forged = _edited(
        path, tmp_path / "forged.relaymod", replace={"kernels.o": foreign}, resign=True
    )
    with pytest.raises(ArtifactError, match=r"(entry function|lacks|compiled for)"):
        load_artifact(forged)
    garbage = _edited(
        path,
        tmp_path / "garbage.relaymod",
        replace={"kernels.o": b"\x7fELF" + bytes(200)},
        resign=True,
    )
    with pytest.raises(ArtifactError, match="the object code cannot be loaded"):
        load_artifact(garbage)


def test_replaced_parameters_are_refused(saved, tmp_path):
    path, _ = saved
    buffer = io.BytesIO()
    np.savez(buffer, np.zeros((32, 64), "float32"), np.zeros((16, 32), "float32"))
    swapped = _edited(path, tmp_path / "params.relaymod", replace={"params.npz": buffer.getvalue()})
    with pytest.raises(ArtifactError, match=r"params.npz is not the one this artifact was saved"):
        load_artifact(swapped)
    small = io.BytesIO()
    np.savez(small, np.zeros((2, 64), "float32"), np.zeros((16, 32), "float32"))
    forged = _edited(
        path, tmp_path / "small.relaymod", replace={"params.npz": small.getvalue()}, resign=True
    )
    with pytest.raises(ArtifactError, match="holds a parameter of shape \\(2, 64\\)"):
        load_artifact(forged)
    pickled = io.BytesIO()
    np.savez(pickled, np.array([object()], dtype=object))
    evil = _edited(
        path, tmp_path / "pickled.relaymod", replace={"params.npz": pickled.getvalue()}, resign=True
    )
    with pytest.raises(ArtifactError, match=r"params.npz"):
        load_artifact(evil)


def test_an_artifact_for_another_machine_is_refused(saved, tmp_path):
    path, _ = saved
    host = Target.host()
    absent = next(
        f
        for f in ("avx512f", "avx512vnni", "amx-tile", "avx2", "sse4.2")
        if not host.has_feature(f)
    )

    def add_feature(meta):
        meta["target"]["features"].append(absent)

    more = _edited(path, tmp_path / "features.relaymod", add_feature)
    with pytest.raises(ArtifactError, match=f"CPU features this machine lacks: {absent}"):
        load_artifact(more)
    arm = _edited(
        path, tmp_path / "arm.relaymod", _set("triple", value="aarch64-unknown-linux-gnu")
    )
    with pytest.raises(
        ArtifactError, match="compiled for aarch64-unknown-linux-gnu, but this machine is"
    ):
        load_artifact(arm)


def test_a_host_without_the_recorded_features_refuses_the_artifact(saved, monkeypatch):
    path, _ = saved
    recorded = json.loads(_members(path)["model.json"])["target"]["features"]
    assert recorded, "the host target records its CPU features"
    stripped = artifact.Target.missing_features

    def poorer_host(self, available=None):
        return stripped(self, tuple(f for f in recorded if f != recorded[0]))

    monkeypatch.setattr(artifact.Target, "missing_features", poorer_host)
    with pytest.raises(ArtifactError, match=f"lacks: {recorded[0]}"):
        load_artifact(path)


def test_loading_never_unpickles_or_evaluates(saved, monkeypatch):
    path, _ = saved

    def forbidden(*args, **kwargs):
        raise AssertionError("loading an artifact evaluated something")

    for name in ("loads", "load", "Unpickler"):
        monkeypatch.setattr(pickle, name, forbidden)
    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    model = load_artifact(path)
    monkeypatch.undo()
    np.testing.assert_allclose(model.run(x=_x()), _oracle(_x()), rtol=1e-4, atol=1e-4)


def test_symbols_are_checked_before_any_call(saved, tmp_path, monkeypatch):
    path, _ = saved
    meta = json.loads(_members(path)["model.json"])
    digest = meta["entry"].rsplit("_", 2)[-2]

    def rename_entry(m):
        m["entry"] = f"elsewhere_{digest}_main"

    calls = []
    real = artifact.CompiledLibrary.get
    monkeypatch.setattr(artifact.CompiledLibrary, "get", lambda *a: calls.append(a) or real(*a))
    with pytest.raises(ArtifactError, match="the object code's entry function is"):
        load_artifact(_edited(path, tmp_path / "entry.relaymod", rename_entry))

    def rename_kernel(m):
        m["kernels"][0]["name"] = m["kernels"][0]["name"] + "x"

    with pytest.raises(ArtifactError, match="does not carry the plan's digest"):
        load_artifact(_edited(path, tmp_path / "kernel.relaymod", rename_kernel))
    assert calls == []


def test_the_cli_reports_a_damaged_artifact_without_a_traceback(saved, tmp_path, capsys):
    path, _ = saved
    cut = tmp_path / "cut.relaymod"
    cut.write_bytes(path.read_bytes()[:-40])
    assert cli_main(["run", str(cut)]) == 1
    err = capsys.readouterr().err
    assert "truncated" in err and "Traceback" not in err
    tampered = _edited(path, tmp_path / "t.relaymod", _grow_workspace_slot)
    assert cli_main(["run", str(tampered)]) == 1
    assert "ends past the end of the workspace" in capsys.readouterr().err
    shutil.copy(path, tmp_path / "fine.relaymod")
    assert cli_main(["run", str(tmp_path / "fine.relaymod")]) == 0
