"""agent_memory.popoto against popoto 1.10.1's own outputs
(`popoto-reference-output.jsonl`, produced by `popoto-reference-scenarios.py` on the real
recipe): the same scenarios, with only the import and the constructor changed."""

import json
import os
import re
import types
from pathlib import Path

import pytest

from agent_memory.errors import InvalidInputError
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
    with pytest.raises(ValueError) as raised:
        tm.record_episode(fingerprint={"problem_topology": "x"}, trajectory=[], outcome={}, partition="p1")
    assert str(raised.value) == "record_episode fingerprint is missing required field(s): ['affected_layer']"
    with pytest.raises(ValueError) as raised:
        tm.record_episodes([(FP_A, [], {}), ({"problem_topology": "x"}, [], {})], "p1")
    assert str(raised.value) == "record_episode fingerprint is missing required field(s): ['affected_layer']"
    # Before anything is recorded, as after: popoto checks the fields, not the partition.
    with pytest.raises(ValueError) as raised:
        tm.recall(fingerprint={"bogus": "x"}, partition="p1")
    assert str(raised.value) == ("recall fingerprint has unknown field(s): ['bogus']; "
                                 "expected subset of ['problem_topology', 'affected_layer']")
    rec(tm, FP_A, ["a"], True)
    with pytest.raises(ValueError, match="bogus"):
        tm.recall(fingerprint={"bogus": "x"}, partition="p1")
    # Nothing recorded in a partition: popoto recalls and crystallizes nothing.
    assert tm.recall(fingerprint=FP_A, partition="empty") == []
    assert tm.crystallize(partition="empty") == []


def popoto_recipe():
    """popoto 1.10.1's own ``TrajectoryMemory`` class (installed from PyPI into the test
    environment; nothing in it talks to Redis until a model is saved or queried)."""
    from popoto.recipes.trajectory_memory import TrajectoryMemory as Recipe

    return Recipe


def popotos(method, *args):
    """popoto's own ``method`` of the recipe, run on a stand-in for its ``self`` that has the
    default field names (the parts of the recipe the extension points read)."""
    Recipe = popoto_recipe()
    self = types.SimpleNamespace(trajectory_field="trajectory", episode_recency_field="recorded_at",
                                 outcome_field="outcome", _episode_score=Recipe._episode_score)
    return getattr(Recipe, method)(self, *args)


def confidence_after(signals, initial=0.5, cap=20):
    """popoto's capped-evidence rule (``ConfidenceField.update_confidence``) over signals."""
    c = initial
    for n, s in enumerate(signals):
        c = min(max(c + (s - c) / (min(n + 1, cap) + 1), 0.0), 1.0)
    return c


class StrictSignal(TrajectoryMemory):
    """A subclass with its own signal: only a perfect score counts as success. It notes each
    episode it is asked about, as a subclass's side effects would see them."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.asked = []

    def _episode_signal(self, episode):
        self.asked.append((episode.partition, episode.task, episode.trajectory, episode.outcome, episode.recorded_at))
        return 1.0 if episode.outcome.get("score") == 100 else 0.0


def test_an_overridden_episode_signal_is_called_by_crystallize_with_each_episode(location):
    tm = StrictSignal(db=location, fingerprint_fields=["task"], clock=lambda: NOW)
    for score in (100, 100, 99):
        tm.record_episode(fingerprint={"task": "t"}, trajectory=["a"], outcome={"score": score}, partition="p")
    # As popoto: recording never asks for a signal; crystallize does, once per episode.
    assert tm.asked == []
    [pattern] = tm.crystallize(partition="p")
    assert tm.asked == [("p", "t", ["a"], {"score": s}, NOW) for s in (100, 100, 99)]
    assert pattern.confidence == pytest.approx(confidence_after([1.0, 1.0, 0.0]), abs=1e-15)
    assert (pattern.corroborations, pattern.contradictions) == (2, 1)

    tm.asked.clear()
    assert tm.crystallize(partition="p") == []
    assert tm.asked == []
    tm.record_episode(fingerprint={"task": "t"}, trajectory=["b"], outcome={"score": 100}, partition="p")
    [pattern] = tm.crystallize(partition="p")
    assert [a[3] for a in tm.asked] == [{"score": 100}]
    assert pattern.confidence == pytest.approx(confidence_after([1.0, 1.0, 0.0, 1.0]), abs=1e-15)
    assert pattern.evidence_count == 4


@pytest.mark.parametrize("signal, error, message", [
    (1.5, ValueError, "signal must be between 0 and 1 (got 1.5)"),
    (float("nan"), ValueError, "signal must be between 0 and 1 (got nan)"),
    (None, TypeError, "signal must be a number, not None"),
    ("high", ValueError, "could not convert string to float"),
])
def test_a_bad_overridden_signal_fails_the_crystallize_as_popoto_and_writes_nothing(location, signal, error, message):
    class Bad(TrajectoryMemory):
        def _episode_signal(self, episode):
            return signal

    tm = Bad(db=location, fingerprint_fields=["task"])
    for _ in range(3):
        tm.record_episode(fingerprint={"task": "t"}, trajectory=["a"], outcome={"success": True}, partition="p")
    with pytest.raises(error, match=re.escape(message)):
        tm.crystallize(partition="p")
    # Nothing was written: the same episodes crystallize afterwards, all three of them.
    [pattern] = TrajectoryMemory(db=tm.store, fingerprint_fields=["task"]).crystallize(partition="p")
    assert pattern.evidence_count == 3


class Longest(TrajectoryMemory):
    """A subclass whose canonical sequence is the longest trajectory of the group; it notes
    the trajectories of each group it is given."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.groups = []

    def _canonical_sequence(self, episodes):
        self.groups.append([(e.task, e.trajectory, e.recorded_at) for e in episodes])
        return max((e.trajectory for e in episodes), key=len)


def test_an_overridden_canonical_sequence_gets_every_episode_of_the_group(location):
    clock = Clock()
    tm = Longest(db=location, fingerprint_fields=["task"], clock=clock)

    def record(task, trajectory):
        tm.record_episode(fingerprint={"task": task}, trajectory=trajectory, outcome={"success": True}, partition="p")
        clock.now += 1

    for trajectory in (["a"], ["a"], ["a", "b", "c"]):
        record("t", trajectory)
    record("u", ["x"])  # a group below the threshold: no pattern, no call
    [pattern] = tm.crystallize(partition="p")
    assert tm.groups == [[("t", ["a"], NOW), ("t", ["a"], NOW + 1), ("t", ["a", "b", "c"], NOW + 2)]]
    # popoto's modal rule would choose ["a"]: the override wins, in the pattern and in recall.
    assert popotos("_canonical_sequence", [types.SimpleNamespace(trajectory=t, recorded_at=at) for _, t, at in tm.groups[0]]) == ["a"]
    assert pattern.canonical_sequence == ["a", "b", "c"]
    assert [p.canonical_sequence for p in tm.recall({"task": "t"}, "p")] == [["a", "b", "c"]]

    # New evidence: the override sees the whole group again, the earlier episodes first.
    tm.groups.clear()
    record("t", ["a", "b"])
    record("t", ["a", "b", "c", "d"])
    [pattern] = tm.crystallize(partition="p")
    assert [t for _, t, _ in tm.groups[0]] == [["a"], ["a"], ["a", "b", "c"], ["a", "b"], ["a", "b", "c", "d"]]
    assert pattern.canonical_sequence == ["a", "b", "c", "d"]
    assert pattern.evidence_count == 5
    # Nothing new: no pattern is reinforced and the override is not asked.
    tm.groups.clear()
    assert tm.crystallize(partition="p") == [] and tm.groups == []


def test_an_overridden_canonical_sequence_may_be_no_episodes_trajectory_or_build_on_popotos(location):
    class Planned(TrajectoryMemory):
        def _canonical_sequence(self, episodes):
            return ["plan"] + super()._canonical_sequence(episodes)

    tm = Planned(db=location, fingerprint_fields=["task"])
    for trajectory in (["a"], ["b"], ["b"]):
        tm.record_episode(fingerprint={"task": "t"}, trajectory=trajectory, outcome={"success": True}, partition="p")
    [pattern] = tm.crystallize(partition="p")
    assert pattern.canonical_sequence == ["plan", "b"]
    assert tm.recall({"task": "t"}, "p")[0].canonical_sequence == ["plan", "b"]


def test_a_bad_overridden_canonical_sequence_fails_the_crystallize_and_writes_nothing(location):
    class Broken(TrajectoryMemory):
        def _canonical_sequence(self, episodes):
            raise RuntimeError("no plan today")

    class NotText(TrajectoryMemory):
        def _canonical_sequence(self, episodes):
            return [1, 2]

    tm = Broken(db=location, fingerprint_fields=["task"])
    for _ in range(3):
        tm.record_episode(fingerprint={"task": "t"}, trajectory=["a"], outcome={"success": True}, partition="p")
    with pytest.raises(RuntimeError, match="no plan today"):
        tm.crystallize(partition="p")
    with pytest.raises(TypeError, match="_canonical_sequence must return a list of str"):
        NotText(db=tm.store, fingerprint_fields=["task"]).crystallize(partition="p")
    [pattern] = TrajectoryMemory(db=tm.store, fingerprint_fields=["task"]).crystallize(partition="p")
    assert (pattern.canonical_sequence, pattern.evidence_count) == (["a"], 3)


def test_both_extension_points_together(location):
    class Both(Longest):
        def _episode_signal(self, episode):
            return 0.0 if "fail" in episode.trajectory else 1.0

    tm = Both(db=location, fingerprint_fields=["task"])
    for trajectory in (["a"], ["a", "fail"], ["a"]):
        tm.record_episode(fingerprint={"task": "t"}, trajectory=trajectory, outcome={}, partition="p")
    [pattern] = tm.crystallize(partition="p")
    assert pattern.canonical_sequence == ["a", "fail"]
    assert pattern.confidence == pytest.approx(confidence_after([1.0, 0.0, 1.0]), abs=1e-15)


TIMED = [
    [(["a"], 1.0), (["b"], 2.0)],                     # a tie of counts: the most recent wins
    [(["b"], 2.0), (["a"], 1.0)],
    [(["a"], 1.0), (["a"], 1.5), (["b"], 9.0)],       # the modal trajectory wins
    [(["a"], 3.0), (["b"], 3.0)],                     # an exact tie of times: the one seen first
    [(["b"], 3.0), (["a"], 3.0), (["a"], 1.0), (["b"], 0.5)],
    [([], 1.0), (["z"], 0.5)],
    [],
]


@pytest.mark.parametrize("episodes", TIMED, ids=[f"group-{i}" for i in range(len(TIMED))])
def test_the_base_canonical_sequence_is_popotos(episodes):
    group = [types.SimpleNamespace(trajectory=t, recorded_at=at) for t, at in episodes]
    tm = TrajectoryMemory(db=":memory:", fingerprint_fields=["task"])
    assert tm._canonical_sequence(group) == popotos("_canonical_sequence", group)


def test_the_base_episode_signal_is_popotos():
    tm = TrajectoryMemory(db=":memory:", fingerprint_fields=["task"])
    for outcome in ({"success": True}, {"success": 0.25}, {"success": "x"}, 0.7, 3, None, "ok", {"success": -1}):
        episode = types.SimpleNamespace(outcome=outcome)
        assert tm._episode_signal(episode) == popotos("_episode_signal", episode)


class Collect(TrajectoryMemory):
    """Collects, at crystallize, each stored episode as the extension point gets it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen = []

    def _episode_signal(self, episode):
        self.seen.append((episode.partition, episode.fingerprint, episode.trajectory, episode.outcome,
                          episode.recorded_at))
        return 1.0


def stored(tm, partition):
    tm.seen.clear()
    tm.crystallize(partition=partition)
    return [rest for (p, *rest) in tm.seen if p == partition]


def test_a_batch_records_plain_tuples_and_any_other_shape_alike(location):
    tm = Collect(db=location, fingerprint_fields=["task", "env"], cluster_threshold=1, clock=lambda: NOW)
    plain = [
        ({"task": "t1", "env": "e"}, ["open", "edit"], {"success": True}),
        ({"task": "7", "env": "e"}, ["open"], "done"),
        ({"task": "t1", "env": "e"}, [], {"success": False, "notes": [1, 2.5, None]}),
    ]
    # The same episodes as popoto takes them otherwise: str() of each fingerprint value, any
    # iterable of steps, list items, and a generator for the batch.
    other = (e for e in [
        ({"task": "t1", "env": "e"}, ("open", "edit"), {"success": True}),
        [{"task": 7, "env": "e"}, iter(["open"]), "done"],
        ({"task": "t1", "env": "e"}, [], {"success": False, "notes": [1, 2.5, None]}),
    ])
    assert tm.record_episodes(plain, "plain") == 3
    assert tm.record_episodes(other, "other") == 3
    with pytest.raises(InvalidInputError, match="at least one episode"):
        tm.record_episodes([], "empty")
    want = [[fp, list(steps), outcome, NOW] for fp, steps, outcome in plain]

    def canonical(episodes):
        return sorted(json.dumps(e, sort_keys=True) for e in episodes)

    assert canonical(stored(tm, "plain")) == canonical(want)
    assert canonical(stored(tm, "other")) == canonical(want)


@pytest.mark.parametrize("bad, error, message", [
    (({"task": "t"}, ["a"], {}), ValueError, "env"),
    (({"task": "t", "env": "e"}, ["a", 3], {}), InvalidInputError, "trajectory[1]"),
    (({"task": "t", "env": "e"}, ["a"], {"when": {1, 2}}), TypeError, "episodes[1].outcome.when"),
])
def test_a_batch_with_one_bad_episode_fails_naming_it_and_records_none(location, bad, error, message):
    tm = Collect(db=location, fingerprint_fields=["task", "env"], cluster_threshold=1, clock=lambda: NOW)
    good = ({"task": "t", "env": "e"}, ["a"], {"success": True})
    with pytest.raises(error, match=re.escape(message)):
        tm.record_episodes([good, bad, good], "p")
    assert stored(tm, "p") == []
    # The same memory records the good ones afterwards.
    assert tm.record_episodes([good, good], "p") == 2
    assert len(stored(tm, "p")) == 2


def test_a_recalled_pattern_fills_its_attributes_in_on_first_use_as_init_sets_them(location):
    import copy
    import pickle

    from agent_memory.popoto import Pattern

    fields = ["task", "_native", "_fill", "score_hint"]
    tm = TrajectoryMemory(db=location, fingerprint_fields=fields, cluster_threshold=1, clock=lambda: NOW)
    fingerprint = {"task": "t", "_native": "n", "_fill": "f", "score_hint": "h"}
    tm.record_episodes([(fingerprint, ["a", "b"], {"success": True})] * 2, "p")
    [made] = tm.crystallize(partition="p")
    one = tm.recall(fingerprint={"task": "t"}, partition="p")[0]
    two = tm.recall(fingerprint={"task": "t"}, partition="p")[0]
    # The same attributes as the class's own __init__ sets from the operation's answer.
    entry = tm.store.trajectory_recall({"partition": "p", "fingerprint": {"task": "t"}, "confidence_weight": 0.6,
                                        "recency_weight": 0.4})["patterns"][0]
    by_init = Pattern("p", entry)
    for pattern in (made, one):
        for name in ("partition", "fingerprint", "canonical_sequence", "confidence", "evidence_count",
                     "corroborations", "contradictions", "last_reinforced", *fields):
            assert getattr(pattern, name) == getattr(by_init, name), name
    # As popoto's, a crystallized pattern has no score; a recalled one has its ranking's.
    assert one.score == pytest.approx(by_init.score) and not hasattr(made, "score")
    assert (one._native, one._fill, one.score_hint) == ("n", "f", "h")
    # An attribute assigned before any is read is kept; a missing one is an AttributeError.
    two.confidence = 0.25
    assert (two.confidence, two.canonical_sequence) == (0.25, ["a", "b"])
    with pytest.raises(AttributeError, match="nothing_here"):
        two.nothing_here
    # dir, pickle and copy see every attribute.
    fresh = tm.recall(fingerprint={"task": "t"}, partition="p")[0]
    assert {"canonical_sequence", "task", "score_hint"} <= set(dir(fresh))
    for other in (pickle.loads(pickle.dumps(tm.recall(fingerprint={"task": "t"}, partition="p")[0])),
                  copy.copy(tm.recall(fingerprint={"task": "t"}, partition="p")[0])):
        assert (other.task, other.canonical_sequence, other.evidence_count) == ("t", ["a", "b"], 2)
        assert repr(other) == repr(by_init)


def test_extra_fingerprint_keys_are_ignored_as_popoto_ignores_them(location):
    tm = TrajectoryMemory(db=location, fingerprint_fields=FIELDS, cluster_threshold=1, clock=lambda: NOW)
    episode = tm.record_episode(fingerprint={**FP_A, "ticket": 7, "note": None}, trajectory=["a"],
                                outcome={"success": True}, partition="p")
    assert (episode.problem_topology, episode.affected_layer, episode.fingerprint) == ("bug_fix", "agent", FP_A)
    assert not hasattr(episode, "ticket")
    assert tm.record_episodes([({**FP_A, "ticket": "x"}, ["a"], {"success": True}),
                               ({**FP_A, "ticket": 8}, ["a"], {"success": True})], "p") == 2
    [pattern] = tm.crystallize(partition="p")
    assert (pattern.fingerprint, pattern.evidence_count) == (FP_A, 3)
    # The store's own operations still refuse such a key.
    with pytest.raises(InvalidInputError, match="ticket"):
        tm.store.trajectory_record({"partition": "p", "fields": FIELDS,
                                    "episodes": [{"fingerprint": {**FP_A, "ticket": "x"}, "trajectory": [],
                                                  "outcome": {}}]})


@pytest.mark.parametrize("config, problems", [
    (dict(fingerprint_fields=["task", "task"]), ['fingerprint field "task" is listed twice']),
    (dict(fingerprint_fields=["task", ""]), ["fingerprint_fields[1] is empty"]),
    (dict(fingerprint_fields=["task"], cluster_threshold=0), ["cluster_threshold must be at least 1, got 0"]),
    (dict(fingerprint_fields=["task", "task"], cluster_threshold=-2, evidence_cap=0, initial_confidence=1.5),
     ["cluster_threshold must be at least 1, got -2", 'fingerprint field "task" is listed twice',
      "evidence_cap must be at least 1, got 0", "initial_confidence must be in [0, 1], got 1.5"]),
])
def test_a_configuration_popoto_accepts_but_no_record_could_is_refused_at_construction(config, problems):
    # The one deliberate divergence: popoto accepts these and fails nowhere; every record
    # into the store would be refused, so the memory is refused when it is made.
    with pytest.raises(InvalidInputError) as raised:
        TrajectoryMemory(db=":memory:", **config)
    assert isinstance(raised.value, ValueError)
    for problem in problems:
        assert problem in str(raised.value)


def test_recall_checks_its_arguments_in_popotos_order(location):
    from agent_memory.popoto import QueryException

    tm = TrajectoryMemory(db=location, fingerprint_fields=FIELDS, cluster_threshold=1, clock=lambda: NOW)
    # Nothing matches: popoto never ranks, so no weight is looked at.
    assert tm.recall(fingerprint=FP_A, partition="p", score_weights={"bogus": 1.0}) == []
    rec(tm, FP_A, ["a"], True, partition="p")
    tm.crystallize(partition="p")
    assert tm.recall(fingerprint={"bogus": "x"}, partition="p", limit=0) == []
    assert tm.recall(fingerprint={}, partition="p", score_weights={"bogus": 1.0}) == []
    for weights in ({}, {"confidence": 0.0}, {"confidence": -1.0, "last_reinforced": float("nan")}, {"bogus": 0.0}):
        assert tm.recall(fingerprint=FP_A, partition="p", score_weights=weights) == []
    assert TrajectoryMemory(db=tm.store, fingerprint_fields=FIELDS, score_weights={}).recall(FP_A, "p") == []
    assert len(tm.recall(fingerprint=FP_A, partition="p", score_weights={"bogus": 0.0, "confidence": 1.0})) == 1
    texts = {
        "bogus": "'Pattern' has no field 'bogus'. Valid fields: ['pattern_id', 'partition', 'problem_topology', "
                 "'affected_layer', 'canonical_sequence', 'confidence', 'last_reinforced']",
        "recency": "'Pattern' has no field 'recency'. Valid fields: ['pattern_id', 'partition', 'problem_topology', "
                   "'affected_layer', 'canonical_sequence', 'confidence', 'last_reinforced']",
        "partition": "Field 'partition' (KeyField) does not have a sorted set index and cannot be used in "
                     "composite_score()",
        "pattern_id": "Field 'pattern_id' (AutoKeyField) does not have a sorted set index and cannot be used in "
                      "composite_score()",
        "priority": "'Pattern' does not use WriteFilterMixin; cannot resolve 'priority' index",
        "access_count": "'Pattern' does not use AccessTrackerMixin; cannot resolve 'access_count' index",
    }
    for name, text in texts.items():
        with pytest.raises(QueryException) as raised:
            tm.recall(fingerprint=FP_A, partition="p", score_weights={"confidence": 1.0, name: 1.0})
        assert str(raised.value) == text
