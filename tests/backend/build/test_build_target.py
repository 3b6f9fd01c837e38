"""`relay.build` with targets as values and under the current `PassContext`: target strings
and `Target` objects, thread counts that do not change results, the environment read at the
edge, the enclosing context's opt level, disabled passes and instruments, and the CLI's
`--target`."""

import os
import subprocess
import sys

import numpy as np
import pytest
import relay
from relay.backend.codegen import get_num_threads
from relay.backend.target import Target
from relay.driver import build_context, default_target, resolve_target, threads_from_environment
from relay.passes import PassContext
from relay.passes.instruments import PassInstrument

CHAIN = """#[version = "0.0.5"]
def @main(%x: Tensor[(64, 128), float32], %w: Tensor[(96, 128), float32], %b: Tensor[(96), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  %3 = exp(%2);
  sum(%3, axis=[1])
}
"""


def _inputs():
    rng = np.random.default_rng(1)
    return {
        "x": rng.standard_normal((64, 128)).astype("float32") / 8,
        "w": rng.standard_normal((96, 128)).astype("float32") / 8,
        "b": rng.standard_normal(96).astype("float32"),
    }


def test_one_and_two_threads_give_equal_results():
    mod = relay.parse(CHAIN)
    one = relay.build(mod, target="llvm -num-threads=1")
    assert one.target.num_threads == 1 and get_num_threads() == 1
    r1 = one.run(**_inputs())
    two = relay.build(mod, target=Target.parse("llvm -num-threads=2"))
    assert two.target.num_threads == 2 and get_num_threads() == 2
    r2 = two.run(**_inputs())
    np.testing.assert_allclose(r1, r2, rtol=1e-5)
    np.testing.assert_allclose(r1, relay.interpret(mod, **_inputs()), rtol=1e-4)


def test_a_target_string_and_its_value_build_the_same_model():
    mod = relay.parse(CHAIN)
    text = "llvm -mattr=-avx512f -num-threads=1"
    a = relay.build(mod, target=text)
    b = relay.build(mod, target=Target.parse(text))
    assert a.target == b.target == Target.parse(text)
    np.testing.assert_array_equal(a.run(**_inputs()), b.run(**_inputs()))


def test_interp_and_bad_targets():
    mod = relay.parse(CHAIN)
    model = relay.build(mod, target="interp")
    assert not model.native and model.reason == "target interp"
    with pytest.raises(relay.Error, match="unknown target kind `cuda`"):
        relay.build(mod, target="cuda")
    with pytest.raises(relay.Error, match="a string or a Target"):
        resolve_target(3)  # type: ignore[arg-type]


def test_the_environment_is_read_at_the_edge(monkeypatch):
    monkeypatch.delenv("RELAY_NUM_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert threads_from_environment() == 3
    monkeypatch.setenv("RELAY_NUM_THREADS", "1")
    assert threads_from_environment() == 1
    assert default_target().num_threads == 1
    assert default_target("llvm -num-threads=2").num_threads == 2
    assert resolve_target(None) == Target.host(1)
    assert resolve_target(Target.host(2)).num_threads == 2  # a value is taken as is
    monkeypatch.setenv("RELAY_NUM_THREADS", "lots")
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert threads_from_environment() is None
    assert default_target() == Target.host()


class _Recorder(PassInstrument):
    def __init__(self) -> None:
        self.passes: list[str] = []

    def before_pass(self, p, mod, ctx):  # type: ignore[no-untyped-def]
        self.passes.append(p.name)


def _kernels(model) -> int:  # type: ignore[no-untyped-def]
    return model.stats.kernels


def test_build_runs_under_the_enclosing_pass_context():
    mod = relay.parse(CHAIN)
    fused = relay.build(mod, target="llvm -num-threads=1")
    with PassContext(opt_level=3, config={"fuse-ops": {"max-depth": 1}}):
        unfused = relay.build(mod, target="llvm -num-threads=1")
    assert _kernels(unfused) > _kernels(fused)
    np.testing.assert_allclose(unfused.run(**_inputs()), fused.run(**_inputs()), rtol=1e-5)
    with PassContext(opt_level=3, disabled_pass=["fuse-ops"]):
        not_fused = relay.build(mod, target="llvm -num-threads=1")
    assert not not_fused.native  # no primitive functions: nothing to compile
    np.testing.assert_allclose(not_fused.run(**_inputs()), fused.run(**_inputs()), rtol=1e-5)

    recorder = _Recorder()
    with PassContext(opt_level=3, instruments=[recorder]):
        relay.build(mod, target="llvm -num-threads=1")
    assert "fuse-ops" in recorder.passes and "fold-constant" in recorder.passes


def test_the_opt_level_comes_from_the_context_unless_given():
    assert build_context().opt_level == 3  # outside any context: the build default
    assert build_context(1).opt_level == 1
    recorder = _Recorder()
    with PassContext(opt_level=1, instruments=[recorder]) as ctx:
        assert build_context() is ctx
        assert build_context(2).opt_level == 2 and build_context(2).instruments == (recorder,)
        relay.build(relay.parse(CHAIN), target="llvm -num-threads=1")
    assert "fold-constant" not in recorder.passes  # an opt level 2 pass
    recorder.passes.clear()
    with PassContext(opt_level=1, instruments=[recorder]):
        relay.build(relay.parse(CHAIN), target="llvm -num-threads=1", opt_level=3)
    assert "fold-scale-axis" in recorder.passes  # the explicit level wins


def test_cli_run_takes_a_target_string(tmp_path):
    path = tmp_path / "chain.relay"
    path.write_text(CHAIN)
    np.savez(tmp_path / "in.npz", **_inputs())
    out = {}
    for target in ("llvm -num-threads=1", "llvm -num-threads=2"):
        result = tmp_path / f"{target[-1]}.npz"
        done = subprocess.run(
            [sys.executable, "-m", "relay", "run", path, "--target", target,
             "--inputs", tmp_path / "in.npz", "--output", result],
            capture_output=True, text=True, timeout=300,
            env={k: v for k, v in os.environ.items() if k != "RELAY_NUM_THREADS"},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert f"target {target}, compiled in" in done.stdout
        with np.load(result) as f:
            out[target] = f["out"]
    np.testing.assert_allclose(out["llvm -num-threads=1"], out["llvm -num-threads=2"], rtol=1e-5)
    bad = subprocess.run(
        [sys.executable, "-m", "relay", "run", path, "--target", "llvm -threads=2"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert bad.returncode == 2 and "unknown option `-threads`" in bad.stderr
