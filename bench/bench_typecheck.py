"""Type-checking throughput on a ResNet-50-sized program and a 100,000-binding chain.

    python bench/bench_typecheck.py [--chain 100000] [--repeat 5]

Two generated programs in the Relay text format, without type annotations on the bindings
(inference does all the work; only @main's parameters are annotated):

* ResNet-50 for ImageNet (bottleneck blocks [3, 4, 6, 3], batch 1, NCHW) in graph form
  (`%12 = nn.conv2d(...)`): conv2d / batch_norm / `.0` / relu / add, max pool, global average
  pool, dense 1000 and softmax, every weight a parameter of @main (268 parameters, 211 bindings).
* An elementwise chain of `--chain` bindings on Tensor[(1, 64), float32], cycling through add
  (with a broadcast (64) bias), multiply, relu and tanh; once in graph form and once as a
  `let` chain.

Prints, per program, the parse time and the type-checking time with bindings/s (the median
of `--repeat` runs for ResNet-50, one run for the chains). There is no peer to compare
against in the same run (TVM is not installable here), so the figures are absolute.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import relay
from relay.typecheck import check_module, type_text

VERSION = '#[version = "0.0.5"]\n'


class Graph:
    """Builds the body of a graph-form function: numbered bindings and @main's parameters."""

    def __init__(self) -> None:
        self.params: list[str] = []
        self.lines: list[str] = []

    def param(self, name: str, shape: tuple[int, ...]) -> str:
        """Declare a float32 parameter of @main; returns its reference `%name`."""
        dims = ", ".join(map(str, shape))
        self.params.append(f"%{name}: Tensor[({dims}), float32]")
        return f"%{name}"

    def bind(self, value: str) -> str:
        """Bind `value` to the next number; returns its reference `%n`."""
        ref = f"%{len(self.lines)}"
        self.lines.append(f"  {ref} = {value};\n")
        return ref

    def text(self, result: str, ret_type: str) -> str:
        """The module text with `@main` returning `result`."""
        return (
            VERSION
            + f"def @main({', '.join(self.params)}) -> {ret_type} {{\n"
            + "".join(self.lines)
            + f"  {result}\n}}\n"
        )


def conv_bn(
    g: Graph, x: str, name: str, cin: int, cout: int, k: int, stride: int, relu: bool
) -> str:
    """conv k x k (padding k // 2) + batch norm (+ relu), weights named after `name`."""
    w = g.param(f"{name}_weight", (cout, cin, k, k))
    pad = k // 2
    conv = g.bind(
        f"nn.conv2d({x}, {w}, strides=[{stride}, {stride}], padding=[{pad}, {pad}, {pad}, "
        f"{pad}], channels={cout}, kernel_size=[{k}, {k}])"
    )
    stats = [g.param(f"{name}_bn_{p}", (cout,)) for p in ("gamma", "beta", "mean", "var")]
    bn = g.bind(f"nn.batch_norm({conv}, {', '.join(stats)})")
    out = g.bind(f"{bn}.0")
    return g.bind(f"nn.relu({out})") if relu else out


def resnet50_text() -> str:
    """ResNet-50 (bottleneck blocks [3, 4, 6, 3]) in graph form, weights as parameters."""
    g = Graph()
    x = g.param("data", (1, 3, 224, 224))
    x = conv_bn(g, x, "conv1", 3, 64, 7, 2, relu=True)
    x = g.bind(f"nn.max_pool2d({x}, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])")
    cin = 64
    for stage, (blocks, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512)), 1):
        for block in range(blocks):
            stride = 2 if stage > 1 and block == 0 else 1
            name = f"layer{stage}_{block}"
            out = conv_bn(g, x, f"{name}_conv1", cin, width, 1, 1, relu=True)
            out = conv_bn(g, out, f"{name}_conv2", width, width, 3, stride, relu=True)
            out = conv_bn(g, out, f"{name}_conv3", width, 4 * width, 1, 1, relu=False)
            if block == 0:
                x = conv_bn(g, x, f"{name}_downsample", cin, 4 * width, 1, stride, relu=False)
            x = g.bind(f"nn.relu(add({out}, {x}))")
            cin = 4 * width
    pooled = g.bind(f"nn.batch_flatten(nn.global_avg_pool2d({x}))")
    fc_w, fc_b = g.param("fc_weight", (1000, 2048)), g.param("fc_bias", (1000,))
    logits = g.bind(f"nn.bias_add(nn.dense({pooled}, {fc_w}, units=1000), {fc_b})")
    return g.text(f"nn.softmax({logits}, axis=1)", "Tensor[(1, 1000), float32]")


CHAIN_STEPS = ("add({x}, %bias)", "multiply({x}, %scale)", "nn.relu({x})", "tanh({x})")


def chain_text(n: int, let: bool) -> str:
    """An elementwise chain of `n` bindings, in graph form or as nested `let`s."""
    ty = "Tensor[(1, 64), float32]"
    params = f"%x: {ty}, %bias: Tensor[(64), float32], %scale: {ty}"
    lines = []
    x = "%x"
    for i in range(n):
        value = CHAIN_STEPS[i % len(CHAIN_STEPS)].format(x=x)
        x = f"%v{i}" if let else f"%{i}"
        lines.append(f"  {'let ' if let else ''}{x} = {value};\n")
    return VERSION + f"def @main({params}) -> {ty} {{\n" + "".join(lines) + f"  {x}\n}}\n"


def count_bindings(text: str) -> int:
    """Bindings of a generated program: one per `%name = ` line."""
    return sum(1 for line in text.splitlines() if " = " in line and line.lstrip()[:1] in "%l")


def seconds(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median wall time of `repeat` runs of `fn`, and the last result."""
    times = []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def report(label: str, text: str, repeat: int) -> None:
    """Parse and type-check `text`, printing both times and bindings/s."""
    n = count_bindings(text)
    parse_s, module = seconds(lambda: relay.parse(text, f"{label}.relay"), repeat)
    check_s, types = seconds(lambda: check_module(module), repeat)
    main_type = type_text(types.global_types["main"].ret_type)
    print(f"{label}: {n:,} bindings, {len(types.table):,} typed nodes, returns {main_type}")
    print(f"  {'parse':<10} {parse_s:9.4f} s  {n / parse_s:12,.0f} bindings/s")
    print(f"  {'typecheck':<10} {check_s:9.4f} s  {n / check_s:12,.0f} bindings/s")


def main() -> None:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chain", type=int, default=100_000, help="bindings of the chain")
    parser.add_argument("--repeat", type=int, default=5, help="runs for ResNet-50 (median)")
    args = parser.parse_args()
    check_module(relay.parse(chain_text(8, let=False)))  # build parser tables untimed
    report("resnet50", resnet50_text(), args.repeat)
    report("chain (graph form)", chain_text(args.chain, let=False), 1)
    report("chain (let)", chain_text(args.chain, let=True), 1)


if __name__ == "__main__":
    main()
