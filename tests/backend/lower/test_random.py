"""Hypothesis-generated dataflow programs: every group fuse-ops makes lowers, compiles and
computes what the interpreter computes on the arguments the group really receives.

The arguments of each Primitive call are obtained by interpreting the fused program with a
body that returns them all (so integer divisors and gather indices are the program's own,
not random); each group is then evaluated by the interpreter and by its kernel.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend.codegen import compile_module
from relay.backend.lower.lower_func import lower_primitive
from relay.backend.runtime import evaluate, interpret
from relay.backend.runtime.native import aligned_copy, aligned_empty
from relay.backend.tir.transform import lower_pipeline
from relay.lang.expr import Call, Function, Tuple, Var
from relay.lang.module import IRModule
from relay.lang.traversal import post_order
from relay.passes import fuse_ops_pass
from relay.testing import dataflow_programs, inputs_for


def flatten(value: Any) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, tuple):
            stack.extend(reversed(v))
        else:
            out.append(np.asarray(v))
    return out


def check_groups(mod: IRModule, inputs: dict[str, Any]) -> int:
    """Lower every group of the fused `mod`, run it, compare; returns the group count."""
    fused = fuse_ops_pass.with_options(fuse_opt_level=3)(mod)
    main = fused["main"]
    calls = [
        n
        for n in post_order(main.body)
        if isinstance(n, Call) and isinstance(n.op, Function) and n.op.is_primitive
    ]
    probe = Function(main.params, Tuple([Tuple(c.args) for c in calls]))
    arguments = interpret(IRModule.from_expr(probe), **inputs)
    kernels = [lower_primitive(c.op, None, f"group{k}") for k, c in enumerate(calls)]
    lib = compile_module([lower_pipeline(k.func) for k in kernels])
    for call, args, kernel in zip(calls, arguments, kernels):
        fn = call.op
        assert isinstance(fn, Function)
        params = [Var(f"a{k}", p.type_annotation) for k, p in enumerate(fn.params)]
        want = flatten(evaluate(Call(fn, params), dict(zip(params, args))))
        outs = [aligned_empty(w.shape, w.dtype) for w in want]
        ins = [aligned_copy(a) for a in flatten(tuple(args))]
        lib.run(kernel.name, *ins, *(aligned_copy(c) for c in kernel.constants), *outs)
        for got, ref in zip(outs, want):
            assert got.dtype == ref.dtype and got.shape == ref.shape
            if ref.dtype.kind == "f":
                scale = max(1.0, float(np.max(np.abs(np.nan_to_num(ref)), initial=1.0)))
                np.testing.assert_allclose(
                    got, ref, rtol=1e-4, atol=1e-5 * scale, equal_nan=True, err_msg=str(fn)
                )
            else:
                np.testing.assert_array_equal(got, ref, err_msg=str(fn))
    return len(calls)


@settings(max_examples=25)
@given(dataflow_programs(max_ops=8, max_elements=1024), st.data())
def test_random_float_programs(mod: IRModule, data: st.DataObject) -> None:
    check_groups(mod, data.draw(inputs_for(mod)))


@settings(max_examples=15)
@given(
    dataflow_programs(max_ops=6, max_elements=512, dtypes=("int32", "int8", "bool", "float32")),
    st.data(),
)
def test_random_mixed_dtype_programs(mod: IRModule, data: st.DataObject) -> None:
    check_groups(mod, data.draw(inputs_for(mod)))


_INJECTIVE_AND_REDUCE = [
    "add", "multiply", "subtract", "exp", "tanh", "nn.relu", "transpose", "reshape",
    "expand_dims", "concatenate", "strided_slice", "take", "sum", "mean", "max", "argmax",
    "nn.softmax", "nn.log_softmax", "nn.layer_norm", "nn.max_pool2d", "nn.avg_pool2d",
    "nn.global_avg_pool2d", "nn.bias_add",
]  # fmt: skip


@settings(max_examples=25)
@given(
    dataflow_programs(ops=_INJECTIVE_AND_REDUCE, max_ops=8, max_elements=4096),
    st.data(),
)
def test_random_programs_of_the_simple_schedules(mod: IRModule, data: st.DataObject) -> None:
    assert check_groups(mod, data.draw(inputs_for(mod))) >= 1
