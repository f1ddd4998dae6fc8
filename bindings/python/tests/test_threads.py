"""One store shared by threads, and the GIL released while the store works."""

import subprocess
import sys
import threading
import time

import agent_memory

EPISODE = {"fingerprint": {"task": "deploy"}, "trajectory": ["build"], "outcome": {"success": True}}


def test_threads_share_one_store(location):
    store = agent_memory.Store(location)
    store.trajectory_record({"partition": "p", "fields": ["task"], "episodes": [EPISODE]})
    errors = []

    def work(n):
        try:
            for _ in range(25):
                store.trajectory_record({"partition": "p", "episodes": [EPISODE, EPISODE]})
                store.trajectory_recall({"partition": "p", "fingerprint": {"task": "deploy"}})
            store.trajectory_crystallize({"partition": "p"})
        except BaseException as error:  # noqa: BLE001 - every failure is reported below
            errors.append((n, error))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    store.trajectory_crystallize({"partition": "p"})
    [pattern] = store.trajectory_patterns({"partition": "p"})["patterns"]
    # Each episode observed exactly once, whichever thread crystallized it.
    assert pattern["evidence_count"] == 1 + 8 * 25 * 2


# Holds SQLite's write lock in another process (locks are per process, so this process
# could not hold it against itself) until a line arrives on its standard input.
LOCKER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
db.execute("COMMIT")
"""


def test_another_thread_runs_while_a_call_waits(tmp_path):
    """A record waits for the write lock, which is released only when this thread runs
    Python code: if the call kept the GIL, this thread could not release it and the record
    would fail when its busy timeout ends."""
    path = tmp_path / "memory.db"
    store = agent_memory.Store(str(path))
    store.trajectory_record({"partition": "p", "fields": ["task"], "episodes": [EPISODE]})
    locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert locker.stdout.readline() == "locked\n"
    outcome = []

    def record():
        try:
            outcome.append(store.trajectory_record({"partition": "p", "episodes": [EPISODE]}))
        except agent_memory.Error as error:
            outcome.append(error)

    worker = threading.Thread(target=record)
    worker.start()
    # Give the worker time to enter the call and wait for the lock; then make progress here.
    time.sleep(0.5)
    progress = sum(range(100_000))
    assert worker.is_alive(), f"the record should wait for the write lock: {outcome}"
    locker.communicate("release\n", timeout=60)
    worker.join()
    assert progress == 4_999_950_000
    assert outcome and isinstance(outcome[0], dict), outcome
    assert store.trajectory_patterns({"partition": "p"})["patterns"] == []
