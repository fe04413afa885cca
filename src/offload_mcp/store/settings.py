"""Settings of the SQLite ledger."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class LedgerSettings(BaseModel):
    """Where full bodies wait for recall, and how long."""

    model_config = ConfigDict(extra="forbid")

    path: Path | None = Field(default=None, description="Ledger file; default `offload-mcp/ledger.db` under the user's XDG state directory.")
    max_total_bytes: int | None = Field(default=None, ge=0, description="Evict least recently used bodies past this stored size; null keeps everything.")
    max_age_days: float | None = Field(default=None, gt=0, description="Evict bodies not used for this many days; null keeps everything.")
    busy_timeout_s: float = Field(default=2.0, ge=0, description="How long a write waits on a locked database before the result passes through unmodified.")
    scope: Literal["global", "session", "principal"] = Field(default="global", description="`session` makes ids recallable only from the session that produced them; `principal` only by the authenticated caller (bearer token, `offload.server.auth_tokens`) they were handed to, on any replica.")
