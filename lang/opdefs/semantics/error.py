"""The one error type of the operator semantics: an attribute value that means nothing."""

from __future__ import annotations


class SemanticsError(ValueError):
    """An attribute value that the operator's rules reject; the message says why.

    Each facet turns it into its own error: a relation into a `RelationError` (the
    message unchanged), the interpreter into an `EvalError` naming the operator. Compute
    definitions let it through (it is a `ValueError`, as their other errors are).
    """
