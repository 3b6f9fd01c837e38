"""Row reductions (fuse_ops.py): a reduction over the trailing axes with `keepdims` takes the
element-wise/broadcast ops that bring it back over its rows, and the reductions of the same
rows on the way (an expanded layer norm, a spelled-out softmax, an l2 normalize), as one
group; anything else keeps TVM's rule (a reduction never fuses forward)."""

from __future__ import annotations

import numpy as np
import pytest
import relay
from relay.lang.module import IRModule
from relay.passes import PassContext, standard_pipeline

from .test_fuse_ops import groups, parse, random_inputs

LAYER_NORM = ["mean", "subtract", "multiply", "mean", "add", "rsqrt", "multiply"]
"""An expanded layer norm's ops before its scale and shift (simplify-inference)."""


def optimize(mod: IRModule) -> IRModule:
    with PassContext(opt_level=3) as ctx:
        return standard_pipeline(3)(mod, ctx)


def assert_compiled_matches_interpreter(mod: IRModule, seed: int = 0) -> None:
    """The compiled program (2 threads, one kernel per group) against the interpreter on
    the unoptimized program."""
    inputs = random_inputs(mod["main"], seed)
    want = np.asarray(relay.interpret(mod, **inputs))
    got = relay.build(mod, target="llvm -num-threads=2").run(**inputs)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("shape", [(5, 7), (3, 4, 13), (9, 512), (1, 1)])
def test_layer_norm_with_its_producer_and_reshape_is_one_group(shape: tuple[int, ...]) -> None:
    # sizes no vector or tile divides, two row axes, a whole row of the transformer layer
    dims = ", ".join(map(str, shape))
    n = shape[-1]
    mod = parse(
        f"""def @main(%x: Tensor[({dims}), float32], %y: Tensor[({dims}), float32],
                      %g: Tensor[({n}), float32], %b: Tensor[({n}), float32]) {{
             %0 = nn.layer_norm(%x + %y, %g, %b, axis=-1, epsilon=1e-5f);
             reshape(%0, newshape=[1, {dims}])
           }}"""
    )
    out = optimize(mod)
    assert groups(out["main"]) == [["add", *LAYER_NORM, "multiply", "add", "reshape"]]
    assert_compiled_matches_interpreter(mod)


def test_spelled_out_softmax_then_l2_normalize_of_the_same_rows_are_one_group() -> None:
    mod = parse(
        """def @main(%x: Tensor[(6, 19), float32]) {
             %0 = exp(%x - max(%x, axis=[1], keepdims=True));
             %1 = %0 / sum(%0, axis=[-1], keepdims=True);
             nn.l2_normalize(%1, eps=1e-3f, axis=[1])
           }"""
    )
    out = optimize(mod)
    softmax = ["max", "subtract", "exp", "sum", "divide"]
    assert groups(out["main"]) == [[*softmax, "multiply", "sum", "maximum", "sqrt", "divide"]]
    assert_compiled_matches_interpreter(mod)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # reduced over a leading axis: the columns are not rows
        (
            "%x - mean(%x, axis=[0], keepdims=True)",
            [["mean"], ["subtract"]],
        ),
        # without keepdims
        (
            "%x - expand_dims(sum(%x, axis=[1]), axis=1)",
            [["sum"], ["expand_dims", "subtract"]],
        ),
        # a reshape that splits the rows' elements ends the group before it
        (
            "reshape(%x * sum(%x, axis=[1], keepdims=True), newshape=[4, 2, 5])",
            [["sum", "multiply"], ["reshape"]],
        ),
        # two reductions over different axes of the same data: the column max stays
        # apart, the row mean takes the ops back over its rows
        (
            "(%x - mean(%x, axis=[1], keepdims=True)) * max(%x, axis=[0], keepdims=True)",
            [["max"], ["mean", "subtract", "multiply"]],
        ),
        # a dense after the broadcast: the row group never joins an anchored group
        (
            "nn.dense(%x - mean(%x, axis=[1], keepdims=True), %x)",
            [["mean", "subtract"], ["nn.dense"]],
        ),
    ],
)
def test_groups_end_where_values_leave_the_rows(body: str, expected: list[list[str]]) -> None:
    mod = parse(f"def @main(%x: Tensor[(4, 10), float32]) {{ {body} }}")
    assert groups(optimize(mod)["main"]) == expected
    assert_compiled_matches_interpreter(mod)


def test_the_row_group_broadcasting_over_a_bigger_tensor_ends_before_it() -> None:
    # the mean of (4, 1) rows broadcast over a (3, 4, 10) tensor: not the data's shape
    mod = parse(
        """def @main(%x: Tensor[(4, 10), float32], %z: Tensor[(3, 4, 10), float32]) {
             %z * (%x - mean(%x, axis=[1], keepdims=True))
           }"""
    )
    assert groups(optimize(mod)["main"]) == [["mean", "subtract"], ["multiply"]]
    assert_compiled_matches_interpreter(mod)


def test_transformer_layer_norms_compile_to_one_kernel_each() -> None:
    mod = relay.parse(
        """#[version = "0.0.5"]
        def @main(%x: Tensor[(16, 64), float32], %w: Tensor[(64, 64), float32],
                  %g: Tensor[(64), float32], %b: Tensor[(64), float32]) {
          %0 = nn.layer_norm(%x + nn.dense(%x, %w), %g, %b, axis=-1, epsilon=1e-5f);
          %1 = nn.layer_norm(%0 + nn.dense(%0, %w), %g, %b, axis=1, epsilon=1e-5f);
          reshape(%1, newshape=[1, 16, 64])
        }""",
        prelude=False,
    )
    out = optimize(mod)
    names = groups(out["main"])
    # the residual add joins the dense; the layer norm is one group after it
    assert names == [
        ["nn.dense", "add"],
        [*LAYER_NORM, "multiply", "add"],
        ["nn.dense", "add"],
        [*LAYER_NORM, "multiply", "add", "reshape"],
    ]
    assert_compiled_matches_interpreter(mod)
