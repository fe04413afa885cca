"""Settings of the upstream face: HTTP security and extras."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class ServerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    auth_token: str | None = Field(
        default=None,
        description="Bearer token required on HTTP transports (also OFFLOAD_MCP_AUTH_TOKEN); required when binding a non-loopback address, and there at least 8 characters (never blank, no whitespace at its ends).",
    )
    auth_tokens: dict[str, str] = Field(
        default_factory=dict,
        description="Several callers, one bearer token each: `{principal: token}` (or a list of `{principal, token}`), "
        "naming the caller for `offload.ledger.scope: principal`; `auth_token` alone is principal `default`.",
    )
    operator_principals: list[str] = Field(
        default_factory=list,
        description="Principals (names in `auth_tokens`, or `default` for `auth_token`) whose GET /dashboard shows every "
        "caller's rows under `offload.ledger.scope: principal`; any other caller sees its own rows only.",
    )
    stateless: bool = Field(
        default=False,
        description="Streamable HTTP without protocol sessions, for replicas behind a load balancer without stickiness: "
        "every request is served on its own (2026-era requests are always so).",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Extra Host header values accepted on HTTP transports (DNS-rebinding protection).",
    )
    allowed_origins: list[str] = Field(
        default_factory=list, description="Extra Origin header values accepted on HTTP transports."
    )
    max_sessions: int = Field(
        default=1000, ge=1, description="Most streamable-HTTP sessions open at once (the SDK's default is 10,000)."
    )
    max_sessions_per_peer: int = Field(
        default=100,
        ge=1,
        description="Most streamable-HTTP sessions one client address may hold; past it `initialize` gets 429.",
    )
    session_idle_timeout_s: float = Field(
        default=300.0,
        gt=0,
        description="A streamable-HTTP session with no request for this long is closed (the SDK's default is 30 minutes).",
    )
    max_connections: int | None = Field(
        default=None,
        ge=1,
        description="Most HTTP connections open at once; past it the one waiting longest for its headers is closed. Default: half the fd limit.",
    )
    header_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="A connection must send complete request headers within this long (slow-client defence).",
    )
    body_idle_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="A request body that sends nothing for this long is dropped with its connection.",
    )
    log_bodies: bool = Field(default=False, description="Log result bodies and argument values (debug only).")

    @field_validator("auth_tokens", mode="before")
    @classmethod
    def _tokens_as_mapping(cls, value: Any) -> Any:
        """Accept `[{principal, token}, ...]` as well as `{principal: token}`; refuse a token used twice."""
        if isinstance(value, list):
            mapping: dict[str, Any] = {}
            for i, item in enumerate(value):
                if not isinstance(item, dict) or set(item) != {"principal", "token"}:
                    raise ValueError(
                        f"item {i}: expected an object with exactly `principal` and `token`, got {item!r:.80}"
                    )
                if item["principal"] in mapping:
                    raise ValueError(f"item {i}: principal {item['principal']!r} is named twice")
                mapping[item["principal"]] = item["token"]
            value = mapping
        if isinstance(value, dict):
            tokens = [t for t in value.values() if isinstance(t, str)]
            for principal, token in value.items():
                if not isinstance(principal, str) or not principal.strip():
                    raise ValueError("a principal name must be a non-empty string")
                if not isinstance(token, str) or len(token.strip()) < 8 or token != token.strip():
                    raise ValueError(
                        f"principal {principal!r}: the token must be a string of at least 8 characters, "
                        "without whitespace at its ends"
                    )
            if len(set(tokens)) != len(tokens):
                raise ValueError("two principals share one token: each caller needs its own")
        return value

    @model_validator(mode="after")
    def _operators_are_principals(self) -> ServerSettings:
        """An operator must be a principal some token names, or the setting would silently grant nothing."""
        # `default` is the single auth_token's principal, which OFFLOAD_MCP_AUTH_TOKEN may also set.
        known = set(self.auth_tokens) | {"default"}
        unknown = [name for name in self.operator_principals if name not in known]
        if unknown:
            names = ", ".join(sorted(known))
            raise ValueError(f"operator_principals: {unknown[0]!r} is not a principal of auth_tokens (known: {names})")
        return self
