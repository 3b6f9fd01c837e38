"""Small models and tasks for the tuning tests (sizes no knob's factor divides)."""

from __future__ import annotations

import numpy as np
import relay
from relay.backend import te
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


def depthwise_model(c_blocks: int = 3, h: int = 7, w: int = 9, block: int = 4, stride: int = 1):
    """A depthwise_conv2d_NCHWc + relu model (3x3, padding 1) with its weight."""
    op = "nn.contrib_depthwise_conv2d_NCHWc"
    channels = c_blocks * block
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[(1, {c_blocks}, {h}, {w}, {block}), float32],
          %w: Tensor[({c_blocks}, 1, 3, 3, 1, {block}), float32]) {{
  nn.relu({op}(%x, %w, strides=[{stride}, {stride}], padding=[1, 1, 1, 1], groups={channels},
    channels={channels}, kernel_size=[3, 3], data_layout="NCHW{block}c",
    kernel_layout="OIHW1i{block}o", out_layout="NCHW{block}c"))
}}"""
    rng = np.random.default_rng(c_blocks * 10 + h + w + stride)
    weight = rng.standard_normal((c_blocks, 1, 3, 3, 1, block)).astype("float32")
    return relay.parse(text), {"w": weight}


def int8_dense_model(m: int = 5, n: int = 21, k: int = 19):
    """An int8 x int8 -> int32 dense model with its weight."""
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[({m}, {k}), int8], %w: Tensor[({n}, {k}), int8]) {{
  nn.dense(%x, %w, units={n}, out_dtype="int32")
}}"""
    rng = np.random.default_rng(m * 100 + n + k)
    return relay.parse(text), {"w": rng.integers(-128, 128, (n, k)).astype("int8")}


def int8_conv_model(c: int = 3, oc: int = 11, h: int = 7, w: int = 9, stride: int = 1):
    """An int8 x int8 -> int32 conv2d (NCHW, 3x3, padding 1) model with its weight."""
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[(1, {c}, {h}, {w}), int8], %w: Tensor[({oc}, {c}, 3, 3), int8]) {{
  nn.conv2d(%x, %w, strides=[{stride}, {stride}], padding=[1, 1, 1, 1], channels={oc},
    kernel_size=[3, 3], out_dtype="int32")
}}"""
    rng = np.random.default_rng(c * 100 + oc + h + w + stride)
    return relay.parse(text), {"w": rng.integers(-128, 128, (oc, c, 3, 3)).astype("int8")}


def only_task(mod, params, target=None):
    """The one kernel task of a one-kernel model."""
    tasks = extract_tasks(mod, params, target)
    assert len(tasks) == 1, [t.key for t in tasks]
    return tasks[0]


def matmul(
    n: int,
    ti: int,
    tj: int,
    tk: int,
    vectorize: bool = True,
    parallel: bool = True,
    vectorize_columns: bool = True,
):
    """C = A @ B with a register block (ti x tj) accumulated in a local buffer, k split by
    tk; `vectorize` the block (and with `vectorize_columns` the copy-out), `parallel` rows."""
    A = te.placeholder((n, n), "float32", "A")
    B = te.placeholder((n, n), "float32", "B")
    r = te.reduce_axis(n, "k")
    C = te.compute((n, n), lambda i, j: te.sum_(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C)
    CL = s.cache_write(C, "local")
    i, j = s[C].op.axis
    io, ii = s[C].split(i, factor=ti)
    jo, ji = s[C].split(j, factor=tj)
    s[C].reorder(io, jo, ii, ji)
    s[CL].compute_at(s[C], jo)
    ci, cj = s[CL].op.axis
    (k,) = s[CL].op.reduce_axis
    ko, ki = s[CL].split(k, factor=tk)
    s[CL].reorder(ko, ki, ci, cj)
    if vectorize:
        s[CL].vectorize(cj)
        if vectorize_columns:
            s[C].vectorize(ji)
    if parallel:
        s[C].parallel(io)
    return te.lower(s, [A, B, C], "mm")


def winograd_model(c: int = 5, k: int = 11, h: int = 7, w: int = 9, tile: int = 4):
    """A Winograd 3x3 convolution (padding 1) + relu with its transformed weight."""
    alpha = tile + 2
    op = "nn.contrib_conv2d_winograd_without_weight_transform"
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[(1, {c}, {h}, {w}), float32], %u: Tensor[({alpha}, {alpha}, {k}, {c}), float32]) {{
  nn.relu({op}(%x, %u, tile_size={tile}, padding=[1, 1, 1, 1], channels={k}, kernel_size=[3, 3]))
}}"""
    rng = np.random.default_rng(c * 100 + k + h + w)
    return relay.parse(text), {"u": rng.standard_normal((alpha, alpha, k, c)).astype("float32")}
