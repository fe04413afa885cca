"""Settings of the upstream face: HTTP security and extras."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ServerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    auth_token: str | None = Field(default=None, description="Bearer token required on HTTP transports (also OFFLOAD_MCP_AUTH_TOKEN); required when binding a non-loopback address.")
    allowed_hosts: list[str] = Field(default_factory=list, description="Extra Host header values accepted on HTTP transports (DNS-rebinding protection).")
    allowed_origins: list[str] = Field(default_factory=list, description="Extra Origin header values accepted on HTTP transports.")
    log_bodies: bool = Field(default=False, description="Log result bodies and argument values (debug only).")
