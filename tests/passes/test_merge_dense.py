"""`merge-dense`: sibling dense layers with constant weights on one input become one dense
on the concatenated weights (and biases), sliced after it; values do not change (the
interpreter is the oracle)."""

from __future__ import annotations

import numpy as np
import pytest
import relay
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend.runtime import interpret
from relay.lang import Call, Constant, GlobalVar, If, IRModule, Tuple, Var, post_order
from relay.lang.op import get_op
from relay.lang.structural import structural_equal
from relay.lang.types import TensorType
from relay.passes import PassContext, PassError, parse_pipeline, standard_pipeline
from relay.passes.merge_dense import merge_dense_function
from relay.testing import check_pass

from .ir_build import call, calls_of, main, ops_of

RNG = np.random.default_rng(0)


def const(*shape: int, rng: np.random.Generator = RNG) -> Constant:
    return Constant(rng.standard_normal(shape).astype("float32"))


def run_pass(mod: IRModule, **options) -> IRModule:
    text = "merge-dense" + (
        "{" + ",".join(f"{k}={v}" for k, v in options.items()) + "}" if options else ""
    )
    return parse_pipeline(text)(mod, PassContext(opt_level=3))


def qkv(rows: int = 16, width: int = 32) -> tuple[IRModule, Var]:
    x = Var("x", TensorType((rows, width), "float32"))
    branches = [
        call("nn.bias_add", call("nn.dense", x, const(width, width), units=width), const(width))
        for _ in range(3)
    ]
    heads = [call("transpose", b, axes=[1, 0]) for b in branches]
    return main((x,), Tuple(heads)), x


def outputs(mod: IRModule, **inputs) -> list[np.ndarray]:
    return [np.asarray(v) for v in interpret(mod, **inputs)]


def test_three_projections_become_one_dense_with_merged_biases() -> None:
    mod, _ = qkv()
    after = run_pass(mod)
    ops = ops_of(after)
    assert ops["nn.dense"] == 1 and ops["nn.bias_add"] == 1 and ops["strided_slice"] == 3
    (dense,) = calls_of(after, "nn.dense")
    assert dense.attrs.units == 96 and dense.args[1].data.shape == (96, 32)
    (bias_add,) = calls_of(after, "nn.bias_add")
    assert bias_add.args[0] is dense and bias_add.args[1].data.shape == (96,)
    slices = calls_of(after, "strided_slice")
    assert sorted((list(s.attrs.begin), list(s.attrs.end)) for s in slices) == [
        ([0], [32]),
        ([32], [64]),
        ([64], [96]),
    ]
    assert all(s.args[0] is bias_add and list(s.attrs.axes) == [1] for s in slices)
    x = RNG.standard_normal((16, 32)).astype("float32")
    for got, want in zip(outputs(after, x=x), outputs(mod, x=x)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_branches_without_a_bias_merge_the_dense_only() -> None:
    x = Var("x", TensorType((4, 8), "float32"))
    a = call("nn.dense", x, const(5, 8), units=5)
    b = call("nn.bias_add", call("nn.dense", x, const(3, 8), units=3), const(3))
    mod = main((x,), Tuple([call("nn.relu", a), b]))
    after = run_pass(mod)
    ops = ops_of(after)
    assert ops["nn.dense"] == 1 and ops["strided_slice"] == 2
    (bias_add,) = calls_of(after, "nn.bias_add")
    assert bias_add.args[0].op is get_op("strided_slice")  # the bias applies to its slice
    xv = RNG.standard_normal((4, 8)).astype("float32")
    for got, want in zip(outputs(after, x=xv), outputs(mod, x=xv)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_dense_used_twice_keeps_its_bias_separate() -> None:
    x = Var("x", TensorType((4, 8), "float32"))
    a = call("nn.dense", x, const(4, 8), units=4)
    b = call("nn.dense", x, const(4, 8), units=4)
    mod = main((x,), Tuple([call("nn.bias_add", a, const(4)), call("nn.bias_add", b, const(4)), a]))
    after = run_pass(mod)
    assert ops_of(after)["nn.dense"] == 1 and ops_of(after)["nn.bias_add"] == 2
    xv = RNG.standard_normal((4, 8)).astype("float32")
    for got, want in zip(outputs(after, x=xv), outputs(mod, x=xv)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_rank_three_data_is_sliced_on_its_last_axis() -> None:
    x = Var("x", TensorType((2, 3, 8), "float32"))
    branches = [
        call("nn.bias_add", call("nn.dense", x, const(n, 8), units=n), const(n), axis=-1)
        for n in (4, 6)
    ]
    mod = main((x,), Tuple(branches))
    after = run_pass(mod)
    assert all(list(s.attrs.axes) == [2] for s in calls_of(after, "strided_slice"))
    assert ops_of(after)["nn.bias_add"] == 1
    xv = RNG.standard_normal((2, 3, 8)).astype("float32")
    for got, want in zip(outputs(after, x=xv), outputs(mod, x=xv)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_what_does_not_merge_is_left_alone() -> None:
    x = Var("x", TensorType((4, 8), "float32"))
    y = Var("y", TensorType((4, 8), "float32"))
    w = Var("w", TensorType((4, 8), "float32"))
    cases = [
        # a weight that is not a constant
        main((x, w), Tuple([call("nn.dense", x, w, units=4), call("nn.dense", x, const(4, 8))])),
        # different inputs
        main((x, y), Tuple([call("nn.dense", x, const(4, 8)), call("nn.dense", y, const(4, 8))])),
        # different out_dtype
        main(
            (x,),
            Tuple(
                [
                    call("nn.dense", x, const(4, 8), out_dtype="float64"),
                    call("nn.dense", x, const(4, 8)),
                ]
            ),
        ),
        # one dense only
        main((x,), call("nn.dense", x, const(4, 8))),
    ]
    for mod in cases:
        after = run_pass(mod)
        assert structural_equal(after["main"], mod["main"])


def test_a_dense_in_a_branch_does_not_merge_with_one_outside() -> None:
    x = Var("x", TensorType((4, 8), "float32"))
    c = Var("c", TensorType((), "bool"))
    outside = call("nn.dense", x, const(4, 8), units=4)
    inside = call("nn.dense", x, const(4, 8), units=4)
    mod = main((x, c), If(c, call("add", outside, inside), outside))
    after = run_pass(mod)
    assert structural_equal(after["main"], mod["main"])


def test_min_branches_is_an_option_and_must_be_two_or_more() -> None:
    mod = main(*_pair())
    assert ops_of(run_pass(mod, **{"min-branches": 3}))["nn.dense"] == 2
    assert ops_of(run_pass(mod, **{"min-branches": 2}))["nn.dense"] == 1
    with pytest.raises(PassError, match="at least 2"):
        run_pass(mod, **{"min-branches": 1})


def _pair() -> tuple[tuple[Var], Tuple]:
    x = Var("x", TensorType((4, 8), "float32"))
    return (x,), Tuple([call("nn.dense", x, const(4, 8)), call("nn.dense", x, const(2, 8))])


def test_the_o3_pipeline_merges_before_packing() -> None:
    names = [p.name for p in standard_pipeline(3).passes]
    assert names.index("fold-constant") < names.index("merge-dense")
    assert names.index("merge-dense") < names.index("alter-op-layout")
    assert "merge-dense" not in [p.name for p in standard_pipeline(2).passes]


def test_built_transformer_projections_match_the_interpreter() -> None:
    mod, _ = qkv(rows=32, width=64)
    x = RNG.standard_normal((32, 64)).astype("float32")
    dump: dict[str, str] = {}
    from relay.driver import build

    model = build(mod, target="llvm -num-threads=1", dump=dump)
    assert dump["relay"].count("nn.contrib_dense_pack(") + dump["relay"].count("nn.dense(") == 1
    for got, want in zip(model.run(x=x), outputs(mod, x=x)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    with PassContext(opt_level=3, disabled_pass=["merge-dense"]):
        separate = relay.build(mod, target="llvm -num-threads=1")
    for got, want in zip(model.run(x=x), separate.run(x=x)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@st.composite
def sibling_denses(draw) -> IRModule:
    """A function whose input feeds 2 to 4 dense layers (each maybe with a bias add and an
    activation), plus a dense of another input, rank 2 or 3 data."""
    rank = draw(st.sampled_from([2, 3]))
    k = draw(st.integers(1, 6))
    lead = (2, 3) if rank == 3 else (draw(st.integers(1, 5)),)
    x = Var("x", TensorType((*lead, k), "float32"))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    outs = []
    for _ in range(draw(st.integers(2, 4))):
        n = draw(st.integers(1, 5))
        d = call("nn.dense", x, const(n, k, rng=rng), units=n)
        if draw(st.booleans()):
            d = call(
                "nn.bias_add", d, const(n, rng=rng), axis=draw(st.sampled_from([-1, rank - 1]))
            )
        if draw(st.booleans()):
            d = call("nn.relu", d)
        outs.append(d)
    return main((x,), Tuple(outs))


def test_generated_siblings_compute_the_same_values() -> None:
    def merge(mod: IRModule) -> IRModule:
        return IRModule({GlobalVar("main"): merge_dense_function(mod["main"], mod)})

    report = check_pass(
        merge, sibling_denses(), rtol=1e-5, atol=1e-5, idempotent=True, min_changed=0.9
    )
    assert report.changed > 0


@settings(max_examples=25)
@given(sibling_denses())
def test_generated_siblings_leave_one_dense(mod: IRModule) -> None:
    after = merge_dense_function(mod["main"], mod)
    dense = [n for n in post_order(after) if isinstance(n, Call) and n.op is get_op("nn.dense")]
    assert len(dense) == 1
    total = sum(
        n.args[1].data.shape[0]
        for n in post_order(mod["main"])
        if isinstance(n, Call) and n.op is get_op("nn.dense")
    )
    assert dense[0].args[1].data.shape[0] == total


def test_a_deep_program_merges_without_recursion() -> None:
    x = Var("x", TensorType((2, 4), "float32"))
    cur = x
    for _ in range(3000):
        cur = call("add", cur, Constant(np.array(1.0, dtype=np.float32)))
    mod = main(
        (x,), Tuple([call("nn.dense", cur, const(4, 4)), call("nn.dense", cur, const(4, 4))])
    )
    after = merge_dense_function(mod["main"], mod)
    assert sum(isinstance(n, Call) and n.op is get_op("nn.dense") for n in post_order(after)) == 1


def test_tvm_spelling_takes_the_branch_count_and_refuses_the_batched_form():
    from relay import transform

    assert transform.CombineParallelDense() is transform.CombineParallelDense(None)
    assert transform.CombineParallelDense(3).options.min_branches == 3
    with pytest.raises(ValueError, match="to_batch=True"):
        transform.CombineParallelDense(to_batch=True)
