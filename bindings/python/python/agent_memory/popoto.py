"""A drop-in for popoto's ``TrajectoryMemory`` recipe (``popoto.recipes.trajectory_memory``,
popoto 1.10.1) on agent_memory's store: change the import and the constructor, keep the calls.

.. code-block:: diff

    -from popoto.recipes.trajectory_memory import TrajectoryMemory, compute_fingerprint
    -tm = TrajectoryMemory(episode_model=CyclicEpisode, pattern_model=ProceduralPattern,
    -                      fingerprint_fields=["problem_topology", "affected_layer"])
    +from agent_memory.popoto import TrajectoryMemory, compute_fingerprint
    +tm = TrajectoryMemory(db="memory.db",
    +                      fingerprint_fields=["problem_topology", "affected_layer"])

``record_episode``, ``crystallize`` and ``recall`` keep popoto's names, arguments, results
and errors; patterns carry ``canonical_sequence``, ``confidence``, ``last_reinforced``
(seconds since the epoch, as popoto's ``DecayingSortedField``), ``partition`` and each
fingerprint field as attributes. Every rule (confidence, the canonical sequence, ranking)
runs in the store; this module only converts arguments and results.

Every call answers as popoto 1.10.1's does, with its results, attributes and errors (their
types, and their texts where a caller could match on them): extra fingerprint keys are
ignored when recording, a recall checks its arguments in popoto's order, drops weights that
are not above 0 and answers ``[]`` when none is left, and a weight popoto's pattern model
could not rank by raises :class:`QueryException` with popoto's text, as the recipe's
documented ``ProceduralPattern`` would (named ``Pattern`` here). What the store adds: a
pattern's evidence (``evidence_count``, ``corroborations``, ``contradictions``,
``fingerprint``) and a recalled pattern's ``score``. A pattern's ``confidence`` is popoto's
too: the stored value to 14 significant digits, as popoto's Lua script hands it back.

Where this differs from popoto on purpose: a configuration every record would refuse
(empty or repeated fingerprint fields, ``cluster_threshold`` below 1, and the store's
``evidence_cap`` below 1 or ``initial_confidence`` outside [0, 1]) is refused when the
memory is constructed, with :class:`agent_memory.InvalidInputError` (a ``ValueError``),
where popoto accepts it; recall filters by fingerprint before it cuts to ``limit`` and ranks
within the partition only (popoto cuts first and lets other partitions' confidence take the
top places); crystallize observes each episode once, in recording order, even when
crystallizers race or clocks disagree (popoto observes them in Redis set order); an infinite
weight is refused; an episode's ``episode_id`` is None until crystallize reads it back.

popoto's two extension points are honoured as popoto calls them. A subclass that overrides
``_episode_signal(episode)`` has it called when ``crystallize`` first sees each episode, once
per episode, and the signal it returns (a number from 0 to 1, else popoto's ``TypeError`` or
``ValueError``) is what the confidence rule observes; the episode keeps its own outcome. A
subclass that overrides ``_canonical_sequence(episodes)`` has it called by ``crystallize``
for each pattern the run creates or reinforces, with every episode of the pattern's group
(oldest first), and the list it returns becomes the pattern's ``canonical_sequence``. Both
receive :class:`Episode` objects with popoto's attributes (``partition``, each fingerprint
field, ``trajectory``, ``outcome``, ``recorded_at`` in seconds since the epoch, and
``episode_id``), run inside the crystallize transaction (so they must not use the store), and
an exception they raise fails the crystallize with nothing written. The base methods are
popoto's, so an override may call ``super()``. Unlike popoto, an episode of a group still
below ``cluster_threshold`` has its signal taken by the crystallize that first sees it rather
than the one that makes the group a pattern, ``_canonical_sequence`` is not called for a
pattern no new episode reached (popoto calls it and drops the result), and on PostgreSQL a
crystallize the server asks to retry calls the overrides again.
"""

import datetime
import json
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from . import Store, _native
from .errors import InvalidInputError

__all__ = [
    "TrajectoryMemory",
    "QueryException",
    "compute_fingerprint",
    "Episode",
    "Pattern",
    "DEFAULT_RECALL_LIMIT",
    "DEFAULT_SCORE_WEIGHTS",
]

#: popoto's default number of patterns a recall returns.
DEFAULT_RECALL_LIMIT = 5
#: popoto's default ranking weights.
DEFAULT_SCORE_WEIGHTS = {"confidence": 0.6, "last_reinforced": 0.4}

# popoto's weight names as the contract's recall input names them.
_WEIGHTS = {"confidence": "confidence_weight", "last_reinforced": "recency_weight"}


class QueryException(Exception):
    """popoto's ``popoto.models.query.QueryException``: a recall weighted by a name its
    pattern model cannot rank by."""


def _unrankable(name: str, fields: List[str]) -> QueryException:
    """The error popoto's ``composite_score`` raises for the weight ``name`` on the recipe's
    documented pattern model (``pattern_id``, ``partition``, the fingerprint ``fields``,
    ``canonical_sequence``, ``confidence``, ``last_reinforced``), here named ``Pattern``."""
    if name == "priority":
        return QueryException("'Pattern' does not use WriteFilterMixin; cannot resolve 'priority' index")
    if name in ("access_count", "access_score"):
        return QueryException(f"'Pattern' does not use AccessTrackerMixin; cannot resolve '{name}' index")
    kinds = {"pattern_id": "AutoKeyField", "partition": "KeyField", **{f: "KeyField" for f in fields},
             "canonical_sequence": "ListField"}
    if name in kinds:
        return QueryException(f"Field '{name}' ({kinds[name]}) does not have a sorted set index and cannot be "
                              "used in composite_score()")
    valid = ["pattern_id", "partition", *dict.fromkeys(fields), "canonical_sequence", "confidence", "last_reinforced"]
    return QueryException(f"'Pattern' has no field '{name}'. Valid fields: {valid}")


def compute_fingerprint(features: Dict[str, Any], include_fields: Optional[Iterable[str]] = None,
                        include_timestamp: bool = False) -> str:
    """popoto's ``compute_fingerprint``: 16 hex characters of SHA-256 over the features'
    canonical JSON (keys sorted, Python's ``json.dumps`` text)."""
    if include_fields is not None:
        features = {k: features[k] for k in include_fields}
    if include_timestamp:
        features = dict(features)
        features["__hour_bucket__"] = int(time.time()) // 3600
    return _native.compute_fingerprint_json(json.dumps(features, default=str))


def _seconds(text: str) -> float:
    """An RFC 3339 time of the contract as seconds since the epoch."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _printed(confidence: float) -> float:
    """A confidence as popoto's patterns carry it: popoto's Lua script answers the stored
    value as Lua prints a number (``%.14g``, ``0.43333333333333`` for ``0.43333333333333335``),
    and the pattern keeps that answer; ranking and the next update use the stored value."""
    return float(f"{confidence:.14g}")


class Episode:
    """A recorded episode, as popoto's ``record_episode`` returns it and its extension points
    get it: ``partition``, ``trajectory``, ``outcome``, ``recorded_at`` (seconds since the
    epoch), each fingerprint field, and ``episode_id`` (the store's, once crystallize reads
    it back)."""

    def __init__(self, partition: str, fingerprint: Dict[str, str], trajectory: List[str],
                 outcome: Any, recorded_at: float, episode_id: Optional[str] = None):
        self.episode_id = episode_id
        self.partition = partition
        self.trajectory = trajectory
        self.outcome = outcome
        self.recorded_at = recorded_at
        self.fingerprint = dict(fingerprint)
        for name, value in fingerprint.items():
            setattr(self, name, value)

    def __repr__(self) -> str:
        return f"Episode(partition={self.partition!r}, fingerprint={self.fingerprint!r}, trajectory={self.trajectory!r})"


class Pattern:
    """A crystallized pattern: ``canonical_sequence``, ``confidence``, ``last_reinforced``
    (seconds since the epoch), ``partition``, each fingerprint field, and the evidence
    (``evidence_count``, ``corroborations``, ``contradictions``; ``score``, the ranking's, on a
    recalled pattern only: popoto's patterns have none).

    The patterns a recall or crystallize returns fill their attributes in on first use: a
    recall makes every matching pattern, and a caller often reads only the first."""

    def __init__(self, partition: str, entry: Dict[str, Any]):
        self.partition = partition
        self.fingerprint: Dict[str, str] = dict(entry["fingerprint"])
        for name, value in self.fingerprint.items():
            setattr(self, name, value)
        self.canonical_sequence: List[str] = list(entry["canonical_sequence"])
        self.confidence: float = _printed(entry["confidence"])
        self._last_reinforced: Any = entry["last_reinforced"]
        self.evidence_count: int = entry["evidence_count"]
        self.corroborations: int = entry["corroborations"]
        self.contradictions: int = entry["contradictions"]
        if entry.get("score") is not None:
            self.score: float = entry["score"]

    def __getattr__(self, name: str) -> Any:
        # Only for a name not found the usual way. A pattern a recall or crystallize made
        # natively holds the store's answer until an attribute is first asked for; then it
        # fills them all in, as ``__init__`` sets them (one already assigned is kept). Called
        # through the class: a fingerprint field may be named like a method.
        if not Pattern._fill(self):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(self, name)

    def _fill(self) -> bool:
        """Fills the attributes in from the store's answer; False when there is none left."""
        attributes = self.__dict__
        native = attributes.get("_native")
        if not isinstance(native, _native.PatternData):
            return False
        del attributes["_native"]
        for key, value in native.attributes().items():
            attributes.setdefault(key, _printed(value) if key == "confidence" else value)
        return True

    def __dir__(self) -> Iterable[str]:
        Pattern._fill(self)
        return super().__dir__()

    def __getstate__(self) -> Dict[str, Any]:
        Pattern._fill(self)
        return dict(self.__dict__)

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)

    @property
    def last_reinforced(self) -> float:
        """When an episode last reinforced the pattern, in seconds since the epoch (read
        from the store's RFC 3339 text on first use: a recall's patterns are often never
        asked)."""
        if isinstance(self._last_reinforced, str):
            self._last_reinforced = _seconds(self._last_reinforced)
        return self._last_reinforced

    def __repr__(self) -> str:
        return (f"Pattern(partition={self.partition!r}, fingerprint={self.fingerprint!r}, "
                f"canonical_sequence={self.canonical_sequence!r}, confidence={self.confidence!r})")


#: Pattern's data descriptors (the ``last_reinforced`` property, ``__dict__``, ...): an
#: assignment to one of these names goes through the descriptor, so a pattern with a
#: fingerprint field so named is made by ``Pattern.__init__``; any other is made natively,
#: its attributes filled in as ``__init__`` would set them.
_RESERVED = frozenset(name for klass in Pattern.__mro__ for name, value in vars(klass).items()
                      if hasattr(type(value), "__set__") or hasattr(type(value), "__delete__"))


class TrajectoryMemory:
    """popoto's ``TrajectoryMemory`` on a store: ``db`` is a SQLite file, ``":memory:"``, a
    ``postgres://`` URL or an open :class:`agent_memory.Store`.

    ``fingerprint_fields``, ``cluster_threshold`` and ``score_weights`` are popoto's;
    ``initial_confidence`` and ``evidence_cap`` are the confidence settings popoto's
    ``ConfidenceField`` takes. A partition keeps the settings of its first record. ``clock``
    is "now" (a function returning seconds since the epoch, default ``time.time``), for
    episodes' ``recorded_at`` and recall's recency.

    Empty ``fingerprint_fields`` are popoto's ``TypeError``. A configuration popoto accepts
    but every record would refuse (a field that is empty or listed twice,
    ``cluster_threshold`` below 1, ``evidence_cap`` below 1, ``initial_confidence`` outside
    [0, 1]) is an :class:`agent_memory.InvalidInputError` (a ``ValueError``) here, naming
    every problem: the one place this drop-in refuses what popoto takes.
    """

    def __init__(self, db: Any, fingerprint_fields: Iterable[str], cluster_threshold: Optional[int] = None,
                 score_weights: Optional[Dict[str, float]] = None, *, initial_confidence: Optional[float] = None,
                 evidence_cap: Optional[int] = None, clock: Optional[Callable[[], float]] = None):
        if not fingerprint_fields:
            raise TypeError("fingerprint_fields must be a non-empty list of field names")
        self.fingerprint_fields = list(fingerprint_fields)
        _native.check_trajectory_configuration(self.fingerprint_fields, cluster_threshold, evidence_cap,
                                               initial_confidence)
        self.cluster_threshold = cluster_threshold
        self.score_weights = dict(score_weights) if score_weights is not None else dict(DEFAULT_SCORE_WEIGHTS)
        self.initial_confidence = initial_confidence
        self.evidence_cap = evidence_cap
        self.clock = clock if clock is not None else time.time
        self._own_store = not isinstance(db, Store)
        self.store = Store(db, clock=lambda: self.clock()) if self._own_store else db
        self._custom_signal = type(self)._episode_signal is not TrajectoryMemory._episode_signal
        self._custom_canonical = type(self)._canonical_sequence is not TrajectoryMemory._canonical_sequence

    def record_episode(self, fingerprint: Dict[str, Any], trajectory: Iterable[str], outcome: Any,
                       partition: str) -> Episode:
        """Records one finished task; returns the episode. A fingerprint missing a field is
        popoto's ``ValueError``; a key that is no fingerprint field is ignored, as popoto does."""
        missing = [name for name in self.fingerprint_fields if name not in fingerprint]
        if missing:
            raise ValueError(f"record_episode fingerprint is missing required field(s): {missing}")
        now = float(self.clock())
        episode = Episode(partition, {name: str(fingerprint[name]) for name in self.fingerprint_fields},
                          list(trajectory), outcome, now)
        self._record([(episode.fingerprint, episode.trajectory, outcome)], partition, round(now * 1000))
        return episode

    def record_episodes(self, episodes: Iterable[Tuple[Dict[str, Any], Iterable[str], Any]], partition: str) -> int:
        """Records many ``(fingerprint, trajectory, outcome)`` episodes, each as
        :meth:`record_episode` takes them, in one transaction (all or none); returns how many.
        A batch makes no :class:`Episode` objects: the episodes are read straight into the
        store's input."""
        episodes = episodes if isinstance(episodes, list) else list(episodes)
        try:
            self._record(episodes, partition, round(float(self.clock()) * 1000))
        except InvalidInputError:
            # popoto's error for the first episode missing a field, looked for only once
            # the store has refused the batch (a good batch pays nothing for it).
            for fingerprint, _, _ in episodes:
                missing = [name for name in self.fingerprint_fields if name not in fingerprint]
                if missing:
                    raise ValueError(f"record_episode fingerprint is missing required field(s): {missing}") from None
            raise
        return len(episodes)

    def _record(self, episodes: List[Any], partition: str, recorded_at: int) -> None:
        """Records ``episodes`` (``(fingerprint, trajectory, outcome)`` tuples) at
        ``recorded_at`` (milliseconds since the epoch) in one transaction."""
        # Keys beyond the fields are dropped by the store, as popoto ignores them.
        request: Dict[str, Any] = {"partition": partition, "fields": self.fingerprint_fields,
                                   "extra_fields": "ignore", "episodes": []}
        if self.cluster_threshold is not None:
            request["cluster_threshold"] = self.cluster_threshold
        if self.evidence_cap is not None:
            request["evidence_cap"] = self.evidence_cap
        if self.initial_confidence is not None:
            request["initial_confidence"] = self.initial_confidence
        now_ms = recorded_at if self._own_store else self.store._now_ms()
        native = self.store._native
        # Plain tuples (str fingerprint values, a list of str steps) go to the store as they
        # are; anything else is made into the contract's input here, as popoto reads it
        # (``str`` of each fingerprint value, the steps listed), and fails there if it must.
        if native.record_episode_tuples(request, episodes, recorded_at, now_ms):
            return
        request["episodes"] = [{"fingerprint": {name: str(value) for name, value in fingerprint.items()},
                                "trajectory": list(trajectory), "outcome": outcome, "recorded_at": recorded_at}
                               for fingerprint, trajectory, outcome in episodes]
        native.record_episodes(request, now_ms)

    def crystallize(self, partition: str) -> List[Pattern]:
        """Turns the episodes recorded since the last run into patterns; returns the patterns
        created or reinforced."""
        if not (self._custom_signal or self._custom_canonical):
            patterns = self.store._native.call_patterns("trajectory_crystallize", {"partition": partition},
                                                        self._now_ms(), Pattern, partition, _RESERVED)
        else:
            output = self.store._native.trajectory_crystallize_hooked(
                partition,
                self._signals if self._custom_signal else None,
                self._canonicals if self._custom_canonical else None,
                self.store._now_ms(),
            )
            patterns = [Pattern(partition, entry) for entry in output["patterns"]]
        return patterns

    def _episode(self, given: Dict[str, Any]) -> "Episode":
        """A stored episode as the extension points get it."""
        return Episode(given["partition"], given["fingerprint"], given["trajectory"], given["outcome"],
                       given["recorded_at"] / 1000, episode_id=str(given["seq"]))

    def _signals(self, episodes: List[Dict[str, Any]]) -> List[float]:
        """The overridden ``_episode_signal`` of each episode, checked as popoto's
        ``ConfidenceField.update_confidence`` checks a signal."""
        signals = []
        for given in episodes:
            signal = self._episode_signal(self._episode(given))
            if signal is None:
                raise TypeError("signal must be a number, not None")
            signal = float(signal)
            if not 0 <= signal <= 1:
                raise ValueError(f"signal must be between 0 and 1 (got {signal})")
            signals.append(signal)
        return signals

    def _canonicals(self, groups: List[Dict[str, Any]]) -> List[List[str]]:
        """The overridden ``_canonical_sequence`` of each group's episodes."""
        chosen = []
        for group in groups:
            sequence = self._canonical_sequence([self._episode(e) for e in group["episodes"]])
            if isinstance(sequence, (str, bytes)) or not all(isinstance(step, str) for step in sequence):
                raise TypeError(f"_canonical_sequence must return a list of str, not {sequence!r:.200}")
            chosen.append(list(sequence))
        return chosen

    def recall(self, fingerprint: Dict[str, Any], partition: str, limit: Optional[int] = None,
               score_weights: Optional[Dict[str, float]] = None) -> List[Pattern]:
        """The patterns for a full or partial fingerprint, best first (popoto's ranking). As
        popoto, in this order: an empty fingerprint or a limit of 0 or less recalls ``[]``; a
        field that is not a fingerprint field is a ``ValueError``; weights not above 0 are
        dropped, and none left recalls ``[]``; a weight other than ``confidence`` and
        ``last_reinforced`` is a :class:`QueryException` when some pattern matches."""
        if not fingerprint:
            return []
        if limit is None:
            limit = DEFAULT_RECALL_LIMIT
        if limit <= 0:
            return []
        unknown = [name for name in fingerprint if name not in self.fingerprint_fields]
        if unknown:
            raise ValueError(f"recall fingerprint has unknown field(s): {unknown}; "
                             f"expected subset of {self.fingerprint_fields}")
        weights = score_weights if score_weights is not None else self.score_weights
        query: Dict[str, Any] = {
            "partition": partition,
            "fingerprint": {name: str(value) for name, value in fingerprint.items()},
            "limit": int(limit),
        }
        unrankable: Optional[str] = None
        ranked = False
        for name, weight in weights.items():
            if not weight > 0:
                continue
            key = _WEIGHTS.get(name)
            if key is not None:
                query[key] = weight
                ranked = True
            elif unrankable is None:
                unrankable = name
        if not ranked and unrankable is None:
            return []
        if unrankable is not None:
            # popoto ranks only when some pattern matches; then the name fails its ranking.
            query.update(confidence_weight=1.0, limit=1)
            if self.store._native.call_patterns("trajectory_recall", query, self._now_ms(), Pattern,
                                                partition, _RESERVED):
                raise _unrankable(unrankable, self.fingerprint_fields)
            return []
        # A partition nothing was recorded in recalls nothing, as in popoto.
        return self.store._native.call_patterns("trajectory_recall", query, self._now_ms(), Pattern,
                                                partition, _RESERVED)

    def _now_ms(self) -> Optional[int]:
        """"Now" for the store in milliseconds: None (the store reads the system clock itself)
        when this memory's clock is the system clock and its store is its own."""
        if self.clock is time.time and self._own_store:
            return None
        return self.store._now_ms()

    def _episode_signal(self, episode: Any) -> float:
        """popoto's mapping of an episode's outcome to a signal in [0, 1]; override it to
        plug in another."""
        return _native.episode_signal(getattr(episode, "outcome", None))

    def _canonical_sequence(self, episodes: List[Any]) -> List[str]:
        """popoto's canonical sequence of a group's episodes: the modal trajectory, ties to
        the one with the most recent episode, then to the one seen first; override it to
        plug in another."""
        return _native.canonical_sequence(
            [(list(getattr(e, "trajectory", None) or []), float(getattr(e, "recorded_at", None) or 0.0))
             for e in episodes])
