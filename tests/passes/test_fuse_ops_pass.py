"""`fuse-ops` as a registered pass: pipeline text, options, opt level, same results."""

import numpy as np
import relay
from relay.backend.runtime import interpret
from relay.lang import Function, post_order
from relay.passes import PassContext, parse_pipeline
from relay.typecheck import check_module

PROGRAM = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 8), float32], %w: Tensor[(4, 8), float32], %b: Tensor[(4), float32]) {
  %0 = nn.dense(%x, %w, units=4);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  %3 = exp(%2);
  sum(%3, axis=[1])
}
"""


def primitive_functions(mod):
    return [
        node for node in post_order(mod["main"]) if isinstance(node, Function) and node.is_primitive
    ]


def run(mod):
    rng = np.random.default_rng(0)
    inputs = {
        "x": rng.standard_normal((1, 8)).astype("float32"),
        "w": rng.standard_normal((4, 8)).astype("float32"),
        "b": rng.standard_normal(4).astype("float32"),
    }
    return interpret(mod, **inputs)


def test_fuse_ops_from_pipeline_text_groups_and_keeps_results():
    mod = relay.parse(PROGRAM)
    pipeline = parse_pipeline("fuse-ops{max-depth=8}")
    assert str(pipeline) == "fuse-ops{max-depth=8}"
    with PassContext(opt_level=3):
        fused = pipeline(mod)
    check_module(fused)
    # dense + bias_add + relu + exp form one group; the reduction is its own group
    assert len(primitive_functions(fused)) == 2
    np.testing.assert_allclose(run(fused), run(mod), rtol=1e-6)


def test_fuse_ops_at_opt_level_0_puts_every_operator_alone():
    mod = relay.parse(PROGRAM)
    with PassContext(opt_level=0):
        fused = parse_pipeline("fuse-ops")(mod)
    assert len(primitive_functions(fused)) == 5
    np.testing.assert_allclose(run(fused), run(mod), rtol=1e-6)
