"""Front-end throughput: parse, print, structural equality and hashing of a large model.

    python bench/bench_frontend.py [--blocks 4000]

Generates a ResNet-style program in the style TVM's `astext()` prints (graph bindings,
`/* ty=... */` annotations, conv2d / batch_norm / projection / relu / residual add), then
reports bindings per second for each stage. There is no peer to compare against in the
same run (TVM's parser is not installable here), so figures are absolute.
"""

from __future__ import annotations

import argparse
import time

import relay
from relay.lang import structural_equal, structural_hash

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


def timed(label: str, bindings: int, fn):  # type: ignore[no-untyped-def]
    """Run `fn` once, print its time and bindings/s, return its result."""
    start = time.perf_counter()
    result = fn()
    elapsed = time.perf_counter() - start
    print(f"{label:<28} {elapsed:8.3f} s  {bindings / elapsed:12,.0f} bindings/s")
    return result


def main() -> None:
    """Run the benchmark and print one line per stage."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=4000)
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


if __name__ == "__main__":
    main()
