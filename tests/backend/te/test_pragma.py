"""`Stage.pragma`: a code-generation hint on a loop, recorded in the trace, carried by the
lowered loop as an annotation, shown by the printer and obeyed by LLVM code generation."""

from __future__ import annotations

import numpy as np
import pytest
from relay.backend import te
from relay.backend.codegen.compile import build_ir, compile_module
from relay.backend.runtime.native import aligned_empty
from relay.backend.te.errors import ScheduleError
from relay.backend.tir.printer import astext
from relay.backend.tir.stmt import For
from relay.backend.tir.transform import lower_pipeline
from relay.backend.tir.visitor import children


def computation():
    """`B = A * 2` over 6 x 5 and a fresh schedule of it."""
    A = te.placeholder((6, 5), "float32", "A")
    B = te.compute((6, 5), lambda i, j: A[i, j] * 2.0, name="B")
    return te.create_schedule(B), A, B


def scaled(pragma: bool):
    """`computation()` with its inner loop split by 2, `pragma` on the outer half."""
    s, A, B = computation()
    jo, _ = s[B].split(s[B].op.axis[1], factor=2)
    if pragma:
        s[B].pragma(jo, "no_unroll")
    return s, A, B


def loops(stmt):
    """Every `For` of a statement, outermost first."""
    found, stack = [], [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, For):
            found.append(node)
        stack.extend(reversed([c for c in children(node) if hasattr(c, "__attrs_attrs__")]))
    return found


def test_pragma_is_a_loop_annotation_shown_by_the_printer_and_replayed():
    s, A, B = scaled(pragma=True)
    func = te.lower(s, [A, B], "scaled")
    marked = [f.loop_var.name for f in loops(func.body) if f.annotations.get("pragma_no_unroll")]
    assert marked == ["j.outer"]
    text = astext(func)
    assert "# pragma_no_unroll" in text
    assert 'pragma("B", "j.outer", "no_unroll")' in str(s.trace)
    fresh, A2, B2 = computation()
    te.replay(str(s.trace), fresh)
    assert astext(te.lower(fresh, [A2, B2], "scaled")) == text
    plain, A3, B3 = scaled(pragma=False)
    assert "pragma" not in astext(te.lower(plain, [A3, B3], "scaled"))


def test_unknown_pragma_keys_and_loops_are_errors():
    s, _, B = scaled(pragma=False)
    with pytest.raises(ScheduleError, match=r"unknown key 'unroll_all'.*no_unroll"):
        s[B].pragma(s[B].leaf_iter_vars[0], "unroll_all")
    with pytest.raises(ScheduleError, match="not a loop of stage B"):
        s[B].pragma(s[B].op.axis[1], "no_unroll")  # split: no longer a loop


def test_no_unroll_reaches_llvm_and_the_kernel_still_computes_the_same():
    s, A, B = scaled(pragma=True)
    func = lower_pipeline(te.lower(s, [A, B], "scaled"))
    assert "llvm.loop.unroll.disable" in str(build_ir([func]))
    a, out = aligned_empty((6, 5), "float32"), aligned_empty((6, 5), "float32")
    a[...] = np.arange(30).reshape(6, 5)
    compile_module([func]).run("scaled", a, out)
    np.testing.assert_array_equal(out, a * 2)
