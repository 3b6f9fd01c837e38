"""The IR builders (`relay.var`, `relay.const`, `relay.add`, `relay.nn.conv2d`, ...): every
program built in Python is structurally equal to the same program parsed from text, and
attributes are checked exactly as the parser checks them."""

import ast
import importlib
import inspect

import numpy as np
import pytest
import relay
from relay.lang import (
    ANY,
    AttrsError,
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    IRModule,
    Let,
    ParseError,
    ShapeVar,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
    all_ops,
    assert_structural_equal,
    get_op,
    structural_equal,
)
from relay.lang.builder_stubs import module_name, stale_stubs, stub_path, stub_text
from relay.lang.builders import namespace_builders, namespaces
from relay.testing.typed_ops import Nonzero, Tape, generator_for, spec_type

HEADER = '#[version = "0.0.5"]\n'


def parsed(text):
    """The module of `text` (without the prelude)."""
    return relay.parse(HEADER + text, prelude=False)


def assert_same(built, text):
    """`built` (a module or `@main`'s function) equals the module parsed from `text`."""
    mod = built if isinstance(built, IRModule) else IRModule.from_expr(built)
    assert_structural_equal(mod, parsed(text))


def builder_of(op):
    """The builder function of an operator (`relay.nn.conv2d` for `nn.conv2d`)."""
    prefix, _, short = op.name.rpartition(".")
    module = relay.op if not prefix else getattr(relay, prefix)
    return getattr(module, short)


# ----------------------------------------------------------------------------- programs


def test_mlp():
    x = relay.var("x", shape=(1, 784))
    w1 = relay.var("w1", shape=(128, 784))
    b1 = relay.var("b1", shape=(128,))
    w2 = relay.var("w2", shape=(10, 128))
    hidden = relay.nn.relu(relay.nn.bias_add(relay.nn.dense(x, w1, units=128), b1))
    out = relay.nn.softmax(relay.nn.dense(hidden, w2))
    assert_same(
        relay.Function([x, w1, b1, w2], out),
        """
        def @main(%x: Tensor[(1, 784), float32], %w1: Tensor[(128, 784), float32],
                  %b1: Tensor[(128), float32], %w2: Tensor[(10, 128), float32]) {
          %0 = nn.dense(%x, %w1, units=128);
          %1 = nn.bias_add(%0, %b1);
          %2 = nn.relu(%1);
          %3 = nn.dense(%2, %w2, units=None);
          nn.softmax(%3)
        }
        """,
    )


def test_conv_block_with_padding_strides_batch_norm_and_pooling():
    x = relay.var("x", shape=(1, 3, 32, 32))
    w = relay.var("w", shape=(16, 3, 3, 3))
    gamma, beta, mean, var = (relay.var(n, shape=(16,)) for n in ("g", "b", "m", "v"))
    conv = relay.nn.conv2d(
        x, w, strides=(2, 2), padding=(1, 1, 1, 1), channels=16, kernel_size=(3, 3)
    )
    bn = relay.nn.batch_norm(conv, gamma, beta, mean, var, epsilon=1e-3)
    assert isinstance(bn, relay.TupleWrapper) and len(bn) == 3
    act = relay.nn.relu(bn[0])
    pool = relay.nn.max_pool2d(act, (2, 2), (2, 2))  # pool_size, strides positionally
    out = relay.add(pool, relay.nn.global_avg_pool2d(pool))
    assert_same(
        relay.Function([x, w, gamma, beta, mean, var], out),
        """
        def @main(%x: Tensor[(1, 3, 32, 32), float32], %w: Tensor[(16, 3, 3, 3), float32],
                  %g: Tensor[(16), float32], %b: Tensor[(16), float32],
                  %m: Tensor[(16), float32], %v: Tensor[(16), float32]) {
          %0 = nn.conv2d(%x, %w, strides=[2, 2], padding=[1, 1, 1, 1], channels=16,
                         kernel_size=[3, 3]);
          %1 = nn.batch_norm(%0, %g, %b, %m, %v, epsilon=1e-3f);
          %2 = nn.relu(%1.0);
          %3 = nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2]);
          %4 = nn.global_avg_pool2d(%3);
          add(%3, %4)
        }
        """,
    )


def test_let_if_tuple_projection_and_closure():
    x = relay.var("x", shape=(2,))
    c = relay.var("c", "bool")
    y = relay.var("y", shape=(2,))
    f = relay.var("f")
    t = relay.var("t")
    closure = relay.Function([y], relay.add(y, x))  # captures %x
    pair = relay.Tuple([Call(f, [x]), relay.multiply(x, 2.0)])  # 2.0: a float32 constant
    body = relay.If(c, relay.TupleGetItem(t, 0), relay.TupleGetItem(t, 1))
    fn = relay.Function(
        [x, c], relay.Let(f, closure, relay.Let(t, pair, body)), TensorType((2,), "float32")
    )
    assert_same(
        fn,
        """
        def @main(%x: Tensor[(2), float32], %c: bool) -> Tensor[(2), float32] {
          let %f = fn (%y: Tensor[(2), float32]) { add(%y, %x) };
          let %t = (%f(%x), multiply(%x, 2f));
          if (%c) { %t.0 } else { %t.1 }
        }
        """,
    )


def test_recursive_let_and_globals():
    i = relay.var("i", "int32")
    loop = relay.var("loop")
    rec = relay.Function(
        [i],
        relay.If(relay.less(i, 10), Call(loop, [relay.add(i, 1)]), i),
        TensorType((), "int32"),
    )
    double = GlobalVar("double")
    a = relay.var("a", shape=(3,), dtype="int32")
    double_fn = relay.Function([a], relay.add(a, a))
    n = relay.var("n", shape=(3,), dtype="int32")
    main = relay.Function(
        [n], relay.Let(loop, rec, relay.Tuple([Call(loop, [relay.const(0)]), Call(double, [n])]))
    )
    mod = IRModule({double: double_fn, GlobalVar("main"): main})
    assert_same(
        mod,
        """
        def @double(%a: Tensor[(3), int32]) { add(%a, %a) }
        def @main(%n: Tensor[(3), int32]) {
          let %loop = fn (%i: int32) -> int32 {
            if (less(%i, 10)) { %loop(add(%i, 1)) } else { %i }
          };
          (%loop(0), @double(%n))
        }
        """,
    )


def test_a_wrong_program_is_not_equal():
    x = relay.var("x", shape=(2,))
    built = IRModule.from_expr(relay.Function([x], relay.subtract(x, x)))
    assert not structural_equal(
        built, parsed("def @main(%x: Tensor[(2), float32]) { add(%x, %x) }")
    )


def test_tvm_positional_attributes():
    x = relay.var("x", shape=(2, 6))
    idx = relay.var("i", shape=(2,), dtype="int32")
    parts = relay.split(x, 3, axis=1)
    assert len(parts) == 3
    parts2 = relay.split(x, [1, 4], 1)
    assert len(parts2) == 3
    out = relay.Tuple(
        [
            relay.reshape(x, (3, -1)),
            relay.transpose(x, (1, 0)),
            relay.sum(x, 1, keepdims=True),
            relay.argmax(x, [1], False, True),  # axis, keepdims, exclude (TVM's order)
            parts[2],
            parts2[-1],
            relay.strided_slice(x, [0, 1], [2, 5], [1, 2]),
            relay.take(x, idx, 1),
            relay.gather(x, 0, relay.cast(relay.reshape(idx, (1, 2)), "int64")),
            relay.concatenate([x, x], 1),
            relay.nn.pad(x, ((0, 0), (1, 1)), 0.0),
            relay.expand_dims(x, 0, 2),
            relay.clip(x, 0, 6),
        ]
    )
    assert_same(
        relay.Function([x, idx], out),
        """
        def @main(%x: Tensor[(2, 6), float32], %i: Tensor[(2), int32]) {
          %0 = split(%x, indices_or_sections=3, axis=1);
          %1 = split(%x, indices_or_sections=[1, 4], axis=1);
          %2 = reshape(%i, newshape=[1, 2]);
          (reshape(%x, newshape=[3, -1]),
           transpose(%x, axes=[1, 0]),
           sum(%x, axis=[1], keepdims=True),
           argmax(%x, axis=[1], exclude=True),
           %0.2,
           %1.2,
           strided_slice(%x, begin=[0, 1], end=[2, 5], strides=[1, 2], axes=None),
           take(%x, %i, axis=1),
           gather(%x, cast(%2, dtype="int64"), axis=0),
           concatenate((%x, %x), axis=1),
           nn.pad(%x, 0f, pad_width=[[0, 0], [1, 1]]),
           expand_dims(%x, axis=0, num_newaxis=2),
           clip(%x, a_min=0f, a_max=6f))
        }
        """,
    )


def test_arange_and_dropout():
    x = relay.var("x", shape=(4,))
    out = relay.Tuple(
        [relay.arange(5), relay.arange(1, 7, 2, dtype="int32"), relay.nn.dropout(x, 0.25)]
    )
    assert isinstance(relay.nn.dropout_raw(x), relay.TupleWrapper)
    assert_same(
        relay.Function([x], out),
        """
        def @main(%x: Tensor[(4), float32]) {
          %0 = nn.dropout(%x, rate=0.25f);
          (arange(0f, 5f, 1f, start=0f, stop=5f, step=1f, dtype="float32"),
           arange(1, 7, 2, start=1, stop=7, step=2, dtype="int32"),
           %0.0)
        }
        """,
    )


def test_topk_returns_a_tuple_only_for_both():
    x = relay.var("x", shape=(5,))
    assert len(relay.topk(x, 2)) == 2
    values = relay.topk(x, 2, ret_type="values")
    assert isinstance(values, Call) and values.attrs.ret_type == "values"


def test_tuple_wrapper():
    x = relay.var("x", shape=(4,))
    parts = relay.split(x, 2)
    assert [p.index for p in parts] == [0, 1]
    assert parts[-1].index == 1 and parts.astuple() is parts[0].tuple_value
    with pytest.raises(IndexError):
        parts[2]
    # a tuple result passed to a builder is the tuple itself
    assert relay.concatenate(parts).args[0] is parts.astuple()


# ----------------------------------------------------------------------------- every operator


def _simplest_call(op):
    """A valid call of `op` from the typed-op generators (the simplest one that exists)."""
    gen = generator_for(op)
    for seed in range(64):
        call = gen(Tape(bytes([seed]) * 96, ("float32", "int32", "bool")), op, None)
        if call is not None:
            return call
    raise AssertionError(f"no call of {op.name}")


def _build_with_builder(op, call, args):
    builder_args = [list(args)] if call.tuple_arg else list(args)
    kwargs = dict(call.attrs.non_default_items()) if call.attrs is not None else {}
    if op.name == "arange":
        return relay.arange(*builder_args, dtype=kwargs["dtype"])
    if op.name == "nn.dropout":
        return relay.nn.dropout_raw(*builder_args, **kwargs).astuple()
    # inputs by name: some builders take an attribute between inputs (`gather(data, axis,
    # indices)`, as TVM's do)
    built = builder_of(op)(**dict(zip(op.arg_names, builder_args)), **kwargs)
    return built.astuple() if isinstance(built, relay.TupleWrapper) else built


@pytest.mark.parametrize("op", all_ops(), ids=lambda op: op.name)
def test_every_operator_builder_matches_the_parsed_text(op):
    call = _simplest_call(op)
    params, args = [], []
    for k, spec in enumerate(call.args):
        if isinstance(spec, np.ndarray):
            args.append(relay.const(spec))
        else:
            p = Var(f"p{k}", spec_type(spec) if isinstance(spec, Nonzero) else spec)
            params.append(p)
            args.append(p)
    direct_args = [Tuple(args)] if call.tuple_arg else args
    direct = IRModule.from_expr(Function(params, Call(op, direct_args, call.attrs)))
    built = IRModule.from_expr(Function(params, _build_with_builder(op, call, args)))
    assert_structural_equal(built, direct)
    assert_structural_equal(built, relay.parse(direct.astext(), prelude=False))


@pytest.mark.parametrize("op", all_ops(), ids=lambda op: op.name)
def test_builder_defaults_are_the_schemas(op):
    if op.name == "arange":
        return  # hand-written: its bounds are inputs and attributes at once
    schema = op.attrs_schema
    params = inspect.signature(builder_of(op)).parameters
    fields = schema.fields if schema is not None else ()
    assert sorted(params) == sorted([*op.arg_names, *(f.name for f in fields)])
    for f in fields:
        default = params[f.name].default
        if default is inspect.Parameter.empty:
            continue
        # passing the signature's default gives what omitting the attribute gives
        omitted = None if f.required else f.coerce(f.default)
        assert f.coerce(default) == omitted, f.name


# ----------------------------------------------------------------------------- errors


def _parse_error(text):
    with pytest.raises(ParseError) as info:
        parsed(text)
    return info.value


def test_unknown_attribute_lists_the_valid_ones_as_the_parser_does():
    x, w = relay.var("x", shape=(1, 1, 3, 3)), relay.var("w", shape=(1, 1, 1, 1))
    with pytest.raises(AttrsError) as info:
        relay.nn.conv2d(x, w, stride=(1, 1))
    message = info.value.message
    assert "Conv2DAttrs has no attribute `stride`" in message
    assert "strides, padding, dilation, groups, channels, kernel_size" in message
    assert "did you mean `strides`?" in info.value.diagnostics[0].notes
    parser = _parse_error(
        "def @main(%x: Tensor[(1, 1, 3, 3), float32], %w: Tensor[(1, 1, 1, 1), float32]) {"
        " nn.conv2d(%x, %w, stride=[1, 1]) }"
    )
    assert parser.message == message
    assert parser.diagnostics[0].notes == info.value.diagnostics[0].notes


def test_attribute_of_an_operator_without_attributes():
    x = relay.var("x", shape=(2,))
    with pytest.raises(AttrsError) as info:
        relay.add(x, x, axis=1)
    parser = _parse_error("def @main(%x: Tensor[(2), float32]) { add(%x, %x, axis=1) }")
    assert info.value.message == parser.message == "operator `add` takes no attributes, got `axis`"


@pytest.mark.parametrize(
    ("python", "text"),
    [
        ({"groups": "two"}, 'groups="two"'),
        ({"padding": [1.5]}, "padding=[1.5f]"),
        ({"out_dtype": "float33"}, 'out_dtype="float33"'),
    ],
)
def test_wrong_attribute_value_gives_the_parsers_message(python, text):
    x, w = relay.var("x", shape=(1, 1, 3, 3)), relay.var("w", shape=(1, 1, 1, 1))
    with pytest.raises(AttrsError) as info:
        relay.nn.conv2d(x, w, **python)
    parser = _parse_error(
        "def @main(%x: Tensor[(1, 1, 3, 3), float32], %w: Tensor[(1, 1, 1, 1), float32]) {"
        f" nn.conv2d(%x, %w, {text}) }}"
    )
    assert info.value.message == parser.message
    assert info.value.message.startswith("Conv2DAttrs.")


def test_missing_and_extra_arguments_name_the_builder():
    x = relay.var("x", shape=(2,))
    with pytest.raises(TypeError, match=r"nn\.conv2d\(\): missing a required argument: 'weight'"):
        relay.nn.conv2d(x)
    with pytest.raises(TypeError, match=r"add\(\): too many positional arguments"):
        relay.add(x, x, x)
    with pytest.raises(TypeError, match=r"nn\.max_pool2d\(\): missing .* 'pool_size'"):
        relay.nn.max_pool2d(x)
    with pytest.raises(TypeError, match="argument `rhs` of add must be an expression"):
        relay.add(x, "one")


# ----------------------------------------------------------------------------- var and const


def test_var_forms():
    n = ShapeVar("n")
    cases = [
        (relay.var("a", shape=(1, 3)), TensorType((1, 3), "float32")),
        (relay.var("a", shape=[1, 3], dtype="int8"), TensorType((1, 3), "int8")),
        (relay.var("a", shape=4), TensorType((4,), "float32")),
        (relay.var("a", shape=()), TensorType((), "float32")),
        (relay.var("a", shape=(np.int64(2), n, ANY)), TensorType((2, n, ANY), "float32")),
        (relay.var("a", "int32"), TensorType((), "int32")),
        (relay.var("a", TupleType([])), TupleType([])),
        (relay.var("a"), None),
    ]
    for v, expected in cases:
        assert isinstance(v, Var) and v.name_hint == "a"
        assert v.type_annotation == expected
    with pytest.raises(ValueError, match="either type_annotation or shape"):
        relay.var("a", TensorType((1,), "float32"), shape=(1,))
    with pytest.raises(ValueError, match="needs a shape"):
        relay.var("a", dtype="int32")
    with pytest.raises(ValueError, match="unknown dtype"):
        relay.var("a", shape=(1,), dtype="float33")
    with pytest.raises(TypeError, match="must be a type"):
        relay.var("a", 3)


def test_const_dtypes():
    cases = [
        (relay.const(1.5), "float32", ()),
        (relay.const(2), "int32", ()),
        (relay.const(True), "bool", ()),
        (relay.const(2**40), "int64", ()),
        (relay.const([1.0, 2.0]), "float32", (2,)),
        (relay.const([[1, 2], [3, 4]]), "int32", (2, 2)),
        (relay.const(np.zeros((2, 3))), "float64", (2, 3)),
        (relay.const(np.int8(3)), "int8", ()),
        (relay.const(1, "float16"), "float16", ()),
        (relay.const([1, 2], dtype="uint8"), "uint8", (2,)),
    ]
    for c, dtype, shape in cases:
        assert isinstance(c, Constant)
        assert (c.dtype, c.data.shape) == (dtype, shape)
    assert relay.const([1.5, 2.5]).data.tolist() == [1.5, 2.5]
    with pytest.raises(TypeError, match="cannot make a constant"):
        relay.const("text")


def test_number_inputs_become_constants():
    x = relay.var("x", shape=(2,), dtype="int32")
    call = relay.add(x, 3)
    assert isinstance(call.args[1], Constant) and call.args[1].dtype == "int32"


# ----------------------------------------------------------------------------- generation


def test_every_namespace_has_a_module_with_every_builder():
    for prefix in namespaces():
        module = importlib.import_module(f"relay.{module_name(prefix)}")
        builders = namespace_builders(prefix)
        assert sorted(module.__all__) == sorted(builders)
        for name, fn in builders.items():
            assert getattr(module, name) is fn
            assert fn.__name__ == fn.__qualname__ == name
            assert getattr(importlib.import_module(fn.__module__), name) is fn
            assert fn.__doc__
    # every operator has a builder, and the prefixes are the namespaces of `relay`
    for op in all_ops():
        assert callable(builder_of(op)), op.name
    assert relay.nn is importlib.import_module("relay.nn")
    assert relay.image.resize2d.__module__ == "relay.image"
    assert relay.add is relay.op.add


def test_builder_docstring_lists_the_attributes():
    doc = relay.nn.conv2d.__doc__
    assert get_op("nn.conv2d").description in doc
    assert "Conv2DAttrs" in doc and "padding" in doc and "(0, 0)" in doc


def test_stubs_are_up_to_date():
    assert stale_stubs() == [], "run `python -m relay.lang.builder_stubs --write`"


def test_stubs_declare_the_runtime_signatures():
    for prefix in namespaces():
        tree = ast.parse(stub_text(prefix))
        defs = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
        builders = namespace_builders(prefix)
        assert set(defs) == set(builders)
        for name, fn in builders.items():
            node = defs[name]
            stub_params = [a.arg for a in node.args.args + node.args.kwonlyargs]
            assert stub_params == list(inspect.signature(fn).parameters), name
        assert stub_path(prefix).name == f"{module_name(prefix)}.pyi"


def test_the_stub_writer_reports_a_stale_stub(tmp_path, monkeypatch):
    from relay.lang import builder_stubs

    monkeypatch.setattr(builder_stubs, "PACKAGE_ROOT", tmp_path)
    assert builder_stubs.main(["--check"]) == 1
    assert builder_stubs.main(["--write"]) == 0
    assert builder_stubs.main(["--check"]) == 0
    (tmp_path / "nn.pyi").write_text("# edited\n")
    assert builder_stubs.stale_stubs() == [tmp_path / "nn.pyi"]


def test_let_and_if_are_the_node_classes():
    assert relay.Let is Let and relay.If is If and relay.TupleGetItem is TupleGetItem
