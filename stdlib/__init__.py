"""stdlib."""
