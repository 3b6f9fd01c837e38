"""typecheck."""
