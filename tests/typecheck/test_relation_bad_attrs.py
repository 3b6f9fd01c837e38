"""Attributes that are sizes or counts, given negative or absurdly large values: a type
error at the call (never an exception from building the result type), and `relay check`
exits 1 (a user error), not 3 (an internal error)."""

from __future__ import annotations

from pathlib import Path

import pytest
import relay.typecheck.checker as checker_module
from relay import cli
from relay.grammar import parse
from relay.lang.diagnostics import Diagnostic, TypeCheckError
from relay.lang.types import TensorType
from relay.typecheck import check_module
from relay.typecheck.relations import RELATIONS

HEADER = '#[version = "0.0.5"]\n'

# (parameters, the call on line 3 at column 3, a fragment of its diagnostic)
CASES = [
    # the weight is unknown: the relation builds its type from `units`
    ("%x: Tensor[(2, 3), float32], %w", "nn.dense(%x, %w, units=-2)", "units=-2 must not be"),
    (
        "%x: Tensor[(2, 3), float32], %w",
        "nn.matmul(%x, %w, units=-1586621873591388049)",
        "units=-1586621873591388049 must not be negative",
    ),
    (
        "%x: Tensor[(2, 3), float32], %w",
        "nn.matmul(%x, %w, units=-1, transpose_a=True, transpose_b=True)",
        "units=-1 must not be negative",
    ),
    # counts that would build types of 2**62 dimensions or fields
    ("%x: Tensor[(2, 3), float32]", "expand_dims(%x, axis=0, num_newaxis=4611686018427387904)",
     "more than"),
    ("%x: Tensor[(?, 3), float32]", "split(%x, indices_or_sections=4611686018427387904)",
     "more than"),
    ("%x: Tensor[(2, 3), float32]", "expand_dims(%x, axis=0, num_newaxis=-1)", "num_newaxis"),
    # negative sizes the relations already refuse (kept refused)
    ("%x: Tensor[(1, 3, 8, 8), float32], %w", "nn.conv2d(%x, %w, channels=-4, kernel_size=[3, 3])",
     "channels=-4"),
    ("%x: Tensor[(1, 3, 8, 8), float32], %w", "nn.conv2d(%x, %w, channels=4, kernel_size=[-3, 3])",
     "kernel_size"),
    ("%x: Tensor[(3), int32]", "one_hot(%x, 1f, 0f, depth=-3, axis=-1)", "depth=-3"),
    ("%x: Tensor[(2, 3), float32]", "repeat(%x, repeats=-2, axis=0)", "repeats"),
    ("%x: Tensor[(1, 3, 8, 8), float32]", "nn.adaptive_avg_pool2d(%x, output_size=[-1, 2])",
     "output_size"),
    ("%x: Tensor[(1, 3, 8, 8), float32]", "nn.depth_to_space(%x, block_size=-2)", "block_size"),
    ("%x: Tensor[(1, 3, 8, 8), float32]", "nn.lrn(%x, size=-1)", "size"),
]  # fmt: skip


def _program(params: str, call: str) -> str:
    return f"{HEADER}def @main({params}) {{\n  {call}\n}}\n"


def _diagnostic_of_call(text: str, call: str) -> Diagnostic:
    with pytest.raises(TypeCheckError) as info:
        check_module(parse(text))
    op_name = call.split("(")[0]
    found = [d for d in info.value.diagnostics if d.message.startswith(op_name)]
    assert len(found) == 1, str(info.value)
    return found[0]


@pytest.mark.parametrize(("params", "call", "fragment"), CASES)
def test_a_bad_size_attribute_is_a_type_error_at_the_call(
    params: str, call: str, fragment: str
) -> None:
    diagnostic = _diagnostic_of_call(_program(params, call), call)
    assert fragment in diagnostic.message, diagnostic.message
    span = diagnostic.span
    assert span is not None
    assert (span.line, span.column, span.end_line, span.end_column) == (3, 3, 3, 3 + len(call))


def test_a_zero_size_is_still_a_size() -> None:
    mod = parse(_program("%x: Tensor[(2, 3), float32], %w", "nn.dense(%x, %w, units=0)"))
    main = check_module(mod).global_types["main"]
    assert main.arg_types[1] == TensorType((0, 3), "float32")
    assert main.ret_type == TensorType((2, 0), "float32")


@pytest.mark.parametrize(("params", "call", "fragment"), CASES[:5])
def test_relay_check_exits_1_for_bad_sizes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], params: str, call: str, fragment: str
) -> None:
    path = tmp_path / "bad.relay"
    path.write_text(_program(params, call), encoding="utf-8")
    assert cli.main(["check", str(path)]) == cli.EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert f"{path}:3:3: error: " in err
    assert fragment in err
    assert "internal error" not in err


class _BrokenTable:
    """The relations, except that `add` builds a tensor type with a negative dimension
    (a relation that missed a bad value)."""

    def get(self, op: object) -> object:
        if getattr(op, "name", None) == "add":
            return lambda args, attrs, ctx: TensorType((-5,), "float32")
        return RELATIONS.get(op)


def test_a_relation_building_an_invalid_type_is_a_type_error_at_the_call(monkeypatch) -> None:
    monkeypatch.setattr(checker_module, "RELATIONS", _BrokenTable())
    call = "add(%x, %x)"
    diagnostic = _diagnostic_of_call(_program("%x: Tensor[(2), float32]", call), call)
    assert diagnostic.message.startswith("add: cannot type this call: ")
    assert "-5" in diagnostic.message
    assert diagnostic.span is not None
    assert (diagnostic.span.line, diagnostic.span.column) == (3, 3)
