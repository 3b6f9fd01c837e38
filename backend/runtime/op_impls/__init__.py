"""Reference implementations of operators: the interpreter's facet of every operator.

`IMPLS` maps each `Op` object (`relay.lang.op.get_op(name)`) to a plain function

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

Adding an implementation:

    from relay.backend.runtime.op_impls import implementation

    @implementation("nn.softmax")
    def softmax(args, attrs):
        (x,) = args
        ...

Implementations live in the modules of this package by operator family; importing the
package registers all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from ....lang.attrs import Attrs
from ....lang.op import Op, lookup_op
from ..values import MissingImplementationError, Value

Impl: TypeAlias = Callable[[list[Value], Attrs | None], Value]
"""The signature of a reference implementation."""

IMPLS: dict[Op, Impl] = {}
"""The reference implementation of each operator, keyed by the `Op` object."""


def register_implementation(op: Op | str, impl: Impl) -> Impl:
    """Make `impl` the reference implementation of `op`; registering an operator twice is a
    `ValueError` (so two modules cannot silently fight over one operator)."""
    if isinstance(op, str):
        found = lookup_op(op)
        if found is None:
            raise ValueError(f"no operator `{op}` is declared; cannot implement it")
        op = found
    if op in IMPLS:
        raise ValueError(f"operator `{op.name}` already has a reference implementation")
    IMPLS[op] = impl
    return impl


def implementation(*names: str, if_declared: bool = False) -> Callable[[Impl], Impl]:
    """Decorator: register the function as the implementation of the operators `names`.

    A name that is not a declared operator is an error, unless `if_declared`, in which
    case it is skipped. The function is returned unchanged (it can be called directly).
    """

    def register(impl: Impl) -> Impl:
        for name in names:
            if if_declared and lookup_op(name) is None:
                continue
            register_implementation(name, impl)
        return impl

    return register


def implementation_for(op: Op) -> Impl:
    """The reference implementation of `op`; `MissingImplementationError` naming the operator
    and the missing facet if it has none."""
    impl = IMPLS.get(op)
    if impl is None:
        raise MissingImplementationError(f"operator `{op.name}` has no reference implementation")
    return impl


def has_implementation(op: Op) -> bool:
    """Whether `op` has a reference implementation."""
    return op in IMPLS


from . import (  # noqa: E402, F401  (each module registers its implementations)
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
