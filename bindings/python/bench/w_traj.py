"""W-traj through the Python package: what `cargo xtask bench` reports as the workload
`W-traj (Python)`, next to the Rust library's W-traj.

    python w_traj.py --sizes 1000,10000 --figures target/bench-figures/python.jsonl

Per size N, on a fresh SQLite file, through `agent_memory.popoto` (a popoto user's code
after the migration): the N episodes recorded in batches of 1,000 (one call each), one
`record_episode` call per episode for min(N, 1,000) more, the first crystallize, and
recall p50/p99 over 1,000 exact and 1,000 partial queries (limit 5). The episodes and
queries are W-traj's generator (`workloads.md`), the one popoto's peer run uses.
"""

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from agent_memory.popoto import TrajectoryMemory

WORKSPACE = Path(__file__).resolve().parents[3]
PARTITION = "bench"
FIELDS = ["problem_topology", "affected_layer"]
CHUNK = 1000


def generator():
    """W-traj's generator, from the peer script that measures popoto on the same workload."""
    spec = importlib.util.spec_from_file_location("popoto_w_traj", WORKSPACE / "xtask/peers/popoto_w_traj.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate, module.percentile


def emit(path, figure, n, value, unit, lower_is_better):
    line = {"workload": "W-traj (Python)", "figure": figure, "n": n, "value": value, "unit": unit,
            "baseline": None, "side": "ours", "lower_is_better": lower_is_better}
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")
    print(f"python W-traj {figure} n={n}: {value:.3f} {unit}", flush=True)


def measure(folder, figures, n):
    generate, percentile = generator()
    episodes, exact, partial = generate(n)
    tm = TrajectoryMemory(db=os.path.join(folder, f"w_traj_{n}.db"), fingerprint_fields=FIELDS, cluster_threshold=3)

    start = time.perf_counter()
    for i in range(0, n, CHUNK):
        tm.record_episodes(episodes[i:i + CHUNK], PARTITION)
    emit(figures, "record, batched", n, n / (time.perf_counter() - start), "episodes/s", False)

    singles = min(CHUNK, n)
    start = time.perf_counter()
    for fingerprint, trajectory, outcome in episodes[:singles]:
        tm.record_episode(fingerprint=fingerprint, trajectory=trajectory, outcome=outcome, partition=PARTITION)
    emit(figures, "record, single", n, singles / (time.perf_counter() - start), "episodes/s", False)

    start = time.perf_counter()
    tm.crystallize(partition=PARTITION)
    emit(figures, "first crystallize", n, (time.perf_counter() - start) * 1e3, "ms", True)

    for kind, queries in (("exact", exact), ("partial", partial)):
        micros = []
        for query in queries:
            start = time.perf_counter()
            tm.recall(fingerprint=query, partition=PARTITION, limit=5)
            micros.append((time.perf_counter() - start) * 1e6)
        micros.sort()
        emit(figures, f"recall p50, {kind}", n, percentile(micros, 0.5), "us", True)
        emit(figures, f"recall p99, {kind}", n, percentile(micros, 0.99), "us", True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000")
    parser.add_argument("--figures", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for n in (int(s) for s in args.sizes.split(",") if s.strip()):
            measure(folder, args.figures, n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
