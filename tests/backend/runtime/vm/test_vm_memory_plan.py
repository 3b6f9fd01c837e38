"""The VM's memory plan inside basic blocks (`AllocTensor.reuse`): with it, the examples
agree with the interpreter and allocate fewer tensors a run; tensors that escape their
block (returned, in a tuple, in a reference) are never overwritten; an artifact keeps the
plan, and one whose plan was edited, or of the old format, is refused."""

from __future__ import annotations

import sys
from pathlib import Path

import attrs
import numpy as np
import pytest
import relay
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend.build.artifact import ArtifactError
from relay.backend.runtime import interpret
from relay.backend.runtime.inputs import bind_inputs
from relay.backend.runtime.vm import Executor, VMModel
from relay.backend.runtime.vm import bytecode as bc
from relay.backend.runtime.vm.memory import basic_blocks, plan_reuse, registers_of, without_plan
from relay.grammar import parse
from relay.passes import values_close

sys.path.insert(0, str(Path(__file__).parent))
from artifact_edit import edited_artifact
from test_vm_models import model_and_inputs

TARGET = "llvm -num-threads=1"
HEADER = '#[version = "0.0.5"]\n'


def _unplanned_run(model: VMModel, inputs: dict, fuse: bool = True) -> tuple[object, Executor]:
    """The result and executor of `model`'s program run without its memory plan."""
    program = attrs.evolve(
        model.program, functions=[without_plan(f) for f in model.program.functions]
    )
    executor = Executor(program, model.library, fuse=fuse)
    return executor.run(bind_inputs(model.main, (), inputs, "@main")), executor


@pytest.mark.parametrize("name", ["lstm", "treelstm"])
def test_examples_agree_with_the_plan_and_allocate_less(name):
    module, inputs = model_and_inputs(name)
    model = relay.build(module, target=TARGET)
    assert isinstance(model, VMModel)
    expected = interpret(module, **inputs)
    assert values_close(expected, model.run(**inputs), 2e-4, 2e-5)
    planned = model.stats
    unplanned_result, unplanned = _unplanned_run(model, inputs)
    assert values_close(expected, unplanned_result, 2e-4, 2e-5)
    assert unplanned.last.reused == 0
    assert planned.reused > 0
    assert planned.allocations < unplanned.last.allocations
    # every kernel output is either fresh or reused storage
    assert planned.allocations + planned.reused == unplanned.last.allocations
    # the unfused executor follows the same plan
    executor = Executor(model.program, model.library, fuse=False)
    got = executor.run(bind_inputs(model.main, (), inputs, "@main"))
    assert values_close(expected, got, 2e-4, 2e-5)
    assert executor.last.allocations == planned.allocations


def test_lstm_allocates_fewer_tensors_per_step():
    module, inputs = model_and_inputs("lstm")
    model = relay.build(module, target=TARGET)
    model.run(**inputs)
    _, unplanned = _unplanned_run(model, inputs)
    # 4 steps of 8 kernel outputs: the plan reuses two a step
    assert unplanned.last.allocations == 32
    assert model.stats.allocations == 24


def _chain_model(tail: str) -> tuple[relay.IRModule, VMModel]:
    """Four dense layers in one block: %a (escaping as `tail` says), %b, %c, %d."""
    text = f"""
def @f(%x: Tensor[(4, 8), float32], %w: Tensor[(8, 8), float32], %r: ref(Tensor[(4, 8), float32])) {{
  let %a = nn.dense(%x, %w);
  let %b = nn.dense(%a, %w);
  let %c = nn.dense(%b, %w);
  let %d = nn.dense(%c, %w);
  {tail}
}}
def @main(%x: Tensor[(4, 8), float32], %w: Tensor[(8, 8), float32]) {{
  let %r = ref(%x);
  let %out = @f(%x, %w, %r);
  (%out, ref_read(%r))
}}"""
    mod = parse(HEADER + text)
    model = relay.build(mod, target=TARGET)
    assert isinstance(model, VMModel), getattr(model, "reason", model)
    return mod, model


def _allocating_function(model: VMModel) -> bc.VMFunction:
    """The function of `model` that allocates kernel outputs (@f, maybe inlined)."""
    found = [
        fn
        for fn in model.program.functions
        if any(isinstance(ins, bc.AllocTensor) for ins in fn.code)
    ]
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize(
    "tail",
    [
        "(%a, %d)",  # %a in a tuple
        "ref_write(%r, %d); %a",  # %a returned, %d in a reference
        "let %t = (%a, %d); ref_write(%r, %a); %t.1",  # %a in a reference and a tuple
    ],
)
def test_escaping_tensors_are_never_overwritten(tail):
    mod, model = _chain_model(tail)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    w = rng.standard_normal((8, 8)).astype(np.float32) * 0.5
    expected = interpret(mod, x, w)
    for _ in range(2):
        assert values_close(expected, model.run(x, w), 1e-5, 1e-6)
    # the block does reuse storage (of %b, dead once %c is written), but not %a's
    assert model.stats.reused > 0
    f = _allocating_function(model)
    allocs = {ins.dst: ins for ins in f.code if isinstance(ins, bc.AllocTensor)}
    first = min(allocs)
    assert all(ins.reuse != first for ins in allocs.values())


def test_a_kernel_never_writes_over_its_own_input():
    mod, model = _chain_model("%d")
    f = _allocating_function(model)
    for pc, ins in enumerate(f.code):
        if isinstance(ins, bc.InvokeKernel):
            for alloc in f.code[pc - len(ins.outputs) : pc]:
                assert isinstance(alloc, bc.AllocTensor)
                assert alloc.reuse not in ins.inputs
    x = np.ones((4, 8), np.float32)
    w = np.eye(8, dtype=np.float32) * 2
    assert values_close(interpret(mod, x, w), model.run(x, w), 1e-6, 1e-6)


def test_no_reuse_across_blocks():
    mod = parse(
        HEADER
        + """
def @main(%x: Tensor[(4, 8), float32], %w: Tensor[(8, 8), float32], %c: bool) {
  let %a = nn.dense(%x, %w);
  let %b = nn.dense(%a, %w);
  if (%c) { nn.dense(%b, %w) } else { nn.dense(%a, %w) }
}"""
    )
    model = relay.build(mod, target=TARGET)
    assert isinstance(model, VMModel)
    main = model.program.functions[model.program.entry]
    assert all(ins.reuse < 0 for ins in main.code if isinstance(ins, bc.AllocTensor))
    x = np.ones((4, 8), np.float32)
    w = np.full((8, 8), 0.25, np.float32)
    for c in (True, False):
        assert values_close(interpret(mod, x, w, c), model.run(x, w, c), 1e-6, 1e-6)


def _reuse_a_live_register(meta: dict) -> None:
    """Make the first unplanned `AllocTensor` reuse the register allocated just before it
    (live: the kernel that writes it has not run yet, or reads it)."""
    for fn in meta["functions"]:
        previous = None
        for ins in fn["code"]:
            if ins[0] == "AllocTensor":
                if previous is not None and ins[4] < 0:
                    ins[4] = previous
                    return
                previous = ins[1]
    raise AssertionError("no two allocations")


def test_artifact_keeps_the_plan_and_refuses_an_edited_or_old_one(tmp_path):
    module, inputs = model_and_inputs("lstm")
    model = relay.build(module, target=TARGET)
    path = tmp_path / "lstm.relaymod"
    model.save(path)
    loaded = relay.load(path)
    assert isinstance(loaded, VMModel)
    assert [plan_reuse(f) for f in loaded.program.functions] == [
        plan_reuse(f) for f in model.program.functions
    ]
    assert values_close(model.run(**inputs), loaded.run(**inputs), 0.0, 0.0)
    assert loaded.stats.allocations == model.stats.allocations
    with pytest.raises(ArtifactError, match="memory plan"):
        relay.load(edited_artifact(path, tmp_path / "plan.relaymod", _reuse_a_live_register))
    old = edited_artifact(
        path, tmp_path / "old.relaymod", lambda meta: meta.update(format="relaymod-vm-1")
    )
    with pytest.raises(ArtifactError, match=r"relaymod-vm-1.*rebuild"):
        relay.load(old)


SIZES = ((4,), (2, 2), (8,), (3,))


@st.composite
def straight_code(draw: st.DrawFn) -> bc.VMFunction:
    """Random bytecode of kernel calls, tuples, copies, calls and block ends over two
    arguments; tensors of a few sizes (two of the same byte size)."""
    code: list[bc.Instruction] = []
    tensors: list[int] = [0, 1]
    values: list[int] = [0, 1]
    next_reg = 2
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["kernel", "kernel", "kernel", "tuple", "move", "call", "end"]))
        if kind == "kernel":
            inputs = tuple(draw(st.lists(st.sampled_from(tensors), min_size=1, max_size=3)))
            outputs = []
            for _ in range(draw(st.integers(1, 2))):
                code.append(bc.AllocTensor(next_reg, draw(st.sampled_from(SIZES)), F32))
                outputs.append(next_reg)
                next_reg += 1
            code.append(bc.InvokeKernel(0, inputs, tuple(outputs)))
            tensors += outputs
            values += outputs
        elif kind == "tuple":
            fields = tuple(draw(st.lists(st.sampled_from(values), max_size=3)))
            code.append(bc.AllocTuple(next_reg, fields))
            values.append(next_reg)
            next_reg += 1
        elif kind == "move":
            code.append(bc.Move(next_reg, draw(st.sampled_from(values))))
            values.append(next_reg)
            next_reg += 1
        elif kind == "call":
            args = tuple(draw(st.lists(st.sampled_from(values), max_size=2)))
            code.append(bc.InvokeClosure(next_reg, 0, args))
            values.append(next_reg)
            next_reg += 1
        else:
            code.append(bc.JumpIfFalse(0, len(code) + 1))
    code.append(bc.Ret(draw(st.sampled_from(values))))
    return bc.VMFunction("f", 2, next_reg, tuple(code))


F32 = np.dtype(np.float32)


def _overwrites_a_live_value(fn: bc.VMFunction, reuse: tuple[int, ...]) -> str:
    """Why the plan `reuse` is unsound for `fn` (empty when it is sound), found by walking
    the code with an abstract storage per register: storage handed to a new output must
    hold no register that is read later, read in another block or held by a value (a
    tuple, a copy, a call's argument, a return) — except a tuple or copy nothing reads."""
    blocks = basic_blocks(fn.code)
    references: dict[int, list[int]] = {}
    for pc, ins in enumerate(fn.code):
        for r in registers_of(ins):
            references.setdefault(r, []).append(pc)

    def unread(pc: int) -> bool:
        """Whether instruction `pc` builds a copy or tuple that nothing (else) reads."""
        ins = fn.code[pc]
        if not isinstance(ins, (bc.Move, bc.AllocTuple)):
            return False
        return all(use == pc or unread(use) for use in references.get(ins.dst, []))

    storage: dict[int, int] = {}
    capacity: dict[int, int] = {}
    for pc, ins in enumerate(fn.code):
        if not isinstance(ins, bc.AllocTensor):
            continue
        size = int(np.prod(ins.shape)) * ins.dtype.itemsize
        if reuse[pc] < 0:
            storage[ins.dst] = pc
            capacity[pc] = size
            continue
        held = storage[reuse[pc]]
        if capacity[held] < size:
            return f"{pc}: {size} bytes into a buffer of {capacity[held]}"
        storage[ins.dst] = held
        for r, s in storage.items():
            if s != held or r == ins.dst:
                continue
            for use in references.get(r, []):
                if unread(use):
                    continue
                if use > pc or blocks[use] != blocks[pc]:
                    return f"{pc}: register {r} is read at {use}"
                if not isinstance(fn.code[use], (bc.AllocTensor, bc.InvokeKernel)):
                    return f"{pc}: register {r} is held by instruction {use}"
    return ""


@settings(max_examples=300, deadline=None)
@given(straight_code())
def test_the_plan_never_hands_out_live_storage(fn):
    reuse = plan_reuse(fn)
    assert _overwrites_a_live_value(fn, reuse) == ""
    # no kernel is given an output that it reads
    for pc, ins in enumerate(fn.code):
        if isinstance(ins, bc.AllocTensor) and reuse[pc] >= 0:
            call = next(i for i in fn.code[pc:] if isinstance(i, bc.InvokeKernel))
            assert reuse[pc] not in call.inputs


def test_the_checker_finds_an_unsound_plan():
    """The oracle above is not vacuous: reusing a register a tuple holds is caught."""
    code = (
        bc.AllocTensor(2, (4,), F32),
        bc.InvokeKernel(0, (0,), (2,)),
        bc.AllocTuple(3, (2,)),
        bc.AllocTensor(4, (4,), F32),
        bc.InvokeKernel(0, (1,), (4,)),
        bc.AllocTuple(5, (3, 4)),
        bc.Ret(5),
    )
    fn = bc.VMFunction("f", 2, 6, code)
    assert plan_reuse(fn) == (-1,) * len(code)
    assert "held by" in _overwrites_a_live_value(fn, (-1, -1, -1, 2, -1, -1, -1))
