"""Settings of the ledger (SQLite file by default, or a PostgreSQL URL)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

URL_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


class LedgerSettings(BaseModel):
    """Where full bodies wait for recall, and how long."""

    model_config = ConfigDict(extra="forbid")

    path: Path | str | None = Field(
        default=None,
        description="Ledger file, or a `postgresql://` URL; default `offload-mcp/ledger.db` under the user's XDG state directory.",
    )
    url: str | None = Field(
        default=None,
        description="A shared PostgreSQL ledger, `postgresql://user@host/db` (needs `offload-mcp[postgres]`); beats `path`. "
        "The OFFLOAD_MCP_LEDGER environment variable beats both, `--ledger` beats all.",
    )
    max_total_bytes: int | None = Field(
        default=None, ge=0, description="Evict least recently used bodies past this stored size; null keeps everything."
    )
    max_age_days: float | None = Field(
        default=None, gt=0, description="Evict bodies not used for this many days; null keeps everything."
    )
    busy_timeout_s: float = Field(
        default=2.0,
        ge=0,
        description="How long a ledger read or write waits on a locked or unresponsive database before it gives up: the result then passes through and recall says the ledger cannot be read (docs/configuration-notes.md).",
    )
    pool_size: int = Field(
        default=4, ge=1, le=100, description="PostgreSQL only: most connections one process keeps open."
    )
    scope: Literal["global", "session", "principal"] = Field(
        default="global",
        description="`session` makes ids recallable only from the session that produced them; `principal` only by the authenticated caller (bearer token, `offload.server.auth_tokens`) they were handed to, on any replica.",
    )

    @field_validator("path", mode="after")
    @classmethod
    def _url_stays_a_url(cls, value: Path | str | None) -> Path | str | None:
        # A Path would fold `postgresql://h/db` into `postgresql:/h/db`, a local folder name.
        if isinstance(value, str) and not URL_PATTERN.match(value):
            return Path(value)
        return value
