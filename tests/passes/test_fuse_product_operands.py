"""Operand views of a batch_matmul (fuse_ops.py `_feeds_product`): a chain of data-movement
ops (`LAYOUT_OPS`: reshape, transpose, strided_slice, ...) whose only use is an operand of
`nn.batch_matmul` joins the product's kernel, which reads the operand in place (the heads
split off a merged QKV projection); any other producer keeps TVM's rule."""

from __future__ import annotations

import numpy as np
import pytest
import relay
from relay.lang.module import IRModule
from relay.passes import PassContext, standard_pipeline

from .test_fuse_ops import groups, parse, random_inputs

SPLIT = ["strided_slice", "reshape", "transpose"]


def optimize(mod: IRModule) -> IRModule:
    with PassContext(opt_level=3) as ctx:
        return standard_pipeline(3)(mod, ctx)


def attention(seq: int, heads: int, width: int) -> IRModule:
    """Scores and context of `heads` heads of `width` split off one merged (seq, 3 x heads
    x width) projection, as the transformer layer's merged QKV dense gives them."""
    model = heads * width

    def split(part: int) -> str:
        begin, end = part * model, (part + 1) * model
        return (
            f"transpose(reshape(strided_slice(%qkv, begin=[0, {begin}], end=[{seq}, {end}]),"
            f" newshape=[{seq}, {heads}, {width}]), axes=[1, 0, 2])"
        )

    return parse(
        f"""def @main(%x: Tensor[({seq}, {model}), float32],
                      %w: Tensor[({3 * model}, {model}), float32]) {{
             let %qkv = nn.dense(%x, %w, units={3 * model});
             let %s = nn.batch_matmul({split(0)}, {split(1)}, transpose_b=True) * 0.5f;
             nn.batch_matmul(nn.softmax(%s, axis=-1), {split(2)}, transpose_b=False)
           }}"""
    )


def assert_compiled_matches_interpreter(mod: IRModule, threads: int = 2) -> None:
    inputs = random_inputs(mod["main"], 0)
    want = np.asarray(relay.interpret(mod, **inputs))
    got = relay.build(mod, target=f"llvm -num-threads={threads}").run(**inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_split_heads_join_the_batch_matmuls_that_read_them() -> None:
    out = optimize(attention(seq=13, heads=3, width=5))
    assert groups(out["main"]) == [
        ["nn.dense"],
        [*SPLIT, *SPLIT, "nn.batch_matmul", "multiply"],
        ["nn.softmax"],
        [*SPLIT, "nn.batch_matmul"],
    ]


@pytest.mark.parametrize(("seq", "heads", "width", "threads"), [(13, 3, 5, 2), (32, 2, 24, 1)])
def test_batch_matmul_reading_split_heads_in_place_matches_the_interpreter(
    seq: int, heads: int, width: int, threads: int
) -> None:
    # sizes no vector or register block divides, and one with several 6-row blocks and
    # a 16-wide column block (the transformer's micro-kernel)
    assert_compiled_matches_interpreter(attention(seq, heads, width), threads)


def test_a_view_with_another_use_stays_its_own_kernel() -> None:
    mod = parse(
        """def @main(%x: Tensor[(6, 12), float32]) {
             let %v = transpose(reshape(%x, newshape=[6, 3, 4]), axes=[1, 0, 2]);
             (nn.batch_matmul(%v, %v, transpose_b=True), %v)
           }"""
    )
    out = optimize(mod)
    assert sorted(groups(out["main"])) == [["nn.batch_matmul"], ["reshape", "transpose"]]
    assert_compiled_matches_interpreter_tuple(mod)


def test_arithmetic_before_the_product_is_not_recomputed_in_it() -> None:
    # exp joins the reshape/transpose group (elementwise into injective), which then holds
    # arithmetic: the group stays a kernel of its own instead of being read per column block
    mod = parse(
        """def @main(%x: Tensor[(6, 12), float32], %y: Tensor[(3, 5, 4), float32]) {
             let %v = transpose(reshape(exp(%x), newshape=[6, 3, 4]), axes=[1, 0, 2]);
             nn.batch_matmul(%v, %y, transpose_b=True)
           }"""
    )
    out = optimize(mod)
    assert groups(out["main"]) == [["exp", "reshape", "transpose"], ["nn.batch_matmul"]]
    assert_compiled_matches_interpreter(mod)


def test_dense_operands_keep_their_kernels() -> None:
    # only batch_matmul takes operand views: a dense reads its data through no moved index
    mod = parse(
        """def @main(%x: Tensor[(3, 8, 4), float32], %w: Tensor[(5, 12), float32]) {
             nn.dense(reshape(transpose(%x, axes=[1, 0, 2]), newshape=[8, 12]), %w, units=5)
           }"""
    )
    out = optimize(mod)
    assert groups(out["main"]) == [["transpose", "reshape"], ["nn.dense"]]


def assert_compiled_matches_interpreter_tuple(mod: IRModule) -> None:
    inputs = random_inputs(mod["main"], 0)
    want = relay.interpret(mod, **inputs)
    got = relay.build(mod, target="llvm -num-threads=2").run(**inputs)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-5, atol=1e-5)
