"""The net-saving gate: offload a large result only when it provably saves money.

Pure and side-effect free. Offload fires iff

    net = carry(T, H) - carry(S, H) - p * recall_hop(R_in, R_out) > 0

with T = output_tokens, S = stub_tokens (the stub as it will be sent, index
included: the policy passes the built stub's size, or its bound), H = horizon (a prior of the calls
that will follow the result), p = recall_probability. Every term, the horizon
and the cached/uncached rates are defined once in policy/economics.py, which
stats, replay and the demo use too. Uncached this is
T * in * H - S * in * H - p * (R_in * in + R_out * out); cached, an inline
result is written to the cache once and read on each of the H - 1 later
requests, and a recalled slice is new content, so it is written to the cache.

Pricing the stub as sent matters because the stub's index grows with the
result (policy.stub_index_share, up to a quarter of client_max_result_chars):
a fixed stub price would offload results whose stub saves nothing worth a
recall (docs/design.md, "The gate prices the stub as sent").

Conservative by design (docs/design.md, "Where the policy comes from"): below the large pre-filter the gate
never fires; an unknown model (no price row) cannot prove a saving and does
not fire; the recall is one expected hop weighted by p.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from .economics import Rates, offload_terms
from .pricing import Price, resolve_price
from .settings import PriceRow

DEFAULT_LARGE_OFFLOAD_THRESHOLD_TOKENS = 15_000
DEFAULT_STUB_TOKENS = 250
DEFAULT_RECALL_INPUT_TOKENS = 2_000
DEFAULT_RECALL_OUTPUT_TOKENS = 200


@dataclass(frozen=True)
class OffloadGateInputs:
    """Everything the gate prices. All economic; no I/O. `output_tokens` is chars / 4."""

    output_tokens: float
    horizon: int
    recall_probability: float
    model_name: str
    large_offload_threshold_tokens: int = DEFAULT_LARGE_OFFLOAD_THRESHOLD_TOKENS
    stub_tokens: int = DEFAULT_STUB_TOKENS
    recall_input_tokens: int = DEFAULT_RECALL_INPUT_TOKENS
    recall_output_tokens: int = DEFAULT_RECALL_OUTPUT_TOKENS
    prompt_caching: bool = False
    cache_ttl: Literal["5m", "1h"] = "5m"
    pricing_overrides: Mapping[str, PriceRow | Price] = field(default_factory=dict)


@dataclass(frozen=True)
class OffloadGateDecision:
    """The verdict plus the priced terms, so stats can say why it fired or not."""

    fire: bool
    net_saving_usd: float
    reprefill_saving_usd: float
    stub_carry_cost_usd: float
    expected_recall_hop_cost_usd: float
    reason: str

    def terms(self) -> dict[str, Any]:
        return asdict(self)


def _declined(reason: str) -> OffloadGateDecision:
    return OffloadGateDecision(False, 0.0, 0.0, 0.0, 0.0, reason)


def evaluate_offload_gate(inputs: OffloadGateInputs) -> OffloadGateDecision:
    """Decide whether a large tool output should be offloaded (see the module docstring)."""
    if inputs.output_tokens < inputs.large_offload_threshold_tokens:
        return _declined(
            f"below large_offload_threshold ({inputs.output_tokens:.0f} < {inputs.large_offload_threshold_tokens} tokens)"
        )

    price = resolve_price(inputs.model_name, inputs.pricing_overrides)
    if price is None:
        return _declined(f"no pricing row for {inputs.model_name!r}")

    h = max(0, int(inputs.horizon))
    p_recall = max(0.0, min(1.0, float(inputs.recall_probability)))
    rates = Rates.of(price, prompt_caching=inputs.prompt_caching, cache_ttl=inputs.cache_ttl)
    terms = offload_terms(
        rates,
        output_tokens=inputs.output_tokens,
        stub_tokens=inputs.stub_tokens,
        horizon=h,
        recall_probability=p_recall,
        recall_input_tokens=inputs.recall_input_tokens,
        recall_output_tokens=inputs.recall_output_tokens,
    )
    reprefill_saving, stub_carry_cost = terms.reprefill_saving, terms.stub_carry_cost
    expected_recall_hop_cost = terms.expected_recall_hop_cost
    pricing_note = f"cached {inputs.cache_ttl}" if inputs.prompt_caching else "uncached"

    net = terms.net
    reason = (
        f"net=${net:.4f} (saving=${reprefill_saving:.4f} − stub=${stub_carry_cost:.4f} − recall=${expected_recall_hop_cost:.4f}); "
        f"S={inputs.stub_tokens} H={h} p_recall={p_recall:.2f} model={inputs.model_name} {pricing_note}"
    )
    return OffloadGateDecision(
        fire=net > 0.0,
        net_saving_usd=net,
        reprefill_saving_usd=reprefill_saving,
        stub_carry_cost_usd=stub_carry_cost,
        expected_recall_hop_cost_usd=expected_recall_hop_cost,
        reason=reason,
    )
