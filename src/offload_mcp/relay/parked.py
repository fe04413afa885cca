"""A 2026-era tools/call held open across input_required rounds.

The 2026-07-28 protocol has no server-to-client requests: a server that
needs sampling, elicitation or roots answers the call with an
`InputRequiredResult`, and the client retries the call with the answers and
the echoed `requestState`. Downstream servers speak the handshake era and
send those requests mid-call. So a 2026-era call runs its downstream call in
the background (a `ParkedCall`); each round the client sends waits for the
first of: the downstream call finished (the round returns its result), or
the downstream server asked something (the round returns an
`InputRequiredResult` carrying the requests and a token naming the parked
call). The client's retry delivers its answers to the waiting downstream
requests and waits again.

The token is random and unguessable (one client cannot answer another's
call); it never reaches the model. A parked call lives in this process only:
a retry that reaches another replica, or comes after the call finished or
timed out, gets an error result saying so. Inert for clients that declared
no sampling, elicitation or roots (their calls run inline).
"""

from __future__ import annotations

import secrets
import warnings
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

TOKEN_PREFIX = "offload-relay:"


@dataclass
class _Answer:
    ready: anyio.Event = field(default_factory=anyio.Event)
    value: Any = None


class ParkedCall:
    """One 2026-era call's side of the relay: an `Upstream` whose requests become input_required rounds."""

    def __init__(self, capabilities: types.ClientCapabilities | None, session: Any = None) -> None:
        self.token = TOKEN_PREFIX + secrets.token_urlsafe(18)
        self._capabilities = capabilities
        self.session = session  # the current round's ServerSession (logs and progress ride its stream)
        self._pending: dict[str, types.InputRequest] = {}
        self._answers: dict[str, _Answer] = {}
        self._asked = 0
        self._changed = anyio.Event()
        self.result: types.CallToolResult | None = None
        self.claimed = anyio.Event()

    @property
    def origin(self) -> object:
        return self

    @property
    def capabilities(self) -> types.ClientCapabilities | None:
        return self._capabilities

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def ask(self, request: types.ServerRequest, result_type: type[Any], timeout_s: float) -> Any:
        self._asked += 1
        key = f"{request.method.split('/')[0]}-{self._asked}"
        answer = _Answer()
        self._pending[key] = request  # type: ignore[assignment]
        self._answers[key] = answer
        self._wake()
        try:
            with anyio.fail_after(timeout_s):
                await answer.ready.wait()
        finally:
            self._pending.pop(key, None)
            self._answers.pop(key, None)
        value = answer.value
        if isinstance(value, types.ErrorData):
            raise MCPError(code=value.code, message=value.message, data=value.data)
        return result_type.model_validate(
            value.model_dump(by_alias=True, mode="json", exclude_none=True), by_name=False
        )

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        if self.session is not None:
            with warnings.catch_warnings():
                # Deprecated in the 2026 era, yet the way a request-scoped log reaches a client that opted in.
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await self.session.send_log_message(params.level, params.data, params.logger)

    async def notify(self, notification: types.ServerNotification) -> None:
        # The 2026 era has no notifications/elicitation/complete: the retried call itself is the signal.
        return None

    def deliver(self, responses: types.InputResponses | None) -> list[str]:
        """Hand the client's answers to the waiting downstream requests; the keys nobody was waiting for."""
        unknown = []
        for key, response in (responses or {}).items():
            answer = self._answers.get(key)
            if answer is None:
                unknown.append(key)
                continue
            answer.value = response
            answer.ready.set()
            # Answered now, not when the asking task next runs: the next round must not ask again.
            self._pending.pop(key, None)
        return unknown

    def finish(self, result: types.CallToolResult) -> None:
        self.result = result
        self._wake()

    async def next_round(self) -> types.CallToolResult | types.InputRequiredResult:
        """Wait for the call's result or its next question(s)."""
        while True:
            if self.result is not None:
                self.claimed.set()
                return self.result
            if self._pending:
                return types.InputRequiredResult(input_requests=dict(self._pending), request_state=self.token)
            await self._changed.wait()


class Parking:
    """The parked calls of this process, by token."""

    def __init__(self) -> None:
        self._calls: dict[str, ParkedCall] = {}

    def park(self, call: ParkedCall) -> None:
        self._calls[call.token] = call

    def get(self, token: str) -> ParkedCall | None:
        return self._calls.get(token)

    def release(self, call: ParkedCall) -> None:
        self._calls.pop(call.token, None)

    def __len__(self) -> int:
        return len(self._calls)
