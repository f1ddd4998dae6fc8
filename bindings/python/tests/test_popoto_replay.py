"""The popoto drop-in against popoto 1.10.1 itself: `popoto_replay.py`'s randomized
differential replay, on a Redis server this test starts on a loopback port and stops, in a
process of its own. Without redis-server or popoto it skips, saying why; under `CI=true`
either missing is a failure. `AGENT_MEMORY_POPOTO_SEEDS` and `AGENT_MEMORY_POPOTO_OPERATIONS`
choose the seeds and the operations per seed."""

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

SEEDS = os.environ.get("AGENT_MEMORY_POPOTO_SEEDS", "1,2,3,4")
OPERATIONS = os.environ.get("AGENT_MEMORY_POPOTO_OPERATIONS", "150")


def missing(what):
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what}: CI compares the popoto drop-in with popoto 1.10.1 on Redis")
    pytest.skip(f"{what}: the drop-in is not compared with popoto (CI=true makes this an error)")


@pytest.fixture(scope="module")
def redis_url():
    server = shutil.which("redis-server")
    if server is None:
        missing("redis-server is not installed (Debian: apt-get install redis-server)")
    if importlib.util.find_spec("popoto") is None:
        missing("popoto is not installed (pip install popoto==1.10.1)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([server, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                                "--appendonly", "no"], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"redis-server did not start on port {port}")
                time.sleep(0.05)
        # Database 1: popoto refuses to flush database 0.
        yield f"redis://127.0.0.1:{port}/1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_the_drop_in_answers_every_call_as_popoto_does(redis_url):
    script = Path(__file__).with_name("popoto_replay.py")
    done = subprocess.run([sys.executable, str(script), "--redis", redis_url, "--seeds", SEEDS,
                           "--operations", OPERATIONS], capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    for seed, run in report["seeds"].items():
        print(f"seed {seed}: {run['operations']} operations, {run['same']} alike, explained {run['explained']}, "
              f"{len(run['unexplained'])} unexplained")
    unexplained = [u for run in report["seeds"].values() for u in run["unexplained"]]
    assert unexplained == [], json.dumps(unexplained[:10], indent=1)
    assert sum(run["same"] for run in report["seeds"].values()) > 0
