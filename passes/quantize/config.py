"""`qconfig`: the options of automatic quantization, as TVM's `relay.quantize.qconfig`.

    with qconfig(calibrate_mode="kl_divergence", weight_scale="max"):
        qmod = relay.quantize.quantize(mod, params, dataset)

The options and their defaults are TVM's; an unknown option or a bad value is a
`QuantizeError` naming it. `current_qconfig()` is the innermost active configuration (the
defaults outside any `with`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import attrs

from ...lang.diagnostics import Error

CALIBRATE_MODES = ("global_scale", "kl_divergence", "percentile")
WEIGHT_SCALES = ("power2", "max")
BIAS_MODES = ("weight", "int32")
ROUNDINGS = ("UPWARD", "TONEAREST")
INTEGER_DTYPES = ("int8", "int16", "int32")


class QuantizeError(Error):
    """A diagnosed error of automatic quantization (bad option, dataset or model)."""


def _int_list(value: object) -> tuple[int, ...] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise QuantizeError(f"skip_conv_layers must be a list of integers, not {value!r}")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise QuantizeError(f"skip_conv_layers must be a list of integers, not {value!r}")
    return tuple(value)


def _name_list(value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise QuantizeError(f"debug_enabled_ops must be a list of operator names, not {value!r}")
    return tuple(str(v) for v in value)


@attrs.frozen(kw_only=True)
class QConfig:
    """The quantization options (TVM's names and defaults).

    * `nbit_input`, `nbit_weight`, `nbit_activation`: bits of the three kinds of quantize
      points (conv/dense inputs, weights, accumulators).
    * `dtype_input`, `dtype_weight`, `dtype_activation`: their integer dtypes.
    * `calibrate_mode`: `global_scale` (every input/activation uses `global_scale`),
      `kl_divergence` or `percentile` (thresholds from a calibration dataset).
    * `weight_scale`: `power2` (2^ceil(log2 max|w|)) or `max` (max|w|).
    * `skip_conv_layers`: indices of `nn.conv2d` calls (in dataflow order) left in float;
      `skip_dense_layer`: leave every `nn.dense` in float.
    * `do_simulation`: return the simulated (fake-quantized float) program.
    * `round_for_shift`: add 2^(k-1) before a right shift by k (round half up).
    * `debug_enabled_ops`: when given, only these operators are quantized.
    * `rounding`: `UPWARD` (half up) or `TONEAREST` (half away from zero) for rescaling.
    * `percentile`: the quantile of |x| the `percentile` mode takes (TVM's 0.99999).

    Two options depart from TVM's flow (TFLite's and ONNX Runtime's choices):

    * `per_channel` (default False, TVM: one scale per weight tensor): each output channel
      of a conv2d (OIHW weights, NCHW data) or dense weight gets its own scale
      (`weight_scale` rule per channel); the accumulator is then rescaled per channel.
    * `bias_mode` (default `"int32"`; TVM's flow is `"weight"`): a constant added to a
      conv2d/dense accumulator (`add`, `nn.bias_add`) is quantized in
      `dtype_activation` at the accumulator's own scale (input scale x weight scale), so
      it adds with no rescale and keeps 31 bits; `"weight"` quantizes it as a weight
      (`nbit_weight` bits, its own scale), which rounds small biases to zero.
    * `bias_correction` (default False; needs `bias_mode="int32"` and a calibration
      dataset in every mode): each int32 bias absorbs the mean error quantization adds to
      its accumulator on the dataset (Nagel et al. 2019's empirical bias correction,
      `relay.passes.quantize.correct`).
    """

    nbit_input: int = 8
    nbit_weight: int = 8
    nbit_activation: int = 32
    dtype_input: str = "int8"
    dtype_weight: str = "int8"
    dtype_activation: str = "int32"
    calibrate_mode: str = "global_scale"
    global_scale: float = 8.0
    weight_scale: str = "power2"
    skip_conv_layers: tuple[int, ...] | None = attrs.field(default=(0,), converter=_int_list)
    skip_dense_layer: bool = True
    do_simulation: bool = False
    round_for_shift: bool = True
    debug_enabled_ops: tuple[str, ...] | None = attrs.field(default=None, converter=_name_list)
    rounding: str = "UPWARD"
    percentile: float = 0.99999
    per_channel: bool = False
    bias_mode: str = "int32"
    bias_correction: bool = False

    def __attrs_post_init__(self) -> None:
        for name in ("nbit_input", "nbit_weight", "nbit_activation"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 2 <= value <= 32:
                raise QuantizeError(f"{name} must be an integer in [2, 32], not {value!r}")
        for name in ("dtype_input", "dtype_weight", "dtype_activation"):
            if getattr(self, name) not in INTEGER_DTYPES:
                raise QuantizeError(
                    f"{name} must be one of {', '.join(INTEGER_DTYPES)}, "
                    f"not {getattr(self, name)!r}"
                )
        _choice("calibrate_mode", self.calibrate_mode, CALIBRATE_MODES)
        _choice("weight_scale", self.weight_scale, WEIGHT_SCALES)
        _choice("rounding", self.rounding, ROUNDINGS)
        _choice("bias_mode", self.bias_mode, BIAS_MODES)
        for name in ("per_channel", "bias_correction"):
            if not isinstance(getattr(self, name), bool):
                raise QuantizeError(f"{name} must be True or False, not {getattr(self, name)!r}")
        if self.bias_correction and self.bias_mode != "int32":
            raise QuantizeError('bias_correction=True needs bias_mode="int32"')
        scale = self.global_scale
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not scale > 0:
            raise QuantizeError(f"global_scale must be a positive number, not {scale!r}")
        if not 0.5 <= self.percentile <= 1.0:
            raise QuantizeError(f"percentile must be in [0.5, 1], not {self.percentile!r}")

    def nbit_of(self, kind: int) -> int:
        """The bits of a quantize point of `kind` (see `annotate.INPUT` ...)."""
        from .annotate import INPUT, WEIGHT

        if kind == INPUT:
            return self.nbit_input
        return self.nbit_weight if kind == WEIGHT else self.nbit_activation

    def dtype_of(self, kind: int) -> str:
        """The integer dtype of a quantize point of `kind`."""
        from .annotate import INPUT, WEIGHT

        if kind == INPUT:
            return self.dtype_input
        return self.dtype_weight if kind == WEIGHT else self.dtype_activation


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise QuantizeError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")


OPTIONS = tuple(a.name for a in attrs.fields(QConfig))
"""The option names `qconfig` accepts."""

_STACK: list[QConfig] = []


def current_qconfig() -> QConfig:
    """The innermost active `qconfig` (the defaults outside any)."""
    return _STACK[-1] if _STACK else QConfig()


def make_qconfig(**options: Any) -> QConfig:
    """A `QConfig` from keyword options over the current one; unknown names are errors."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise QuantizeError(
            f"unknown qconfig option{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(unknown)} (known: {', '.join(OPTIONS)})"
        )
    return attrs.evolve(current_qconfig(), **options)


@contextlib.contextmanager
def qconfig(**options: Any) -> Iterator[QConfig]:
    """Make a configuration (TVM's options and defaults, see `QConfig`) current inside a
    `with` block: `with qconfig(calibrate_mode="kl_divergence"): quantize(...)`."""
    config = make_qconfig(**options)
    _STACK.append(config)
    try:
        yield config
    finally:
        _STACK.pop()
