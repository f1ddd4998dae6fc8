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


def test_a_read_before_the_first_write_answers_empty_and_creates_no_file(tmp_path):
    path = tmp_path / "fresh" / "memory.db"
    store = agent_memory.Store(path)
    recalled = store.trajectory_recall({"partition": "team", "fingerprint": {"affected_layer": "agent"}})
    assert recalled["patterns"] == []
    assert "holds nothing" in recalled["note"]
    assert store.list()["partitions"] == []
    assert store.notes({"command": "view", "path": "/memories"})["text"].startswith("Here")
    assert not path.exists() and not path.parent.exists()
    store.trajectory_record({"partition": "team", "episodes": episodes(1, ["read_logs"])})
    assert path.exists()
    assert store.list()["partitions"][0]["episodes"] == 1
    # Another store on the same file sees what was written.
    assert agent_memory.Store(path).list()["partitions"][0]["partition"] == "team"
