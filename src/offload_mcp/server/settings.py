"""Settings of the upstream face: HTTP security and extras."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ServerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    auth_token: str | None = Field(default=None, description="Bearer token required on HTTP transports (also OFFLOAD_MCP_AUTH_TOKEN); required when binding a non-loopback address.")
    allowed_hosts: list[str] = Field(default_factory=list, description="Extra Host header values accepted on HTTP transports (DNS-rebinding protection).")
    allowed_origins: list[str] = Field(default_factory=list, description="Extra Origin header values accepted on HTTP transports.")
    max_sessions: int = Field(default=1000, ge=1, description="Most streamable-HTTP sessions open at once (the SDK's default is 10,000).")
    max_sessions_per_peer: int = Field(default=100, ge=1, description="Most streamable-HTTP sessions one client address may hold; past it `initialize` gets 429.")
    session_idle_timeout_s: float = Field(default=300.0, gt=0, description="A streamable-HTTP session with no request for this long is closed (the SDK's default is 30 minutes).")
    max_connections: int | None = Field(default=None, ge=1, description="Most HTTP connections open at once; past it the one waiting longest for its headers is closed. Default: half the fd limit.")
    header_timeout_s: float = Field(default=10.0, gt=0, description="A connection must send complete request headers within this long (slow-client defence).")
    body_idle_timeout_s: float = Field(default=30.0, gt=0, description="A request body that sends nothing for this long is dropped with its connection.")
    log_bodies: bool = Field(default=False, description="Log result bodies and argument values (debug only).")
