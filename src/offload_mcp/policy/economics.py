"""The economics of a tool result in the context: one definition, used by the gate, stats, replay and the demo.

Quantities (tokens = chars / `chars_per_token`):

- **Horizon H**: the number of model requests that carry the result: the
  one that reads it (it exists whenever the call was answered: the model
  must read a tool result to go on, whether it then calls again or answers)
  plus one for each later tool call in the same conversation (session or
  trajectory), each made by a request that carried it. So H = later calls
  + 1 (`requests_carrying`), and a result is never priced at zero requests:
  the last result of a session is still written to the context once. One
  definition for all: the gate's `horizon` setting is a prior of H, stats
  measures H from the ledger (calls that followed + 1) and suggests the
  prior from it, replay reads H from a trajectory's steps
  (`last step - step + 1`), so the prior and what is measured mean the same
  thing. (Counting only the later calls priced the last result of every
  session at $0, so a session of one big result "kept tokens out" yet cost
  its recall prior: a saving and a loss at once.)

- **Rates** (USD per token, from the model's price row): with prompt caching
  on (what Claude Code does), new content is written to the cache once
  (`cache write` at `cache_ttl`) and read back on each later request
  (`cache read`); with caching off, every request pays plain `input` for it.

      new_content = cw  if caching else in      # the first request that carries a token
      carried     = cr  if caching else in      # each later request that carries it
      output      = out

- **Carry** of x tokens over H requests: what keeping them in the context costs.

      carry(x, H) = x * (new_content + carried * (H - 1))    (0 when H <= 0)

  Uncached this is `x * in * H`; cached it is one cache
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

- **Two baselines** for the tokens a result kept out of the context
  (`account_result`): against the *raw* result (its characters as the
  server sent them, both channels: what a client with no size rule would
  carry) and against *this client alone* (what the client that made the
  call shows its model of the raw result with no proxy, e.g. Claude Code's
  2,000-char preview of a filed result or its one-line rejection; analysis/clients.py,
  the same model `replay --client` uses). Against the client alone the
  figure may be negative: a stub can be longer than Claude Code's rejection
  message, and buys that the bytes stay one recall away.

Pure functions over a `Price` (policy/pricing.py); an unknown model has no
price row, and callers then report no dollars rather than guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..analysis.clients import ChannelSizes, ClientModel, SizedView
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


def requests_carrying(later_calls: int) -> int:
    """H for a result followed by `later_calls` calls in its conversation: those plus the request that read it."""
    return max(0, later_calls) + 1


@dataclass(frozen=True)
class ResultAccount:
    """What one result through the proxy kept out of the context, against both baselines (tokens)."""

    raw_tokens_saved: float
    """Against the raw result: chars the server sent minus chars the proxy sent (never below 0)."""
    client_tokens_saved: float
    """Against this client alone: what it shows of the raw result minus what it shows of the proxy's (may be < 0)."""
    client_alone: SizedView
    """What the client alone would have shown: length and fate (`inline`, `file`, `rejected`)."""
    client_seen: SizedView
    """What the client shows of the result the proxy sent."""


def account_result(
    client: ClientModel,
    *,
    tool: str,
    raw_chars: int,
    sent_chars: int,
    raw: ChannelSizes,
    sent: ChannelSizes,
    declared_by_tool: int | None,
    declared_by_proxy: int | None,
    chars_per_token: float,
) -> ResultAccount:
    """Both baselines for one result: `raw_chars`/`sent_chars` count every channel (what the proxy bounds),
    `raw`/`sent` are the channels the client reads; `declared_by_*` the `anthropic/maxResultSizeChars`
    the tool declares directly and through the proxy."""
    alone = client.sized(raw, tool=tool, declared_max_chars=declared_by_tool)
    seen = client.sized(sent, tool=tool, declared_max_chars=declared_by_proxy)
    return ResultAccount(
        raw_tokens_saved=max(0, raw_chars - sent_chars) / chars_per_token,
        client_tokens_saved=(alone.chars - seen.chars) / chars_per_token,
        client_alone=alone,
        client_seen=seen,
    )
