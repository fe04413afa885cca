"""Settings of the tools/list catalog: namespacing and cold-tool deferral."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class CatalogSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prefix: Literal["auto", "always", "never"] = Field(
        default="auto",
        description="`auto` prefixes only colliding names with `<server>__`; `always` prefixes every downstream tool; `never` fails on a collision.",
    )
    separator: str = Field(
        default="__", min_length=1, description="Joins server name and tool name when a tool is prefixed."
    )
    deferral: Literal["hint", "search", "off"] = Field(
        default="hint",
        description="How cold tools are offered: marked for deferred loading (never more bytes than `off`), hidden behind search/invoke tools, or listed as given (`off`: no marks at all; docs/configuration-notes.md).",
    )
    hot_tools: list[str] = Field(
        default_factory=list,
        description="Globs matched against a tool's listed name or `server/tool`; matching tools are always hot (eagerly loaded).",
    )
    learn_hot_tools: bool = Field(
        default=True, description="Add the most-called tools in the ledger's recent history to the hot set."
    )
    max_hot_tools: int = Field(default=8, ge=0, description="Most tools the learned hot set may hold.")
    learn_window_days: float = Field(
        default=30.0, gt=0, description="How many days of the ledger's call history hot-tool learning counts."
    )
    learn_min_calls: int = Field(
        default=3, ge=1, description="Calls a tool needs within that window before it can be learned hot."
    )
    search_limit: int = Field(
        default=5, ge=1, le=50, description="Most matches one search_tools answer returns (search mode)."
    )
    list_page_bytes: int = Field(
        default=512 * 1024,
        ge=4096,
        description="Most bytes of tool definitions in one tools/list page; more tools continue behind a cursor (SDK clients reject a 1 MiB message).",
    )
    search_regex_timeout_ms: int = Field(
        default=250,
        ge=10,
        le=10_000,
        description="Time budget of one regex search over the catalog; past it the pattern is refused.",
    )
