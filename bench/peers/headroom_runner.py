"""Run headroom-ai's no-model compression of single tool outputs (inside its own venv).

Usage (run by bench/run_all.py with the headroom venv's python):
    python headroom_runner.py IN.jsonl OUT.jsonl [mcp|library-recent0]
IN has one {"id", "text"} a line; OUT gets one {"id", "chars_in", "chars_out",
"envelope_chars", "recovered_exact", "transforms", "error"} a line.

Entry point: `headroom.ccr.mcp_server.HeadroomMCPServer._compress_content`,
the body of its `headroom_compress` MCP tool (which calls
`headroom.compress.compress` on a one-message tool conversation and keeps the
original in its CCR store for `headroom_retrieve`). Mode `library-recent0`
calls `headroom.compress.compress` directly with `protect_recent=0` (the
default protects the last 4 messages, so a lone tool output is "recent" and
mostly left alone): what a user who tunes it gets; its recoverability is not
checked (retrieval of library-mode cuts goes through headroom's own proxy). We measure the
`compressed` text, the JSON envelope the tool actually returns to the model,
and whether `_retrieve_content(hash)` gives back the exact original.
Environment: HEADROOM_OFFLINE=1 and HEADROOM_WORKSPACE_DIR (a temp folder)
are set by the caller; the `[ml]` extra (torch) is not installed.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time


def main() -> int:
    src, dst = sys.argv[1], sys.argv[2]
    mode = sys.argv[3] if len(sys.argv) > 3 else "mcp"
    from headroom.ccr.mcp_server import HeadroomMCPServer
    from headroom.compress import compress

    server = HeadroomMCPServer(check_proxy=False)
    loop = asyncio.new_event_loop()
    started = time.perf_counter()
    n = 0
    with open(src, encoding="utf-8") as fin, open(dst, "w", encoding="utf-8") as fout:
        for line in fin:
            item = json.loads(line)
            text = item["text"]
            row: dict = {"id": item["id"], "chars_in": len(text)}
            try:
                if mode == "library-recent0":
                    out = compress(
                        [{"role": "tool", "content": text}], model="claude-sonnet-4-5-20250929", protect_recent=0
                    )
                    got_text = out.messages[0].get("content", text)
                    got_text = got_text if isinstance(got_text, str) else json.dumps(got_text)
                    row.update(
                        chars_out=len(got_text),
                        envelope_chars=len(got_text),
                        transforms=list(out.transforms_applied or []),
                        recovered_exact=got_text == text,
                        verified=got_text == text,
                    )
                    fout.write(json.dumps(row) + "\n")
                    n += 1
                    continue
                res = server._compress_content(text)
                compressed = res.get("compressed", text)
                if not isinstance(compressed, str):
                    compressed = json.dumps(compressed)
                row["chars_out"] = len(compressed)
                # What the MCP tool returns to the model: the whole dict as indented JSON.
                row["envelope_chars"] = len(json.dumps(res, indent=2, ensure_ascii=False))
                row["transforms"] = res.get("transforms") or []
                recovered = False
                if res.get("hash"):
                    got = loop.run_until_complete(server._retrieve_content(res["hash"]))
                    original = got.get("original_content") if isinstance(got, dict) else None
                    if original is None and isinstance(got, dict):
                        original = got.get("content") or got.get("original")
                    recovered = original == text
                row["recovered_exact"] = recovered or compressed == text
            except Exception as err:  # a peer's failure is a measured outcome, not a crash
                row.update(
                    chars_out=len(text),
                    envelope_chars=len(text),
                    transforms=[],
                    recovered_exact=True,
                    error=f"{type(err).__name__}: {err}",
                )
            fout.write(json.dumps(row) + "\n")
            n += 1
    elapsed = time.perf_counter() - started
    print(json.dumps({"records": n, "seconds": elapsed}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
