"""Front-end throughput: parse, print, structural equality and hashing of a large model.

    python bench/bench_frontend.py [--blocks 4000] [--constants-mb 200]

Generates a ResNet-style program in the style TVM's `astext()` prints (graph bindings,
`/* ty=... */` annotations, conv2d / batch_norm / projection / relu / residual add), then
reports bindings per second for each stage. Then parses (and prints) a module whose
`#[metadata]` section holds `--constants-mb` MB of float32 constants, the size of a large
model's weights, and reports MB per second. There is no peer to compare against in the
same run (TVM's parser is not installable here), so figures are absolute.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import relay
from relay.lang import structural_equal, structural_hash
from relay.lang.metadata import write_metadata

BLOCK = """\
  %{a} = nn.conv2d(%{x}, %w{i}, padding=[1, 1, 1, 1], channels=64, kernel_size=[3, 3]) /* ty=Tensor[(1, 64, 56, 56), float32] */;
  %{b} = nn.batch_norm(%{a}, %g{i}, %be{i}, %m{i}, %v{i}) /* ty=(Tensor[(1, 64, 56, 56), float32], Tensor[(64), float32], Tensor[(64), float32]) */;
  %{c} = %{b}.0 /* ty=Tensor[(1, 64, 56, 56), float32] */;
  %{d} = nn.relu(%{c}) /* ty=Tensor[(1, 64, 56, 56), float32] */;
  %{e} = add(%{d}, %{x}) /* ty=Tensor[(1, 64, 56, 56), float32] */;
"""


def make_program(blocks: int) -> tuple[str, int]:
    """A module with `blocks` residual blocks (5 bindings each) and its binding count."""
    params = ["%data: Tensor[(1, 64, 56, 56), float32]"]
    lines = []
    x = "data"
    n = 0
    for i in range(blocks):
        params += [
            f"%w{i}: Tensor[(64, 64, 3, 3), float32]",
            *(f"%{p}{i}: Tensor[(64), float32]" for p in ("g", "be", "m", "v")),
        ]
        names = [str(n + k) for k in range(5)]
        a, b, c, d, e = names
        lines.append(BLOCK.format(a=a, b=b, c=c, d=d, e=e, x=x, i=i))
        x = e
        n += 5
    text = (
        '#[version = "0.0.5"]\n'
        f"def @main({', '.join(params)}) -> Tensor[(1, 64, 56, 56), float32] {{\n"
        + "".join(lines)
        + f"  %{x}\n}}\n"
    )
    return text, n


def make_weighted_program(megabytes: int) -> str:
    """A chain of `add`s of 1 MB float32 constants, with its `#[metadata]` section."""
    count = max(1, megabytes)
    weights = [np.full(1 << 18, i, np.float32) for i in range(count)]
    lines = [f"  %{i} = add(%{i - 1}, meta[relay.Constant][{i}]);" for i in range(1, count)]
    return (
        '#[version = "0.0.5"]\n'
        "def @main(%x: Tensor[(262144), float32]) {\n"
        "  %0 = add(%x, meta[relay.Constant][0]);\n"
        + "".join(line + "\n" for line in lines)
        + f"  %{count - 1}\n}}\n#[metadata]\n"
        + write_metadata({"relay.Constant": weights})
    )


def timed(label: str, amount: float, fn, unit: str = "bindings/s"):  # type: ignore[no-untyped-def]
    """Run `fn` once, print its time and throughput (`amount` per second), return its result."""
    start = time.perf_counter()
    result = fn()
    elapsed = time.perf_counter() - start
    print(f"{label:<28} {elapsed:8.3f} s  {amount / elapsed:12,.0f} {unit}")
    return result


def main() -> None:
    """Run the benchmark and print one line per stage."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=4000)
    parser.add_argument("--constants-mb", type=int, default=200, help="0 skips this part")
    args = parser.parse_args()
    text, n = make_program(args.blocks)
    print(f"program: {n:,} bindings, {len(text) / 1e6:.1f} MB of text")
    relay.parse(make_program(2)[0])  # build the parser tables outside the timing
    module = timed("parse", n, lambda: relay.parse(text, "bench.relay"))
    printed = timed("print", n, module.astext)
    again = timed("parse printed", n, lambda: relay.parse(printed, "printed.relay"))
    equal = timed("structural_equal", n, lambda: structural_equal(module, again))
    timed("structural_hash", n, lambda: structural_hash(module))
    print(f"round trip structurally equal: {equal}")
    if args.constants_mb:
        weighted = make_weighted_program(args.constants_mb)
        mb = len(weighted) / 1e6
        print(f"program: {args.constants_mb} MB of constants, {mb:.1f} MB of text")
        module = timed("parse (metadata)", mb, lambda: relay.parse(weighted, "w.relay"), "MB/s")
        timed("print (metadata)", mb, module.astext, "MB/s")


if __name__ == "__main__":
    main()
