"""W-traj through popoto's TrajectoryMemory recipe (PyPI popoto==1.10.1): the peer that
`cargo xtask bench --peers` measures next to our store, on the same workload.

    python popoto_w_traj.py --backend redis|postgres --url URL --sizes 1000,10000 \
        --workload W-traj --figures target/bench-figures/peers-redis.jsonl

Redis: URL is a redis:// URL whose database is FLUSHED before each size. PostgreSQL: URL is
a DSN; each size gets a fresh schema (popoto's backend needs PostgreSQL 18 or newer).

Per size N, the figures our W-traj benches report, measured the same way:
- "record, batched": the N episodes in chunks of 1,000, each chunk one popoto.batch();
- "first crystallize", then "second crystallize" with nothing new;
- "record, single": min(N, 1,000) more episodes, one record_episode call each;
- "crystallize after 1% new": crystallize, record 1% of N more, crystallize again (timed);
- "recall p50/p99, exact|partial": 1,000 queries of each kind, limit 5.

Each figure is one JSON line in the format `cargo xtask bench` collects, with "side":
"baseline", so the report shows it as the baseline of our figure of the same workload, name
and N, with the ratio. The workload's generator is W-traj's (`workloads.md`), ported below.
"""

import argparse
import json
import os
import sys
import time

MASK64 = (1 << 64) - 1
PARTITION = "bench"
FIELDS = ["problem_topology", "affected_layer"]
CHUNK = 1000


# --- the W-traj generator (workloads.md; the reference is w_traj.py) -------------------------


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK64

    def next_u64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n):
        return self.next_u64() % n


def fingerprint_of(f):
    return {"problem_topology": f"t{f // 10}", "affected_layer": f"l{f % 10}"}


def canonical_trajectory(f):
    rng = SplitMix64(1000 + f)
    return [f"a{rng.below(8)}" for _ in range(5)]


def generate(n):
    """(episodes, exact queries, partial queries) of W-traj at size n."""
    canonical = [canonical_trajectory(f) for f in range(100)]
    rng = SplitMix64(42)
    episodes = []
    for _ in range(n):
        f = rng.below(100)
        c = rng.below(100)
        random_trajectory = [f"a{rng.below(8)}" for _ in range(5)]
        s = rng.below(100)
        episodes.append(
            (
                fingerprint_of(f),
                list(canonical[f]) if c < 70 else random_trajectory,
                {"success": s < 80},
            )
        )
    exact = [fingerprint_of(rng.below(100)) for _ in range(1000)]
    partial = [{"affected_layer": f"l{rng.below(10)}"} for _ in range(1000)]
    return episodes, exact, partial


# --- popoto ----------------------------------------------------------------------------------


def configure(backend, url):
    """Points popoto at the server before it is imported (it connects at import)."""
    if backend == "redis":
        os.environ["REDIS_URL"] = url
        os.environ.pop("POPOTO_BACKEND", None)
    else:
        os.environ["POPOTO_BACKEND"] = "postgres"
        os.environ["POPOTO_POSTGRES_URL"] = url


def models():
    from popoto import (
        AutoKeyField,
        ConfidenceField,
        DecayingSortedField,
        DictField,
        KeyField,
        ListField,
        Model,
    )

    # The shapes of popoto's own recipe guide and reference scenarios.
    class CyclicEpisode(Model):
        episode_id = AutoKeyField()
        partition = KeyField()
        problem_topology = KeyField()
        affected_layer = KeyField()
        trajectory = ListField(default=[])
        outcome = DictField(default={})
        recorded_at = DecayingSortedField(partition_by="partition")

    class ProceduralPattern(Model):
        pattern_id = AutoKeyField()
        partition = KeyField()
        problem_topology = KeyField()
        affected_layer = KeyField()
        canonical_sequence = ListField(default=[])
        confidence = ConfidenceField(initial_confidence=0.5)
        last_reinforced = DecayingSortedField(partition_by="partition")

    return CyclicEpisode, ProceduralPattern


def fresh_store(backend, url, n):
    """Empties what an earlier size left: the Redis database, or a new PostgreSQL schema."""
    if backend == "redis":
        from popoto.redis_db import get_REDIS_DB

        get_REDIS_DB().flushdb()
    else:
        from popoto.backends import set_backend
        from popoto.backends.postgres import PostgresBackend

        set_backend(PostgresBackend(dsn=url, schema=f"popoto_w_traj_{n}_{os.getpid()}"))


def record_batched(tm, episode_model, episodes):
    """Each chunk of CHUNK episodes saved through one popoto.batch()."""
    import popoto

    for start in range(0, len(episodes), CHUNK):
        pipe = popoto.batch()
        for fingerprint, trajectory, outcome in episodes[start : start + CHUNK]:
            episode_model(
                partition=PARTITION,
                trajectory=list(trajectory),
                outcome=dict(outcome),
                **fingerprint,
            ).save(pipeline=pipe)
        pipe.execute()


def record_single(tm, episodes):
    for fingerprint, trajectory, outcome in episodes:
        tm.record_episode(
            fingerprint=fingerprint,
            trajectory=trajectory,
            outcome=dict(outcome),
            partition=PARTITION,
        )


def percentile(sorted_values, q):
    i = round((len(sorted_values) - 1) * q)
    return sorted_values[i]


class Figures:
    def __init__(self, path, workload, peer):
        self.path = path
        self.workload = workload
        self.peer = peer

    def add(self, figure, n, value, unit, lower_is_better):
        line = {
            "workload": self.workload,
            "figure": figure,
            "n": n,
            "value": value,
            "unit": unit,
            "baseline": None,
            "side": "baseline",
            "lower_is_better": lower_is_better,
        }
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
        print(f"{self.peer} {self.workload} {figure} n={n}: {value:.3f} {unit}", flush=True)


def measure(tm, episode_model, figures, backend, url, n):
    fresh_store(backend, url, n)
    episodes, exact, partial = generate(n)

    start = time.perf_counter()
    record_batched(tm, episode_model, episodes)
    figures.add("record, batched", n, n / (time.perf_counter() - start), "episodes/s", False)

    start = time.perf_counter()
    tm.crystallize(partition=PARTITION)
    figures.add("first crystallize", n, (time.perf_counter() - start) * 1e3, "ms", True)

    start = time.perf_counter()
    tm.crystallize(partition=PARTITION)
    figures.add("second crystallize", n, (time.perf_counter() - start) * 1e3, "ms", True)

    singles = min(CHUNK, n)
    start = time.perf_counter()
    record_single(tm, episodes[:singles])
    figures.add("record, single", n, singles / (time.perf_counter() - start), "episodes/s", False)

    tm.crystallize(partition=PARTITION)
    record_batched(tm, episode_model, episodes[: max(n // 100, 1)])
    start = time.perf_counter()
    tm.crystallize(partition=PARTITION)
    figures.add("crystallize after 1% new", n, (time.perf_counter() - start) * 1e3, "ms", True)

    for kind, queries in (("exact", exact), ("partial", partial)):
        micros = []
        for query in queries:
            start = time.perf_counter()
            tm.recall(fingerprint=query, partition=PARTITION, limit=5)
            micros.append((time.perf_counter() - start) * 1e6)
        micros.sort()
        figures.add(f"recall p50, {kind}", n, percentile(micros, 0.5), "us", True)
        figures.add(f"recall p99, {kind}", n, percentile(micros, 0.99), "us", True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=["redis", "postgres"], required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--sizes", default="1000")
    parser.add_argument("--workload", required=True)
    parser.add_argument("--figures", required=True)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    configure(args.backend, args.url)
    import popoto
    from popoto.recipes.trajectory_memory import TrajectoryMemory

    episode_model, pattern_model = models()
    tm = TrajectoryMemory(
        episode_model=episode_model,
        pattern_model=pattern_model,
        fingerprint_fields=FIELDS,
        cluster_threshold=3,
    )
    peer = f"popoto {popoto.__version__} on {args.backend}"
    figures = Figures(args.figures, args.workload, peer)
    for n in sizes:
        measure(tm, episode_model, figures, args.backend, args.url, n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
