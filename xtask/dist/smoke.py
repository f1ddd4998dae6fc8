"""A built wheel, tried where it runs: `python smoke.py DATABASE` records, crystallizes and
recalls through the native module, on a SQLite file, and prints the platform it ran on.
Run by `cargo xtask dist` on each wheel this machine can run (natively or under qemu-user)."""

import platform
import sys

import agent_memory

store = agent_memory.Store(sys.argv[1])
episode = {"fingerprint": {"task": "deploy"}, "trajectory": ["build", "test", "ship"], "outcome": {"success": True}}
store.trajectory_record({"partition": "smoke", "fields": ["task"], "episodes": [episode] * 3})
store.trajectory_crystallize({"partition": "smoke"})
[pattern] = store.trajectory_recall({"partition": "smoke", "fingerprint": {"task": "deploy"}})["patterns"]
assert pattern["canonical_sequence"] == ["build", "test", "ship"], pattern
print(f"agent_memory works on {platform.machine()} (Python {platform.python_version()})")
