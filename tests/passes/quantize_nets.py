"""Small seeded float networks (convnets and MLPs) as `.relay` text, for quantize tests."""

from __future__ import annotations

import numpy as np
import relay

TAIL = """%13 = multiply(%12, 0.5f);
  %14 = nn.global_avg_pool2d(%13);
  %15 = nn.batch_flatten(%14);
  nn.dense(%15, %wd)"""


def convnet(
    seed: int, size: int = 8, classes: int = 10, head: bool = True
) -> tuple[relay.IRModule, dict]:
    """conv-bn-relu, a residual block (add), max pool, a concatenation branch, avg pool,
    then (with `head`) global pool and dense, with seeded weights; returns the module and
    its params."""
    rng = np.random.default_rng(seed)
    c = int(rng.integers(4, 9))
    wd = f", %wd: Tensor[({classes}, {c}), float32]" if head else ""
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, {size}, {size}), float32], %w1: Tensor[({c}, 3, 3, 3), float32],
          %g: Tensor[({c}), float32], %b: Tensor[({c}), float32], %m: Tensor[({c}), float32],
          %v: Tensor[({c}), float32], %w2: Tensor[({c}, {c}, 3, 3), float32],
          %w3: Tensor[({c}, {c}, 1, 1), float32], %w4: Tensor[({c}, {2 * c}, 3, 3), float32],
          %bias: Tensor[({c}), float32]{wd}) {{
  %0 = nn.conv2d(%x, %w1, padding=[1, 1, 1, 1]);
  %1 = nn.batch_norm(%0, %g, %b, %m, %v);
  %2 = nn.relu(%1.0);
  %3 = nn.conv2d(%2, %w2, padding=[1, 1, 1, 1]);
  %4 = add(%3, %2);
  %5 = nn.relu(%4);
  %6 = nn.max_pool2d(%5, pool_size=[2, 2], strides=[2, 2]);
  %7 = nn.conv2d(%6, %w3);
  %8 = clip(%7, a_min=0f, a_max=6f);
  %9 = concatenate((%8, %6), axis=1);
  %10 = nn.conv2d(%9, %w4, padding=[1, 1, 1, 1]);
  %11 = nn.bias_add(%10, %bias);
  %12 = nn.avg_pool2d(%11, pool_size=[2, 2], strides=[1, 1]);
  {TAIL if head else "multiply(%12, 0.5f)"}
}}
"""

    def he(*shape: int) -> np.ndarray:
        fan_in = int(np.prod(shape[1:]))
        return rng.normal(0, np.sqrt(2.0 / fan_in), shape).astype(np.float32)

    params = {
        "w1": he(c, 3, 3, 3),
        "g": rng.uniform(0.8, 1.2, c).astype(np.float32),
        "b": rng.normal(0, 0.05, c).astype(np.float32),
        "m": rng.normal(0, 0.05, c).astype(np.float32),
        "v": rng.uniform(0.5, 1.5, c).astype(np.float32),
        "w2": he(c, c, 3, 3),
        "w3": he(c, c, 1, 1),
        "w4": he(c, 2 * c, 3, 3),
        "bias": rng.normal(0, 0.05, c).astype(np.float32),
    }
    if head:
        params["wd"] = he(classes, c)
    return relay.parse(text), params


def mlp(seed: int, batch: int = 4) -> tuple[relay.IRModule, dict]:
    """dense-bias-relu-dense with seeded weights."""
    rng = np.random.default_rng(seed)
    k, h, n = (int(v) for v in rng.integers(4, 24, 3))
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[({batch}, {k}), float32], %w1: Tensor[({h}, {k}), float32],
          %b1: Tensor[({h}), float32], %w2: Tensor[({n}, {h}), float32]) {{
  %0 = nn.dense(%x, %w1);
  %1 = nn.bias_add(%0, %b1, axis=1);
  %2 = nn.relu(%1);
  nn.dense(%2, %w2)
}}
"""
    params = {
        "w1": rng.normal(0, np.sqrt(2 / k), (h, k)).astype(np.float32),
        "b1": rng.normal(0, 0.05, h).astype(np.float32),
        "w2": rng.normal(0, np.sqrt(2 / h), (n, h)).astype(np.float32),
    }
    return relay.parse(text), params


def residual_chain(
    seed: int, blocks: int = 4, channels: int = 8, size: int = 8, classes: int = 10
) -> tuple[relay.IRModule, dict]:
    """ResNet's structure in small: conv-bn-relu stem, then `blocks` basic blocks
    (conv-bn-relu-conv-bn, plus the block's input, relu), global pool, dense (logits).
    Batch-norm statistics are random as `examples/make_weights.py` draws them, so they do
    not normalize: activations grow block after block (far past `global_scale=8`), as in
    the seed-0 ResNet-18. Returns the module and its params."""
    rng = np.random.default_rng(seed)
    c = channels

    def bn_params(prefix: str) -> str:
        return ", ".join(f"%{prefix}{r}: Tensor[({c}), float32]" for r in "gbmv")

    def bn(x: str, prefix: str) -> str:
        return f"nn.batch_norm({x}, %{prefix}g, %{prefix}b, %{prefix}m, %{prefix}v).0"

    decls = [
        f"%x: Tensor[(1, 3, {size}, {size}), float32]",
        f"%w0: Tensor[({c}, 3, 3, 3), float32]",
    ]
    decls.append(bn_params("s"))
    lines = [f"let %h0 = nn.relu({bn('nn.conv2d(%x, %w0, padding=[1, 1, 1, 1])', 's')});"]
    for k in range(blocks):
        decls.append(f"%w{k}a: Tensor[({c}, {c}, 3, 3), float32], {bn_params(f'a{k}')}")
        decls.append(f"%w{k}b: Tensor[({c}, {c}, 3, 3), float32], {bn_params(f'b{k}')}")
        lines.append(f"let %c{k} = nn.conv2d(%h{k}, %w{k}a, padding=[1, 1, 1, 1]);")
        lines.append(f"let %r{k} = nn.relu({bn(f'%c{k}', f'a{k}')});")
        lines.append(f"let %d{k} = nn.conv2d(%r{k}, %w{k}b, padding=[1, 1, 1, 1]);")
        lines.append(f"let %h{k + 1} = nn.relu(add({bn(f'%d{k}', f'b{k}')}, %h{k}));")
    decls.append(f"%wd: Tensor[({classes}, {c}), float32]")
    lines.append(f"nn.dense(nn.batch_flatten(nn.global_avg_pool2d(%h{blocks})), %wd)")
    text = (
        '#[version = "0.0.5"]\ndef @main('
        + ", ".join(decls)
        + ") {\n  "
        + "\n  ".join(lines)
        + "\n}\n"
    )

    def he(*shape: int) -> np.ndarray:
        fan_in = int(np.prod(shape[1:]))
        return rng.normal(0, np.sqrt(2.0 / fan_in), shape).astype(np.float32)

    def bn_values(prefix: str) -> dict[str, np.ndarray]:
        return {
            f"{prefix}g": rng.uniform(0.8, 1.2, c).astype(np.float32),
            f"{prefix}b": rng.normal(0, 0.05, c).astype(np.float32),
            f"{prefix}m": rng.normal(0, 0.05, c).astype(np.float32),
            f"{prefix}v": rng.uniform(0.5, 1.5, c).astype(np.float32),
        }

    params = {"w0": he(c, 3, 3, 3), **bn_values("s")}
    for k in range(blocks):
        params.update({f"w{k}a": he(c, c, 3, 3), **bn_values(f"a{k}")})
        params.update({f"w{k}b": he(c, c, 3, 3), **bn_values(f"b{k}")})
    params["wd"] = he(classes, c)
    return relay.parse(text), params


def mobile_net(seed: int, channels: int = 8, size: int = 8, classes: int = 10) -> tuple:
    """MobileNet-v2's structure in small: conv-bn-relu6 stem, an inverted residual block
    (1x1 expand-bn-relu6, depthwise 3x3-bn-relu6, 1x1 project-bn, plus the block's input),
    a stride-2 depthwise, global pool, dense + bias (logits); seeded weights. Returns the
    module and its params."""
    rng = np.random.default_rng(seed)
    c, e = channels, 3 * channels

    def bn(prefix: str, n: int) -> str:
        return ", ".join(f"%{prefix}{r}: Tensor[({n}), float32]" for r in "gbmv")

    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, {size}, {size}), float32],
          %w0: Tensor[({c}, 3, 3, 3), float32], {bn("s", c)},
          %we: Tensor[({e}, {c}, 1, 1), float32], {bn("e", e)},
          %wd: Tensor[({e}, 1, 3, 3), float32], {bn("d", e)},
          %wp: Tensor[({c}, {e}, 1, 1), float32], {bn("p", c)},
          %w2: Tensor[({c}, 1, 3, 3), float32], {bn("t", c)},
          %fc: Tensor[({classes}, {c}), float32], %fcb: Tensor[({classes}), float32]) {{
  %0 = nn.conv2d(%x, %w0, padding=[1, 1, 1, 1]);
  %1 = clip(nn.batch_norm(%0, %sg, %sb, %sm, %sv).0, a_min=0f, a_max=6f);
  %2 = nn.conv2d(%1, %we);
  %3 = clip(nn.batch_norm(%2, %eg, %eb, %em, %ev).0, a_min=0f, a_max=6f);
  %4 = nn.conv2d(%3, %wd, padding=[1, 1, 1, 1], groups={e});
  %5 = clip(nn.batch_norm(%4, %dg, %db, %dm, %dv).0, a_min=0f, a_max=6f);
  %6 = nn.conv2d(%5, %wp);
  %7 = add(nn.batch_norm(%6, %pg, %pb, %pm, %pv).0, %1);
  %8 = nn.conv2d(%7, %w2, strides=[2, 2], padding=[1, 1, 1, 1], groups={c});
  %9 = clip(nn.batch_norm(%8, %tg, %tb, %tm, %tv).0, a_min=0f, a_max=6f);
  %10 = nn.batch_flatten(nn.global_avg_pool2d(%9));
  nn.bias_add(nn.dense(%10, %fc), %fcb)
}}
"""

    def he(*shape: int) -> np.ndarray:
        fan_in = int(np.prod(shape[1:]))
        return rng.normal(0, np.sqrt(2.0 / fan_in), shape).astype(np.float32)

    def bn_values(prefix: str, n: int) -> dict[str, np.ndarray]:
        return {
            f"{prefix}g": rng.uniform(0.8, 1.2, n).astype(np.float32),
            f"{prefix}b": rng.normal(0, 0.05, n).astype(np.float32),
            f"{prefix}m": rng.normal(0, 0.05, n).astype(np.float32),
            f"{prefix}v": rng.uniform(0.5, 1.5, n).astype(np.float32),
        }

    params = {"w0": he(c, 3, 3, 3), **bn_values("s", c), "we": he(e, c, 1, 1)}
    params.update({**bn_values("e", e), "wd": he(e, 1, 3, 3), **bn_values("d", e)})
    params.update({"wp": he(c, e, 1, 1), **bn_values("p", c), "w2": he(c, 1, 3, 3)})
    params.update({**bn_values("t", c), "fc": he(classes, c)})
    params["fcb"] = rng.normal(0, 0.05, classes).astype(np.float32)
    return relay.parse(text), params
