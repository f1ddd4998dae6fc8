"""Stubs of the native module: the contract's operations by name, and the command line."""

import os
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple, TypedDict, Union

class Store:
    def __init__(self, path_or_url: Union[str, os.PathLike[str]]) -> None: ...
    @property
    def location(self) -> str: ...
    def call(self, operation: str, input: Optional[Dict[str, Any]] = None, now_ms: Optional[int] = None) -> Any: ...
    def record_episodes(self, input: Dict[str, Any], now_ms: Optional[int] = None) -> None: ...
    def record_episode_tuples(
        self, header: Dict[str, Any], episodes: List[Tuple[Any, Any, Any]], recorded_at: int, now_ms: Optional[int] = None
    ) -> bool: ...
    def call_patterns(
        self,
        operation: str,
        input: Dict[str, Any],
        now_ms: Optional[int],
        pattern: type,
        partition: Any,
        reserved: FrozenSet[str],
    ) -> List[Any]: ...
    def trajectory_crystallize_hooked(
        self,
        partition: str,
        signals: Optional[Callable[[List[Dict[str, Any]]], Sequence[float]]] = None,
        canonical: Optional[Callable[[List[Dict[str, Any]]], Sequence[Optional[Sequence[str]]]]] = None,
        now_ms: Optional[int] = None,
    ) -> Any: ...

class PatternData:
    def attributes(self) -> Dict[str, Any]: ...

def exit_status(args: List[str]) -> int: ...

class Operation(TypedDict):
    name: str
    family: str
    description: str
    effect: str
    mcp: bool
    python: str
    takes_input: bool
    output: str

def operations() -> List[Operation]: ...
def error_kinds() -> List[str]: ...
def compute_fingerprint_json(features: str) -> str: ...
def episode_signal(outcome: Any) -> float: ...
def check_trajectory_configuration(fields: List[str], cluster_threshold: Optional[int] = ..., evidence_cap: Optional[int] = ..., initial_confidence: Optional[float] = ...) -> None: ...
def canonical_sequence(episodes: List[Tuple[List[str], float]]) -> List[str]: ...
