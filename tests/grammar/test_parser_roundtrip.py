"""TVM-printed text parses; parse → print → parse gives a structurally equal program."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from relay.grammar import parse, parse_expr
from relay.lang.expr import Call, Constant, Function, TupleGetItem, Var
from relay.lang.metadata import write_metadata
from relay.lang.op import get_op
from relay.lang.printer import print_expr, print_module
from relay.lang.structural import assert_structural_equal
from relay.lang.types import ShapeVar, TensorType
from relay.testing import modules

WEIGHTS = [
    np.arange(64 * 3 * 7 * 7, dtype=np.float32).reshape(64, 3, 7, 7),
    np.full(64, 1.0, np.float32),
    np.full(64, 2.0, np.float32),
    np.full(64, 3.0, np.float32),
    np.full(64, 4.0, np.float32),
]

RESNET_BLOCK = """\
#[version = "0.0.5"]
def @main(%data: Tensor[(1, 3, 224, 224), float32] /* ty=Tensor[(1, 3, 224, 224), float32] */) -> Tensor[(1, 64, 112, 112), float32] {
  %0 = nn.conv2d(%data, meta[relay.Constant][0] /* ty=Tensor[(64, 3, 7, 7), float32] */, strides=[2, 2], padding=[3, 3, 3, 3], channels=64, kernel_size=[7, 7]) /* ty=Tensor[(1, 64, 112, 112), float32] */;
  %1 = nn.batch_norm(%0, meta[relay.Constant][1] /* ty=Tensor[(64), float32] */, meta[relay.Constant][2] /* ty=Tensor[(64), float32] */, meta[relay.Constant][3] /* ty=Tensor[(64), float32] */, meta[relay.Constant][4] /* ty=Tensor[(64), float32] */, epsilon=1e-05f) /* ty=(Tensor[(1, 64, 112, 112), float32], Tensor[(64), float32], Tensor[(64), float32]) */;
  %2 = %1.0 /* ty=Tensor[(1, 64, 112, 112), float32] */;
  nn.relu(%2) /* ty=Tensor[(1, 64, 112, 112), float32] */
}

#[metadata]
""" + write_metadata({"relay.Constant": WEIGHTS})

TVM_STYLE_MODULE = """\
#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}

def @main(%x: Tensor[(1, 8), float32] /* ty=Tensor[(1, 8), float32] */, %y: Tensor[(8), float32] /* ty=Tensor[(8), float32] */) -> (Tensor[(1, 8), float32], List[int32]) {
  %3 = fn (%p0: Tensor[(1, 8), float32] /* ty=Tensor[(1, 8), float32] */, %p1: Tensor[(8), float32] /* ty=Tensor[(8), float32] */, Primitive=1) -> Tensor[(1, 8), float32] {
    %4 = add(%p0, %p1) /* ty=Tensor[(1, 8), float32] */;
    nn.relu(%4) /* ty=Tensor[(1, 8), float32] */
  } /* ty=fn (Tensor[(1, 8), float32], Tensor[(8), float32]) -> Tensor[(1, 8), float32] */;
  %5 = %3(%x, %y) /* ty=Tensor[(1, 8), float32] */;
  %6 = Nil /* ty=List[int32] */;
  %7 = Cons(1 /* ty=int32 */, %6) /* ty=List[int32] */;
  (%5, %7) /* ty=(Tensor[(1, 8), float32], List[int32]) */
}
"""


def roundtrip(mod):  # type: ignore[no-untyped-def]
    text = print_module(mod)
    back = parse(text)
    assert_structural_equal(mod, back, map_free_vars=True)
    assert print_module(back) == text
    return back


def test_resnet_block_in_tvm_astext_style() -> None:
    mod = parse(RESNET_BLOCK, "resnet.relay")
    fn = mod["main"]
    relu = fn.body
    assert relu.op is get_op("nn.relu")
    get0 = relu.args[0]
    assert isinstance(get0, TupleGetItem) and get0.index == 0
    bn = get0.tuple_value
    assert bn.op is get_op("nn.batch_norm") and bn.attrs.epsilon == 1e-05
    conv = bn.args[0]
    assert conv.op is get_op("nn.conv2d") and conv.args[0] is fn.params[0]
    weight = conv.args[1]
    assert isinstance(weight, Constant) and weight.data.shape == (64, 3, 7, 7)
    np.testing.assert_array_equal(weight.data, WEIGHTS[0])
    for i in range(1, 5):
        np.testing.assert_array_equal(bn.args[i].data, WEIGHTS[i])
    assert (conv.span.line, conv.span.column) == (3, 8)
    assert fn.ret_type == TensorType((1, 64, 112, 112), "float32")
    roundtrip(mod)


def test_tvm_style_module_with_primitive_function_and_adt() -> None:
    mod = parse(TVM_STYLE_MODULE)
    body = mod["main"].body
    prim_call, cons_call = body.fields
    prim = prim_call.op
    assert isinstance(prim, Function) and prim.is_primitive
    assert isinstance(cons_call, Call) and cons_call.op is mod.get_constructor("Cons")
    roundtrip(mod)


def test_shape_variables_from_metadata() -> None:
    n = ShapeVar("n")
    meta = write_metadata({"tir.SizeVar": [n]})
    fn = parse_expr(
        "fn (%x: Tensor[(meta[tir.SizeVar][0], 3), float32], "
        "%y: Tensor[(meta[tir.SizeVar][0]), float32]) { %x }\n#[metadata]\n" + meta
    )
    a, b = (p.type_annotation.shape[0] for p in fn.params)
    assert isinstance(a, ShapeVar) and a is b and a.name_hint == "n"


def test_expression_roundtrip_with_free_vars_and_metadata() -> None:
    e = parse_expr(
        "free_var %x: Tensor[(3), float32];\n"
        "let %c = meta[relay.Constant][0];\n"
        "%0 = add(%x, %c);\n"
        "(%0, multiply(%0, 2f), -inff, nanf, 7i16, 3i64, True)\n"
        "#[metadata]\n" + write_metadata({"relay.Constant": [np.ones(3, np.float32)]})
    )
    text = print_expr(e)
    back = parse_expr(text)
    assert_structural_equal(e, back, map_free_vars=True)


def test_roundtrip_of_the_language_corpus() -> None:
    mod = parse(
        """
        type Tree[A] { Leaf, Node(Tree[A], A, Tree[A]) }
        extern type Opaque
        def @size[A](%t: Tree[A]) -> int32 {
          match (%t) {
            Leaf => 0,
            Node(%l, _, %r) => @size(%l) + 1 + @size(%r),
          }
        }
        def @main(%x: float32, %o: Opaque) {
          let %r = ref(%x);
          ref_write(%r, %x * 2f);
          let %f = fn [B](%v: B, Inline=1) -> B { %v };
          %0 = if (%x > 0f) { ref_read(%r) } else { -1.5f };
          %1 = match? (%0, Leaf) { (%a, Node(_, %b, _)) => %b, _ => %f(%0) };
          (%0, %1, (), (1,), @size(Node(Leaf, 1i64, Leaf)))
        }
        """
    )
    roundtrip(mod)


@settings(max_examples=25)
@given(modules())
def test_generated_modules_roundtrip(mod) -> None:  # type: ignore[no-untyped-def]
    back = parse(print_module(mod))  # shape variables are free: matched in order
    assert_structural_equal(mod, back, map_free_vars=True)
    assert_structural_equal(back, parse(print_module(back)), map_free_vars=True)


def test_var_identity_of_parameters() -> None:
    fn = parse("def @f(%x: int32) { add(%x, %x) }")["f"]
    assert fn.body.args[0] is fn.params[0] is fn.body.args[1]
    assert isinstance(fn.params[0], Var)
