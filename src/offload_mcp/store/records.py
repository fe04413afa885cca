"""What goes into a ledger and comes back out: records, ids derived from content, canonical bytes.

Ids are content hashes (`trm_` + 16 hex of sha256 of the canonical body bytes), so the same body
always gets the same id in every process and every backend: two writers storing the same result
write the same row, which is why every backend's writes are idempotent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import orjson

from . import ahead, codec

TRM_PREFIX = "trm_"


def canonical_json(value: Any) -> bytes:
    """The canonical bytes of a JSON value: sorted keys, compact, UTF-8."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def trm_id_for(body_json: bytes) -> str:
    return TRM_PREFIX + hashlib.sha256(body_json).hexdigest()[:16]


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
    compressing: Future[bytes] | None = field(default=None, compare=False, repr=False)
    """`body_json` being compressed on a worker thread (`of(..., compress_ahead=True)`), or None."""

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
        compress_ahead: bool = False,
    ) -> BodyRecord:
        """`compress_ahead`: for a record that will be committed, start compressing a large body on a
        worker thread (store/ahead.py) before hashing it here; the commit then takes the result (`packed`).
        The worker enters zstd while this thread hashes (both release the GIL), and compresses on while
        the caller goes on in Python (the stub)."""
        raw = canonical_json(body)
        compressing = ahead.submit(codec.compress, raw) if compress_ahead and len(raw) >= ahead.MIN_BYTES else None
        return cls.of_json(
            raw,
            server=server,
            tool=tool,
            arguments=arguments,
            session_id=session_id,
            chars=chars,
            compressing=compressing,
        )

    @classmethod
    def of_json(
        cls,
        raw: bytes,
        *,
        server: str,
        tool: str,
        arguments: Mapping[str, Any],
        session_id: str,
        chars: int,
        compressing: Future[bytes] | None = None,
    ) -> BodyRecord:
        """A record for a body its caller already serialised with `canonical_json` (and may be compressing
        on a worker): hashed here, so the caller can schedule the hash beside its own workers' work."""
        return cls(trm_id_for(raw), raw, server, tool, dict(arguments), session_id, chars, compressing)

    def packed(self) -> bytes:
        """`body_json` compressed by `codec`: the worker thread's result when it was started ahead, else (no
        worker has taken it yet: they are busy with other calls' work) compressed here, never waited for."""
        if self.compressing is not None and not self.compressing.cancel():
            try:
                return self.compressing.result()
            except Exception:  # compressed again here, where a real error reaches the commit
                pass
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
