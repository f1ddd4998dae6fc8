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

Where this differs from popoto on purpose: recall filters by fingerprint before it cuts to
``limit`` and ranks within the partition only (popoto cuts first and lets other partitions'
confidence take the top places), and crystallize observes each episode once even when
crystallizers race.

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

__all__ = [
    "TrajectoryMemory",
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
_WEIGHTS = {"confidence": "confidence_weight", "last_reinforced": "recency_weight", "recency": "recency_weight"}


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
    (``evidence_count``, ``corroborations``, ``contradictions``; ``score`` after a recall).

    The patterns a recall or crystallize returns fill their attributes in on first use: a
    recall makes every matching pattern, and a caller often reads only the first."""

    def __init__(self, partition: str, entry: Dict[str, Any]):
        self.partition = partition
        self.fingerprint: Dict[str, str] = dict(entry["fingerprint"])
        for name, value in self.fingerprint.items():
            setattr(self, name, value)
        self.canonical_sequence: List[str] = list(entry["canonical_sequence"])
        self.confidence: float = entry["confidence"]
        self._last_reinforced: Any = entry["last_reinforced"]
        self.evidence_count: int = entry["evidence_count"]
        self.corroborations: int = entry["corroborations"]
        self.contradictions: int = entry["contradictions"]
        self.score: Optional[float] = entry.get("score")

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
            attributes.setdefault(key, value)
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
    """

    def __init__(self, db: Any, fingerprint_fields: Iterable[str], cluster_threshold: Optional[int] = None,
                 score_weights: Optional[Dict[str, float]] = None, *, initial_confidence: Optional[float] = None,
                 evidence_cap: Optional[int] = None, clock: Optional[Callable[[], float]] = None):
        if not fingerprint_fields:
            raise TypeError("fingerprint_fields must be a non-empty list of field names")
        self.fingerprint_fields = list(fingerprint_fields)
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
        """Records one finished task; returns the episode. A fingerprint missing a field is a
        ``ValueError``."""
        now = float(self.clock())
        episode = Episode(partition, {name: str(value) for name, value in fingerprint.items()},
                          list(trajectory), outcome, now)
        self._record([(episode.fingerprint, episode.trajectory, outcome)], partition, round(now * 1000))
        return episode

    def record_episodes(self, episodes: Iterable[Tuple[Dict[str, Any], Iterable[str], Any]], partition: str) -> int:
        """Records many ``(fingerprint, trajectory, outcome)`` episodes, each as
        :meth:`record_episode` takes them, in one transaction (all or none); returns how many.
        A batch makes no :class:`Episode` objects: the episodes are read straight into the
        store's input."""
        episodes = episodes if isinstance(episodes, list) else list(episodes)
        self._record(episodes, partition, round(float(self.clock()) * 1000))
        return len(episodes)

    def _record(self, episodes: List[Any], partition: str, recorded_at: int) -> None:
        """Records ``episodes`` (``(fingerprint, trajectory, outcome)`` tuples) at
        ``recorded_at`` (milliseconds since the epoch) in one transaction."""
        request: Dict[str, Any] = {"partition": partition, "fields": self.fingerprint_fields, "episodes": []}
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
            return self.store._native.call_patterns("trajectory_crystallize", {"partition": partition},
                                                    self._now_ms(), Pattern, partition, _RESERVED)
        output = self.store._native.trajectory_crystallize_hooked(
            partition,
            self._signals if self._custom_signal else None,
            self._canonicals if self._custom_canonical else None,
            self.store._now_ms(),
        )
        return [Pattern(partition, entry) for entry in output["patterns"]]

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
        """The patterns for a full or partial fingerprint, best first (popoto's ranking). An
        empty fingerprint or a limit of 0 or less recalls ``[]``; a field that is not a
        fingerprint field is a ``ValueError``."""
        if limit is None:
            limit = DEFAULT_RECALL_LIMIT
        query: Dict[str, Any] = {
            "partition": partition,
            "fingerprint": {name: str(value) for name, value in fingerprint.items()},
            "limit": max(int(limit), 0),
        }
        weights = score_weights if score_weights is not None else self.score_weights
        for name, weight in weights.items():
            key = _WEIGHTS.get(name)
            if key is None:
                raise ValueError(f"unknown score weight {name!r}; expected confidence or last_reinforced")
            query[key] = weight
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
