"""context_guru_expand against a real ledger: exact originals, clear errors, paging."""

import pytest

from offload_mcp.config import OffloadSettings
from offload_mcp.reducers.base import ReduceContext, SessionMemory, cg_hash, marker
from offload_mcp.reducers.pipeline import build_pipeline
from offload_mcp.reducers.settings import ReducerSettings
from offload_mcp.store import Ledger
from offload_mcp.store.settings import LedgerSettings
from offload_mcp.tools import expand
from offload_mcp.tools.registry import ToolEnv


@pytest.fixture
def ledger(tmp_path):
    led = Ledger.open(LedgerSettings(), tmp_path / "ledger.db")
    yield led
    led.close()


def env_for(ledger, settings=None, session=None):
    return ToolEnv(settings=settings or OffloadSettings(), ledger=ledger, session_id="s1", session=session or SessionMemory())


NOISY = "\x1b[31mwarn\x1b[0m: deprecated\n" * 60 + "\n" * 20 + "é😀 " + "x" * 2000 + "\r\n"


def reduce_and_commit(ledger, text):
    result = build_pipeline(ReducerSettings()).run(text, ReduceContext(tool="bash", arguments={}, session=SessionMemory()))
    ledger.commit(stash=result.stash)
    return result


@pytest.mark.parametrize("form", ["marker", "bare", "cg", "spaced", "upper"])
async def test_round_trip_exact_bytes(ledger, form):
    result = reduce_and_commit(ledger, NOISY)
    h = cg_hash(NOISY)
    assert marker(h) in result.text
    arg = {"marker": marker(h), "bare": h, "cg": f"cg:{h}", "spaced": f"  {marker(h)}\n", "upper": h.upper()}[form]
    session = SessionMemory()
    out = await expand.handle({"marker": arg}, env_for(ledger, session=session))
    assert not out.is_error
    assert [c.text for c in out.content] == [NOISY]
    assert h in session.expanded
    events = [e for e in ledger.events(kinds=["expand"])]
    assert events and events[-1]["ref_id"] == h


@pytest.mark.parametrize("bad", ["", "nothing here", "<<cg:123>>", "<<cg:zzzzzzzzzzzzzzzz>>", 42, None])
async def test_malformed_marker_says_what_is_valid(ledger, bad):
    out = await expand.handle({"marker": bad} if bad is not None else {}, env_for(ledger))
    assert out.is_error
    assert "<<cg:0123456789abcdef>>" in out.content[0].text and "16" in out.content[0].text


async def test_unknown_hash(ledger):
    out = await expand.handle({"marker": marker("0" * 16)}, env_for(ledger))
    assert out.is_error and "no stashed original for <<cg:0000000000000000>>" in out.content[0].text


async def test_no_ledger_and_bad_offset(ledger):
    out = await expand.handle({"marker": "0" * 16}, env_for(None))
    assert out.is_error and "no ledger" in out.content[0].text
    out = await expand.handle({"marker": "0" * 16, "offset": -1}, env_for(ledger))
    assert out.is_error and "offset" in out.content[0].text


async def test_large_original_pages_at_client_limit(ledger):
    big = "".join(f"row {i} " + "é" * 30 + "\n" for i in range(8000))  # ~300K chars
    h = cg_hash(big)
    ledger.commit(stash={h: big})
    settings = OffloadSettings()
    size = settings.policy.client_max_result_chars
    pieces, offset = [], 0
    while True:
        out = await expand.handle({"marker": marker(h), "offset": offset}, env_for(ledger, settings))
        assert not out.is_error
        pieces.append(out.content[0].text)
        assert len(out.content) == 2 and f"of {len(big)}" in out.content[1].text
        if "last page" in out.content[1].text:
            break
        assert len(out.content[0].text) == size
        offset = int(out.content[1].text.rsplit("offset=", 1)[1].rstrip("]"))
    assert "".join(pieces) == big
    past = await expand.handle({"marker": marker(h), "offset": len(big)}, env_for(ledger))
    assert past.is_error and "past the end" in past.content[0].text


def test_tool_definition():
    assert expand.TOOL.name == "context_guru_expand"
    assert expand.TOOL.input_schema["required"] == ["marker"]
