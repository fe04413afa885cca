"""The small-call path of one tools/call, in process against a real fixture server over stdio: a small
result is shaped and counted in line (upstream/dispatch.py, shaping.shape_without_blocking), a large one
still goes to the worker thread and is stubbed only after its body is committed."""

from __future__ import annotations

import pytest

from offload_mcp.config import Config
from offload_mcp.downstream.pool import DownstreamPool
from offload_mcp.shaping import INLINE_MAX_CHARS, dump_result
from offload_mcp.upstream.proxy import ProxyState
from support.servers import fixture_entry

pytestmark = pytest.mark.anyio


async def test_a_small_result_is_answered_and_counted_in_line_and_a_large_one_still_offloaded(tmp_path):
    config = Config.model_validate({"mcpServers": {"fx": fixture_entry()}})
    async with DownstreamPool(config.mcpServers, config.offload.downstream) as pool:
        state = ProxyState(config, pool, ledger_path=tmp_path / "ledger.db")
        echo = next(e.name for e in state.catalog.entries if e.downstream_name == "echo")
        make_text = next(e.name for e in state.catalog.entries if e.downstream_name == "make_text")

        small = await state.dispatch.call_tool(echo, {"text": "forty bytes"}, session_id="s1", owner="s1")
        assert dump_result(small) == {"content": [{"type": "text", "text": "forty bytes"}], "isError": False}
        # Counted before the call returned: no task left to run, nothing to wait for.
        assert (
            f'offload_mcp_calls_total{{outcome="ok",server="fx",tool="{echo}"}} 1.0' in state.metrics.render().decode()
        )

        size = 200_000
        assert size > INLINE_MAX_CHARS
        big = await state.dispatch.call_tool(make_text, {"size": size}, session_id="s1", owner="s1")
        stub, link = big.content  # the stub text, then its resource_link (upstream/stored_resources.py)
        assert link.type == "resource_link"
        decisions = list(state.ledger.events(kinds=["decision"])) if state.ledger else []
        assert [(d["tool"], d["verdict"]) for d in decisions] == [("echo", "keep"), ("make_text", "offload")]
        trm_id = decisions[1]["ref_id"]
        assert trm_id in stub.text
        assert len(state.ledger.get_body(trm_id)["content"][0]["text"]) == size
