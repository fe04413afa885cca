"""A large tools/call answer's structuredContent travels beside the SDK's result check, not through it.

Why: the SDK's `ClientSession.send_request` checks every result against the negotiated revision's
model by dumping it to JSON-mode Python and throwing the dump away
(`mcp_types.methods.validate_server_result`). On a large JSON API answer (records as text plus the
same records as structuredContent) that dump is a noticeable share of the call, and its temporary
objects feed the cyclic collector (docs/design.md, "Reading large answers").

How it works: the stdio transport hands the SDK such an answer with its structuredContent replaced
by a one-key placeholder holding a random token, and keeps the object here; `DownstreamServer.call_tool`
puts it back into the `CallToolResult` the SDK returns. Remote (HTTP, SSE) answers do the same where
bounded_http.py parses them off the loop. The SDK still checks everything else; its check of the
placeholder passes exactly when the object's would (every revision types it as an object with string
keys, all a JSON object can be).

When it is inert: answers under `SET_ASIDE_BYTES`; answers to anything but a tools/call the write
side saw going out; a structuredContent that is not a non-empty JSON object (the SDK judges it
itself); a session that negotiated a revision without structuredContent (the SDK drops the field
there, so nothing would come back for it). A held object is dropped when the SDK cancels its call,
and at most `MAX_HELD` wait; one pushed out makes its call an error saying so, never a result
without its structuredContent.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio.abc
import mcp_types as types
from mcp.shared.message import SessionMessage

from .shelf import TokenShelf

logger = logging.getLogger(__name__)

SET_ASIDE_BYTES = 256 * 1024
"""Answers at least this large (the line, in bytes) have their structuredContent set aside."""
MAX_HELD = 64
PLACEHOLDER_KEY = "offload-mcp/set-aside"
FIRST_REVISION_WITH_STRUCTURED = "2025-06-18"
LOST = "its structuredContent was lost before it was read (more than offload-mcp holds at once were waiting)"


class StructuredAside:
    """One per downstream session: the tools/call ids in flight and the objects set aside for them."""

    def __init__(self, max_held: int = MAX_HELD) -> None:
        self.enabled = False
        """Set once the session negotiated a revision that has structuredContent."""
        self._calls: set[Any] = set()
        self._held: TokenShelf[tuple[Any, dict[str, Any]]] = TokenShelf(max_held)
        """token -> (request id, the structuredContent)"""
        self._token_of: dict[Any, str] = {}

    def enable_for(self, protocol_version: str | None) -> None:
        self.enabled = protocol_version is not None and protocol_version >= FIRST_REVISION_WITH_STRUCTURED

    # ---- the transport's side -------------------------------------------------------------

    def noting(self, write: Any) -> NotingWriteStream:
        """A session's write stream (any transport's) that shows this aside each message it sends."""
        return NotingWriteStream(write, self)

    def sent(self, message: Any) -> None:
        """Note a message going to the server: a tools/call's id, or a cancellation that ends one."""
        if isinstance(message, types.JSONRPCRequest) and message.method == "tools/call":
            self._calls.add(message.id)
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            request_id = (message.params or {}).get("requestId")
            self._calls.discard(request_id)
            token = self._token_of.pop(request_id, None)
            if token is not None:
                self._held.take(token)

    def is_call(self, request_id: Any) -> bool:
        """Whether `request_id` is a tools/call in flight (its caller is still waiting for it)."""
        return request_id in self._calls

    def received(self, item: SessionMessage | Exception, size: int) -> SessionMessage | Exception:
        """The item the SDK is handed: a large tools/call answer with its structuredContent set aside."""
        if not isinstance(item, SessionMessage):
            return item
        message = item.message
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError) or message.id not in self._calls:
            return item
        self._calls.discard(message.id)
        if not self.enabled or size < SET_ASIDE_BYTES or not isinstance(message, types.JSONRPCResponse):
            return item
        structured = message.result.get("structuredContent")
        if not isinstance(structured, dict) or not structured:
            return item
        token, pushed = self._held.put((message.id, structured))
        self._token_of[message.id] = token
        for lost, (lost_id, _) in pushed:
            self._token_of.pop(lost_id, None)
            logger.warning("a structuredContent set aside was never claimed (%s); it is dropped", lost)
        result = {**message.result, "structuredContent": {PLACEHOLDER_KEY: token}}
        return SessionMessage(message.model_copy(update={"result": result}), item.metadata)

    # ---- the caller's side ------------------------------------------------------------------

    def restore(self, result: types.CallToolResult) -> types.CallToolResult | None:
        """The result with its structuredContent back; None when it was set aside and is gone."""
        placeholder = result.structured_content
        if not isinstance(placeholder, dict) or len(placeholder) != 1:
            return result
        token = placeholder.get(PLACEHOLDER_KEY)
        if not isinstance(token, str) or not self._held.owns(token):
            return result  # the server's own value (it cannot know the prefix)
        held = self._held.take(token)
        if held is None:
            return None
        self._token_of.pop(held[0], None)
        return result.model_copy(update={"structured_content": held[1]})


class NotingWriteStream(anyio.abc.ObjectSendStream[SessionMessage]):
    """A session's write stream that shows `aside` each message before sending it on."""

    def __init__(self, inner: Any, aside: StructuredAside) -> None:
        self.inner = inner
        self.aside = aside

    async def send(self, item: SessionMessage) -> None:
        self.aside.sent(item.message)
        await self.inner.send(item)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
