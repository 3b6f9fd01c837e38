"""Every distinct convolution of the example convnets, one at a time: relay against ONNX
Runtime's Conv on the same shape, in GFLOP/s and as a fraction of the FMA peak.

    pip install -e '.[bench]'        # onnx and onnxruntime
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_conv_layers.py \\
        [--models resnet18,mobilenet_v2] [--repeat 30] [--threads 2] [--only 3x3/2]

For each distinct `nn.conv2d` of examples/resnet18.relay (and of mobilenet_v2.relay with
`--models`), counted by how often the model runs it, the one-convolution model

    nn.relu(nn.bias_add(nn.conv2d(%data, %weight, ...), %bias))

is built with `relay.build(..., params={weight, bias})` at opt level 3, as the whole model
is (so the same rules pick Winograd, NCHWc or the direct kernel, and the weights are packed
at build time), and the same convolution (+ bias + relu) is a one-node ONNX graph
(`onnx.helper`) for ONNX Runtime's CPU provider with as many intra-op threads and its
default graph optimizations. The outputs are checked against each other, then runs of the
two alternate (blocks of 5 after untimed calls; medians).

Columns: `relay ms` / `ORT ms` are whole runs (relay's include the `layout_transform`
kernels that pack the NCHW input and unpack the output: in the whole model activations
stay packed and those kernels are not there; ORT's reorders its input and output the same
way); `conv ms` is relay's kernels without the layout transforms (from `model.profile`: the
convolution, and Winograd's transforms when it is one), what the layer costs inside the
model; `c/ORT` is that against ORT's whole run. GFLOP/s are effective direct-convolution FLOPs, 2*N*K*(C/groups)*R*S*P*Q
per run, also for Winograd. `%pk` is the share of the fp32 FMA peak measured in this run,
just before the layer (`backend.codegen.probe`, the small llvmlite FMA loop: on a machine
shared with other jobs it falls with the load, as the timings do); the totals use the
median of those, and the cached figure of `backend/profile/machine.py` `machine_peak` is
printed too. Totals weigh each layer by its
uses. Without onnx or onnxruntime it says how to install them and exits with status 0.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import attrs
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_vs_ort import alternate

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SETTLE = 0.05
"""Seconds of untimed calls before each timed block (the other runtime's spinning threads
go to sleep)."""

IDLE = 0.1
"""Seconds of sleep before each timed block (`alternate`): ONNX Runtime's intra-op threads
spin after its runs and slowed relay's next block of a one-layer model up to 2x (ResNet-18's
stem: 7.97 ms without the sleep, 3.93 with; ORT's own time the same either way)."""


@attrs.frozen
class ConvLayer:
    """One distinct convolution of a model: data `(N, C, H, W)`, weight `(K, C/g, R, S)`,
    its attributes, and how many times a run of the model computes it."""

    model: str
    data: tuple[int, ...]
    weight: tuple[int, ...]
    strides: tuple[int, int]
    padding: tuple[int, int, int, int]
    dilation: tuple[int, int]
    groups: int
    uses: int

    @property
    def out_hw(self) -> tuple[int, int]:
        """The output's height and width."""
        (_, _, h, w), (_, _, r, s) = self.data, self.weight
        t, left, b, right = self.padding
        p = (h + t + b - (r - 1) * self.dilation[0] - 1) // self.strides[0] + 1
        q = (w + left + right - (s - 1) * self.dilation[1] - 1) // self.strides[1] + 1
        return p, q

    @property
    def flops(self) -> float:
        """Direct-convolution FLOPs: 2*N*K*(C/groups)*R*S*P*Q."""
        n = self.data[0]
        k, cg, r, s = self.weight
        p, q = self.out_hw
        return 2.0 * n * k * cg * r * s * p * q

    @property
    def name(self) -> str:
        """A short label: `r18 64>128 3x3/2 @56` (`dw` for depthwise)."""
        c, h = self.data[1], self.data[2]
        k, _, r, s = self.weight
        tag = {"resnet18": "r18", "mobilenet_v2": "mb2"}.get(self.model, self.model)
        kind = f"dw {c}" if self.groups == c and self.groups > 1 else f"{c}>{k}"
        stride = f"/{self.strides[0]}" if self.strides != (1, 1) else ""
        return f"{tag} {kind} {r}x{s}{stride} @{h}"


def conv_layers(model: str) -> list[ConvLayer]:
    """The distinct `nn.conv2d` calls of examples/`model`.relay with their use counts (each
    call site counted as often as its function is called from `@main`)."""
    import relay
    from relay.lang.expr import Call, GlobalVar
    from relay.lang.traversal import post_order
    from relay.typecheck import infer_module

    module = relay.parse((EXAMPLES / f"{model}.relay").read_text())
    types = infer_module(module)
    convs: dict[str, list[tuple[Any, ...]]] = {}
    callees: dict[str, list[str]] = {}
    for gv, fn in module.functions.items():
        convs[gv.name_hint], callees[gv.name_hint] = [], []
        for e in post_order(fn):
            if not isinstance(e, Call):
                continue
            if isinstance(e.op, GlobalVar):
                callees[gv.name_hint].append(e.op.name_hint)
            elif getattr(e.op, "name", "") == "nn.conv2d":
                a = e.attrs
                if (a.data_layout, a.kernel_layout) != ("NCHW", "OIHW"):
                    continue
                key = (
                    tuple(int(d) for d in types.type_of(e.args[0]).shape),
                    tuple(int(d) for d in types.type_of(e.args[1]).shape),
                    tuple(int(v) for v in a.strides),
                    _four(a.padding),
                    tuple(int(v) for v in a.dilation),
                    int(a.groups),
                )
                convs[gv.name_hint].append(key)
    calls = {name: 0 for name in convs}
    calls["main"] = 1
    stack = ["main"]  # the call graph from @main (each call site pushes its callee once)
    while stack:
        caller = stack.pop()
        for callee in callees.get(caller, []):
            calls[callee] += 1
            stack.append(callee)
    counts: dict[tuple[Any, ...], int] = {}
    for name, keys in convs.items():
        for key in keys:
            counts[key] = counts.get(key, 0) + calls[name]
    return [
        ConvLayer(model, *key, uses=uses)  # type: ignore[arg-type]
        for key, uses in counts.items()
        if uses > 0
    ]


def _four(padding: Any) -> tuple[int, int, int, int]:
    p = [int(v) for v in padding]
    if len(p) == 1:
        return (p[0],) * 4  # type: ignore[return-value]
    if len(p) == 2:
        return (p[0], p[1], p[0], p[1])
    return (p[0], p[1], p[2], p[3])


def _ints(values: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def relay_text(layer: ConvLayer) -> str:
    """The one-convolution model: conv2d + bias_add + relu, weight and bias parameters."""
    k = layer.weight[0]
    return (
        '#[version = "0.0.5"]\n'
        f"def @main(%data: Tensor[{tuple(layer.data)}, float32], "
        f"%weight: Tensor[{tuple(layer.weight)}, float32], %bias: Tensor[({k}), float32]) {{\n"
        f"  nn.relu(nn.bias_add(nn.conv2d(%data, %weight, strides={_ints(layer.strides)}, "
        f"padding={_ints(layer.padding)}, dilation={_ints(layer.dilation)}, "
        f"groups={layer.groups}, channels={k}, kernel_size={_ints(layer.weight[2:])}), %bias))\n"
        "}\n"
    )


def onnx_model(onnx: Any, layer: ConvLayer, weight: np.ndarray, bias: np.ndarray) -> bytes:
    """The same convolution + bias + relu as a one-node ONNX graph (Conv, then Relu)."""
    from onnx import TensorProto, helper, numpy_helper

    t, left, b, right = layer.padding
    conv = helper.make_node(
        "Conv", ["data", "weight", "bias"], ["conv"],
        kernel_shape=list(layer.weight[2:]), strides=list(layer.strides),
        pads=[t, left, b, right], dilations=list(layer.dilation), group=layer.groups,
    )  # fmt: skip
    relu = helper.make_node("Relu", ["conv"], ["out"])
    p, q = layer.out_hw
    graph = helper.make_graph(
        [conv, relu],
        "conv",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, list(layer.data))],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [layer.data[0], layer.weight[0], p, q])],
        initializer=[numpy_helper.from_array(weight, "weight"), numpy_helper.from_array(bias, "bias")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = min(model.ir_version, 9)
    onnx.checker.check_model(model)
    return model.SerializeToString()  # type: ignore[no-any-return]


@attrs.frozen
class Row:
    """One layer's figures (seconds per run)."""

    layer: ConvLayer
    relay_s: float
    ort_s: float
    conv_s: float
    kind: str
    err: float


def measure(layer: ConvLayer, ort: Any, onnx: Any, threads: int, repeat: int) -> Row:
    """Build both, check they agree, time them alternately, profile relay's kernels."""
    import relay
    from relay.backend.target import Target
    from relay.transform import PassContext

    rng = np.random.default_rng(0)
    k, cg, r, s = layer.weight
    data = rng.normal(size=layer.data).astype("float32")
    weight = (rng.normal(size=layer.weight) / np.sqrt(cg * r * s)).astype("float32")
    bias = rng.normal(size=(k,)).astype("float32")
    with PassContext(opt_level=3):
        model = relay.build(
            relay.parse(relay_text(layer)), target=Target.host(threads),
            params={"weight": weight, "bias": bias},
        )  # fmt: skip
    # relay's kernels are profiled before ONNX Runtime runs in this process: its intra-op
    # threads spin after each run and slowed the profile right after the alternation (512@7:
    # 3.8 ms profiled there, 2.1 ms in a process without ORT)
    profile = model.profile(data=data, repeat=max(5, repeat // 2)).json()
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(
        onnx_model(onnx, layer, weight, bias), options, providers=["CPUExecutionProvider"]
    )
    feed = {"data": data}
    got, want = model.run(data=data), session.run(None, feed)[0]
    err = float(np.max(np.abs(got - want)) / max(1.0, float(np.max(np.abs(want)))))
    medians = alternate(
        {"relay": lambda: model.run(data=data), "ort": lambda: session.run(None, feed)},
        repeat,
        SETTLE,
        IDLE,
    )
    kernels = [kn for kn in profile["kernels"] if kn["kind"] != "layout_transform"]
    conv = max(kernels, key=lambda kn: kn["flops"])
    conv_s = sum(kn["median_us"] * kn["calls"] for kn in kernels) * 1e-6
    kind = str(conv["kind"]).removeprefix("nn.").removeprefix("contrib_")
    kind = kind.replace("conv2d_winograd_without_weight_transform", "winograd")
    return Row(layer, medians["relay"], medians["ort"], conv_s, kind, err)


def _line(name: str, uses: str, flops: float, row: tuple[float, float, float], peak: float,
          kind: str, err: str) -> str:  # fmt: skip
    relay_s, ort_s, conv_s = row
    return (
        f"{name:<22} {uses:>2} {flops / 1e6:7.0f} "
        f"{relay_s * 1e3:8.3f} {flops / relay_s / 1e9:6.1f} {flops / relay_s / peak:4.0%} "
        f"{ort_s * 1e3:8.3f} {flops / ort_s / 1e9:6.1f} {flops / ort_s / peak:4.0%} "
        f"{relay_s / ort_s:5.2f} "
        f"{conv_s * 1e3:8.3f} {flops / conv_s / 1e9:6.1f} {flops / conv_s / peak:4.0%} "
        f"{conv_s / ort_s:5.2f} {peak / 1e9:5.1f}  {kind:<16} {err}"
    )


def main() -> int:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--models", default="resnet18", help="comma-separated: resnet18, mobilenet_v2"
    )
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", default="", help="only layers whose label contains this")
    args = parser.parse_args()
    import peers

    ort = peers.import_onnxruntime()
    try:
        import onnx
    except ImportError:
        print("onnx is not installed: pip install -e '.[bench]'")
        return 0
    if ort is None:
        return 0
    from relay.backend.codegen import probe, threadpool
    from relay.backend.profile.machine import machine_peak

    threadpool.set_num_threads(args.threads)
    cached = machine_peak(args.threads).fp32_gflops
    print(
        f"{args.threads} threads; onnxruntime {ort.__version__}; fp32 FMA peak "
        f"(machine_peak, cached) {cached:.1f} GFLOP/s; %pk against the peak measured now"
    )
    head = (
        f"{'layer':<22} {'x':>2} {'MFLOP':>7} {'relay ms':>8} {'GF/s':>6} {'%pk':>4} "
        f"{'ORT ms':>8} {'GF/s':>6} {'%pk':>4} {'ratio':>5} {'conv ms':>8} {'GF/s':>6} "
        f"{'%pk':>4} {'c/ORT':>5} {'peak':>5}  {'relay kernel':<16} rel.err"
    )
    print(head)
    print("-" * len(head))
    for model in args.models.split(","):
        totals, peaks = [0.0, 0.0, 0.0, 0.0], []
        for layer in conv_layers(model):
            if args.only and args.only not in layer.name:
                continue
            peaks.append(probe.measure_fp32_peak(args.threads) * 1e9)
            row = measure(layer, ort, onnx, args.threads, args.repeat)
            times = (row.relay_s, row.ort_s, row.conv_s)
            print(_line(layer.name, str(layer.uses), layer.flops, times, peaks[-1], row.kind,
                        f"{row.err:.1e}"), flush=True)  # fmt: skip
            for i, v in enumerate((row.relay_s, row.ort_s, row.conv_s, layer.flops)):
                totals[i] += layer.uses * v
        if totals[3]:
            relay_s, ort_s, conv_s, flops = totals
            peak = statistics.median(peaks)
            print(_line(f"{model} (weighted)", "", flops, (relay_s, ort_s, conv_s), peak, "", ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
