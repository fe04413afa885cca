"""Regenerate docs/dashboard.png: the dashboard of a real proxy, as headless Chromium shows it.

The ledger: the MCP-servers corpus replayed as Claude Code (`offload-mcp replay --client
claude-code --ledger`, 197 decisions), then a real `offload-mcp serve --transport
streamable-http` on it with a bearer token, in front of the hostile fixture server, where one
client session makes an offloading call and recalls it. Chromium (tests/support/browser.py) opens
/dashboard with the token in a header and writes the top of the page to the PNG.

    python bench/dashboard_screenshot.py [--out docs/dashboard.png]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "fixtures")]

import anyio  # noqa: E402

from support.browser import open_page  # noqa: E402
from support.principals import session_call  # noqa: E402
from support.proxy import OFFLOAD_MCP, TRM, running_proxy, text_of  # noqa: E402
from support.servers import HOSTILE, write_config  # noqa: E402

CORPUS = ROOT / "bench" / "data" / "corpus" / "mcp_servers.jsonl.gz"
TOKEN = "screenshot-token-0123"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "dashboard.png")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dashboard-shot-") as tmp:
        ledger = Path(tmp) / "ledger.db"
        subprocess.run(
            [OFFLOAD_MCP, "replay", str(CORPUS), "--client", "claude-code", "--ledger", str(ledger)],
            capture_output=True,
            check=True,
        )
        config = write_config(
            Path(tmp), {"hostile": {"command": HOSTILE[0], "args": HOSTILE[1:]}}, {"server": {"auth_token": TOKEN}}
        )
        with running_proxy(["-c", str(config), "--ledger", str(ledger)]) as proxy:

            async def calls() -> None:
                (stub,) = await session_call(proxy.url, TOKEN, ("chunks", {"size": 120_000, "seed": 5}))
                trm_id = TRM.search(text_of(stub)).group(0)  # type: ignore[union-attr]
                await session_call(proxy.url, TOKEN, ("recall_tool_result", {"mem_id": trm_id, "query": "chunk"}))

            anyio.run(calls)
            base = proxy.url.rsplit("/mcp", 1)[0]
            page = open_page(f"{base}/dashboard", token=TOKEN, screenshot=args.out, width=1600, most_height=2300)
    print(f"wrote {args.out} ({page.status}, {len(page.figures)} figures)")


if __name__ == "__main__":
    main()
