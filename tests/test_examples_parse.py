"""The prelude and the example models: they parse, print back, and get weights of the
annotated shapes from examples/make_weights.py."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from relay.grammar import parse
from relay.lang.diagnostics import InputError, TypeCheckError
from relay.lang.expr import Function, Match
from relay.lang.module import IRModule
from relay.lang.printer import print_module
from relay.lang.structural import assert_structural_equal
from relay.lang.traversal import post_order
from relay.lang.types import TensorType, TupleType
from relay.stdlib import prelude_path, prelude_text
from relay.typecheck import check_module, type_text

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

# name -> (the type @main returns, number of trainable parameters as counted by the
# reference implementations: torchvision for resnet18 and mobilenet_v2, PyTorch's nn.LSTM
# for the lstm; batch-norm running statistics and inputs are not counted).
MODELS = {
    "mlp": (TensorType((1, 10), "float32"), 535_818),
    "lenet": (TensorType((1, 10), "float32"), 61_706),
    "resnet18": (TensorType((1, 1000), "float32"), 11_689_512),
    "mobilenet_v2": (TensorType((1, 1000), "float32"), 3_504_872),
    "transformer_layer": (TensorType((1, 128, 512), "float32"), 3_152_384),
    "lstm": (TensorType((1, 128), "float32"), 99_328),
    "treelstm": (TensorType((1, 128), "float32"), 98_816),
}

PRELUDE_FUNCTIONS = [
    "id",
    "compose",
    "flip",
    "hd",
    "tl",
    "nth",
    "length",
    "update",
    "map",
    "foldl",
    "foldr",
    "foldr1",
    "sum",
    "concat",
    "filter",
    "zip",
    "rev",
    "map_accumr",
    "map_accuml",
    "unfoldr",
    "unfoldl",
    "tmap",
    "size",
    "iterate",
    "all",
    "any",
    "range",
    "replicate",
]


def _load_make_weights() -> ModuleType:
    name = "relay_examples_make_weights"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / "make_weights.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


make_weights = _load_make_weights()


def _parse_example(name: str) -> IRModule:
    path = EXAMPLES / f"{name}.relay"
    return parse(path.read_text(encoding="utf-8"), str(path))


def _annotated_params(module: IRModule) -> dict[str, TensorType]:
    types = {}
    for param in module["main"].params:
        assert isinstance(param.type_annotation, TensorType), param.name_hint
        types[param.name_hint] = param.type_annotation
    return types


def _matches(function: Function) -> list[Match]:
    return [node for node in post_order(function.body) if isinstance(node, Match)]


# --------------------------------------------------------------------------- the prelude


def test_prelude_is_package_data() -> None:
    path = prelude_path()
    assert path.is_file() and path.name == "prelude.relay"
    assert path.read_text(encoding="utf-8") == prelude_text()
    assert prelude_text().startswith('#[version = "0.0.5"]')


def test_prelude_parses_with_its_types_and_functions() -> None:
    module = parse(prelude_text(), str(prelude_path()))
    ctors = {
        name: [c.name_hint for c in module.get_type(name).constructors]
        for name in ("List", "Option", "Tree")
    }
    assert ctors == {"List": ["Cons", "Nil"], "Option": ["Some", "None"], "Tree": ["Rose"]}
    assert [len(c.inputs) for c in module.get_type("Tree").constructors] == [2]
    assert sorted(gv.name_hint for gv in module) == sorted(PRELUDE_FUNCTIONS)
    for gv in module:
        function = module[gv]
        assert function.ret_type is not None, gv.name_hint
        assert all(p.type_annotation is not None for p in function.params), gv.name_hint


def test_prelude_typechecks() -> None:
    types = check_module(parse(prelude_text(), str(prelude_path())))
    assert types.ok and not types.warnings  # every complete match is exhaustive
    signatures = {name: type_text(types.global_types[name]) for name in ("zip", "map_accuml")}
    assert signatures == {
        "zip": "fn [A, B](List[A], List[B]) -> List[(A, B)]",
        "map_accuml": "fn [A, B, C](fn (A, B) -> (A, C), A, List[B]) -> (A, List[C])",
    }


def test_prelude_type_parameters_and_partial_matches() -> None:
    module = parse(prelude_text(), str(prelude_path()))
    arity = {gv.name_hint: len(module[gv].type_params) for gv in module}
    assert arity["id"] == 1 and arity["compose"] == 3 and arity["map_accuml"] == 3
    assert arity["sum"] == 0 and arity["all"] == 0 and arity["range"] == 0
    for name in ("hd", "tl", "foldr1"):
        assert [m.complete for m in _matches(module[name])] == [False], name
    for name in ("map", "foldl", "foldr", "filter", "zip", "update", "unfoldr", "tmap", "size"):
        matches = _matches(module[name])
        assert matches and all(m.complete for m in matches), name


PRELUDE_PROGRAM = """
def @main() -> (
  (int32, int32, int32, int32, int32, int32),
  (List[int32], List[int32], List[int32], List[int32], List[(int32, bool)]),
  ((int32, List[int32]), (int32, List[int32]), List[int32], List[int32]),
  (bool, bool, bool, bool, int32, Tree[int32]),
) {
  let %xs = @range(0, 5);
  let %square = fn (%x: int32) -> int32 { %x * %x };
  let %double = fn (%x: int32) -> int32 { %x * 2 };
  let %minus = fn (%a: int32, %b: int32) -> int32 { %a - %b };
  let %running = fn (%acc: int32, %x: int32) -> (int32, int32) { (%acc + %x, %acc * 10 + %x) };
  let %countdown = fn (%n: int32) -> Option[(int32, int32)] {
    if (%n == 0) { None } else { Some((%n - 1, %n)) }
  };
  let %tree = Rose(1, Cons(Rose(2, Nil), Cons(Rose(3, Cons(Rose(4, Nil), Nil)), Nil)));
  let %small = fn (%x: int32) -> bool { %x < 3 };
  (
    (
      @sum(@map(%square, %xs)),
      @length(%xs),
      @nth(%xs, 3) + @hd(%xs),
      @foldl(%minus, 100, %xs),
      @foldr1(%minus, %xs),
      @iterate(%double, 5)(@compose(fn (%x: int32) -> int32 { @id(%x) }, %double)(1)),
    ),
    (
      @rev(@concat(%xs, @replicate(2, 9))),
      @update(@tl(%xs), 1, 42),
      @filter(%small, %xs),
      @foldr(@flip(fn (%acc: List[int32], %x: int32) -> List[int32] { Cons(%x, %acc) }), Nil, %xs),
      @zip(@range(7, 10), @map(%small, %xs)),
    ),
    (
      @map_accuml(%running, 0, @range(1, 4)),
      @map_accumr(%running, 0, @range(1, 4)),
      @unfoldr(%countdown, 3),
      @unfoldl(%countdown, 3),
    ),
    (
      @all(@map(%small, @range(0, 3))),
      @all(@map(%small, %xs)),
      @any(@map(%small, @range(3, 9))),
      @any(Nil),
      @size(%tree),
      @tmap(%square, %tree),
    ),
  )
}
"""


def _to_python(value: object) -> object:
    """Interpreter values as Python data: lists for List, (value, children) for Tree."""
    from relay.backend.runtime import ConstructorValue

    if isinstance(value, np.ndarray):
        return value.item()
    if isinstance(value, tuple):
        return tuple(_to_python(v) for v in value)
    assert isinstance(value, ConstructorValue), value
    name = value.constructor.name_hint
    if name in ("Cons", "Nil"):
        items = []
        while value.constructor.name_hint == "Cons":
            items.append(_to_python(value.fields[0]))
            value = value.fields[1]
        return items
    if name == "Rose":
        return (_to_python(value.fields[0]), _to_python(value.fields[1]))
    return (name, *(_to_python(v) for v in value.fields))


def test_prelude_functions_compute_what_they_say() -> None:
    from relay.backend.runtime import interpret

    module = parse(prelude_text() + PRELUDE_PROGRAM, "<prelude program>")
    check_module(module)
    scalars, lists, accumulating, predicates = _to_python(interpret(module))  # type: ignore[misc]
    assert scalars == (30, 5, 3, 90, 2, 64)
    assert lists == (
        [9, 9, 4, 3, 2, 1, 0],
        [1, 42, 3, 4],
        [0, 1, 2],
        [0, 1, 2, 3, 4],
        [(7, True), (8, True), (9, True)],
    )
    assert accumulating == ((6, [1, 12, 33]), (6, [51, 32, 3]), [3, 2, 1], [1, 2, 3])
    assert predicates == (True, False, False, False, 4, (1, [(4, []), (9, [(16, [])])]))


# ------------------------------------------------------------------------------ examples


@pytest.mark.parametrize("name", sorted(MODELS))
def test_example_parses(name: str) -> None:
    module = _parse_example(name)
    main = module["main"]
    assert main.ret_type == MODELS[name][0]
    assert main.params, name
    for gv in module:
        function = module[gv]
        assert function.ret_type is not None, gv.name_hint
        assert all(p.type_annotation is not None for p in function.params), gv.name_hint


@pytest.mark.parametrize("name", sorted(MODELS))
def test_example_has_no_type_error(name: str) -> None:
    # Operators whose type relation is not written yet are reported as such; every other
    # diagnostic (a shape or dtype mismatch, a wrong annotation) is a bug in the model.
    # Once every relation exists, this checks the whole model.
    try:
        types = check_module(_parse_example(name))
    except TypeCheckError as error:
        other = [d.render() for d in error.diagnostics if "has no type relation" not in d.message]
        assert other == []
    else:
        assert types.ok and not types.warnings


def test_every_example_is_listed() -> None:
    assert make_weights.example_names() == sorted(MODELS)
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for name in MODELS:
        assert f"`{name}.relay`" in readme
        text = (EXAMPLES / f"{name}.relay").read_text(encoding="utf-8")
        assert text.startswith('#[version = "0.0.5"]\n//'), name
        assert "Input" in text.split("\ndef ")[0], name


def test_recursive_examples_declare_their_adts() -> None:
    lstm = _parse_example("lstm")
    assert [c.name_hint for c in lstm.get_type("List").constructors] == ["Cons", "Nil"]
    state = lstm["lstm"].ret_type
    assert isinstance(state, TupleType) and len(state.fields) == 2
    tree = _parse_example("treelstm")
    assert [c.name_hint for c in tree.get_type("Tree").constructors] == ["Rose"]
    assert _matches(tree["tree_lstm"]) and _matches(tree["foldl"])


@pytest.mark.parametrize("name", [*sorted(MODELS), "prelude"])
def test_print_then_parse_round_trips(name: str) -> None:
    if name == "prelude":
        module = parse(prelude_text(), str(prelude_path()))
    else:
        module = _parse_example(name)
    text = print_module(module)
    again = parse(text, f"<printed {name}>")
    assert_structural_equal(module, again)
    assert print_module(again) == text


# -------------------------------------------------------------------------- make_weights


def _check_arrays(name: str, arrays: dict[str, np.ndarray]) -> None:
    expected = _annotated_params(_parse_example(name))
    assert list(arrays) == list(expected)
    for key, array in arrays.items():
        assert array.shape == expected[key].shape, key
        assert array.dtype == np.dtype(expected[key].dtype), key
        assert np.all(np.isfinite(array)), key
        if key.endswith("_var"):
            assert array.min() > 0, key


@pytest.mark.parametrize("name", sorted(MODELS))
def test_parameter_specs_follow_the_annotations(name: str) -> None:
    specs = make_weights.parameter_specs(name)
    expected = _annotated_params(_parse_example(name))
    assert [(s.name, s.shape, s.dtype) for s in specs] == [
        (key, ty.shape, ty.dtype) for key, ty in expected.items()
    ]
    trainable = sum(
        math.prod(s.shape)
        for s in specs
        if make_weights.role(s.name, s.shape) != "input" and not s.name.endswith(("_mean", "_var"))
    )
    assert trainable == MODELS[name][1]


def test_make_weights_writes_mlp_and_lenet(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert make_weights.main(["mlp", "lenet", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lenet.npz", "mlp.npz"]
    for name in ("mlp", "lenet"):
        with np.load(tmp_path / f"{name}.npz") as npz:
            arrays = {key: npz[key] for key in npz.files}
        _check_arrays(name, arrays)
        again = make_weights.make_weights(make_weights.parameter_specs(name))
        for key, array in again.items():
            np.testing.assert_array_equal(arrays[key], array)
    assert str(tmp_path / "mlp.npz") in capsys.readouterr().out


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "transformer_layer", "lstm"])
def test_make_weights_in_memory(name: str) -> None:
    arrays = make_weights.make_weights(make_weights.parameter_specs(name))
    _check_arrays(name, arrays)


def test_weight_scaling() -> None:
    specs = {s.name: s for s in make_weights.parameter_specs("resnet18")}
    arrays = make_weights.make_weights(list(specs.values()))
    conv = arrays["layer4_1_conv2_weight"]  # fan-in 512 * 3 * 3
    assert conv.std() == pytest.approx(math.sqrt(2 / (512 * 9)), rel=0.02)
    assert arrays["bn1_var"].min() >= 0.5 and arrays["bn1_var"].max() <= 1.5
    assert arrays["bn1_gamma"].min() >= 0.8 and arrays["bn1_gamma"].max() <= 1.2
    assert abs(arrays["fc_bias"]).max() < 0.5
    assert arrays["data"].std() == pytest.approx(1.0, rel=0.02)
    other = make_weights.make_weights(list(specs.values()), seed=1)
    assert not np.array_equal(other["data"], arrays["data"])


def test_make_weights_dry_run_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert make_weights.main(["--dry-run", "--out", str(tmp_path), "lstm"]) == 0
    out = capsys.readouterr().out
    assert "weight_hh: (512, 128) float32 (weight)" in out and "x3: (1, 64) float32 (input)" in out
    assert list(tmp_path.iterdir()) == []


def test_make_weights_rejects_unusable_parameters(tmp_path: Path) -> None:
    untyped = tmp_path / "untyped.relay"
    untyped.write_text('#[version = "0.0.5"]\ndef @main(%x) { %x }\n')
    with pytest.raises(InputError) as info:
        make_weights.parameter_specs(untyped)
    assert "%x" in info.value.message and info.value.span is not None
    assert info.value.span.line == 2
    dynamic = tmp_path / "dynamic.relay"
    dynamic.write_text('#[version = "0.0.5"]\ndef @main(%x: Tensor[(?, 3), float32]) { %x }\n')
    with pytest.raises(InputError, match="dynamic"):
        make_weights.parameter_specs(dynamic)
    assert make_weights.main([str(dynamic), "--out", str(tmp_path)]) == 1
    assert make_weights.main([str(tmp_path / "missing.relay")]) == 1
