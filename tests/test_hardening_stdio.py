"""Issue 13 hardening on stdio, through the real proxy process.

- recall repeats at most a little of the caller's own input, and refuses absurd queries (#9);
- `lines` with thousands of digits is a clear error, not "ValueError" (#10);
- a line on stdin that is not a JSON-RPC message (1M-deep nesting, bad JSON) gets an error reply (#10).
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path

from support.proxy import OFFLOAD_MCP, TRM, initialize_request, proxy_env, proxy_session, text_of
from support.servers import HOSTILE, ROOT

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
import hostile_server  # noqa: E402

from support.zygote import prewarmed


async def test_recall_echo_is_capped_and_absurd_inputs_are_clear_errors(tmp_path: Path) -> None:
    async with proxy_session(["--ledger", str(tmp_path / "l.db"), "--", *HOSTILE]) as session:
        offloaded = await session.call_tool("chunks", {"size": 150_000, "seed": 3})
        trm_id = TRM.search(text_of(offloaded)).group(0)  # type: ignore[union-attr]
        body = "".join(hostile_server.chunk_blocks(150_000, 3))

        long_query = body[1000:1600]  # 600 chars that occur in the body
        answer = text_of(
            await session.call_tool("recall_tool_result", {"mem_id": trm_id, "query": long_query, "max_chars": 100})
        )
        assert "1 match" in answer and len(answer) <= 100 + 500, len(answer)
        assert long_query not in answer and f"({len(repr(long_query)):,} chars)" in answer

        for args, expected in (
            ({"query": "x" * 300_000, "max_chars": 100}, "query is 300,000 chars; at most 4,096"),
            ({"lines": "1" * 5000}, "is not a line range"),
            ({"lines": "2-" + "9" * 5000}, "is not a line range"),
        ):
            refused = await session.call_tool("recall_tool_result", {"mem_id": trm_id, **args})
            text = text_of(refused)
            assert refused.is_error and expected in text and "ValueError" not in text, text[:300]
            assert len(text) < 1000, len(text)
        bad_id = await session.call_tool("recall_tool_result", {"mem_id": "trm_" + "f" * 200_000})
        assert bad_id.is_error and "is not a recall id" in text_of(bad_id) and len(text_of(bad_id)) < 1000
        # And the normal styles still answer after all that.
        ok = await session.call_tool("recall_tool_result", {"mem_id": trm_id, "lines": "2-3"})
        assert not ok.is_error and "lines 2–3" in text_of(ok)


def _rpc(proc: subprocess.Popen[bytes], replies: queue.Queue[bytes], line: bytes) -> dict:
    assert proc.stdin is not None
    proc.stdin.write(line + b"\n")
    proc.stdin.flush()
    while True:  # skip notifications (a list change as downstream servers finish starting)
        try:
            message = json.loads(replies.get(timeout=30))
        except queue.Empty:
            raise AssertionError(f"no reply within 30 s to {line[:80]!r}") from None
        if "id" in message:
            return message


def test_unparseable_stdin_lines_get_an_error_reply(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        prewarmed([OFFLOAD_MCP, "serve", "--ledger", str(tmp_path / "l.db"), "--", *HOSTILE]),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=proxy_env(),
        cwd=str(ROOT),
    )
    replies: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=lambda: [replies.put(x) for x in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    try:
        init = initialize_request("2025-06-18")
        assert "result" in _rpc(proc, replies, json.dumps(init).encode())
        assert proc.stdin is not None
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        depth = 1_000_000
        call = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":'
        nested = call + b"[" * depth + b"]" * depth + b"}}}"
        reply = _rpc(proc, replies, nested)
        assert reply["id"] == 7 and reply["error"]["code"] == -32700 and "recursion" in reply["error"]["message"], reply
        garbage = _rpc(proc, replies, b"this is not json")
        assert garbage["id"] is None and garbage["error"]["code"] == -32700
        not_rpc = _rpc(proc, replies, b'{"jsonrpc":"2.0","id":"q","nonsense":true}')
        assert not_rpc["id"] == "q" and not_rpc["error"]["code"] == -32600
        after = _rpc(
            proc,
            replies,
            b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after"}}}',
        )
        assert after["id"] == 8 and after["result"]["content"][0]["text"] == "after"
    finally:
        proc.kill()
        proc.wait(10)
