"""Per-model prices, USD per million tokens, that the net-saving gate multiplies by.

Each row has the five rates a cached conversation pays: uncached input,
output, 5-minute and 1-hour cache writes, and cache reads. Rows for the
current Claude models come from Anthropic's price list (cache write = 1.25x
input for 5 minutes, 2x for 1 hour; cache read = 0.1x input). OpenAI and
Gemini cache automatically: a write costs plain input and a read the
discounted cached-input rate. Prices change; users add or override rows under
`offload.policy.pricing`.

Prices must not go stale as models ship: a model with no row of its own but
of a known family (`claude-opus-*`, `claude-sonnet-*`, `claude-haiku-*`,
`gpt-5*`) is priced as that family's newest known row (`FAMILY_ROWS`), and
says so once in the log; `price_for` returns the note for `stats` and `demo`
to show. A model of no known family keeps the safety rule: no row, so
the gate cannot prove a saving and never fires; that too is said once.

Name resolution is exact after normalisation, never fuzzy: lowercase, drop a
provider prefix (`anthropic/`, `openai/`, `google/`, `models/`), a trailing
release date (`-20251101`) or `-latest`, dots in version numbers become
dashes, and a bare `opus-4-6` gains its `claude-` prefix; then the alias table.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from .settings import PriceRow

logger = logging.getLogger(__name__)


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

FAMILY_ROWS: dict[str, str] = {
    "claude-opus-": "claude-opus-4-8",
    "claude-sonnet-": "claude-sonnet-4-6",
    "claude-haiku-": "claude-haiku-4-5",
    "gpt-5": "gpt-5",
}
"""Name prefix (after normalisation) -> the family's newest known row, which prices a model of the family
that has no row of its own. Update the row names here when a newer model's row is added above."""

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


class PriceLookup(NamedTuple):
    price: Price | None
    """The rates to use, or None when no row is known (the gate then never fires)."""
    note: str | None
    """Set when the price is not the model's own row: priced by its family, or not priced at all."""


def _own_row(model: str, overrides: Mapping[str, PriceRow | Price] | None) -> Price | None:
    for table_key, row in (overrides or {}).items():
        if table_key == model or normalize_model_name(table_key) == normalize_model_name(model):
            return row if isinstance(row, Price) else Price.from_row(row)
    return MODEL_PRICING.get(normalize_model_name(model))


def family_row(model: str) -> str | None:
    """The row that prices `model` by its family (longest matching prefix), or None for no known family."""
    key = normalize_model_name(model)
    for prefix in sorted(FAMILY_ROWS, key=len, reverse=True):
        if key.startswith(prefix):
            return FAMILY_ROWS[prefix]
    return None


_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def _say_once(model: str, note: str) -> None:
    with _warned_lock:
        if (model, note) in _warned:
            return
        _warned.add((model, note))
    logger.warning("%s", note)


def price_for(model: str, overrides: Mapping[str, PriceRow | Price] | None = None) -> PriceLookup:
    """The price of a model and, when it is not the model's own row, a note saying what was done.

    The model's own row (a config override first, then the table); else its family's newest row (which
    a config override of that row also changes); else none. A note is logged once per process."""
    own = _own_row(model, overrides)
    if own is not None:
        return PriceLookup(own, None)
    family = family_row(model)
    if family is not None:
        price = _own_row(family, overrides)
        if price is not None:
            note = (
                f"model {model!r} has no pricing row: priced as {family}, the newest known row of its family"
                f" (add a row for it under offload.policy.pricing to set its own)"
            )
            _say_once(model, note)
            return PriceLookup(price, note)
    note = (
        f"model {model!r} has no pricing row and no known family: the net-saving gate will not fire"
        " (add a row under offload.policy.pricing); results over offload.policy.client_max_result_chars"
        " are still offloaded"
    )
    _say_once(model, note)
    return PriceLookup(None, note)


def resolve_price(model: str, overrides: Mapping[str, PriceRow | Price] | None = None) -> Price | None:
    """The price for a model name (its own row, else its family's newest), or None when none is known."""
    return price_for(model, overrides).price
