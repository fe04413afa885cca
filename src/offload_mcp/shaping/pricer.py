"""The stub one result would get, built at most once: the gate prices it, and it is sent when offloaded."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from ..config import OffloadSettings
from ..policy.policy import ResultPolicy
from ..policy.stub import build_stub, stub_object
from ..store import BodyRecord
from .body import ResultBody, json_chars, recall_chars
from .report import CallInfo


class StubPricer:
    """Prices the stub of one result for the net-saving gate, and hands the same stub over when the
    policy offloads the result: the body record (canonical JSON, id) and the stub text (shape, index)
    are built once, on the first ask."""

    def __init__(
        self,
        settings: OffloadSettings,
        policy: ResultPolicy,
        call: CallInfo,
        result: types.CallToolResult,
        body: dict[str, Any],
        *,
        gated: bool,
    ) -> None:
        self._settings = settings
        self._policy = policy
        self._call = call
        self._result = result
        self._body = body
        self._gated = gated
        """Whether the gate may judge this result at all (not the proxy's own tool, not multimodal, policy on)."""
        self._built: tuple[BodyRecord, str] | None = None

    def visible_chars(self, chars: int) -> int | None:
        """What the model would read of the stubbed result (the larger channel), or None when the gate is
        not reached for a result that shows `chars` (below the large threshold, or not gated)."""
        if not self._gated or chars < self._settings.policy.large_threshold_chars:
            return None
        record, stub = self.built()
        if self._result.structured_content is not None or self._call.output_schema is not None:
            return max(len(stub), json_chars(stub_object(record.trm_id, stub)))
        return len(stub)

    def built(self) -> tuple[BodyRecord, str]:
        """The body record and the stub text, built on the first ask."""
        if self._built is None:
            record = self.body_record()
            self._built = (record, self.stub_text(record))
        return self._built

    def body_record(self) -> BodyRecord:
        call = self._call
        return BodyRecord.of(
            self._body,
            server=call.server,
            tool=call.downstream_tool,
            arguments=call.arguments,
            session_id=call.session_id,
            chars=recall_chars(self._body),
        )

    def stub_text(self, record: BodyRecord) -> str:
        policy = self._settings.policy
        body = self._body
        spelled = isinstance(body, ResultBody) and body.spells_structured()
        return build_stub(
            text_json=(body["structuredContent"],) if spelled else None,
            trm_id=record.trm_id,
            tool=self._call.tool,
            body=body,
            chars=record.chars,
            chars_per_token=policy.chars_per_token,
            budget_tokens=policy.stub_tokens,
            recall_mode=self._settings.recall.mode,
            index_chars=self._policy.index_chars(record.chars),
        )
