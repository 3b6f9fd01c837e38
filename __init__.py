"""relay: test."""
