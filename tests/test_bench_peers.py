"""bench/bench_native.py and bench/peers.py: the command line, the kernel list, and that
every peer computes what relay's programs compute.

The kernels' numpy peers are checked against the interpreter on small instances of the
same .relay programs; the benchmarked conv2d shapes against the convolutions of the
example models. With PyTorch and ONNX Runtime installed (the `bench` extra), their
versions of the example models are checked against the interpreter too; without them,
the tests check that the benchmark reports them missing with the install command.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from relay.backend.runtime import interpret
from relay.grammar import parse
from relay.lang.op import Op
from relay.typecheck import check_module

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str) -> ModuleType:
    path = ROOT / "bench" / f"{name}.py"
    loaded = sys.modules.get(name)
    if loaded is not None and getattr(loaded, "__file__", None) == str(path):
        return loaded
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


bench = _load("bench_native")
peers = _load("peers")


def _has(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


HAVE_TORCH = _has("torch")
HAVE_ORT = HAVE_TORCH and _has("onnxruntime")


# ---------------------------------------------------------------- command line, selection


def test_parse_args_defaults_and_options() -> None:
    args = bench.parse_args([])
    assert (args.quick, args.only, args.repeat, args.list) == (False, "", 10, False)
    args = bench.parse_args(["--quick"])
    assert args.repeat == 3
    args = bench.parse_args(["--quick", "--repeat", "7", "--only", "Dense, resnet18"])
    assert args.repeat == 7
    assert bench.only_words(args.only) == ["dense", "resnet18"]
    with pytest.raises(SystemExit):
        bench.parse_args(["--repeat", "0"])


def test_selection_quick_only_and_groups() -> None:
    full = bench.select(bench.parse_args([]))
    quick = bench.select(bench.parse_args(["--quick"]))
    names = [k.name for k in full.kernels]
    assert len(names) == len(set(names)), "kernel names must be unique for --only"
    assert {k.name for k in quick.kernels} < set(names)
    assert full.models == list(bench.MODELS)
    assert set(quick.models) < set(full.models)
    assert all(t in names for t in bench.THREAD_KERNELS), "thread runs reuse built kernels"
    only = bench.select(bench.parse_args(["--only", "dense,mobilenet"]))
    assert [k.name for k in only.kernels] == ["dense 1024x1024x1024"]
    assert only.models == ["mobilenet_v2"]
    assert only.threads == ["dense 1024x1024x1024"]
    groups = bench.select(bench.parse_args(["--only", "models"]))
    assert (groups.kernels, groups.threads) == ([], [])
    assert groups.models == list(bench.MODELS)
    convs = bench.select(bench.parse_args(["--only", "conv2d"])).kernels
    assert len(convs) == len(bench.RESNET18_CONVS) + 1  # and the depthwise one


def test_list_prints_every_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--list"]) == 0
    out = capsys.readouterr().out
    for kernel in bench.kernels():
        assert kernel.name in out
    for model in bench.MODELS:
        assert model in out


def test_kernel_list_covers_the_issue() -> None:
    kinds = [k.name.split(" ")[0] for k in bench.kernels()]
    for kind in (
        "dense",
        "conv2d",
        "depthwise",
        "softmax",
        "relu(x*a+b)",
        "max_pool2d",
        "avg_pool2d",
    ):
        assert kind in kinds
    dense = next(k for k in bench.kernels() if k.name.startswith("dense"))
    assert dense.flops == 2.0 * 1024**3 and not dense.memory_bound
    chain = next(k for k in bench.kernels() if k.name.startswith("relu"))
    assert chain.memory_bound and chain.nbytes == 2 * 16 * 2**20 * 4


def test_table_aligns_columns() -> None:
    table = bench.Table(("name", "ms"))
    table.add("a", "1.50")
    table.add("longer name", "12.00")
    table.add("c", None)
    lines = table.render().splitlines()
    assert lines[0].startswith("name") and set(lines[1]) == {"-", " "}
    assert lines[2].endswith(" 1.50") and lines[3].endswith("12.00")
    assert len(lines[2]) == len(lines[3])
    assert bench.ratio(2.0, 4.0) == "0.50" and bench.ratio(1.0, None) is None
    assert bench.rate(2e9, 1.0, "GFLOP/s") == "2.0 GFLOP/s"


# ---------------------------------------------------------------- kernels vs the models


def _conv_shapes(model: str) -> set[tuple[int, int, int, int, int, int, int]]:
    """(in channels, out channels, input size, kernel, stride, padding, groups) of every
    nn.conv2d of an example model, from its inferred types."""
    module = parse((ROOT / "examples" / f"{model}.relay").read_text(), f"{model}.relay")
    shapes = set()
    for call, arg_types in check_module(module).type_args.items():
        if isinstance(call.op, Op) and call.op.name == "nn.conv2d":
            data, weight = arg_types[0].shape, arg_types[1].shape
            assert data[2] == data[3] and weight[2] == weight[3]
            assert len(set(call.attrs.strides)) == 1 and len(set(call.attrs.padding)) == 1
            shapes.add(
                (
                    data[1],
                    weight[0],
                    data[2],
                    weight[2],
                    call.attrs.strides[0],
                    call.attrs.padding[0],
                    call.attrs.groups,
                )
            )
    return shapes


def test_resnet18_conv_list_is_the_models_distinct_convs() -> None:
    ours = {(*shape, 1) for shape in bench.RESNET18_CONVS}
    assert len(ours) == len(bench.RESNET18_CONVS)
    assert ours == _conv_shapes("resnet18")


def test_depthwise_kernel_is_a_mobilenet_v2_layer() -> None:
    depthwise = next(k for k in bench.kernels() if k.name.startswith("depthwise"))
    assert depthwise.name == "depthwise conv2d 32x112x112 k3/1"
    assert (32, 32, 112, 3, 1, 1, 32) in _conv_shapes("mobilenet_v2")


def _small_kernels() -> Iterator[Any]:
    """Small instances of every kind of kernel (sizes no vector width divides, strides)."""
    yield bench.dense_kernel(5, 7, 3)
    yield bench.conv2d_kernel(3, 4, 9, 3, 2, 1)
    yield bench.conv2d_kernel(4, 6, 8, 1, 2, 0)
    yield bench.conv2d_kernel(2, 3, 7, 7, 2, 3)
    yield bench.conv2d_kernel(4, 4, 7, 3, 1, 1, groups=4)
    yield bench.conv2d_kernel(5, 5, 9, 3, 2, 1, groups=5)
    yield bench.softmax_kernel(3, 11)
    yield bench.elementwise_kernel((3, 5))
    yield bench.pool_kernel("max", 2, 7, 3, 2, 1)
    yield bench.pool_kernel("avg", 2, 7, 3, 2, 1)
    yield bench.pool_kernel("avg", 3, 8, 3, 1, 1)


@pytest.mark.parametrize("kernel", list(_small_kernels()), ids=lambda k: k.name)
def test_kernel_peers_compute_what_the_relay_program_computes(kernel: Any) -> None:
    inputs = kernel.make_inputs(np.random.default_rng(1))
    expected = interpret(parse(kernel.program, kernel.name), **inputs)
    got = kernel.numpy(**inputs)
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    torch = peers.import_torch(quiet=True)
    if torch is None:
        assert not HAVE_TORCH
        return
    tensors = {k: torch.from_numpy(v) for k, v in inputs.items()}
    np.testing.assert_allclose(
        kernel.torch(torch, **tensors).numpy(), expected, rtol=1e-5, atol=1e-5
    )


def test_measure_kernel_reports_times_and_errors() -> None:
    """The whole measuring path on a tiny kernel: relay's build (or why it failed), numpy's
    time, and relay's result checked against numpy's."""
    kernel = bench.dense_kernel(9, 17, 33)
    got = bench.measure_kernel(kernel, bench.Peers(None, None), repeat=1)
    assert got.peer_seconds.keys() == {"numpy"} and got.peer_seconds["numpy"] > 0
    if got.built.model is None:
        assert got.built.error and got.relay_seconds is None
    else:
        assert got.relay_seconds is not None and got.relay_seconds > 0
        assert got.relay_err is not None and bench.agrees(got.relay_err, got.reference)
    rendered = bench.kernel_table([got], bench.Machine(1.0, 1.0)).render()
    assert kernel.name in rendered and "numpy" in rendered


# ---------------------------------------------------------------- optional peers


def test_missing_peers_print_how_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    assert peers.import_torch() is None
    assert peers.import_onnxruntime() is None
    out = capsys.readouterr().out
    assert "PyTorch is not installed" in out and "ONNX Runtime is not installed" in out
    assert out.count("pip install -e '.[bench]'") == 2
    assert peers.import_torch(quiet=True) is None and capsys.readouterr().out == ""


def _example(name: str) -> tuple[Any, dict[str, np.ndarray]]:
    make_weights = peers.load_make_weights()
    module = make_weights.load_model(make_weights.model_path(name))
    return module, make_weights.make_weights(make_weights.main_parameters(module), seed=0)


@pytest.mark.parametrize("name", ["mlp", "mobilenet_v2"])
def test_torch_models_match_the_interpreter(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    torch = peers.import_torch()
    if torch is None:
        assert not HAVE_TORCH
        assert "pip install -e '.[bench]'" in capsys.readouterr().out
        return
    module, weights = _example(name)
    expected = interpret(module, **weights)
    with torch.inference_mode():
        got = peers.TORCH_MODELS[name](torch, peers.torch_tensors(torch, weights)).numpy()
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_onnx_export_of_the_mlp_matches_the_interpreter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    torch = peers.import_torch()
    ort = peers.import_onnxruntime() if torch is not None else None
    if torch is None or ort is None:
        assert not HAVE_ORT
        assert "pip install -e '.[bench]'" in capsys.readouterr().out
        return
    module, weights = _example("mlp")
    expected = interpret(module, **weights)
    model = peers.torch_module(torch, "mlp", weights)
    assert "data" not in model.weight_names and len(model.weight_names) == 6
    path = peers.export_onnx(torch, model, torch.from_numpy(weights["data"]), tmp_path / "mlp.onnx")
    session = peers.onnxruntime_session(ort, path)
    got = peers.run_onnxruntime(session, weights["data"])
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)


def test_only_matching_nothing_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--only", "no-such-benchmark"]) == 2
    assert "matches no benchmark" in capsys.readouterr().err
