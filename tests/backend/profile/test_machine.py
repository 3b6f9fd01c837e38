"""The machine peak cache: measured once per machine and thread count, atomic writes,
corrupt or foreign files replaced, unwritable directories tolerated."""

import json
import os

import pytest
from relay.backend.codegen import probe
from relay.backend.profile import machine
from relay.backend.profile.data import MachinePeak


class FakeProbe:
    """Counts probe calls and returns figures that depend on the thread count."""

    def __init__(self, monkeypatch):
        self.peak_calls, self.bandwidth_calls = [], []
        monkeypatch.setattr(probe, "measure_fp32_peak", self.peak)
        monkeypatch.setattr(probe, "measure_bandwidth", self.bandwidth)

    def peak(self, threads):
        self.peak_calls.append(threads)
        return 10.0 * threads + len(self.peak_calls)

    def bandwidth(self, threads):
        self.bandwidth_calls.append(threads)
        return 5.0 + threads

    @property
    def calls(self):
        return len(self.peak_calls) + len(self.bandwidth_calls)


@pytest.fixture
def fake(monkeypatch, tmp_path):
    monkeypatch.setenv("RELAY_CACHE_DIR", str(tmp_path))
    return FakeProbe(monkeypatch)


def figures(peak):
    return (peak.fp32_gflops, peak.fp32_gflops_1thread, peak.bandwidth_gbs, peak.threads)


def test_second_call_reads_the_cache_without_probing(fake, tmp_path):
    first = machine.machine_peak(2)
    assert first.source == "measured" and first.threads == 2
    assert fake.peak_calls == [1, 2] and fake.bandwidth_calls == [2]
    calls = fake.calls
    second = machine.machine_peak(2)
    assert fake.calls == calls
    assert figures(second) == figures(first) and second.cpu == first.cpu
    assert second.source == str(tmp_path / machine.CACHE_FILE)
    assert sorted(os.listdir(tmp_path)) == [machine.CACHE_FILE]  # no temporary file left


def test_one_thread_probes_the_peak_once(fake):
    peak = machine.machine_peak(1)
    assert fake.peak_calls == [1] and peak.fp32_gflops == peak.fp32_gflops_1thread


def test_another_thread_count_probes_again_and_both_stay_cached(fake):
    two = machine.machine_peak(2)
    calls = fake.calls
    three = machine.machine_peak(3)
    assert fake.calls > calls and three.threads == 3 and three.bandwidth_gbs == 8.0
    calls = fake.calls
    assert figures(machine.machine_peak(2)) == figures(two)
    assert figures(machine.machine_peak(3)) == figures(three)
    assert fake.calls == calls


def test_refresh_probes_again_and_replaces_the_entry(fake):
    old = machine.machine_peak(2)
    new = machine.machine_peak(2, refresh=True)
    assert new.source == "measured" and new.fp32_gflops != old.fp32_gflops
    assert figures(machine.machine_peak(2)) == figures(new)


def test_a_new_probe_version_measures_again(fake, monkeypatch):
    machine.machine_peak(2)
    calls = fake.calls
    monkeypatch.setattr(probe, "PROBE_VERSION", probe.PROBE_VERSION + 1)
    assert machine.machine_peak(2).source == "measured" and fake.calls > calls


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "",
        "[1, 2]",
        json.dumps({"format": "something-else", "entries": {}}),
        json.dumps({"format": machine.CACHE_FORMAT, "entries": []}),
        "\x00\xff binary",
    ],
)
def test_corrupt_or_foreign_file_is_replaced(fake, tmp_path, content):
    path = tmp_path / machine.CACHE_FILE
    path.write_text(content, encoding="latin-1")
    peak = machine.machine_peak(2)
    assert peak.source == "measured"
    document = json.loads(path.read_text())
    assert document["format"] == machine.CACHE_FORMAT
    assert machine.machine_peak(2).source == str(path)


@pytest.mark.parametrize(
    "entry",
    [
        {"fp32_gflops": -1.0, "fp32_gflops_1thread": 1.0, "bandwidth_gbs": 1.0},
        {"fp32_gflops": "fast", "fp32_gflops_1thread": 1.0, "bandwidth_gbs": 1.0},
        {"fp32_gflops": 1.0, "fp32_gflops_1thread": 1.0},
        {"fp32_gflops": 1.0, "fp32_gflops_1thread": 1.0, "bandwidth_gbs": 1.0, "threads": 7},
        "not an entry",
    ],
)
def test_malformed_entry_is_measured_again(fake, tmp_path, entry):
    if isinstance(entry, dict):
        entry = {"threads": 2, "cpu": "x", **entry}
    document = {"format": machine.CACHE_FORMAT, "entries": {machine.cache_key(2): entry}}
    (tmp_path / machine.CACHE_FILE).write_text(json.dumps(document))
    assert machine.machine_peak(2).source == "measured" and fake.calls == 3


def test_valid_entry_written_by_hand_is_used(fake, tmp_path):
    entry = {"fp32_gflops": 123.0, "fp32_gflops_1thread": 61, "bandwidth_gbs": 9.5}
    entry |= {"threads": 2, "cpu": "hand"}
    document = {"format": machine.CACHE_FORMAT, "entries": {machine.cache_key(2): entry}}
    (tmp_path / machine.CACHE_FILE).write_text(json.dumps(document))
    peak = machine.machine_peak(2)
    assert fake.calls == 0
    assert peak == MachinePeak(123.0, 61.0, 9.5, 2, "hand", str(tmp_path / machine.CACHE_FILE))


def test_unwritable_cache_directory_still_returns_measured_figures(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("RELAY_CACHE_DIR", str(blocker / "relay"))
    fake = FakeProbe(monkeypatch)
    first = machine.machine_peak(2)
    second = machine.machine_peak(2)
    assert first.source == second.source == "measured"
    assert fake.peak_calls == [1, 2, 1, 2]
    assert blocker.read_text() == "not a directory"


def test_cache_directory_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("RELAY_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert machine.cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("RELAY_CACHE_DIR")
    assert machine.cache_dir() == tmp_path / "xdg" / "relay"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert machine.cache_dir() == tmp_path / "home" / ".cache" / "relay"


def test_cache_key_names_the_machine_threads_and_probe_version():
    key = machine.cache_key(2)
    assert machine.cpu_model() in key and "threads=2" in key
    assert f"probe={probe.PROBE_VERSION}" in key
    assert machine.cache_key(3) != key


def test_real_probe_is_measured_then_cached(monkeypatch, tmp_path):
    monkeypatch.setenv("RELAY_CACHE_DIR", str(tmp_path / "nested" / "cache"))
    first = machine.machine_peak(2)
    assert first.source == "measured" and first.cpu == machine.cpu_model()
    assert first.fp32_gflops > 0 and first.fp32_gflops_1thread > 0 and first.bandwidth_gbs > 0
    second = machine.machine_peak(2)
    assert figures(second) == figures(first)
    assert second.source == str(tmp_path / "nested" / "cache" / machine.CACHE_FILE)


def test_bad_thread_count_is_an_error(fake):
    with pytest.raises(ValueError, match="at least 1"):
        machine.machine_peak(0)


def test_a_refresh_that_reads_lower_keeps_the_best_figures(fake, monkeypatch):
    best = machine.machine_peak(2)
    monkeypatch.setattr(probe, "measure_fp32_peak", lambda threads: 1.0)  # a loaded machine
    monkeypatch.setattr(probe, "measure_bandwidth", lambda threads: 100.0)
    again = machine.machine_peak(2, refresh=True)
    assert again.fp32_gflops == best.fp32_gflops
    assert again.fp32_gflops_1thread == best.fp32_gflops_1thread
    assert again.bandwidth_gbs == 100.0  # higher than before: taken
    assert figures(machine.machine_peak(2)) == figures(again)
