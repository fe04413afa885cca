"""The decision record: what shaping did to one result and why, as one frozen, typed, versioned model.

How it works: `shaping.ResultShaper` builds one `DecisionEvent` per downstream
result and commits it to the ledger (`ledger_event()`: the columns stats and
hot-tool learning query, plus the whole record as `detail`). Everything that
reads decisions reads this model and nothing else: the server's metrics and
call log take it from the shaper, replay tallies it, stats parses ledger rows
back with `DecisionEvent.from_ledger_row`, which validates and never guesses
(an unknown key, a missing field or a verdict that does not exist is an error
that names the row).

One encoding each: the verdict is `keep`, `reduce` or `offload`; observe mode
is `mode == "observe"`, and then `verdict` is what the client got (`keep`,
the original) while `would_be` and `would_chars_out` say what enforce mode
would have sent (both set exactly in observe mode); reducer events are
`reducers.pipeline.ReducerEvent`, the gate's terms `policy.gate.OffloadGateDecision`
inside the policy's `Decision`.

Versions: 2 is this model. Version 1 is what ledgers held before the record had
a version (the shaper's `ShapeReport.as_dict()` plus `listed_tool`, read by
tolerant code); store/record_v1.py rewrites those rows when a ledger opens.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .analysis.clients import ChannelSizes, ClientModel, client_model, for_client_info
from .policy.economics import ResultAccount, account_result
from .policy.policy import Decision
from .reducers.pipeline import ReducerEvent
from .store import LedgerEvent

RECORD_VERSION: Literal[2] = 2
DECISION_KIND = "decision"
"""The ledger event kind a DecisionEvent is stored under."""

ShapeVerdict = Literal["keep", "reduce", "offload"]
"""What a result became: unchanged, reduced behind markers, or replaced by a stub."""
Mode = Literal["enforce", "observe"]


class _Dump(Mapping[str, Any]):
    """A record's `model_dump(mode="json")`, made when first read.

    A kept result's event is only queued on the call path (`Ledger.record_later`); the ledger's
    writer thread reads `detail` when it writes the batch, so the dump leaves the call. The
    record is frozen: dumping it later gives what dumping it now would.
    """

    __slots__ = ("_record", "_value")

    def __init__(self, record: DecisionEvent) -> None:
        self._record = record
        self._value: dict[str, Any] | None = None

    def _dumped(self) -> dict[str, Any]:
        if self._value is None:  # two threads racing here compute the same dict
            self._value = self._record.model_dump(mode="json")
        return self._value

    def __getitem__(self, key: str) -> Any:
        return self._dumped()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._dumped())

    def __len__(self) -> int:
        return len(self._dumped())

    def __repr__(self) -> str:
        return repr(self._dumped())


class DecisionRecordError(ValueError):
    """A ledger row that is not a valid decision record (names the row and the problem)."""


class DecisionEvent(BaseModel):
    """One downstream result through the shaper: the verdict, its reason, the sizes and every reducer's outcome."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: Literal[2] = RECORD_VERSION
    session_id: str
    owner: str | None = Field(default=None, exclude_if=lambda value: value is None)
    """The caller's ledger ownership key when it is not the session (`principal:<name>` under
    `ledger.scope: principal`), so a principal's view of the ledger (the dashboard) finds its rows;
    left out of the stored record when None."""
    server: str
    tool: str
    """The downstream tool's own name."""
    listed_tool: str
    """The name the client called (prefixed if the catalog prefixed it)."""
    mode: Mode
    verdict: ShapeVerdict
    """What the client got (in observe mode always `keep`: the original)."""
    reason: str
    """The policy's reason code, or the shaper's override (`output_schema`, `ledger_error`, `no_ledger`)."""
    decision: Decision | None
    """The policy's decision with the gate's priced terms; None only in a record migrated from a ledger row that did not keep it."""
    chars_in: int
    chars_out: int
    """Model-visible characters the client received."""
    tokens_in: float
    tokens_out: float
    reducer_events: list[ReducerEvent]
    trm_id: str | None = None
    stash_hashes: list[str] = []
    structured: str | None = None
    """What happened to structuredContent, in shaping's words (e.g. `kept`); None when the result had none."""
    warning: str | None = None
    would_be: ShapeVerdict | None = None
    """Observe mode only: the verdict enforce mode would have produced."""
    would_chars_out: int | None = None
    """Observe mode only: the characters enforce mode would have sent."""
    client: str | None = None
    """The `clientInfo.name` the calling client declared at initialize (Claude Code: `claude-code`); None
    when it declared none, or in a record written before clients were recorded (`stats --client` names one)."""
    raw_channels: ChannelSizes | None = None
    """The channels a client reads of the result as the server sent it (None in older records)."""
    shaped_channels: ChannelSizes | None = None
    """The same of what enforce mode sent or, in observe mode, would have sent."""
    declared_by_tool: int | None = None
    """The `anthropic/maxResultSizeChars` the downstream tool declares itself (what a client alone honours)."""
    declared_by_proxy: int | None = None
    """The `anthropic/maxResultSizeChars` the proxy declares for the tool (what the client honours through it)."""

    @model_validator(mode="after")
    def _observe_fields_match_the_mode(self) -> DecisionEvent:
        observe = self.mode == "observe"
        if observe != (self.would_be is not None) or observe != (self.would_chars_out is not None):
            raise ValueError("would_be and would_chars_out are set exactly in observe mode")
        if observe and self.verdict != "keep":
            raise ValueError("in observe mode the client gets the original: verdict must be keep")
        return self

    # ------------------------------------------------------------ what happened, whatever the mode

    @property
    def observe(self) -> bool:
        return self.mode == "observe"

    @property
    def effective_verdict(self) -> ShapeVerdict:
        """What enforce mode did or, in observe mode, would have done."""
        return self.would_be if self.would_be is not None else self.verdict

    @property
    def shaped_chars_out(self) -> int:
        """Characters enforce mode sent or, in observe mode, would have sent."""
        return self.would_chars_out if self.would_chars_out is not None else self.chars_out

    @property
    def reduced_chars(self) -> int:
        """Characters left after the reducers, before the policy (what a kept result costs)."""
        return self.decision.chars if self.decision is not None else self.chars_in

    def client_model(self, named: ClientModel | None = None) -> ClientModel:
        """The client this result is counted against: `named` (stats --client), else the one it recorded."""
        return named or client_model(for_client_info(self.client))

    def account(self, client: ClientModel, chars_per_token: float) -> ResultAccount:
        """What this result kept out of the context against the raw result and against `client` alone
        (policy/economics.py). A record from before channels were recorded is read as one text channel
        of its recorded sizes."""
        sent = self.shaped_chars_out
        return account_result(
            client,
            tool=self.listed_tool,
            raw_chars=self.chars_in,
            sent_chars=sent,
            raw=self.raw_channels or ChannelSizes(self.chars_in),
            sent=self.shaped_channels or ChannelSizes(sent),
            declared_by_tool=self.declared_by_tool,
            declared_by_proxy=self.declared_by_proxy,
            chars_per_token=chars_per_token,
        )

    @property
    def priced_terms(self) -> dict[str, Any]:
        return self.decision.terms() if self.decision is not None else {}

    # ------------------------------------------------------------ the ledger

    def ledger_event(self) -> LedgerEvent:
        """The row stored for this record: queryable columns plus the whole record as `detail`."""
        return LedgerEvent(
            DECISION_KIND,
            session_id=self.session_id,
            server=self.server,
            tool=self.tool,
            verdict=self.effective_verdict,
            reason=self.reason,
            ref_id=self.trm_id or "",
            chars_in=self.chars_in,
            chars_out=self.chars_out,
            detail=_Dump(self),
        )

    @classmethod
    def from_ledger_row(cls, row: Mapping[str, Any]) -> DecisionEvent:
        """The record of one `decision` row of `Ledger.events()` (or of `Ledger.events_in_order()`, whose
        detail is still JSON text: parsed straight into the record, without a dict between);
        DecisionRecordError if it is not one."""
        if row.get("kind") != DECISION_KIND:
            raise DecisionRecordError(
                f"ledger event {row.get('id')}: kind {row.get('kind')!r} is not {DECISION_KIND!r}"
            )
        detail = row.get("detail")
        try:
            if isinstance(detail, str | bytes):
                return cls.model_validate_json(detail)
            return cls.model_validate(detail)
        except ValueError as err:
            raise DecisionRecordError(
                f"ledger event {row.get('id')}: not a version-{RECORD_VERSION} decision record: {err}"
            ) from None
