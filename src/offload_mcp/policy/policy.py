"""The result policy: one decision with one reason for each tool result.

Branch order is load-bearing and reads top to bottom:

1. `disabled` — the policy is off: keep.
2. `multimodal` — an image, audio or blob resource is evidence the model
   looks at; a stub would turn it into a description of evidence: keep.
   Ranked high so the stated reason is the safety property.
3. `own_tool` — recall_tool_result / context_guru_expand output is what the
   model just asked for; offloading it again would loop: keep.
4. `small` — at or below `small_threshold_chars`: too small for a stub: keep.
5. `below_large` — under the gate's cheap pre-filter (`large_threshold_chars`,
   50,000 chars): Claude Code alone shows a result of that size whole, so a
   stub there can only show the model less than installing nothing would
   (measured on the shape zoo and the corpora: docs/fidelity.md);
   keep. Above it Claude Code alone files the result with a 2,000-char
   preview, and the stub's index grows with the result
   (`stub_index_share`), so the stub shows more rows than that preview.
6. `over_client_limit` — above `client_max_result_chars` the client rejects
   or cuts the result, so offload whatever the gate says: the alternative is
   losing it.
7. `gate` — the net-saving gate (gate.py) decides: `gate_fired` offloads,
   `gate_declined` keeps. A gate that raises declines (`gate_error`): firing
   wrongly is exactly what the gate exists to prevent.

No branch looks at earlier turns: rewriting them does not exist at the MCP
seam (DESIGN.md), so a proxy decides once, on arrival.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .gate import OffloadGateDecision, OffloadGateInputs, evaluate_offload_gate
from .settings import PolicySettings

log = logging.getLogger(__name__)

Verdict = Literal["keep", "offload"]
Reason = Literal[
    "disabled",
    "multimodal",
    "own_tool",
    "small",
    "below_large",
    "over_client_limit",
    "gate_fired",
    "gate_declined",
    "gate_error",
]
NetSavingGate = Callable[[OffloadGateInputs], OffloadGateDecision]


@dataclass(frozen=True)
class PolicyInput:
    """What the policy sees of one result (after reducers)."""

    chars: int
    """Model-visible characters of the candidate result (text blocks after reduction)."""
    multimodal: bool = False
    own_tool: bool = False
    stub_chars: int | None = None
    """Model-visible characters of the stub that would replace it (the shaper builds it before deciding);
    None prices the largest stub the settings allow (`ResultPolicy.stub_bound_chars`)."""


@dataclass(frozen=True)
class Decision:
    """One verdict, one reason code, a sentence explaining it, and the gate's priced terms if it ran."""

    verdict: Verdict
    reason: Reason
    explanation: str
    chars: int
    tokens: float
    gate: OffloadGateDecision | None = None

    @property
    def offload(self) -> bool:
        return self.verdict == "offload"

    def terms(self) -> dict[str, Any]:
        return self.gate.terms() if self.gate else {}

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "explanation": self.explanation,
            "chars": self.chars,
            "tokens": round(self.tokens, 1),
            "gate": self.terms() or None,
        }


class ResultPolicy:
    """Decide what happens to one result. Stateless; safe to share between threads."""

    def __init__(
        self, settings: PolicySettings, *, net_saving_gate: NetSavingGate | None = evaluate_offload_gate
    ) -> None:
        self.settings = settings
        self._gate = net_saving_gate

    def for_settings(self, settings: PolicySettings) -> ResultPolicy:
        return ResultPolicy(settings, net_saving_gate=self._gate)

    def tokens(self, chars: int) -> float:
        return chars / self.settings.chars_per_token

    def index_chars(self, result_chars: int = 0) -> int:
        """The stub's identifier-index budget for a result of `result_chars`: `stub_index_chars`, or
        `stub_index_share` of the result when that is more (a larger result lists more of its rows),
        kept so the whole stub stays far below `client_max_result_chars`. The grown part stops at a
        quarter of that limit: Claude Code files any result over 50,000 chars (its own inline size,
        whatever the proxy declares for a tool with an outputSchema) to disk behind a 2,000-char
        preview, and reads the stub's structuredContent copy, JSON-escaped, a few percent longer."""
        s = self.settings
        chars = s.stub_index_chars
        if s.stub_index_chars:
            grown = int(result_chars * s.stub_index_share)
            if s.client_max_result_chars:
                grown = min(grown, s.client_max_result_chars // 4)
            chars = max(chars, grown)
        if s.client_max_result_chars:
            chars = min(chars, max(0, s.client_max_result_chars // 2 - int(s.stub_tokens * s.chars_per_token)))
        return chars

    def stub_bound_chars(self, result_chars: int = 0) -> int:
        """The largest stub the settings allow: `stub_tokens` of header, shape, head and recall call plus the index.

        The structuredContent copy of a stub (stub.stub_object) JSON-escapes the same text, which
        adds a few percent; the 2x headroom under `client_max_result_chars` (index_chars) covers it.
        """
        return int(self.settings.stub_tokens * self.settings.chars_per_token) + self.index_chars(result_chars)

    def gate_inputs(self, chars: int, stub_chars: int | None = None) -> OffloadGateInputs:
        """What the gate prices. The stub is priced as sent (its index grows with the result: far more than
        `stub_tokens`' 250), or at `stub_bound_chars(chars)` when the caller has not built it."""
        s = self.settings
        stub = self.stub_bound_chars(chars) if stub_chars is None else stub_chars
        return OffloadGateInputs(
            output_tokens=self.tokens(chars),
            horizon=s.horizon,
            recall_probability=s.recall_probability,
            model_name=s.model,
            large_offload_threshold_tokens=int(s.large_threshold_chars / s.chars_per_token),
            stub_tokens=math.ceil(stub / s.chars_per_token),
            recall_input_tokens=s.recall_input_tokens,
            recall_output_tokens=s.recall_output_tokens,
            prompt_caching=s.prompt_caching,
            cache_ttl=s.cache_ttl,
            pricing_overrides=s.pricing,
        )

    def decide(self, item: PolicyInput) -> Decision:
        s = self.settings
        chars = item.chars
        tokens = self.tokens(chars)

        def keep(reason: Reason, why: str, gate: OffloadGateDecision | None = None) -> Decision:
            return Decision("keep", reason, why, chars, tokens, gate)

        if not s.enabled:
            return keep("disabled", "offload policy disabled (policy.enabled=false)")
        if item.multimodal:
            return keep("multimodal", "result carries an image, audio or blob resource: kept as evidence")
        if item.own_tool:
            return keep("own_tool", "output of the proxy's own recall/expand tool is never offloaded again")
        if chars <= s.small_threshold_chars:
            return keep("small", f"{chars} chars <= small_threshold_chars={s.small_threshold_chars}")
        if chars < s.large_threshold_chars:
            return keep("below_large", f"{chars} chars < large_threshold_chars={s.large_threshold_chars} (pre-filter)")
        gate, gate_failure = self._run_gate(chars, item.stub_chars)
        if s.client_max_result_chars and chars > s.client_max_result_chars:
            return Decision(
                "offload",
                "over_client_limit",
                f"{chars} chars > client_max_result_chars={s.client_max_result_chars}: the client would reject or cut it",
                chars,
                tokens,
                gate,
            )
        if gate is None:
            return keep("gate_error", f"net-saving gate failed ({gate_failure}): declined")
        if gate.fire:
            return Decision("offload", "gate_fired", gate.reason, chars, tokens, gate)
        return keep("gate_declined", gate.reason, gate)

    def _run_gate(self, chars: int, stub_chars: int | None) -> tuple[OffloadGateDecision | None, str]:
        if self._gate is None:
            return None, "no gate configured"
        try:
            return self._gate(self.gate_inputs(chars, stub_chars)), ""
        except Exception as err:  # a broken gate must never fire offload
            log.warning("net-saving gate raised %s: declining offload", err, exc_info=True)
            return None, f"{type(err).__name__}: {err}"
