"""Artifacts: a saved compiled model runs again in a fresh process without recompiling,
keeps its target, and a file that is not a usable artifact is a clear error."""

import importlib.util
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import relay
from relay.backend.build import ARTIFACT_FORMAT, load_artifact
from relay.backend.codegen import get_num_threads
from relay.backend.target import Target

ROOT = Path(__file__).resolve().parents[3]

DENSE_RELU = """#[version = "0.0.5"]
def @main(%x: Tensor[(4, 64), float32], %w: Tensor[(32, 64), float32]) {
  %0 = nn.dense(%x, %w);
  nn.relu(%0)
}
"""


def _lenet():
    spec = importlib.util.spec_from_file_location(
        "make_weights", ROOT / "examples" / "make_weights.py"
    )
    assert spec is not None and spec.loader is not None
    weights = importlib.util.module_from_spec(spec)
    sys.modules["make_weights"] = weights
    spec.loader.exec_module(weights)
    module = relay.parse_file(ROOT / "examples" / "lenet.relay")
    return module, weights.make_weights(weights.parameter_specs("lenet"), seed=0)


def _inputs():
    rng = np.random.default_rng(0)
    return {
        "x": rng.standard_normal((4, 64)).astype("float32"),
        "w": rng.standard_normal((32, 64)).astype("float32"),
    }


def test_saved_artifact_runs_in_a_fresh_process(tmp_path):
    module, inputs = _lenet()
    model = relay.build(module)
    expected = model.run(**inputs)
    artifact = tmp_path / "lenet.relaymod"
    model.save(artifact)
    np.savez(tmp_path / "inputs.npz", **inputs)
    script = (
        "import numpy as np, sys, relay\n"
        "m = relay.load(sys.argv[1])\n"
        "with np.load(sys.argv[2]) as f: inputs = {k: f[k] for k in f.files}\n"
        "np.save(sys.argv[3], m.run(**inputs))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, artifact, tmp_path / "inputs.npz", tmp_path / "out.npy"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), expected)
    np.testing.assert_array_equal(load_artifact(artifact).run(**inputs), expected)


def test_the_artifact_stores_the_target_and_load_restores_it(tmp_path):
    target = Target.parse("llvm -num-threads=1 -l2-bytes=65536")
    model = relay.build(relay.parse(DENSE_RELU), target=target)
    assert model.target == target
    path = tmp_path / "m.relaymod"
    model.save(path)
    with zipfile.ZipFile(path) as z:
        meta = json.loads(z.read("model.json"))
    assert meta["format"] == ARTIFACT_FORMAT
    assert meta["target"]["text"] == str(target) == "llvm -num-threads=1 -l2-bytes=65536"
    loaded = relay.load(path)
    assert loaded.target == target and get_num_threads() == 1
    again = relay.load(path, num_threads=2)
    assert again.target.num_threads == 2 and get_num_threads() == 2
    np.testing.assert_array_equal(loaded.run(**_inputs()), model.run(**_inputs()))
    resaved = tmp_path / "again.relaymod"
    loaded.save(resaved)
    assert relay.load(resaved).target == target


def test_code_for_features_this_host_lacks_is_an_error_not_a_crash(tmp_path):
    host = Target.host()
    absent = next(
        f for f in ("avx512f", "avx512vnni", "amx-tile", "avx2") if not host.has_feature(f)
    )
    model = relay.build(relay.parse(DENSE_RELU), target=f"llvm -mattr=+{absent}")
    with pytest.raises(relay.Error, match=f"lacks \\({absent}\\)"):
        model.run(**_inputs())
    path = tmp_path / "foreign.relaymod"
    model.save(path)  # saving for another machine works
    with pytest.raises(relay.Error, match=f"CPU features this machine lacks: {absent}"):
        relay.load(path)


def test_a_file_that_is_not_an_artifact_is_an_error(tmp_path):
    with pytest.raises(relay.Error, match="no such file"):
        relay.load(tmp_path / "missing.relaymod")
    bad = tmp_path / "bad.relaymod"
    bad.write_bytes(b"not a zip")
    with pytest.raises(relay.Error, match="not a compiled model artifact"):
        relay.load(bad)
    other = tmp_path / "other.relaymod"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("model.json", json.dumps({"format": "something-else"}))
        z.writestr("kernels.o", b"")
        z.writestr("params.npz", b"")
    with pytest.raises(relay.Error, match="artifact format 'something-else'"):
        relay.load(other)
    damaged = tmp_path / "damaged.relaymod"
    with zipfile.ZipFile(damaged, "w") as z:
        z.writestr("model.json", json.dumps({"format": ARTIFACT_FORMAT}))
        z.writestr("kernels.o", b"")
        z.writestr("params.npz", b"")
    with pytest.raises(relay.Error, match="the artifact is damaged"):
        relay.load(damaged)


def test_weights_are_stored_uncompressed(tmp_path):
    """Deflating float weights saves little and took as long as the build: the weights
    member is stored as is, the small members deflated; the loaded model is the same."""
    module = relay.parse(DENSE_RELU)
    params = {"w": _inputs()["w"]}
    model = relay.build(module, params=params)
    path = tmp_path / "dense.relaymod"
    model.save(path)
    with zipfile.ZipFile(path) as z:
        kinds = {info.filename: info.compress_type for info in z.infolist()}
    assert kinds["params.npz"] == zipfile.ZIP_STORED
    assert kinds["model.json"] == zipfile.ZIP_DEFLATED
    x = _inputs()["x"]
    np.testing.assert_array_equal(load_artifact(path).run(x=x), model.run(x=x))
