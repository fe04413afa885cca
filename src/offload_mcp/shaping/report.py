"""What the shaper knows of a call, and its working draft of one decision."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..analysis.clients import ChannelSizes
from ..policy.policy import Decision
from ..record import DecisionEvent, Mode, ShapeVerdict
from ..reducers.pipeline import ReducerEvent


@dataclass(frozen=True)
class CallInfo:
    """What the shaper knows about the call that produced a result."""

    server: str
    tool: str
    """The name the client called (prefixed if the catalog prefixed it)."""
    downstream_tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    session_id: str = "default"
    output_schema: dict[str, Any] | None = None
    owner: str | None = None
    """The ledger ownership key of the caller (upstream/identity.py); None: the session id."""
    structured_from_json: bool = False
    """The result's structuredContent was parsed from JSON (a downstream server's answer), so its values
    are JSON's own and the shaper reads it without a copy (dump_result)."""
    client: str | None = None
    """The `clientInfo.name` the calling client declared at initialize (recorded for client-aware accounting)."""
    declared_by_tool: int | None = None
    """The `anthropic/maxResultSizeChars` the downstream tool declares itself."""


@dataclass
class ShapeReport:
    """The shaper's working draft of one decision; `record()` freezes it into the DecisionEvent everyone reads."""

    verdict: ShapeVerdict
    """What the client got: `offload` (a stub), `reduce` (markers), `keep` (unchanged)."""
    reason: str
    """The policy's reason code, or the shaper's override (`output_schema`, `ledger_error`, `no_ledger`)."""
    decision: Decision
    mode: Mode
    chars_in: int
    chars_out: int
    tokens_in: float
    tokens_out: float
    reducer_events: list[ReducerEvent] = field(default_factory=list)
    trm_id: str | None = None
    stash_hashes: list[str] = field(default_factory=list)
    structured: str | None = None
    """What happened to structuredContent: `stub` (the stub object), `dropped_duplicate` (it repeated
    the text, which now carries the reduced data), `kept`, or None (the result had none)."""
    warning: str | None = None
    would_be: ShapeVerdict | None = None
    """In observe mode: the verdict enforce mode would have produced."""
    would_chars_out: int | None = None
    """In observe mode: what enforce mode would have sent."""
    raw_channels: ChannelSizes | None = None
    """The channels a client reads of the result as the server sent it."""
    shaped_channels: ChannelSizes | None = None
    """The same of what enforce mode sent or would have sent."""
    declared_by_proxy: int | None = None
    """The `anthropic/maxResultSizeChars` the proxy declares on downstream tools (catalog/deferral.py)."""
    recorded: DecisionEvent | None = None
    """The record committed to the ledger, while the draft has not changed since (a fall-back clears it)."""

    def record(self, call: CallInfo) -> DecisionEvent:
        if self.recorded is not None:
            return self.recorded
        return DecisionEvent(
            session_id=call.session_id,
            owner=call.owner if call.owner and call.owner != call.session_id else None,
            server=call.server,
            tool=call.downstream_tool,
            listed_tool=call.tool,
            mode=self.mode,
            verdict=self.verdict,
            reason=self.reason,
            decision=self.decision,
            chars_in=self.chars_in,
            chars_out=self.chars_out,
            tokens_in=round(self.tokens_in, 1),
            tokens_out=round(self.tokens_out, 1),
            reducer_events=self.reducer_events,
            trm_id=self.trm_id,
            stash_hashes=self.stash_hashes,
            structured=self.structured,
            warning=self.warning,
            would_be=self.would_be,
            would_chars_out=self.would_chars_out,
            client=call.client,
            raw_channels=self.raw_channels,
            shaped_channels=self.shaped_channels,
            declared_by_tool=call.declared_by_tool,
            declared_by_proxy=self.declared_by_proxy,
        )
