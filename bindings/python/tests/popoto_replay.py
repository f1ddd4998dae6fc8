"""A randomized differential replay of popoto 1.10.1's ``TrajectoryMemory`` against
``agent_memory.popoto``: the same random operations (records with extra fingerprint keys and
missing fields, crystallizes, recalls with full, partial, empty and unknown fingerprints,
limits, every kind of ``score_weights``, bad configurations), run on popoto's own recipe on a
Redis server and on the drop-in, each result, attribute and error compared.

Run by ``test_popoto_replay.py`` in a process of its own (popoto reads its server from
``REDIS_URL`` when imported, and the replay fixes ``time.time`` for popoto's clock):

    python popoto_replay.py --redis redis://127.0.0.1:6391/1 --seeds 1,2,3 --operations 150

It FLUSHES that Redis database. It prints one JSON object: per seed the operations run and
the differences found, each either explained (a divergence the spec names) or not; its exit
status is 1 when any difference is unexplained.

How the sides are kept comparable, as ``spec/trajectory.md`` says:

- Time is fixed on both sides and moves on by whole seconds between operations, so every
  episode has a time of its own (popoto skips an episode that shares the watermark's time,
  divergence 3, which the replay does not exercise) and both sides see the same "now".
- popoto observes a crystallize's episodes in Redis set order, which is arbitrary; the spec's
  "bit for bit" is against popoto observing them in recording order, so popoto's recipe is
  run with its episodes sorted by ``recorded_at`` (unique, so that is recording order)
  before it observes them. popoto lists a crystallize's patterns in set order too, so those
  lists are compared by fingerprint.
- Patterns whose scores tie are ranked by popoto by their random Redis keys: a recall is
  compared rank by rank on the score groups, and pattern by pattern on the attributes.

Differences the spec names, counted as explained: a configuration popoto accepts and the
drop-in refuses at construction (``cluster_threshold`` below 1, repeated fields); popoto
cutting to ``limit`` before it filters by fingerprint, or letting other partitions'
confidence crowd a match out (divergences 1 and 2: popoto's answer is then a part of what it
answers with no limit, and the drop-in's is that answer cut to the limit).
"""

import argparse
import json
import os
import random
import sys
import time

FIELDS = ["task", "env"]
PARTITIONS = ["p0", "p1", "fresh"]
TASKS = ["t0", "t1", "t2", "t3"]
ENVS = ["e0", "e1"]
EXTRAS = ["extra", "note", "run", "tasks"]
TRAJECTORIES = [["read", "edit"], ["read"], ["edit", "test"], ["read", "edit", "test"], []]
OUTCOMES = [{"success": True}, {"success": False}, {"success": 0.7}, {"success": "0.3"}, {"success": "x"}, {},
            {"success": 2}, {"success": -1}, {"success": None}, {"other": 1}]
LIMITS = [None, None, 0, -1, 1, 2, 3, 10]
WEIGHTS = [None, None, None, {}, {"confidence": 1.0}, {"last_reinforced": 1.0},
           {"confidence": 0.5, "last_reinforced": 0.5}, {"confidence": 0.0}, {"confidence": -1.0, "last_reinforced": 0.4},
           {"confidence": 0.3, "last_reinforced": 0.0}, {"bogus": 1.0}, {"confidence": 0.6, "partition": 1.0},
           {"priority": 1.0}, {"canonical_sequence": 1.0}, {"task": 1.0}, {"recency": 1.0}, {"pattern_id": 2.0},
           {"bogus": 0.0, "confidence": 1.0}, {"confidence": float("nan"), "last_reinforced": 1.0}]
CONFIGS = [(None, None), (1, None), (2, None), (3, None), (None, {}), (2, {"confidence": 1.0}),
           (None, {"confidence": 0.2, "last_reinforced": 0.8})]
BAD_CONFIGS = [dict(cluster_threshold=0), dict(cluster_threshold=-1), dict(fingerprint_fields=["task", "task"]),
               dict(fingerprint_fields=["task", "env", "task"], cluster_threshold=0)]
BIG = 10**6
START = 1_700_000_000


class Clock:
    """Both sides' "now", in whole seconds."""

    def __init__(self):
        self.now = START

    def __call__(self):
        return float(self.now)


def popoto_side(url):
    """popoto's recipe on the server at ``url``, its models in the recipe guide's shape (the
    pattern model named ``Pattern``, as the drop-in names it in popoto's errors)."""
    os.environ["REDIS_URL"] = url
    os.environ.pop("POPOTO_BACKEND", None)
    from popoto import AutoKeyField, ConfidenceField, DecayingSortedField, DictField, KeyField, ListField, Model
    from popoto.recipes.trajectory_memory import TrajectoryMemory as Recipe
    from popoto.redis_db import get_REDIS_DB

    class Episode(Model):
        episode_id = AutoKeyField()
        partition = KeyField()
        task = KeyField()
        env = KeyField()
        trajectory = ListField(default=[])
        outcome = DictField(default={})
        recorded_at = DecayingSortedField(partition_by="partition")

    class Pattern(Model):
        pattern_id = AutoKeyField()
        partition = KeyField()
        task = KeyField()
        env = KeyField()
        canonical_sequence = ListField(default=[])
        confidence = ConfidenceField(initial_confidence=0.5)
        last_reinforced = DecayingSortedField(partition_by="partition")

    class InRecordingOrder(Recipe):
        """popoto's recipe observing a group's episodes in recording order, not set order."""

        def _observe_episodes(self, pattern, episodes):
            super()._observe_episodes(pattern, sorted(episodes, key=lambda e: float(e.recorded_at)))

    def make(fingerprint_fields=FIELDS, cluster_threshold=None, score_weights=None):
        return InRecordingOrder(episode_model=Episode, pattern_model=Pattern, fingerprint_fields=fingerprint_fields,
                                cluster_threshold=cluster_threshold, score_weights=score_weights)

    return make, get_REDIS_DB()


def outcome_of(call):
    """``("ok", value)`` or ``("raised", exception)``."""
    try:
        return "ok", call()
    except Exception as error:  # noqa: BLE001 - every error is compared
        return "raised", error


def error_difference(theirs, ours):
    """None when ``ours`` is popoto's error: its class (or, for popoto's own classes, one of
    the same name) and its text."""
    popoto_class = type(theirs)
    if popoto_class.__module__.startswith("popoto"):
        same_type = type(ours).__name__ == popoto_class.__name__
    else:
        same_type = isinstance(ours, popoto_class)
    if same_type and str(ours) == str(theirs):
        return None
    return f"popoto raised {popoto_class.__name__}: {theirs}; the drop-in {type(ours).__name__}: {ours}"


def key(pattern):
    return (pattern.partition, *(getattr(pattern, f) for f in FIELDS))


def attributes(pattern):
    """What popoto's pattern has (its random ``pattern_id`` aside), and whether it has a
    score (popoto's never do outside the drop-in's recall)."""
    return {"partition": pattern.partition, **{f: getattr(pattern, f) for f in FIELDS},
            "canonical_sequence": list(pattern.canonical_sequence), "confidence": pattern.confidence,
            "last_reinforced": float(pattern.last_reinforced)}


def episode_attributes(episode, extras):
    return {"partition": episode.partition, **{f: getattr(episode, f) for f in FIELDS},
            "trajectory": list(episode.trajectory), "outcome": episode.outcome,
            "recorded_at": float(episode.recorded_at), "extras": [e for e in extras if hasattr(episode, e)]}


class Replay:
    def __init__(self, seed, operations, make_popoto, redis):
        from agent_memory.popoto import TrajectoryMemory

        self.random = random.Random(seed)
        self.operations = operations
        self.clock = Clock()
        redis.flushdb()
        threshold, weights = self.random.choice(CONFIGS)
        self.config = {"cluster_threshold": threshold, "score_weights": weights}
        self.make_popoto = make_popoto
        self.popoto = make_popoto(cluster_threshold=threshold, score_weights=weights)
        self.drop_in_class = TrajectoryMemory
        self.ours = TrajectoryMemory(db=":memory:", fingerprint_fields=FIELDS, cluster_threshold=threshold,
                                     score_weights=weights, clock=lambda: self.clock())
        self.counts = {"operations": 0, "same": 0}
        self.explained = {}
        self.unexplained = []

    def differ(self, operation, args, why, explanation=None):
        if explanation is None:
            self.unexplained.append({"operation": operation, "args": repr(args)[:300], "difference": why[:600]})
        else:
            self.explained[explanation] = self.explained.get(explanation, 0) + 1

    def run(self):
        steps = [self.record] * 8 + [self.crystallize] * 3 + [self.recall] * 8 + [self.bad_config]
        for _ in range(self.operations):
            self.clock.now += self.random.randint(1, 5)
            if self.random.random() < 0.05:
                self.clock.now += self.random.randint(1, 30) * 86_400
            self.counts["operations"] += 1
            self.random.choice(steps)()
        return {"seed_config": self.config, **self.counts, "explained": self.explained,
                "unexplained": self.unexplained}

    def same(self):
        self.counts["same"] += 1

    def fingerprint(self, full):
        fingerprint = {"task": self.random.choice(TASKS), "env": self.random.choice(ENVS)}
        if not full:
            fingerprint = dict(self.random.sample(sorted(fingerprint.items()), self.random.randint(0, 1)))
        return fingerprint

    def record(self):
        fingerprint = self.fingerprint(full=self.random.random() > 0.05)
        extras = []
        if self.random.random() < 0.4:
            for name in self.random.sample(EXTRAS, self.random.randint(1, 2)):
                fingerprint[name] = self.random.choice(["x", 7, None, ["l"]])
                extras.append(name)
        args = dict(fingerprint=fingerprint, trajectory=list(self.random.choice(TRAJECTORIES)),
                    outcome=dict(self.random.choice(OUTCOMES)), partition=self.random.choice(PARTITIONS[:2]))
        theirs = outcome_of(lambda: self.popoto.record_episode(**args))
        ours = outcome_of(lambda: self.ours.record_episode(**args))
        self.compare("record_episode", args, theirs, ours, lambda e: episode_attributes(e, extras))

    def compare(self, operation, args, theirs, ours, describe):
        if theirs[0] == "raised" or ours[0] == "raised":
            if theirs[0] != ours[0]:
                return self.differ(operation, args, f"popoto: {theirs}; the drop-in: {ours}")
            why = error_difference(theirs[1], ours[1])
            return self.same() if why is None else self.differ(operation, args, why)
        a, b = describe(theirs[1]), describe(ours[1])
        return self.same() if a == b else self.differ(operation, args, f"popoto: {a}; the drop-in: {b}")

    def crystallize(self):
        partition = self.random.choice(PARTITIONS)
        theirs = outcome_of(lambda: self.popoto.crystallize(partition=partition))
        ours = outcome_of(lambda: self.ours.crystallize(partition=partition))

        def describe(patterns):
            # popoto lists them in Redis set order: compared by fingerprint.
            return sorted(([key(p), attributes(p), hasattr(p, "score")] for p in patterns), key=lambda r: r[0])

        self.compare("crystallize", partition, theirs, ours, describe)

    def recall(self):
        roll = self.random.random()
        fingerprint = self.fingerprint(full=roll < 0.4)
        if roll > 0.9:
            fingerprint[self.random.choice(EXTRAS)] = "x"
        args = dict(fingerprint=fingerprint, partition=self.random.choice(PARTITIONS),
                    limit=self.random.choice(LIMITS), score_weights=self.random.choice(WEIGHTS))
        theirs = outcome_of(lambda: self.popoto.recall(**args))
        ours = outcome_of(lambda: self.ours.recall(**args))
        if theirs[0] == "raised" or ours[0] == "raised":
            return self.compare("recall", args, theirs, ours, None)
        if not theirs[1] and not ours[1]:
            return self.same()
        # Every match, ranked, with its score: the groups of equal scores, and each one's
        # attributes.
        everything = self.ours.recall(**{**args, "limit": BIG})
        groups, group, last = {}, -1, None
        for pattern in everything:
            if last is None or abs(pattern.score - last) > 1e-9 * max(1.0, abs(last)):
                group += 1
            groups[key(pattern)] = group
            last = pattern.score
        described = {key(p): attributes(p) for p in everything}

        def ranks(patterns):
            return [groups.get(key(p)) for p in patterns]

        popotos, ours_ = theirs[1], ours[1]
        for pattern in popotos:
            if described.get(key(pattern)) != attributes(pattern):
                return self.differ("recall", args, f"popoto's {attributes(pattern)} is not the drop-in's "
                                                   f"{described.get(key(pattern))}")
        if any(hasattr(p, "pattern_id") for p in ours_):
            return self.differ("recall", args, "the drop-in's pattern has a pattern_id")
        if ranks(popotos) == ranks(ours_):
            return self.same()
        # popoto cuts to the limit before it filters (and ranks other partitions' confidence
        # with this one's): with no limit it answers every match, and the drop-in answers
        # that cut to the limit.
        unlimited = self.popoto.recall(**{**args, "limit": BIG})
        limit = args["limit"] if args["limit"] is not None else 5
        if (ranks(ours_) == ranks(unlimited[:limit]) and len(popotos) < len(ours_)
                and {key(p) for p in popotos} <= {key(p) for p in unlimited}):
            return self.differ("recall", args, "", "popoto cuts to the limit before it filters (divergences 1, 2)")
        return self.differ("recall", args, f"popoto ranked {[key(p) for p in popotos]}, the drop-in "
                                           f"{[key(p) for p in ours_]} (score groups {groups})")

    def bad_config(self):
        config = dict(self.random.choice(BAD_CONFIGS))
        fields = config.pop("fingerprint_fields", FIELDS)
        theirs = outcome_of(lambda: self.make_popoto(fingerprint_fields=fields, **config))
        ours = outcome_of(lambda: self.drop_in_class(db=":memory:", fingerprint_fields=fields, **config))
        from agent_memory.errors import InvalidInputError

        if theirs[0] == "ok" and ours[0] == "raised" and isinstance(ours[1], InvalidInputError):
            return self.differ("TrajectoryMemory", config, "",
                               "a configuration popoto accepts is refused at construction (the one deliberate divergence)")
        return self.compare("TrajectoryMemory", config, theirs, ours, lambda memory: None)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis", required=True, help="a redis:// URL whose database may be flushed")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--operations", type=int, default=150)
    args = parser.parse_args()
    make_popoto, redis = popoto_side(args.redis)
    report = {"seeds": {}}
    started = time.perf_counter()
    for seed in (int(s) for s in args.seeds.split(",")):
        replay = Replay(seed, args.operations, make_popoto, redis)
        # popoto's clock is the replay's: popoto reads time.time() when it saves and ranks.
        time.time = replay.clock.__call__
        report["seeds"][seed] = replay.run()
    report["seconds"] = round(time.perf_counter() - started, 2)
    unexplained = sum(len(r["unexplained"]) for r in report["seeds"].values())
    report["unexplained"] = unexplained
    print(json.dumps(report, indent=1, default=repr))
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
