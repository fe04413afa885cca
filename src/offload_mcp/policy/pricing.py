"""Per-model prices, USD per million tokens, that the net-saving gate multiplies by.

Each row has the five rates a cached conversation pays: uncached input,
output, 5-minute and 1-hour cache writes, and cache reads. Rows for the
current Claude models come from Anthropic's price list (cache write = 1.25x
input for 5 minutes, 2x for 1 hour; cache read = 0.1x input). OpenAI and
Gemini cache automatically: a write costs plain input and a read the
discounted cached-input rate. Prices change; users add or override rows under
`offload.policy.pricing`, and an unknown model has no row, so the gate cannot
prove a saving and never fires (the seed's safety rule).

Name resolution is exact after normalisation, never fuzzy: lowercase, drop a
provider prefix (`anthropic/`, `openai/`, `google/`, `models/`), a trailing
release date (`-20251101`) or `-latest`, dots in version numbers become
dashes, and a bare `opus-4-6` gains its `claude-` prefix; then the alias table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from .settings import PriceRow


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float

    @classmethod
    def anthropic(cls, input: float, output: float) -> Price:
        return cls(input, output, input * 1.25, input * 2.0, input * 0.1)

    @classmethod
    def auto_cached(cls, input: float, output: float, cached_input: float) -> Price:
        return cls(input, output, input, input, cached_input)

    @classmethod
    def from_row(cls, row: PriceRow) -> Price:
        return cls(
            row.input,
            row.output,
            row.cache_write_5m if row.cache_write_5m is not None else row.input * 1.25,
            row.cache_write_1h if row.cache_write_1h is not None else row.input * 2.0,
            row.cache_read if row.cache_read is not None else row.input * 0.1,
        )

    def cache_write(self, ttl: str) -> float:
        return self.cache_write_1h if ttl == "1h" else self.cache_write_5m


_OPUS_4_5_PLUS = Price.anthropic(5.0, 25.0)  # 6.25 / 10 / 0.50
_OPUS_4_0 = Price.anthropic(15.0, 75.0)
_SONNET_4 = Price.anthropic(3.0, 15.0)
_HAIKU_4_5 = Price.anthropic(1.0, 5.0)

MODEL_PRICING: dict[str, Price] = {
    "claude-opus-4-8": _OPUS_4_5_PLUS,
    "claude-opus-4-7": _OPUS_4_5_PLUS,
    "claude-opus-4-6": _OPUS_4_5_PLUS,
    "claude-opus-4-5": _OPUS_4_5_PLUS,
    "claude-opus-4-1": _OPUS_4_0,
    "claude-opus-4-0": _OPUS_4_0,
    "claude-sonnet-4-6": _SONNET_4,
    "claude-sonnet-4-5": _SONNET_4,
    "claude-sonnet-4-0": _SONNET_4,
    "claude-haiku-4-5": _HAIKU_4_5,
    "claude-3-5-haiku": Price.anthropic(0.8, 4.0),
    "gpt-5": Price.auto_cached(1.25, 10.0, 0.125),
    "gpt-5-mini": Price.auto_cached(0.25, 2.0, 0.025),
    "gpt-4-1": Price.auto_cached(2.0, 8.0, 0.5),
    "gpt-4-1-mini": Price.auto_cached(0.4, 1.6, 0.1),
    "gpt-4o": Price.auto_cached(2.5, 10.0, 1.25),
    "o3": Price.auto_cached(2.0, 8.0, 0.5),
    "gemini-2-5-pro": Price.auto_cached(1.25, 10.0, 0.125),
    "gemini-2-5-flash": Price.auto_cached(0.3, 2.5, 0.03),
}

ALIASES: dict[str, str] = {
    "opus": "claude-opus-4-8",
    "sonnet": "claude-sonnet-4-6",
    "haiku": "claude-haiku-4-5",
    "claude-opus-4": "claude-opus-4-0",
    "claude-sonnet-4": "claude-sonnet-4-0",
    "claude-4-opus": "claude-opus-4-0",
    "claude-4-sonnet": "claude-sonnet-4-0",
    "claude-3-5-haiku-latest": "claude-3-5-haiku",
    "gpt-4-1-nano": "gpt-4-1-mini",
}

_PROVIDER = re.compile(r"^(anthropic|openai|google|models|vertex_ai|bedrock)/")
_DATE = re.compile(r"(-20\d{6}|-\d{4}-\d{2}-\d{2}|-latest)$")
_VERSION_DOT = re.compile(r"(?<=\d)\.(?=\d)")


def normalize_model_name(name: str) -> str:
    key = name.strip().lower()
    while _PROVIDER.match(key):
        key = _PROVIDER.sub("", key, count=1)
    key = _VERSION_DOT.sub("-", key)
    key = _DATE.sub("", key)
    if re.match(r"^(opus|sonnet|haiku)-\d", key):
        key = "claude-" + key
    return ALIASES.get(key, key)


def resolve_price(model: str, overrides: Mapping[str, PriceRow | Price] | None = None) -> Price | None:
    """The price row for a model name, or None when no row is known (the gate then never fires)."""
    for table_key, row in (overrides or {}).items():
        if table_key == model or normalize_model_name(table_key) == normalize_model_name(model):
            return row if isinstance(row, Price) else Price.from_row(row)
    return MODEL_PRICING.get(normalize_model_name(model))
