"""Which tools are hot (loaded eagerly) and why; everything else is cold.

How it works: a tool is hot for one of four named reasons, checked in this
order — it is one of the proxy's own tools (`own`, always hot, always
listed); its server marked it `anthropic/alwaysLoad` (`server_always_load`);
its listed name or `server/tool` matches a `hot_tools` glob (`glob`); or,
with `learn_hot_tools` on, it is among the `max_hot_tools` most-called tools
in the ledger's last `learn_window_days` days, with at least
`learn_min_calls` calls (`learned`). Calls are counted per (server,
downstream tool), so a tool keeps its history when prefixing renames it.
Learned ties break by name.

The server decides the hot set once per session, at initialize, and keeps
it for that session: the tools/list bytes never flap mid-session, which is
what keeps a client's prompt cache valid. A new session sees what the
ledger learned meanwhile.

Inert, with the reason kept in `HotSet.learning`: learning is off
(`learning_off`), there is no ledger (`no_ledger`), the ledger offers no
call counts (`no_call_counts`), reading it failed (`ledger_error`), or
nothing was called often enough yet (`no_history`).
"""

from __future__ import annotations

import fnmatch
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from .settings import CatalogSettings

log = logging.getLogger(__name__)

OWN = "own"
SERVER_ALWAYS_LOAD = "server_always_load"
GLOB = "glob"
LEARNED = "learned"


@runtime_checkable
class CallHistory(Protocol):
    """What hot-tool learning needs from the ledger (store.Ledger offers it)."""

    def call_counts(self, since: float | None = None) -> Mapping[tuple[str, str], int]:
        """Calls per (server, downstream tool name) recorded at or after `since` (epoch seconds)."""
        ...


@dataclass(frozen=True)
class Candidate:
    """A listed tool as the hot-set decision sees it."""

    name: str
    server: str = ""
    downstream_name: str = ""
    server_always_load: bool = False


@dataclass(frozen=True)
class HotReason:
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


@dataclass(frozen=True)
class HotSet:
    reasons: Mapping[str, HotReason] = field(default_factory=dict)
    learning: str = "learning_off"
    """`learned` when learning contributed, else the named reason it was inert."""

    def __contains__(self, name: object) -> bool:
        return name in self.reasons

    def names(self) -> list[str]:
        return sorted(self.reasons)

    def learned(self) -> dict[str, HotReason]:
        return {name: why for name, why in self.reasons.items() if why.kind == LEARNED}


class HotSetMemory:
    """The learned part of each session's hot set, decided at the session's first listing and kept.

    Bounded: past `max_sessions` the least recently used session is forgotten (a session that
    comes back after that re-learns, which is the only way its list could change).
    """

    def __init__(self, max_sessions: int = 4096) -> None:
        self.max_sessions = max_sessions
        self._learned: OrderedDict[str, tuple[dict[str, HotReason], str]] = OrderedDict()
        self._lock = threading.Lock()

    def hot_set(
        self,
        session_id: str,
        candidates: Sequence[Candidate],
        settings: CatalogSettings,
        *,
        own_tools: Iterable[str],
        history: object | None = None,
        now: float | None = None,
    ) -> HotSet:
        with self._lock:
            known = self._learned.get(session_id)
            if known is not None:
                self._learned.move_to_end(session_id)
        if known is None:
            decided = decide_hot_set(candidates, settings, own_tools=own_tools, history=history, now=now)
            mine = (decided.learned(), decided.learning)
            with self._lock:
                # Two first listings racing in one session: the first decision stands.
                known = self._learned.setdefault(session_id, mine)
                self._learned.move_to_end(session_id)
                while len(self._learned) > self.max_sessions:
                    self._learned.popitem(last=False)
            if known is mine:
                return decided
        learned, learning = known
        again = decide_hot_set(candidates, settings, own_tools=own_tools, learned=learned)
        return again if again.learning == LEARNED else HotSet(again.reasons, learning)

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._learned.pop(session_id, None)


def decide_hot_set(
    candidates: Sequence[Candidate],
    settings: CatalogSettings,
    *,
    own_tools: Iterable[str],
    history: object | None = None,
    now: float | None = None,
    learned: Mapping[str, HotReason] | None = None,
) -> HotSet:
    """The hot set for one session: own tools, server alwaysLoad, globs, then learned.

    `learned`, when given, is the learned part a session already decided: it is reused (for
    the tools still listed) instead of reading the ledger again, so the session's list holds.
    """
    reasons: dict[str, HotReason] = {}
    for name in own_tools:
        reasons[name] = HotReason(OWN, "the proxy's own tool, always listed")
    for cand in candidates:
        if cand.name in reasons:
            continue
        if cand.server_always_load:
            reasons[cand.name] = HotReason(
                SERVER_ALWAYS_LOAD, f"server {cand.server or '?'} marks it anthropic/alwaysLoad"
            )
            continue
        pattern = _matching_glob(cand, settings.hot_tools)
        if pattern is not None:
            reasons[cand.name] = HotReason(GLOB, f"matches hot_tools glob {pattern!r}")

    if learned is not None:
        listed = {cand.name for cand in candidates}
        kept = {name: why for name, why in learned.items() if name in listed and name not in reasons}
        reasons.update(kept)
        learning = LEARNED if kept else "no_history"
    else:
        learning = _learn(candidates, settings, history, reasons, time.time() if now is None else now)
    return HotSet(reasons=dict(sorted(reasons.items())), learning=learning)


def _matching_glob(cand: Candidate, globs: Sequence[str]) -> str | None:
    qualified = f"{cand.server}/{cand.downstream_name or cand.name}" if cand.server else None
    for pattern in globs:
        if fnmatch.fnmatchcase(cand.name, pattern) or (qualified and fnmatch.fnmatchcase(qualified, pattern)):
            return pattern
    return None


def _learn(
    candidates: Sequence[Candidate],
    settings: CatalogSettings,
    history: object | None,
    reasons: dict[str, HotReason],
    now: float,
) -> str:
    if not settings.learn_hot_tools or settings.max_hot_tools == 0:
        return "learning_off"
    if history is None:
        return "no_ledger"
    if not isinstance(history, CallHistory):
        return "no_call_counts"
    try:
        counts = dict(history.call_counts(since=now - settings.learn_window_days * 86_400.0))
    except Exception as err:  # a broken ledger must never break tools/list
        log.warning("hot-tool learning skipped: reading call counts failed: %s", err)
        return "ledger_error"
    eligible: list[tuple[int, str]] = []
    for cand in candidates:
        # Counted by (server, downstream name): a tool keeps its history when prefixing renames it.
        count = int(counts.get((cand.server, cand.downstream_name or cand.name), 0))
        if cand.name not in reasons and count >= settings.learn_min_calls:
            eligible.append((count, cand.name))
    eligible.sort(key=lambda item: (-item[0], item[1]))
    if not eligible:
        return "no_history"
    days = f"{settings.learn_window_days:g}"
    for count, name in eligible[: settings.max_hot_tools]:
        reasons[name] = HotReason(LEARNED, f"called {count} times in the last {days} days")
    return LEARNED
