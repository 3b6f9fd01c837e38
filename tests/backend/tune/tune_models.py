"""Small models and tasks for the tuning tests (sizes no knob's factor divides)."""

from __future__ import annotations

import numpy as np
import relay
from relay.tuning import extract_tasks


def dense_model(m: int = 13, n: int = 21, k: int = 19):
    """A dense + bias + relu model with its weights, in the register-blocked (GEMM) form."""
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[({m}, {k}), float32], %w: Tensor[({n}, {k}), float32], %b: Tensor[({n}), float32]) {{
  nn.relu(nn.bias_add(nn.dense(%x, %w, units={n}), %b))
}}"""
    rng = np.random.default_rng(m * 100 + n + k)
    params = {
        "w": rng.standard_normal((n, k)).astype("float32"),
        "b": rng.standard_normal(n).astype("float32"),
    }
    return relay.parse(text), params


def conv_model(ci_blocks: int = 3, oc_blocks: int = 5, h: int = 7, w: int = 9, block: int = 4):
    """A conv2d_NCHWc + relu model (3x3, padding 1) with its weight."""
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[(1, {ci_blocks}, {h}, {w}, {block}), float32],
          %w: Tensor[({oc_blocks}, {ci_blocks}, 3, 3, {block}, {block}), float32]) {{
  nn.relu(nn.contrib_conv2d_NCHWc(%x, %w, padding=[1, 1, 1, 1], channels={oc_blocks * block},
    kernel_size=[3, 3], data_layout="NCHW{block}c", kernel_layout="OIHW{block}i{block}o",
    out_layout="NCHW{block}c"))
}}"""
    rng = np.random.default_rng(ci_blocks * 10 + oc_blocks + h + w)
    weight = rng.standard_normal((oc_blocks, ci_blocks, 3, 3, block, block)).astype("float32")
    return relay.parse(text), {"w": weight}


def only_task(mod, params, target=None):
    """The one kernel task of a one-kernel model."""
    tasks = extract_tasks(mod, params, target)
    assert len(tasks) == 1, [t.key for t in tasks]
    return tasks[0]
