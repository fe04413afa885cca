"""Settings of the result policy and the net-saving gate."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class PriceRow(BaseModel):
    """USD per million tokens for one model."""

    model_config = ConfigDict(extra="forbid")

    input: float = Field(description="Uncached input tokens, USD per million.")
    output: float = Field(description="Output tokens, USD per million.")
    cache_write_5m: float | None = Field(
        default=None, description="5-minute cache write, USD per million (default 1.25x input)."
    )
    cache_write_1h: float | None = Field(
        default=None, description="1-hour cache write, USD per million (default 2x input)."
    )
    cache_read: float | None = Field(default=None, description="Cache read, USD per million (default 0.1x input).")


class PolicySettings(BaseModel):
    """One decision with one reason for every tool result."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        default=True, description="Master switch; false passes every result through untouched (reason `disabled`)."
    )
    small_threshold_chars: int = Field(
        default=8_000, ge=0, description="Results at or below this many chars are kept inline (reason `small`)."
    )
    large_threshold_chars: int = Field(
        default=40_000,
        ge=0,
        description="The gate's pre-filter: only results at or above this many chars may be offloaded. 40,000 by measurement (docs/fidelity.md).",
    )
    client_max_result_chars: int = Field(
        default=100_000,
        ge=0,
        description="The largest result sent inline; above it a result is offloaded whatever the gate says (Claude Code alone files such results behind a preview). 0 disables.",
    )
    model: str = Field(
        default="claude-opus-4-6", description="Model whose pricing row prices the gate; aliases accepted."
    )
    horizon: int = Field(
        default=5,
        ge=0,
        description="Expected model requests that carry a result: the one that reads it plus one per later call in its session (`offload-mcp stats` observes it and suggests a value).",
    )
    recall_probability: float = Field(
        default=0.5, ge=0.0, le=1.0, description="Prior probability the model recalls an offloaded result."
    )
    prompt_caching: bool = Field(
        default=True,
        description="Price inline results as cache-written once and cache-read each later turn (true on Claude Code).",
    )
    cache_ttl: Literal["5m", "1h"] = Field(
        default="5m", description="Which cache-write rate applies when prompt_caching is on."
    )
    stub_tokens: int = Field(
        default=250,
        ge=16,
        description="Token budget of a stub without its identifier index. The gate prices the stub as built (this plus the index), or that bound when it has none.",
    )
    stub_index_chars: int = Field(
        default=6_000,
        ge=0,
        description="Least budget of the stub's identifier index (docs/stub-index.md), on top of stub_tokens; with the stub, never over half of client_max_result_chars. 0 turns it off.",
    )
    stub_index_share: float = Field(
        default=0.4,
        ge=0.0,
        le=1.0,
        description="The index may grow to this share of the result's chars (above stub_index_chars, up to a quarter of client_max_result_chars): a larger result lists more of its rows.",
    )
    resource_link: bool = Field(
        default=True,
        description="Each stub also carries a resource_link to its stored body (offload://result/trm_...), so a host can read the whole result without the model; false omits it (docs/configuration-notes.md).",
    )
    recall_input_tokens: int = Field(
        default=2_000, ge=0, description="Tokens a recall hop brings back in, priced at the input rate."
    )
    recall_output_tokens: int = Field(
        default=200, ge=0, description="Tokens the model writes to make a recall call, priced at the output rate."
    )
    chars_per_token: float = Field(default=4.0, gt=0, description="Token estimate: chars / this.")
    pricing: dict[str, PriceRow] = Field(
        default_factory=dict, description="Extra or overriding pricing rows, keyed by model name."
    )

    @model_validator(mode="after")
    def _limits_in_order(self) -> PolicySettings:
        # The branch order (small -> below_large -> over_client_limit) only protects the client when its limit is above the pre-filter.
        if self.client_max_result_chars and self.client_max_result_chars < self.large_threshold_chars:
            raise ValueError(
                f"client_max_result_chars ({self.client_max_result_chars}) is below large_threshold_chars "
                f"({self.large_threshold_chars}): results in between would be kept and rejected by the client; "
                "lower large_threshold_chars (and small_threshold_chars) to at most client_max_result_chars"
            )
        if self.client_max_result_chars and self.client_max_result_chars < self.small_threshold_chars:
            raise ValueError(
                f"client_max_result_chars ({self.client_max_result_chars}) is below small_threshold_chars ({self.small_threshold_chars})"
            )
        return self
