"""Settings of the tools/list catalog: namespacing and cold-tool deferral (seed 004)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class CatalogSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prefix: Literal["auto", "always", "never"] = Field(default="auto", description="`auto` prefixes only colliding names with `<server>__`; `always` prefixes every downstream tool; `never` fails on a collision.")
    separator: str = Field(default="__", min_length=1, description="Joins server name and tool name when a tool is prefixed.")
    deferral: Literal["hint", "search", "off"] = Field(default="hint", description="How cold tools are offered: marked for deferred loading, hidden behind search/invoke tools, or listed as given.")
    hot_tools: list[str] = Field(default_factory=list, description="Globs of tool names that are always hot (eagerly loaded).")
    learn_hot_tools: bool = Field(default=True, description="Add the most-called tools in the ledger's recent history to the hot set.")
    max_hot_tools: int = Field(default=8, ge=0, description="Most tools the learned hot set may hold.")
