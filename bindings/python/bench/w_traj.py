"""W-traj through the Python package: what `cargo xtask bench` reports as the workloads
`W-traj (Python)`, `W-traj (Python vs Rust)` and, with `--redis`, `W-traj (Python vs popoto)`.

    python w_traj.py --sizes 1000,10000 --figures target/bench-figures/python.jsonl \
        [--redis redis://127.0.0.1:6379/1]

Per size N, in one process, the same work three ways, each on a fresh store:

- through `agent_memory.popoto` on a SQLite file (a popoto user's code after the migration);
- through the Rust library on another SQLite file: the same contract operations with the same
  inputs the drop-in sends, timed in Rust (`agent_memory._native.time_calls`, in the wheel
  this bench builds), each call next to the same call through Python, so both sides see
  the machine in the same moment and the difference is what the binding adds per call. Which
  of the two goes first alternates from call to call: the second of two like calls finds the
  caches warm (the same pages, the same code), worth several microseconds;
- with `--redis`, popoto 1.10.1's own recipe on that Redis (its database is FLUSHED).

The work: the N episodes recorded in batches of 1,000 (one call each; on each side the same
batches are recorded once, untimed, into a store that is then set aside, so that neither side's
figure is the process's first allocation of that much memory), min(N, 1,000) more
with one record call each, the first crystallize, and recall over 1,000 exact and 1,000
partial queries. Every recall asks for up to 100 patterns (every pattern W-traj makes): popoto
cuts to its limit before it filters by fingerprint, so a smaller limit would mostly return
nothing from it, and both sides must return the same patterns. The episodes and queries are
W-traj's generator (`workloads.md`), the one popoto's peer run uses.
"""

import argparse
import importlib.util
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import agent_memory
from agent_memory import _native
from agent_memory.popoto import TrajectoryMemory

WORKSPACE = Path(__file__).resolve().parents[3]
PARTITION = "bench"
FIELDS = ["problem_topology", "affected_layer"]
CHUNK = 1000
THRESHOLD = 3
#: At least the number of patterns W-traj makes (100 fingerprints), so popoto's recall,
#: which cuts before it filters, returns the matching patterns.
RECALL_LIMIT = 100


def peer_module():
    """The peer script that measures popoto on W-traj: its generator and its popoto models."""
    spec = importlib.util.spec_from_file_location("popoto_w_traj", WORKSPACE / "xtask/peers/popoto_w_traj.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Figures:
    def __init__(self, path):
        self.path = path

    def emit(self, workload, figure, n, value, unit, lower_is_better, baseline=None):
        line = {"workload": workload, "figure": figure, "n": n, "value": value, "unit": unit,
                "baseline": baseline, "side": "ours", "lower_is_better": lower_is_better}
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
        against = "" if baseline is None else f" (baseline {baseline:.3f}, ratio {ratio(value, baseline, lower_is_better):.2f}x)"
        print(f"{workload} | {figure} | n={n}: {value:.3f} {unit}{against}", flush=True)


def ratio(ours, baseline, lower_is_better):
    return baseline / ours if lower_is_better else ours / baseline


def micros(seconds):
    return seconds * 1e6


def percentile(sorted_values, q):
    i = round((len(sorted_values) - 1) * q)
    return sorted_values[i]


def record_input(episodes):
    """The contract input the drop-in sends for these episodes (its `record_episodes`)."""
    now = time.time()
    return {
        "partition": PARTITION,
        "fields": FIELDS,
        "cluster_threshold": THRESHOLD,
        "episodes": [{"fingerprint": dict(f), "trajectory": list(t), "outcome": o, "recorded_at": round(now * 1000)}
                     for f, t, o in episodes],
    }


def recall_input(query):
    """The contract input the drop-in sends for a recall with popoto's default weights."""
    return {"partition": PARTITION, "fingerprint": dict(query), "limit": RECALL_LIMIT,
            "confidence_weight": 0.6, "recency_weight": 0.4}


def side_by_side(folder, n, episodes, exact, partial):
    """The drop-in's figures and the Rust library's, each call through Python next to the same
    call in Rust (first one, then the other), so both see the machine in the same moment: per-call times in seconds,
    batched episodes per second, crystallize seconds. Each side has a store of its own."""
    tm = TrajectoryMemory(db=os.path.join(folder, f"python_{n}.db"), fingerprint_fields=FIELDS,
                          cluster_threshold=THRESHOLD)
    rust = agent_memory.Store(os.path.join(folder, f"rust_{n}.db"))._native

    def in_rust(operation, inputs):
        return [t / 1e9 for t in _native.time_calls(rust, operation, inputs)]

    py, rs = {}, {}
    # The batches once into a store of their own first, untimed, as popoto's are (see
    # `through_popoto`): the process's first batch pays for its heap's first growth, which
    # the other side, measured later in the same process, would not.
    warm = TrajectoryMemory(db=os.path.join(folder, f"warm_{n}.db"), fingerprint_fields=FIELDS,
                            cluster_threshold=THRESHOLD)
    for i in range(0, n, CHUNK):
        warm.record_episodes(episodes[i:i + CHUNK], PARTITION)
    del warm
    start = time.perf_counter()
    for i in range(0, n, CHUNK):
        tm.record_episodes(episodes[i:i + CHUNK], PARTITION)
    py["batched"] = n / (time.perf_counter() - start)
    rs["batched"] = n / sum(in_rust("trajectory_record", [record_input(episodes[i:i + CHUNK])
                                                          for i in range(0, n, CHUNK)]))
    # Which of the two calls of a turn goes first is drawn at random: both make the same
    # call, the second finds it warm, and a fixed alternation would make the workload's own
    # pattern part of the difference.
    order = random.Random(7)
    py["single"], rs["single"] = [], []
    for fingerprint, trajectory, outcome in episodes[:min(CHUNK, n)]:
        given = [record_input([(fingerprint, trajectory, outcome)])]
        rust_first = order.random() < 0.5
        if rust_first:
            rs["single"].extend(in_rust("trajectory_record", given))
        start = time.perf_counter()
        tm.record_episode(fingerprint=fingerprint, trajectory=trajectory, outcome=outcome, partition=PARTITION)
        py["single"].append(time.perf_counter() - start)
        if not rust_first:
            rs["single"].extend(in_rust("trajectory_record", given))
    start = time.perf_counter()
    tm.crystallize(partition=PARTITION)
    py["crystallize"] = time.perf_counter() - start
    [rs["crystallize"]] = in_rust("trajectory_crystallize", [{"partition": PARTITION}])
    for kind, queries in (("exact", exact), ("partial", partial)):
        py[kind], rs[kind] = [], []
        for query in queries:
            given = [recall_input(query)]
            rust_first = order.random() < 0.5
            if rust_first:
                rs[kind].extend(in_rust("trajectory_recall", given))
            start = time.perf_counter()
            tm.recall(fingerprint=query, partition=PARTITION, limit=RECALL_LIMIT)
            py[kind].append(time.perf_counter() - start)
            if not rust_first:
                rs[kind].extend(in_rust("trajectory_recall", given))
    # The control of the method: the same turns with the Rust-timed recall on both sides,
    # whose difference would be 0 with no error of the method's own.
    sides = ([], [])
    for query in partial:
        given = [recall_input(query)]
        first = order.randrange(2)
        sides[first].extend(in_rust("trajectory_recall", given))
        sides[1 - first].extend(in_rust("trajectory_recall", given))
    rs["control"] = statistics.median(a - b for a, b in zip(*sides))
    return py, rs


def through_popoto(peer, url, n, episodes, exact, partial):
    """popoto 1.10.1's recipe on Redis, as the peer script drives it, timed here."""
    from popoto.recipes.trajectory_memory import TrajectoryMemory as Recipe

    peer.fresh_store("redis", url, n)
    episode_model, pattern_model = peer.models()
    tm = Recipe(episode_model=episode_model, pattern_model=pattern_model, fingerprint_fields=FIELDS,
                cluster_threshold=THRESHOLD)
    # As the drop-in's: the batches once, untimed, then again into an empty database.
    peer.record_batched(tm, episode_model, episodes)
    peer.fresh_store("redis", url, n)
    start = time.perf_counter()
    peer.record_batched(tm, episode_model, episodes)
    batched = n / (time.perf_counter() - start)
    singles = []
    for fingerprint, trajectory, outcome in episodes[:min(CHUNK, n)]:
        start = time.perf_counter()
        tm.record_episode(fingerprint=fingerprint, trajectory=trajectory, outcome=dict(outcome), partition=PARTITION)
        singles.append(time.perf_counter() - start)
    start = time.perf_counter()
    tm.crystallize(partition=PARTITION)
    crystallize = time.perf_counter() - start
    recalls, found = {}, {}
    for kind, queries in (("exact", exact), ("partial", partial)):
        times, hits = [], 0
        for query in queries:
            start = time.perf_counter()
            patterns = tm.recall(fingerprint=query, partition=PARTITION, limit=RECALL_LIMIT)
            times.append(time.perf_counter() - start)
            hits += bool(patterns)
        recalls[kind], found[kind] = times, hits
    return batched, singles, crystallize, recalls, found


def measure(folder, figures, n, peer, redis):
    episodes, exact, partial = peer.generate(n)
    py, rs = side_by_side(folder, n, episodes, exact, partial)

    figures.emit("W-traj (Python)", "record, batched", n, py["batched"], "episodes/s", False)
    figures.emit("W-traj (Python)", "record, single", n, len(py["single"]) / sum(py["single"]), "episodes/s", False)
    figures.emit("W-traj (Python)", "first crystallize", n, py["crystallize"] * 1e3, "ms", True)
    for kind in ("exact", "partial"):
        times = sorted(py[kind])
        figures.emit("W-traj (Python)", f"recall p50, {kind}", n, micros(percentile(times, 0.5)), "us", True)
        figures.emit("W-traj (Python)", f"recall p99, {kind}", n, micros(percentile(times, 0.99)), "us", True)

    # Through Python, with the Rust library's figure as the baseline.
    vs = "W-traj (Python vs Rust)"
    figures.emit(vs, "record, batched", n, py["batched"], "episodes/s", False, rs["batched"])
    figures.emit(vs, "record, single, median", n, micros(statistics.median(py["single"])), "us", True,
                 micros(statistics.median(rs["single"])))
    figures.emit(vs, "first crystallize", n, py["crystallize"] * 1e3, "ms", True, rs["crystallize"] * 1e3)
    for kind in ("exact", "partial"):
        ours, theirs = sorted(py[kind]), sorted(rs[kind])
        for q, name in ((0.5, "p50"), (0.99, "p99")):
            figures.emit(vs, f"recall {name}, {kind}", n, micros(percentile(ours, q)), "us", True,
                         micros(percentile(theirs, q)))
    # What the binding adds per call: the median of each call's time through Python minus
    # the same call's time in Rust, made next to it.
    for name, key in (("record single", "single"), ("recall exact", "exact"), ("recall partial", "partial")):
        added = statistics.median(p - r for p, r in zip(py[key], rs[key]))
        figures.emit(vs, f"binding overhead, {name}", n, micros(added), "us", True)
    figures.emit(vs, "the method's own error: a partial recall in Rust against itself", n, micros(rs["control"]), "us", True)

    if redis is None:
        return
    p_batched, p_singles, p_crystallize, p_recalls, found = through_popoto(peer, redis, n, episodes, exact, partial)
    vs = "W-traj (Python vs popoto)"
    figures.emit(vs, "record, batched", n, py["batched"], "episodes/s", False, p_batched)
    figures.emit(vs, "record, single", n, len(py["single"]) / sum(py["single"]), "episodes/s", False,
                 len(p_singles) / sum(p_singles))
    figures.emit(vs, "first crystallize", n, py["crystallize"] * 1e3, "ms", True, p_crystallize * 1e3)
    for kind in ("exact", "partial"):
        ours_sorted, theirs = sorted(py[kind]), sorted(p_recalls[kind])
        for q, name in ((0.5, "p50"), (0.99, "p99")):
            figures.emit(vs, f"recall {name}, {kind}", n, micros(percentile(ours_sorted, q)), "us", True,
                         micros(percentile(theirs, q)))
        print(f"popoto's recall, {kind}: {found[kind]} of {len(p_recalls[kind])} queries returned patterns",
              flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000")
    parser.add_argument("--figures", required=True)
    parser.add_argument("--redis", help="a redis:// URL whose database may be flushed: popoto 1.10.1 runs there too")
    args = parser.parse_args()
    if not hasattr(_native, "time_calls"):
        parser.error("this wheel was built without the `bench` feature (cargo xtask bench builds it with it)")
    if args.redis:
        # popoto reads its server from the environment when it is imported.
        os.environ["REDIS_URL"] = args.redis
        os.environ.pop("POPOTO_BACKEND", None)
    peer = peer_module()
    figures = Figures(args.figures)
    with tempfile.TemporaryDirectory() as folder:
        for n in (int(s) for s in args.sizes.split(",") if s.strip()):
            measure(folder, figures, n, peer, args.redis)
    return 0


if __name__ == "__main__":
    sys.exit(main())
