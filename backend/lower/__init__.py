"""Lowering of fused Relay functions to tensor expressions: the compute definition of each
operator (`computes`), default schedules, and the driver that lowers a Primitive function."""
