"""The graph plan of a model whose kernels folded weight-only stages (`lower.fold_constants`).

    positions = constant_params(plan)                 # per kernel: weights at every call
    lowered = lower_primitive(fn, ..., constant_params=positions[k])
    plan = fold_into_plan(plan, {k: lowered, ...})

A kernel that folded takes, instead of the weights it no longer reads, its folded inputs:
`fold_into_plan` computes each one for every step from the constants that step passes (once
per kernel and distinct weights: steps sharing weights share the value), adds it as a
constant slot, rewrites the steps' inputs to what the kernels now take, and drops the
constants no step or result reads any more (slots renumbered, constants in slot order, as
`plan_graph` makes them). The kernels' Relay functions stay as they were: a folded kernel's
native code takes the folded inputs, and no fallback kernel ever folds.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..lower.lower_func import LoweredKernel
from ..runtime.plan import GraphPlan, KernelStep, OutputTree, Slot, flatten_tree


def constant_params(plan: GraphPlan) -> dict[int, tuple[int, ...]]:
    """For each kernel of `plan`, the positions of its (flattened) parameters that every
    step running it passes a constant slot."""
    found: dict[int, set[int]] = {}
    for step in plan.steps:
        here = {k for k, s in enumerate(step.inputs) if plan.slots[s].kind == "constant"}
        found[step.kernel] = found[step.kernel] & here if step.kernel in found else here
    return {k: tuple(sorted(v)) for k, v in found.items()}


def folds(lowered: LoweredKernel) -> bool:
    """Whether folding changed what the kernel takes."""
    return lowered.param_positions is not None


def fold_into_plan(plan: GraphPlan, lowered: Mapping[int, LoweredKernel]) -> GraphPlan:
    """`plan` with the steps of the kernels in `lowered` that folded passing what those
    kernels take now (module docstring); `plan` itself when none folded."""
    changed = {k: low for k, low in lowered.items() if folds(low)}
    if not changed:
        return plan
    slots = list(plan.slots)
    constants = list(plan.constants)
    made: dict[tuple[int, int, tuple[int, ...]], int] = {}
    steps = []
    for step in plan.steps:
        low = changed.get(step.kernel)
        if low is None:
            steps.append(step)
            continue
        inputs = [step.inputs[p] for p in low.inputs]
        for j, item in enumerate(low.folded):
            sources = tuple(step.inputs[p] for p in item.param_positions)
            key = (step.kernel, j, sources)
            if key not in made:
                arrays = {
                    p: constants[slots[s].index] for p, s in zip(item.param_positions, sources)
                }
                value = item.evaluate(arrays)
                made[key] = len(slots)
                slots.append(Slot(value.shape, item.input.dtype, "constant", len(constants)))
                constants.append(value)
            inputs.append(made[key])
        steps.append(KernelStep(step.kernel, tuple(inputs), step.outputs))
    return _without_unused_constants(
        GraphPlan(
            tuple(slots),
            plan.kernels,
            tuple(constants),
            tuple(steps),
            plan.input_names,
            plan.input_slots,
            plan.output,
        )
    )


def _without_unused_constants(plan: GraphPlan) -> GraphPlan:
    """`plan` without the constant slots that no step and no result reads."""
    used = {s for st in plan.steps for s in st.inputs} | set(flatten_tree(plan.output))
    keep = [s for s, slot in enumerate(plan.slots) if slot.kind != "constant" or s in used]
    if len(keep) == len(plan.slots):
        return plan
    renumber = {old: new for new, old in enumerate(keep)}
    slots: list[Slot] = []
    constants: list[np.ndarray] = []
    for old in keep:
        slot = plan.slots[old]
        if slot.kind == "constant":
            constants.append(plan.constants[slot.index])
            slot = Slot(slot.shape, slot.dtype, "constant", len(constants) - 1)
        slots.append(slot)
    steps = tuple(
        KernelStep(
            st.kernel,
            tuple(renumber[s] for s in st.inputs),
            tuple(renumber[s] for s in st.outputs),
        )
        for st in plan.steps
    )
    return GraphPlan(
        tuple(slots),
        plan.kernels,
        tuple(constants),
        steps,
        plan.input_names,
        tuple(renumber[s] for s in plan.input_slots),
        _renumber_tree(plan.output, renumber),
    )


def _renumber_tree(tree: OutputTree, renumber: Mapping[int, int]) -> OutputTree:
    """`tree` with every slot index mapped (iteratively, innermost tuples first)."""
    if isinstance(tree, int):
        return renumber[tree]
    order: list[tuple[OutputTree, ...]] = []
    stack: list[tuple[OutputTree, ...]] = [tree]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(item for item in node if isinstance(item, tuple))
    done: dict[int, tuple[OutputTree, ...]] = {}
    for node in reversed(order):
        done[id(node)] = tuple(
            renumber[item] if isinstance(item, int) else done[id(item)] for item in node
        )
    return done[id(tree)]


__all__ = ["constant_params", "fold_into_plan", "folds"]
