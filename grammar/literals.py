"""Numeric and string literals of the text format.

`1`, `-5`, `--5`, `7i16`, `3i64`, `2.5f`, `1e-5f`, `3f16`, `inff`, `-inff`, `nanf64` become
rank-0 constants (int32 unless suffixed; an unsuffixed integer too large for int32 is int64; an
unsuffixed decimal such as `1.5` is float32). The same spellings are attribute values
(Python ints and floats) and tensor dimensions (non-negative ints). Errors are
`LiteralError`s that the parser turns into diagnostics at the literal.
"""

from __future__ import annotations

import math
import re

import numpy as np

_NUMBER = re.compile(
    r"(?P<sign>-?)(?P<int>[0-9]+)(?P<frac>\.[0-9]+)?(?P<exp>[eE][+-]?[0-9]+)?(?P<suffix>\w*)"
)
_SPECIAL = re.compile(r"(?P<sign>-?)(?P<kind>inf|nan)f(?P<bits>16|32|64)?")
_INT_SUFFIX = {"i": "int32", "i16": "int16", "i32": "int32", "i64": "int64"}
_FLOAT_SUFFIX = {"f": "float32", "f16": "float16", "f32": "float32", "f64": "float64"}
_UNSUPPORTED_INT = re.compile(r"(?P<kind>[iu])(?P<bits>8|16|32|64)")
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "'": "'"}


class LiteralError(ValueError):
    """A literal that is malformed or out of range for its type."""


def parse_number(text: str) -> tuple[int | float, str]:
    """The value and dtype of a numeric literal (`7i16` → `(7, "int16")`).

    A run of minus signs folds into the literal as in TVM's lexer: an even count is
    positive (`--10` is 10), an odd one negative (`---10` is -10, `--inff` is inf).
    """
    if text.startswith("--"):
        digits = text.lstrip("-")
        text = ("-" if (len(text) - len(digits)) % 2 else "") + digits
    special = _SPECIAL.fullmatch(text)
    if special is not None:
        dtype = "float" + (special["bits"] or "32")
        if special["kind"] == "nan":
            return math.nan, dtype
        return (-math.inf if special["sign"] else math.inf), dtype
    match = _NUMBER.fullmatch(text)
    if match is None:
        raise LiteralError(f"malformed number `{text}`")
    suffix = match["suffix"]
    is_decimal = bool(match["frac"] or match["exp"])
    if suffix in _FLOAT_SUFFIX or (not suffix and is_decimal):
        dtype = _FLOAT_SUFFIX.get(suffix, "float32")
        return _float_in_range(text, float(text[: len(text) - len(suffix)]), dtype), dtype
    if suffix in _INT_SUFFIX or not suffix:
        if is_decimal:
            raise LiteralError(f"`{text}` has a fraction or exponent but an integer type")
        digits = text[: len(text) - len(suffix)]
        if len(digits) > 40:
            raise LiteralError(f"`{text[:40]}...` is out of range for any integer type")
        value = int(digits)
        if not suffix:
            dtype = "int32" if -(2**31) <= value < 2**31 else "int64"
        else:
            dtype = _INT_SUFFIX[suffix]
        return _int_in_range(text, value, dtype), dtype
    unsupported = _UNSUPPORTED_INT.fullmatch(suffix)
    if unsupported is not None:
        kind = "int" if unsupported["kind"] == "i" else "uint"
        raise LiteralError(
            f"{kind}{unsupported['bits']} literals need meta[relay.Constant] "
            "(only i16, i32, i64, f16, f32 and f64 literal suffixes exist)"
        )
    raise LiteralError(
        f"invalid suffix `{suffix}` on number `{text}` (use i16, i32, i64, f16, f32 or f64)"
    )


def _int_in_range(text: str, value: int, dtype: str) -> int:
    info = np.iinfo(dtype)
    if not info.min <= value <= info.max:
        raise LiteralError(f"`{text}` is out of range for {dtype} ({info.min} to {info.max})")
    return value


def _float_in_range(text: str, value: float, dtype: str) -> float:
    limit = float(np.finfo(dtype).max)
    if math.isinf(value) or abs(value) > limit:
        raise LiteralError(f"`{text}` is out of range for {dtype} (largest value {limit:g})")
    return value


def parse_dim(text: str) -> int:
    """A tensor dimension: a non-negative integer literal (`3`, `3i64`)."""
    value, dtype = parse_number(text)
    if not dtype.startswith("int"):
        raise LiteralError(f"a dimension must be an integer, not `{text}`")
    if value < 0:
        raise LiteralError(f"a dimension must be non-negative, not `{text}`")
    return int(value)


def unescape(text: str) -> str:
    """The value of a string literal (with its quotes): `\\"`, `\\\\`, `\\n`, `\\t` escapes."""
    body = text[1:-1]
    if "\\" not in body:
        return body
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            # Unknown escapes stay as written (TVM processes none, so `"C:\\dir"` is literal).
            out.append(_ESCAPES.get(nxt, ch + nxt))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)
