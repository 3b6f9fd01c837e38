"""Memory planning: buffers whose lifetimes do not overlap share workspace, a step never
writes over what it reads, offsets stay aligned."""

from pathlib import Path

import relay
from relay.backend.build.memory_plan import ALIGNMENT, plan_memory

ROOT = Path(__file__).resolve().parents[3]


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[0] + b[1] and b[0] < a[0] + a[1]


def test_a_chain_reuses_the_buffers_two_steps_back():
    # step k reads buffer k and writes buffer k+1
    sizes = [100] * 5
    steps = [((k,), (k + 1,)) for k in range(4)]
    steps = [((), (0,)), *steps]
    plan = plan_memory(sizes, steps)
    assert plan.workspace_bytes == 2 * 128  # two aligned blocks ping-pong
    assert plan.naive_bytes == 5 * 128 and plan.saved_bytes == 3 * 128
    for reads, writes in steps:
        for r in reads:
            for w in writes:
                assert not _overlap((plan.offsets[r], 128), (plan.offsets[w], 128))
    assert all(o % ALIGNMENT == 0 for o in plan.offsets)


def test_live_buffers_never_share_memory():
    sizes = [64, 200, 64, 1000]
    steps = [((), (0,)), ((0,), (1,)), ((0, 1), (2,)), ((2,), (3,))]
    plan = plan_memory(sizes, steps)
    live = {0: (0, 2), 1: (1, 2), 2: (2, 3), 3: (3, 3)}
    for a in live:
        for b in live:
            if a < b and live[a][0] <= live[b][1] and live[b][0] <= live[a][1]:
                ea = (plan.offsets[a], -(-sizes[a] // ALIGNMENT) * ALIGNMENT)
                eb = (plan.offsets[b], -(-sizes[b] // ALIGNMENT) * ALIGNMENT)
                assert not _overlap(ea, eb), (a, b)


def test_buffers_never_written_take_no_space():
    plan = plan_memory([64, 64], [((), (0,))])
    assert plan.workspace_bytes == 64 and plan.naive_bytes == 64


def test_memory_planning_reuses_intermediate_buffers():
    module = relay.parse_file(ROOT / "examples" / "resnet18.relay")
    model = relay.build(module)
    assert model.stats.saved_bytes > model.stats.workspace_bytes
