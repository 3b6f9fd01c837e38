"""Declarations of every operator (name, arity, attribute schema, fusion pattern)."""

from . import tensor  # noqa: F401
