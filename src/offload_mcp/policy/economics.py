"""The economics of a tool result in the context: one definition, used by the gate, stats, replay and the demo.

Quantities (tokens = chars / `chars_per_token`):

- **Horizon H**: the number of later tool calls in the same conversation
  (session or trajectory) after the one that produced the result. Each of
  those calls was produced by a model request that carried the result, so H
  counts the requests that certainly paid for it. The request that reads the
  last result and answers without a call is not counted: a proxy sees calls,
  not the model's last reply, so it cannot be observed, and leaving it out
  underestimates the saving (seed 000: the gate wants an underestimate). One
  definition for all: the gate's `horizon` setting is a prior of H, stats
  measures H from the ledger (calls that followed) and suggests the prior from
  it, replay reads H from a trajectory's steps (`last step - step`), so the
  prior and what is measured mean the same thing.

- **Rates** (USD per token, from the model's price row): with prompt caching
  on (what Claude Code does), new content is written to the cache once
  (`cache write` at `cache_ttl`) and read back on each later request
  (`cache read`); with caching off, every request pays plain `input` for it.

      new_content = cw  if caching else in      # the first request that carries a token
      carried     = cr  if caching else in      # each later request that carries it
      output      = out

- **Carry** of x tokens over H requests: what keeping them in the context costs.

      carry(x, H) = x * (new_content + carried * (H - 1))    (0 when H <= 0)

  Uncached this is `x * in * H` (seed 000 exactly); cached it is one cache
  write plus H - 1 cache reads.

- **Recall hop**: bringing R_in tokens back costs them as new content, plus
  the R_out tokens the model writes to ask for them.

      recall_hop(R_in, R_out) = R_in * new_content + R_out * out

- **Offload net saving** (what the gate decides on, what stats reports for a
  would-be offload in observe mode): T result tokens replaced by an S-token
  stub, recalled with probability p.

      net = carry(T, H) - carry(S, H) - p * recall_hop(R_in, R_out)

  Since carry is linear in x, `carry(T, H) - carry(S, H) = carry(T - S, H)`:
  a saving of k tokens is worth `carry(k, H)` whatever cut them (a reducer or
  a stub), which is how stats and replay price every result.

Pure functions over a `Price` (policy/pricing.py); an unknown model has no
price row, and callers then report no dollars rather than guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .pricing import Price

PER_MILLION = 1_000_000.0


@dataclass(frozen=True)
class Rates:
    """USD per token for one model under one caching regime (see the module docstring)."""

    new_content: float
    """The first request that carries a token: cache write (caching on) or input (off)."""
    carried: float
    """Each later request that carries it: cache read (caching on) or input (off)."""
    output: float
    """A token the model writes."""

    @classmethod
    def of(cls, price: Price, *, prompt_caching: bool, cache_ttl: Literal["5m", "1h"] = "5m") -> Rates:
        if prompt_caching:
            return cls(
                price.cache_write(cache_ttl) / PER_MILLION, price.cache_read / PER_MILLION, price.output / PER_MILLION
            )
        return cls(price.input / PER_MILLION, price.input / PER_MILLION, price.output / PER_MILLION)

    def carry_per_token(self, horizon: int) -> float:
        """USD per token carried over `horizon` requests; 0 when the horizon is 0 (nothing carries it)."""
        if horizon <= 0:
            return 0.0
        return self.new_content + self.carried * (horizon - 1)

    def carry(self, tokens: float, horizon: int) -> float:
        """carry(x, H): USD to keep `tokens` in the context for `horizon` requests."""
        return tokens * self.carry_per_token(horizon)

    def recall_hop(self, input_tokens: float, output_tokens: float) -> float:
        """recall_hop(R_in, R_out): the slice brought back as new content plus the call the model writes."""
        return input_tokens * self.new_content + output_tokens * self.output


@dataclass(frozen=True)
class OffloadTerms:
    """The priced terms of replacing a result by a stub (all USD)."""

    reprefill_saving: float
    stub_carry_cost: float
    expected_recall_hop_cost: float

    @property
    def net(self) -> float:
        return self.reprefill_saving - (self.stub_carry_cost + self.expected_recall_hop_cost)


def offload_terms(
    rates: Rates,
    *,
    output_tokens: float,
    stub_tokens: float,
    horizon: int,
    recall_probability: float,
    recall_input_tokens: float,
    recall_output_tokens: float,
) -> OffloadTerms:
    """net = carry(T, H) - carry(S, H) - p * recall_hop(R_in, R_out)."""
    return OffloadTerms(
        reprefill_saving=rates.carry(output_tokens, horizon),
        stub_carry_cost=rates.carry(stub_tokens, horizon),
        expected_recall_hop_cost=recall_probability * rates.recall_hop(recall_input_tokens, recall_output_tokens),
    )
