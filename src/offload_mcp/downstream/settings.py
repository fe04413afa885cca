"""The wrapped servers: how each is reached (its `mcpServers` entry) and the settings of the sessions to them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class StdioServer(BaseModel):
    """A downstream server started as a subprocess and spoken to over stdio."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["stdio"] | None = Field(default=None, description="Optional; `stdio` when given.")
    command: str = Field(min_length=1, description="Program to start.")
    args: list[str] = Field(default_factory=list, description="Its arguments.")
    env: dict[str, str] = Field(
        default_factory=dict, description="Extra environment variables; `${VAR}` expands from ours."
    )
    cwd: str | None = Field(default=None, description="Working directory.")

    @property
    def transport(self) -> str:
        return "stdio"


class RemoteServer(BaseModel):
    """A downstream server reached over SSE or streamable HTTP."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, description="Endpoint URL.")
    type: Literal["sse", "streamable-http", "http"] | None = Field(
        default=None, description="Transport (Claude Code spelling)."
    )
    transport: Literal["sse", "streamable-http", "http"] | None = Field(
        default=None, description="Transport (alternative spelling)."
    )
    headers: dict[str, str] = Field(
        default_factory=dict, description="HTTP headers; `${VAR}` expands from the environment."
    )

    @model_validator(mode="after")
    def _one_transport(self) -> RemoteServer:
        if self.type and self.transport and _norm(self.type) != _norm(self.transport):
            raise ValueError(f"`type` ({self.type}) and `transport` ({self.transport}) disagree")
        return self

    @property
    def kind(self) -> Literal["sse", "streamable-http"]:
        chosen = self.type or self.transport
        if chosen is None:
            # Claude Code's default for a bare url is streamable HTTP; a path ending in /sse is the old transport.
            return "sse" if self.url.rstrip("/").endswith("/sse") else "streamable-http"
        return _norm(chosen)


def _norm(kind: str) -> Literal["sse", "streamable-http"]:
    return "sse" if kind == "sse" else "streamable-http"


ServerEntry = StdioServer | RemoteServer


class DownstreamSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    startup_timeout_s: float = Field(
        default=30.0, gt=0, description="How long a downstream server may take to start and initialize."
    )
    first_list_wait_s: float = Field(
        default=10.0,
        ge=0,
        description="How long the first tools/list waits for servers still starting (initialize never waits); later ones join with tools/list_changed. Keep well under a client's own start-up limit (Claude Code: 30 s).",
    )
    call_timeout_s: float = Field(
        default=120.0,
        gt=0,
        description="Per-call timeout; past it the call is cancelled and an isError result returned.",
    )
    restart_backoff_s: float = Field(
        default=0.5, ge=0, description="First delay before restarting a dead server; doubles per failure."
    )
    restart_backoff_max_s: float = Field(default=30.0, ge=0, description="Longest delay between restart attempts.")
    max_relayed_request_bytes: int = Field(
        default=1_000_000,
        ge=1024,
        description="Largest server-to-client request (sampling, elicitation, roots) or log message relayed to a client, "
        "as JSON; a larger one is refused, a log line dropped (docs/configuration-notes.md).",
    )
    max_result_bytes: int = Field(
        default=64 * 1024 * 1024, gt=0, description="Results larger than this are refused with a clear isError result."
    )
    max_inflight_result_bytes: int = Field(
        default=1024 * 1024 * 1024,
        ge=1024 * 1024,
        description="Memory all large answers (over 256 KiB) in flight may hold together, each byte counted 4 times; "
        "when spent, further ones wait and one that cannot fit is refused (docs/configuration-notes.md).",
    )
    max_inflight_wait_s: float = Field(
        default=30.0,
        gt=0,
        description="How long a large answer waits for room in max_inflight_result_bytes before it is refused.",
    )
