"""Settings of the proxy's own tools."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class RecallSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["window", "structural", "both"] = Field(
        default="both",
        description="Retrieval styles recall_tool_result offers: substring/range windows, JSONPath, or both.",
    )
    max_chars: int = Field(default=8_000, ge=256, description="Cap on the characters one recall answer returns.")
    window_chars: int = Field(default=300, ge=0, description="Characters shown either side of each query match.")
    max_matches: int = Field(
        default=10,
        ge=1,
        description="Most query matches one answer looks for (further ones that lie whole in the last window are counted too).",
    )
