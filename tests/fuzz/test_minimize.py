"""The tokenizer is lossless, and the minimizer shrinks a failing program to what makes
it fail (lines first, then tokens) while it still fails the same way."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from relay.testing.fuzz import Outcome, minimize, mutants, run_stage, same_finding, tokenize
from relay.testing.fuzz.corpus import LISTS


@given(st.text() | mutants())
def test_tokenize_is_lossless(text: str) -> None:
    assert "".join(t.text for t in tokenize(text)) == text


def test_token_kinds() -> None:
    kinds = [(t.kind, t.text) for t in tokenize("%x1 = nn.conv2d(%0, 1.5f, meta[a][0]) // c")]
    assert kinds == [
        ("local", "%x1"), ("space", " "), ("punct", "="), ("space", " "), ("name", "nn.conv2d"),
        ("punct", "("), ("graph", "%0"), ("punct", ","), ("space", " "), ("number", "1.5f"),
        ("punct", ","), ("space", " "), ("meta", "meta[a][0]"), ("punct", ")"),
        ("space", " "), ("comment", "// c"),
    ]  # fmt: skip


def test_minimize_keeps_what_matters() -> None:
    calls = []

    def still_fails(text: str) -> bool:
        calls.append(text)
        return "Cons(%x" in text.replace(" ", "") and "@foldl" in text

    small = minimize(LISTS, still_fails)
    assert still_fails(small)
    content = "".join(small.replace('#[version = "0.0.5"]', "").split())
    assert content == "Cons(%x@foldl", small  # one-token steps left nothing else
    assert len(calls) < 2000


def test_minimize_respects_the_budget() -> None:
    calls = []

    def slow(text: str) -> bool:
        calls.append(text)
        return True

    minimize(LISTS, slow, max_tests=10)
    assert len(calls) <= 12


def test_minimize_a_forced_internal_error(monkeypatch) -> None:
    import relay.grammar

    real_parse = relay.grammar.parse

    def buggy_parse(text, *args, **kwargs):
        module = real_parse(text, *args, **kwargs)
        if "ref_write" in text and "less" in text:
            raise KeyError("forced")
        return module

    monkeypatch.setattr(relay.grammar, "parse", buggy_parse)
    text = LISTS.replace("@foldl(%f, %x, %xs)", "let %r = ref(%x); let %u = ref_write(%r, %x);"
                         " if (less(1, 2)) { %x } else { %x }")  # fmt: skip
    [outcome] = run_stage("check", text)
    assert outcome.kind == "internal"
    assert outcome.signature.startswith("check:internal:KeyError:")
    small = minimize(text, same_finding("check", outcome), seconds=60)
    assert "ref_write" in small and "less" in small
    assert len(small) < 200, small
    [again] = run_stage("check", small)
    assert again.signature == outcome.signature


def test_outcome_kinds() -> None:
    assert run_stage("parse", "def @f( {")[0].kind == "diagnostic"
    assert run_stage("check", '#[version = "0.0.5"]\ndef @f() { add(1, 1f) }')[0].kind == (
        "diagnostic"
    )
    ok = '#[version = "0.0.5"]\ndef @main() { add(1, 1) }'
    assert [o.kind for o in run_stage("check", ok)] == ["ok"]
    assert Outcome("parse", "internal").is_finding
    assert not Outcome("parse", "diagnostic").is_finding


def test_a_stage_past_its_time_limit_is_a_timeout(monkeypatch) -> None:
    import time

    import relay.grammar

    monkeypatch.setattr(relay.grammar, "parse", lambda *a, **k: time.sleep(5))
    start = time.monotonic()
    [outcome] = run_stage("parse", "x", limit=0.2)
    assert outcome.kind == "timeout" and time.monotonic() - start < 2
