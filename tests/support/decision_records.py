"""Decision records as the shaper writes them, for tests that seed a ledger without running the shaper."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from offload_mcp.policy.policy import Decision, Reason
from offload_mcp.record import DecisionEvent, ShapeVerdict
from offload_mcp.reducers.pipeline import ReducerEvent

STUB_CHARS = 250 * 4
"""A stub at the default budget (stub_tokens x chars_per_token)."""


def decision_record(
    session: str,
    server: str,
    tool: str,
    verdict: ShapeVerdict = "keep",
    reason: Reason = "small",
    chars_in: int = 100,
    chars_out: int | None = None,
    *,
    ref: str = "",
    reducers: Iterable[Mapping[str, Any]] = (),
    mode: str = "enforce",
    reduced_chars: int | None = None,
    would_chars_out: int | None = None,
    client: str | None = None,
) -> DecisionEvent:
    """One record. In observe mode the client got the original, and what enforce mode would have sent defaults to
    a stub for an offload, the reduced size for a reduction, the original for a keep."""
    reduced = chars_in if reduced_chars is None else reduced_chars
    chars_out = chars_in if chars_out is None else chars_out
    decision = Decision(
        "offload" if verdict == "offload" else "keep", reason, f"{reason} (test record)", reduced, reduced / 4
    )
    observe = mode == "observe"
    if observe and would_chars_out is None:
        would_chars_out = {"offload": min(chars_in, STUB_CHARS), "reduce": min(chars_in, reduced), "keep": chars_in}[
            verdict
        ]
    sent = chars_in if observe else chars_out
    return DecisionEvent(
        session_id=session,
        server=server,
        tool=tool,
        listed_tool=tool,
        mode="observe" if observe else "enforce",
        verdict="keep" if observe else verdict,
        reason=reason,
        decision=decision,
        chars_in=chars_in,
        chars_out=sent,
        tokens_in=chars_in / 4,
        tokens_out=sent / 4,
        reducer_events=[ReducerEvent(**dict(r)) for r in reducers],
        trm_id=ref or None,
        would_be=verdict if observe else None,
        would_chars_out=would_chars_out if observe else None,
        client=client,
    )


def decision_row(record: DecisionEvent, *, id_: int, at: float) -> dict[str, Any]:
    """The record as `Ledger.events()` returns it."""
    e = record.ledger_event()
    return {
        "id": id_,
        "at": at,
        "kind": e.kind,
        "session_id": e.session_id,
        "server": e.server,
        "tool": e.tool,
        "verdict": e.verdict,
        "reason": e.reason,
        "ref_id": e.ref_id,
        "chars_in": e.chars_in,
        "chars_out": e.chars_out,
        "detail": dict(e.detail),
    }
