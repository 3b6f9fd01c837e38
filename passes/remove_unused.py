"""`remove-unused-functions`: drop the global functions the entry function cannot reach.

Before (entry `main`)::

    def @unused(%x: float32) { %x }
    def @helper(%x: float32) { add(%x, %x) }
    def @main(%y: float32) { @helper(%y) }

After::

    def @helper(%x: float32) { add(%x, %x) }
    def @main(%y: float32) { @helper(%y) }

Reachability follows every `GlobalVar` mentioned in a reachable function (called or
passed as a value). ADT definitions are kept. A module without the entry is unchanged.
"""

from __future__ import annotations

from attrs import frozen

from ..lang.expr import GlobalVar
from ..lang.module import IRModule
from ..lang.traversal import post_order
from .context import PassContext
from .pass_base import module_pass


@frozen
class RemoveUnusedOptions:
    """Options of the `remove-unused-functions` pass."""

    entry: str = "main"
    """The name of the global whose reachable functions are kept."""


def _global_named(mod: IRModule, name: str) -> GlobalVar | None:
    for gv in mod.functions:
        if gv.name_hint == name:
            return gv
    return None


@module_pass(name="remove-unused-functions", opt_level=1, options=RemoveUnusedOptions)
def remove_unused_functions_pass(
    mod: IRModule, ctx: PassContext, options: RemoveUnusedOptions
) -> IRModule:
    """Drop the globals not reachable from `options.entry` (default `@main`)."""
    entry = options.entry
    start = _global_named(mod, entry)
    if start is None:
        return mod
    reached: set[str] = {entry}
    stack = [start]
    while stack:
        gv = stack.pop()
        for node in post_order(mod.functions[gv]):
            if isinstance(node, GlobalVar) and node.name_hint not in reached:
                target = _global_named(mod, node.name_hint)
                if target is not None:
                    reached.add(node.name_hint)
                    stack.append(target)
    if len(reached) == len(mod.functions):
        return mod
    kept = {gv: fn for gv, fn in mod.functions.items() if gv.name_hint in reached}
    return IRModule(kept, mod.type_definitions)
