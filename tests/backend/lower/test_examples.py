"""Every Primitive group of every example model lowers, compiles and agrees with the
interpreter.

Each model is prepared as `relay.build` will: the helper functions of `@main` are inlined
(marked `Inline=1`, then the `inline` pass), then the standard O3 pipeline runs (fusion
last). Recursive helpers (the LSTMs' loops) stay functions; their groups are lowered too.
Structurally equal groups are compiled once; each is run on random inputs and compared
with the interpreter evaluating the same Primitive function.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
from relay.backend.codegen import compile_module
from relay.backend.lower.lower_func import LoweredKernel, lower_primitive
from relay.backend.runtime import evaluate
from relay.backend.runtime.native import aligned_copy, aligned_empty
from relay.backend.tir.transform import lower_pipeline
from relay.grammar import parse_file
from relay.lang.expr import Call, Function, Var
from relay.lang.module import IRModule
from relay.lang.structural import structural_hash
from relay.lang.traversal import post_order
from relay.lang.types import TensorType, TupleType, Type
from relay.passes import PassContext, inline_pass, standard_pipeline

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
MODELS = ["mlp", "lenet", "resnet18", "mobilenet_v2", "transformer_layer", "lstm", "treelstm"]


def prepare(path: Path) -> IRModule:
    """The module as the build sees it: helpers inlined into `@main`, O3 passes, fused."""
    mod = parse_file(path)
    functions = {}
    for gv, fn in mod.functions.items():
        if gv.name_hint != "main" and not fn.type_params:
            fn = attrs.evolve(fn, attrs=fn.attrs.with_attr("Inline", 1))
        functions[gv] = fn
    mod = inline_pass(IRModule(functions, mod.type_definitions))
    with PassContext(opt_level=3):
        return standard_pipeline(3)(mod)


def primitive_groups(mod: IRModule) -> list[Function]:
    """The Primitive functions of every global function, structurally distinct ones once."""
    seen: set[int] = set()
    groups = []
    for fn in mod.functions.values():
        for node in post_order(fn):
            if isinstance(node, Function) and node.is_primitive:
                h = structural_hash(node)
                if h not in seen:
                    seen.add(h)
                    groups.append(node)
    return groups


def random_value(ty: Type, rng: np.random.Generator, positive: bool) -> Any:
    if isinstance(ty, TupleType):
        return tuple(random_value(f, rng, positive) for f in ty.fields)
    assert isinstance(ty, TensorType)
    shape = tuple(int(d) for d in ty.shape)  # type: ignore[arg-type]
    if ty.dtype.startswith("float"):
        a = rng.standard_normal(shape)
        return (np.abs(a) + 0.5 if positive else a).astype(ty.dtype)
    return rng.integers(0, 5, shape).astype(ty.dtype)


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


def reference(fn: Function, values: list[Any]) -> list[np.ndarray]:
    args = [Var(f"a{k}", p.type_annotation) for k, p in enumerate(fn.params)]
    return flatten(evaluate(Call(fn, args), dict(zip(args, values))))


@pytest.mark.parametrize("model", MODELS)
def test_every_group_of_the_example_agrees_with_the_interpreter(model: str) -> None:
    groups = primitive_groups(prepare(EXAMPLES / f"{model}.relay"))
    assert groups, "fusion made no Primitive group"
    kernels: list[LoweredKernel] = [
        lower_primitive(fn, None, f"{model}_{k}") for k, fn in enumerate(groups)
    ]
    lib = compile_module([lower_pipeline(k.func) for k in kernels])
    rng = np.random.default_rng(0)
    for fn, kernel in zip(groups, kernels):
        values = [random_value(p.type_annotation, rng, False) for p in fn.params]
        want = reference(fn, values)
        if any(np.isnan(w).any() for w in want if w.dtype.kind == "f"):
            # sqrt/log of negative random data (batch-norm variances): use positive data
            values = [random_value(p.type_annotation, rng, True) for p in fn.params]
            want = reference(fn, values)
        outs = [aligned_empty(tuple(w.shape), w.dtype) for w in want]
        inputs = [aligned_copy(a) for a in flatten(tuple(values))]
        lib.run(kernel.name, *inputs, *(aligned_copy(c) for c in kernel.constants), *outs)
        for got, ref in zip(outs, want):
            # float32 sums of thousands of terms in another order: absolute error scales
            # with the magnitude of the values
            scale = float(np.max(np.abs(ref), initial=1.0)) if ref.dtype.kind == "f" else 0.0
            np.testing.assert_allclose(
                got, ref, rtol=1e-4, atol=1e-5 * max(scale, 1.0), err_msg=f"{kernel.name}"
            )
