"""Procedural memory through the native API: record, crystallize, recall, patterns."""

import agent_memory

FP = {"problem_topology": "bug_fix", "affected_layer": "agent"}


def episodes(n, trajectory, success=True, fingerprint=FP):
    return [{"fingerprint": fingerprint, "trajectory": trajectory, "outcome": {"success": success}}] * n


def test_record_crystallize_recall_and_patterns(store):
    recorded = store.trajectory_record({"partition": "team", "episodes": episodes(3, ["read_logs", "edit_file", "run_tests"])})
    assert recorded == {"partition": "team", "fields": ["problem_topology", "affected_layer"], "episodes": 3}
    one = store.trajectory_record_episode("team", episodes(1, ["read_logs"])[0])
    assert one["episodes"] == 1
    crystallized = store.trajectory_crystallize({"partition": "team"})
    [pattern] = crystallized["patterns"]
    assert pattern["canonical_sequence"] == ["read_logs", "edit_file", "run_tests"]
    assert pattern["evidence_count"] == 4
    assert crystallized["pending_groups"] == []
    recalled = store.trajectory_recall({"partition": "team", "fingerprint": {"affected_layer": "agent"}})
    assert [p["canonical_sequence"] for p in recalled["patterns"]] == [["read_logs", "edit_file", "run_tests"]]
    assert isinstance(recalled["patterns"][0]["score"], float)
    listed = store.trajectory_patterns({"partition": "team"})
    assert listed["patterns"][0]["fingerprint"] == FP
    assert store.list()["partitions"][0]["partition"] == "team"
