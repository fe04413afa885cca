"""The net-saving gate: offload a large result only when it provably saves money (seed 000).

Pure and side-effect free. Offload fires iff

    net = reprefill_saving - (stub_carry_cost + expected_recall_hop_cost) > 0

with T = output_tokens, S = stub_tokens, H = horizon (expected remaining
turns, a fixed prior), p = recall_probability, and the model's rates per
token: in (input), out (output), cw (cache write at `cache_ttl`), cr (cache
read).

Uncached (`prompt_caching=False`), exactly the seed: every turn re-prefills
the inline result at the input rate.

    reprefill_saving         = T * in * H
    stub_carry_cost          = S * in * H
    expected_recall_hop_cost = p * (R_in * in + R_out * out)

Cached (`prompt_caching=True`, what Claude Code does): an inline result is
written to the cache once (on the first turn that carries it) and read from
the cache on each of the H-1 later turns. The stub rides the same way. The
recalled slice is new content, so it is written to the cache.

    carry(x)                 = x * (cw + cr * (H - 1))     (0 when H = 0)
    reprefill_saving         = carry(T)    # = T*cr*H + T*(cw - cr): the per-turn
                                           #   saving at cache-read rate plus the
                                           #   one-time cache-write difference
    stub_carry_cost          = carry(S)
    expected_recall_hop_cost = p * (R_in * cw + R_out * out)

Conservatism carried over from the seed: below the large pre-filter the gate
never fires; an unknown model (no price row) cannot prove a saving and does
not fire; the recall is one expected hop weighted by p.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from .pricing import Price, resolve_price
from .settings import PriceRow

DEFAULT_LARGE_OFFLOAD_THRESHOLD_TOKENS = 15_000
DEFAULT_STUB_TOKENS = 250
DEFAULT_RECALL_INPUT_TOKENS = 2_000
DEFAULT_RECALL_OUTPUT_TOKENS = 200
_PER_MILLION = 1_000_000.0


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

    input_rate = price.input / _PER_MILLION
    output_rate = price.output / _PER_MILLION
    h = max(0, int(inputs.horizon))
    p_recall = max(0.0, min(1.0, float(inputs.recall_probability)))

    if inputs.prompt_caching:
        write_rate = price.cache_write(inputs.cache_ttl) / _PER_MILLION
        read_rate = price.cache_read / _PER_MILLION
        per_token_carry = (write_rate + read_rate * (h - 1)) if h > 0 else 0.0
        reprefill_saving = inputs.output_tokens * per_token_carry
        stub_carry_cost = inputs.stub_tokens * per_token_carry
        expected_recall_hop_cost = p_recall * (inputs.recall_input_tokens * write_rate + inputs.recall_output_tokens * output_rate)
        pricing_note = f"cached {inputs.cache_ttl}"
    else:
        reprefill_saving = inputs.output_tokens * input_rate * h
        stub_carry_cost = inputs.stub_tokens * input_rate * h
        expected_recall_hop_cost = p_recall * (inputs.recall_input_tokens * input_rate + inputs.recall_output_tokens * output_rate)
        pricing_note = "uncached"

    net = reprefill_saving - (stub_carry_cost + expected_recall_hop_cost)
    reason = (
        f"net=${net:.4f} (saving=${reprefill_saving:.4f} − stub=${stub_carry_cost:.4f} − recall=${expected_recall_hop_cost:.4f}); "
        f"H={h} p_recall={p_recall:.2f} model={inputs.model_name} {pricing_note}"
    )
    return OffloadGateDecision(
        fire=net > 0.0,
        net_saving_usd=net,
        reprefill_saving_usd=reprefill_saving,
        stub_carry_cost_usd=stub_carry_cost,
        expected_recall_hop_cost_usd=expected_recall_hop_cost,
        reason=reason,
    )
