"""A short campaign in worker processes: counts per stage, a forced bug written as a
minimized `.relay` case with its traceback, which `replay` and `bench/fuzz.py --replay`
reproduce; the same seed makes the same inputs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import relay.grammar
from relay.testing.fuzz import Campaign, make_input, replay, run_batch

ROOT = Path(__file__).resolve().parents[2]


def _bench_fuzz():
    spec = importlib.util.spec_from_file_location("bench_fuzz", ROOT / "bench" / "fuzz.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_inputs_are_reproducible() -> None:
    for stage in ("parse", "check", "opt"):
        assert make_input(stage, 5, 17) == make_input(stage, 5, 17)
    assert make_input("parse", 5, 17).text != make_input("parse", 6, 17).text


def test_run_batch_counts_every_input() -> None:
    result = run_batch("parse", 0, 0, 40)
    assert result.completed == 40 and sum(result.counts.values()) == 40
    assert result.counts.get("diagnostic", 0) > 10 and result.counts.get("ok", 0) > 0
    assert not result.findings, result.findings[0].outcome.detail


def test_campaign_saves_a_minimized_finding(monkeypatch, tmp_path, capsys) -> None:
    real_parse = relay.grammar.parse

    def buggy_parse(text, *args, **kwargs):  # the workers fork: they inherit the bug
        if "match" in text and "=>" in text:
            raise ZeroDivisionError("forced")
        return real_parse(text, *args, **kwargs)

    monkeypatch.setattr(relay.grammar, "parse", buggy_parse)
    lines: list[str] = []
    campaign = Campaign(
        stages=("parse",), seconds=4, jobs=1, out=tmp_path, minimize_seconds=20,
        log=lines.append,
    )  # fmt: skip
    stats = campaign.run()
    assert stats["parse"].tried > 20
    internal = stats["parse"].counts["internal"]
    assert internal >= 1 and campaign.occurrences[next(iter(campaign.saved))] == internal
    cases = sorted(tmp_path.glob("*.relay"))
    assert [c.name for c in cases] == ["parse-01-internal.relay"]
    case = tmp_path / "parse-01-internal.relay"
    header, program = case.read_text(encoding="utf-8").split("\n", 1)
    assert header.startswith("// relay fuzz finding: stage=parse kind=internal")
    assert "match" in program and "=>" in program and len(program) < 120, program
    report = case.with_suffix(".txt").read_text(encoding="utf-8")
    assert "ZeroDivisionError: forced" in report and "minimized to" in report
    [outcome] = replay(case)
    assert outcome.signature == campaign.saved[outcome.signature][0].outcome.signature
    summary = campaign.summary()
    assert "parse-01-internal.relay" in summary and "tried" in summary
    assert any("finding parse-01-internal.relay" in line for line in lines)

    bench = _bench_fuzz()
    assert bench.main(["--replay", str(case)]) == 1  # still failing
    monkeypatch.setattr(relay.grammar, "parse", real_parse)
    assert bench.main(["--replay", str(case)]) == 0  # fixed
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.endswith(("parse-01-internal.relay: ok", "parse-01-internal.relay: diagnostic"))
