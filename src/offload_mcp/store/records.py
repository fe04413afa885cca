"""What goes into a ledger and comes back out: records, ids derived from content, canonical bytes.

Ids are content hashes (`trm_` + 16 hex of the BLAKE3 hash of the canonical body bytes), so the same
body always gets the same id in every process and every backend: two writers storing the same result
write the same row, which is why every backend's writes are idempotent. BLAKE3, not sha256: both are
cryptographic and the id keeps 64 bits of either, but BLAKE3 is about three times faster, and the
hash sits between a large result's arrival and its stub. sha256 ids stay valid: a body is looked up
by its id, and a body stored again under its BLAKE3 id is one more row until retention removes the
old.

The id is also the body's checksum: a read hashes what it decompressed and compares (`is_body_of`,
either hash), so damaged bytes that still decompress (zstd frames carry no checksum here) are refused
as corrupt instead of handed to the model as the result. That costs a read one hash pass and a write
nothing.

A body is hashed and compressed on the shaper's own thread. Both release the GIL, but handing them
to worker threads to overlap the stub's Python does not pay on 2 vCPUs: the idle vCPU wakes too late
for so short an overlap, the caller then waits on the worker, and under CPU load the hand-offs cost
more than they save. Measurements: docs/design.md, "Hashing and compression".
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import blake3
import orjson

from . import codec

TRM_PREFIX = "trm_"


def canonical_json(value: Any) -> bytes:
    """The canonical bytes of a JSON value: sorted keys, compact, UTF-8."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def trm_id_for(body_json: bytes) -> str:
    return TRM_PREFIX + blake3.blake3(body_json).hexdigest()[:16]


def is_body_of(trm_id: str, body_json: bytes) -> bool:
    """Whether `body_json` is the body `trm_id` names: its BLAKE3 id, or its sha256 id (the ids older ledgers hold)."""
    digest = trm_id.removeprefix(TRM_PREFIX)
    return blake3.blake3(body_json).hexdigest()[:16] == digest or hashlib.sha256(body_json).hexdigest()[:16] == digest


def is_original_of(cg_hash: str, original: bytes) -> bool:
    """Whether stored `original` bytes are the text `<<cg:cg_hash>>` names (reducers.base.cg_hash's sha256)."""
    return hashlib.sha256(original).hexdigest()[:16] == cg_hash


@dataclass(frozen=True)
class BodyRecord:
    """One offloaded result, ready to commit. Build it with `BodyRecord.of(...)`."""

    trm_id: str
    body_json: bytes
    server: str
    tool: str
    arguments: Mapping[str, Any]
    session_id: str
    chars: int
    """Characters of model-visible text in the body (the size the stub reports)."""

    @classmethod
    def of(
        cls,
        body: Mapping[str, Any],
        *,
        server: str,
        tool: str,
        arguments: Mapping[str, Any],
        session_id: str,
        chars: int,
    ) -> BodyRecord:
        raw = canonical_json(body)
        return cls(trm_id_for(raw), raw, server, tool, dict(arguments), session_id, chars)

    def packed(self) -> bytes:
        """`body_json` compressed by `codec`, in line: see the module docstring for why not on a worker thread."""
        return codec.compress(self.body_json)


@dataclass(frozen=True)
class LedgerEvent:
    """A decision, recall or expand event, for stats. `detail` holds the priced terms and reducer events.

    The ledger stores `detail` as the canonical JSON of whatever mapping it is given and hands it
    back decoded: the event's format belongs to its writer, not to the store.
    """

    kind: str
    session_id: str = ""
    server: str = ""
    tool: str = ""
    verdict: str = ""
    reason: str = ""
    ref_id: str = ""
    chars_in: int = 0
    chars_out: int = 0
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BodyInfo:
    trm_id: str
    server: str
    tool: str
    arguments: dict[str, Any]
    session_id: str
    raw_bytes: int
    stored_bytes: int
    chars: int
    created_at: float
    last_used_at: float


@dataclass(frozen=True)
class SessionSpan:
    """One session's events of some kinds: how many, and the times of its first and last."""

    calls: int
    first_at: float
    last_at: float


@dataclass(frozen=True)
class CheckpointRow:
    """The stats fold's state over every event of a scope recorded before `through_at` (analysis/stats_checkpoint.py)."""

    scope: str
    through_at: float
    through_id: int
    """The ledger's highest event id when the fold began: an event above it was not seen by the fold."""
    low_id: int
    """The ledger's lowest event id then: when it moves, events the state holds were removed."""
    state: str
    written_at: float

    def values(self) -> tuple[Any, ...]:
        return (self.scope, self.through_at, self.through_id, self.low_id, self.state, self.written_at)
