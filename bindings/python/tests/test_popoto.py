"""agent_memory.popoto against popoto 1.10.1's own outputs
(`popoto-reference-output.jsonl`, produced by `popoto-reference-scenarios.py` on the real
recipe): the same scenarios, with only the import and the constructor changed."""

import json
import os
import types
from pathlib import Path

import pytest

from agent_memory.popoto import DEFAULT_RECALL_LIMIT, DEFAULT_SCORE_WEIGHTS, TrajectoryMemory, compute_fingerprint

from conftest import NOW

WORKSPACE = Path(os.environ.get("AGENT_MEMORY_WORKSPACE", Path(__file__).resolve().parents[3]))
REFERENCE = WORKSPACE / "crates/trajectory/tests/it/data/popoto-reference-output.jsonl"
SECTIONS = {row["section"]: row for row in map(json.loads, REFERENCE.read_text().splitlines())}

FP_A = {"problem_topology": "bug_fix", "affected_layer": "agent"}
FP_B = {"problem_topology": "refactor", "affected_layer": "agent"}
FP_C = {"problem_topology": "docs", "affected_layer": "agent"}
FIELDS = ["problem_topology", "affected_layer"]


class Clock:
    """A clock the test sets: each record moves it 2 ms on, as the scenarios sleep."""

    def __init__(self):
        self.now = NOW

    def __call__(self):
        return self.now


@pytest.fixture
def tm(location):
    clock = Clock()
    memory = TrajectoryMemory(db=location, fingerprint_fields=FIELDS, clock=clock)
    original = memory.record_episode

    def record_episode(fingerprint, trajectory, outcome, partition):
        episode = original(fingerprint=fingerprint, trajectory=trajectory, outcome=outcome, partition=partition)
        clock.now += 0.002
        return episode

    memory.record_episode = record_episode
    return memory


def rec(tm, fp, traj, success, partition="p1"):
    return tm.record_episode(fingerprint=fp, trajectory=traj, outcome={"success": success}, partition=partition)


def describe(pattern):
    return {
        "fingerprint": [pattern.problem_topology, pattern.affected_layer],
        "canonical_sequence": pattern.canonical_sequence,
        "evidence_count": pattern.evidence_count,
        "corroborations": pattern.corroborations,
        "contradictions": pattern.contradictions,
    }


def expect_pattern(pattern, expected):
    assert describe(pattern) == {k: expected[k] for k in describe(pattern)}
    assert pattern.confidence == pytest.approx(expected["hash_confidence"], abs=1e-15)


def patterns(tm, partition, fingerprint):
    return tm.recall(fingerprint=fingerprint, partition=partition, limit=100)


def test_defaults_are_popotos():
    assert DEFAULT_RECALL_LIMIT == SECTIONS["defaults"]["DEFAULT_RECALL_LIMIT"]
    assert DEFAULT_SCORE_WEIGHTS == SECTIONS["defaults"]["DEFAULT_SCORE_WEIGHTS"]


def test_crystallize_and_recall_as_popoto(tm):
    for _ in range(3):
        episode = rec(tm, FP_A, ["read_logs", "edit_file", "run_tests"], True)
    assert (episode.partition, episode.problem_topology, episode.trajectory) == ("p1", "bug_fix", ["read_logs", "edit_file", "run_tests"])
    affected = tm.crystallize(partition="p1")
    assert len(affected) == SECTIONS["1_first_crystallize"]["affected"]
    expect_pattern(affected[0], SECTIONS["1_first_crystallize"]["pattern"])
    # The watermark is the newest observed episode's time.
    assert affected[0].last_reinforced == pytest.approx(episode.recorded_at, abs=1e-3)
    assert affected[0].partition == "p1"

    assert len(tm.crystallize(partition="p1")) == SECTIONS["2_second_crystallize"]["affected"]

    rec(tm, FP_A, ["read_logs", "edit_file", "run_tests"], False)
    rec(tm, FP_A, ["read_logs", "run_tests"], True)
    affected = tm.crystallize(partition="p1")
    assert len(affected) == SECTIONS["3_new_evidence"]["affected"]
    expect_pattern(affected[0], SECTIONS["3_new_evidence"]["pattern"])

    rec(tm, FP_B, ["x", "y"], True)
    rec(tm, FP_B, ["z"], False)
    rec(tm, FP_B, ["x", "y"], False)
    rec(tm, FP_B, ["z"], True)
    rec(tm, FP_C, ["w"], True)
    rec(tm, FP_C, ["w"], True)
    affected = tm.crystallize(partition="p1")
    section = SECTIONS["4_tie_break_and_threshold"]
    assert sorted(p.problem_topology for p in affected) == section["affected"]
    expect_pattern(patterns(tm, "p1", FP_B)[0], section["pattern_b"])
    assert len(patterns(tm, "p1", FP_C)) == section["fp_c_patterns"]

    section = SECTIONS["6_recall"]
    assert [p.canonical_sequence for p in tm.recall(fingerprint=FP_A, partition="p1")] == section["exact"]
    partial = tm.recall(fingerprint={"affected_layer": "agent"}, partition="p1")
    assert [[p.problem_topology, p.canonical_sequence] for p in partial] == section["partial_ranked"]
    for pattern, (_, score) in zip(partial, section["composite_scores"]):
        assert pattern.score == pytest.approx(score, abs=1e-12)
    assert tm.recall(fingerprint={}, partition="p1") == section["empty_fingerprint"]
    assert tm.recall(fingerprint=FP_A, partition="p1", limit=0) == section["limit_zero"]
    assert tm.recall(fingerprint=FP_A, partition="p1", limit=-3) == []
    confidence_only = tm.recall(fingerprint={"affected_layer": "agent"}, partition="p1",
                                score_weights={"confidence": 1.0, "last_reinforced": 0.0})
    assert [p.problem_topology for p in confidence_only] == section["confidence_only"]


def test_recall_filters_before_the_limit_a_fixed_divergence(tm):
    for _ in range(3):
        rec(tm, {"problem_topology": "x", "affected_layer": "l"}, ["good"], True, partition="p2")
    for _ in range(3):
        rec(tm, {"problem_topology": "y", "affected_layer": "l"}, ["bad"], False, partition="p2")
    tm.crystallize(partition="p2")
    section = SECTIONS["7_limit_before_filter"]
    expect_pattern(patterns(tm, "p2", {"problem_topology": "y"})[0], section["y_pattern"])
    # popoto cut to the limit first and found nothing ([]); the pattern is recalled.
    assert section["recall_y_limit_1"] == []
    assert [p.canonical_sequence for p in tm.recall({"problem_topology": "y", "affected_layer": "l"}, "p2", limit=1)] == [["bad"]]


def test_episode_signal_maps_outcomes_as_popoto():
    tm = TrajectoryMemory(db=":memory:", fingerprint_fields=FIELDS)
    cases = [{"success": True}, {"success": False}, {"success": 1}, {"success": 0}, {"success": 0.75},
             {"success": 2.5}, {"success": "0.3"}, {"success": "yes"}, {"success": None}, {}, 0.3, 7, True, None, "success"]
    mapping = [[repr(o), tm._episode_signal(types.SimpleNamespace(outcome=o))] for o in cases]
    assert mapping == SECTIONS["10_episode_signal"]["mapping"]


def test_compute_fingerprint_as_popoto():
    cases = [
        ({"task": "deploy", "env": "staging"}, None),
        ({"task": "deploy", "env": "staging"}, ["task"]),
        ({"problem_topology": "bug_fix", "affected_layer": "agent"}, None),
        ({"a": 1, "b": 2}, None),
        ({"b": 2, "a": 1}, None),
        ({}, None),
        ({"name": "café ☕"}, None),
        ({"x": 1.0, "y": 0.1, "z": 1e20, "w": 1e-7, "n": None, "t": True, "f": False}, None),
        ({"l": [3, "a", [1]], "d": {"b": 1, "a": {"d": 2, "c": 3}}}, None),
        ({"k": 10**20, "neg": -0.0}, None),
    ]
    rows = SECTIONS["11_compute_fingerprint"]["rows"]
    assert [compute_fingerprint(f, include_fields=i) for f, i in cases] == [r["fingerprint"] for r in rows]
    with pytest.raises(KeyError):
        compute_fingerprint({"task": "x"}, include_fields=["env"])


def test_errors_as_popoto():
    errors = SECTIONS["12_errors"]
    with pytest.raises(TypeError) as raised:
        TrajectoryMemory(db=":memory:", fingerprint_fields=[])
    assert str(raised.value) == errors["empty_fingerprint_fields_TypeError"]
    tm = TrajectoryMemory(db=":memory:", fingerprint_fields=FIELDS)
    with pytest.raises(ValueError, match="affected_layer"):
        tm.record_episode(fingerprint={"problem_topology": "x"}, trajectory=[], outcome={}, partition="p1")
    rec(tm, FP_A, ["a"], True)
    with pytest.raises(ValueError, match="bogus"):
        tm.recall(fingerprint={"bogus": "x"}, partition="p1")
    # Nothing recorded in a partition: popoto recalls and crystallizes nothing.
    assert tm.recall(fingerprint=FP_A, partition="empty") == []
    assert tm.crystallize(partition="empty") == []


class StrictSignal(TrajectoryMemory):
    """A subclass with its own signal: only a perfect score counts as success."""

    def _episode_signal(self, episode):
        return 1.0 if episode.outcome.get("score") == 100 else 0.0


def test_an_overridden_episode_signal_is_honoured():
    tm = StrictSignal(db=":memory:", fingerprint_fields=["task"])
    for score in (100, 100, 99):
        tm.record_episode(fingerprint={"task": "t"}, trajectory=["a"], outcome={"score": score}, partition="p")
    [pattern] = tm.crystallize(partition="p")
    assert pattern.confidence == pytest.approx((0.5 + 1.0 + 1.0 + 0.0) / 4)
    assert (pattern.corroborations, pattern.contradictions) == (2, 1)


def test_an_overridden_canonical_sequence_is_refused_not_ignored():
    class Longest(TrajectoryMemory):
        def _canonical_sequence(self, episodes):
            return max((e.trajectory for e in episodes), key=len)

    with pytest.raises(TypeError, match="Longest overrides _canonical_sequence"):
        Longest(db=":memory:", fingerprint_fields=["task"])
