"""A tiny Anthropic Messages API on 127.0.0.1 that plays a scripted model, for Claude Code headless runs.

Claude Code (`claude -p`) sends its conversation to `ANTHROPIC_BASE_URL/v1/messages`. This server
answers the main conversation's N-th turn with the N-th scripted step (a `tool_use`, or a final
text) and records every request, so a test can read the exact `tool_result` blocks Claude Code
put in front of its model: the ground truth for "what the model sees".

How a turn is counted: the number of assistant messages already in the request. Side requests
Claude Code makes with other prompts (titles, summaries, token counts) get a short text answer and
are recorded too but do not advance the script. Streaming (SSE) and non-streaming are both served.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Step = dict[str, Any]
"""{"tool": name, "input": {...}} for a tool_use turn, {"parallel": [such steps]} for one turn of several
tool_use blocks (Claude Code runs read-only tools of one turn concurrently), or {"text": "..."} for a final
answer.
A callable step gets the tool results recorded so far and returns such a dict (e.g. a recall of
the id the previous result carried)."""


def tool_use(tool: str, **arguments: Any) -> Step:
    return {"tool": tool, "input": arguments}


@dataclass
class FakeMessagesAPI:
    prompt: str
    """The user prompt of the main conversation (how its requests are told from side requests)."""
    steps: Sequence[Step | Callable[[list[dict[str, Any]]], Step]]
    requests: list[dict[str, Any]] = field(default_factory=list)
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    """Every tool_result block Claude Code sent, in order, with `tool` (the name it answered)."""
    errors: list[str] = field(default_factory=list)
    """Scripted steps that raised (each ended the run with a text answer)."""
    tools_seen: list[list[str]] = field(default_factory=list)
    """Tool names offered to the model on each main-conversation turn."""
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # ---- lifecycle ----------------------------------------------------------

    def __enter__(self) -> FakeMessagesAPI:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet: stderr belongs to the test
                pass

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                api._json(self, 200, {"data": [], "has_more": False})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                if "count_tokens" in self.path:
                    api._json(self, 200, {"input_tokens": 1000})
                    return
                if not self.path.split("?")[0].endswith("/v1/messages"):
                    api._json(self, 200, {})
                    return
                api._answer(self, body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # ---- the model ------------------------------------------------------------

    def _is_main(self, body: dict[str, Any]) -> bool:
        for message in body.get("messages") or []:
            if message.get("role") != "user":
                continue
            content = message.get("content")
            texts = (
                [content]
                if isinstance(content, str)
                else [b.get("text", "") for b in content or [] if isinstance(b, dict)]
            )
            return any(self.prompt in t for t in texts)
        return False

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(body)
            main = self._is_main(body) and bool(body.get("tools"))
            if main:
                step = self._next_step(body)
            else:
                step = {"text": "ok"}
        content = self._content(step, len(self.requests))
        message = {
            "id": f"msg_{len(self.requests):04d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-sonnet-4-5"),
            "content": content,
            "stop_reason": "tool_use" if content[0]["type"] == "tool_use" else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": 100,
                "output_tokens": 20,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }
        if body.get("stream"):
            self._stream(handler, message)
        else:
            self._json(handler, 200, message)

    def _next_step(self, body: dict[str, Any]) -> Step:
        messages = body.get("messages") or []
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        self.tools_seen.append([t.get("name", "") for t in body.get("tools") or []])
        # The tool_result blocks of the latest user messages answer the previous tool_use.
        names = {}
        for m in messages:
            if m.get("role") == "assistant" and isinstance(m.get("content"), list):
                for b in m["content"]:
                    if b.get("type") == "tool_use":
                        names[b.get("id")] = b.get("name")
        # Claude Code may send a further message after them (on its fifth turn, a `system` one saying the user
        # has not heard from the model in a while): every message since the latest assistant one is read.
        since = len(messages)
        while since and messages[since - 1].get("role") != "assistant":
            since -= 1
        for m in messages[since:]:
            for b in m.get("content") if isinstance(m.get("content"), list) else []:
                if (
                    isinstance(b, dict)
                    and b.get("type") == "tool_result"
                    and not any(r["tool_use_id"] == b.get("tool_use_id") for r in self.tool_results)
                ):
                    self.tool_results.append({**b, "tool": names.get(b.get("tool_use_id")), "turn": turn})
        if turn >= len(self.steps):
            return {"text": "done"}
        step = self.steps[turn]
        if not callable(step):
            return step
        try:
            return step(list(self.tool_results))
        except (
            Exception
        ) as err:  # a broken script ends the run at once (a crash here makes Claude Code retry for minutes)
            self.errors.append(f"turn {turn}: {type(err).__name__}: {err}")
            return {"text": f"script failed at turn {turn}"}

    @staticmethod
    def _content(step: Step, n: int) -> list[dict[str, Any]]:
        if "parallel" in step:
            return [
                {"type": "tool_use", "id": f"toolu_{n:06d}_{i}", "name": use["tool"], "input": use["input"]}
                for i, use in enumerate(step["parallel"])
            ]
        if "tool" in step:
            return [{"type": "tool_use", "id": f"toolu_{n:06d}", "name": step["tool"], "input": step["input"]}]
        return [{"type": "text", "text": step.get("text", "done")}]

    # ---- wire -------------------------------------------------------------------

    @staticmethod
    def _json(handler: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    @staticmethod
    def _stream(handler: BaseHTTPRequestHandler, message: dict[str, Any]) -> None:
        events: list[tuple[str, dict[str, Any]]] = []
        start = {**message, "content": [], "stop_reason": None}
        events.append(("message_start", {"type": "message_start", "message": start}))
        for i, block in enumerate(message["content"]):
            if block["type"] == "text":
                events.append(
                    (
                        "content_block_start",
                        {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                    )
                )
                events.append(
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": i,
                            "delta": {"type": "text_delta", "text": block["text"]},
                        },
                    )
                )
            else:
                events.append(
                    (
                        "content_block_start",
                        {"type": "content_block_start", "index": i, "content_block": {**block, "input": {}}},
                    )
                )
                events.append(
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": i,
                            "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
                        },
                    )
                )
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": 20},
                },
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        data = "".join(f"event: {name}\ndata: {json.dumps(payload)}\n\n" for name, payload in events).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
