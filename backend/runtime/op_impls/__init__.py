"""Reference implementations of operators: the interpreter's facet of every operator.

`IMPLS` (an `OpTable`) maps each `Op` object (`relay.lang.op.get_op(name)`) to a plain function

    impl(args: list[Value], attrs: Attrs | None) -> Value

where `args` are the evaluated arguments in order (tensors are `np.ndarray`, tuples are
Python tuples of values, see `relay.backend.runtime.values`) and `attrs` is the call's
checked attribute value (`None` for operators without attributes). The function returns a
new value with TVM's semantics:

* tensors stay numpy arrays, rank 0 included (wrap numpy scalars with `np.asarray`);
* the result dtype is the one TVM's type relation gives (numpy must not promote: cast back
  with `.astype(dtype, copy=False)`);
* inputs are never modified (they may be read-only);
* a user-visible failure (division by zero, a bad index) raises `EvalError` from
  `relay.backend.runtime.values`; the interpreter adds the call's span. Any other exception
  is reported by the interpreter as a failure of the operator at that call.

The interpreter runs implementations under `np.errstate(all="ignore")`.

Adding an implementation, in the family module of the operator (`nn.py`):

    IMPLS: OpTable[Impl] = OpTable("reference implementation")   # once per family module

    @IMPLS.register("nn.softmax")
    def softmax(args, attrs):
        (x,) = args
        ...

Each family module fills a table of its own; the package's `IMPLS` joins the families
listed at the bottom of this file (an `OpTable`: a missing entry is a `MissingFacetError`,
an operator implemented twice an error at import).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from ....lang.attrs import Attrs
from ....lang.op import Op
from ....lang.optable import OpTable
from ..values import Value

Impl: TypeAlias = Callable[[list[Value], Attrs | None], Value]
"""The signature of a reference implementation."""


def implementation_for(op: Op) -> Impl:
    """The reference implementation of `op`; `MissingFacetError` naming the operator and the
    missing facet if it has none."""
    return IMPLS.lookup(op)


# The families, each with its own table; `IMPLS` joins them (an operator in two is an error).
from . import (  # noqa: E402
    algorithm,
    annotation,
    conv,
    elementwise,
    image,
    index,
    nn,
    pool,
    reduce,
    transform,
)

IMPLS: OpTable[Impl] = OpTable.merge(
    "reference implementation",
    [
        algorithm.IMPLS,
        annotation.IMPLS,
        conv.IMPLS,
        elementwise.IMPLS,
        image.IMPLS,
        index.IMPLS,
        nn.IMPLS,
        pool.IMPLS,
        reduce.IMPLS,
        transform.IMPLS,
    ],
)
"""The reference implementation of each operator, keyed by the `Op` object."""
