"""context_guru_expand against a real ledger: exact originals, clear errors, paging."""

import pytest

from offload_mcp.config import OffloadSettings
from offload_mcp.reducers.base import ReduceContext, marker
from offload_mcp.reducers.pipeline import build_pipeline
from offload_mcp.reducers.settings import ReducerSettings
from offload_mcp.session import SessionMemory, cg_hash
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
    return ToolEnv(
        settings=settings or OffloadSettings(), ledger=ledger, session_id="s1", session=session or SessionMemory()
    )


NOISY = "\x1b[31mwarn\x1b[0m: deprecated\n" * 60 + "\n" * 20 + "é😀 " + "x" * 2000 + "\r\n"


def reduce_and_commit(ledger, text):
    result = build_pipeline(ReducerSettings()).run(
        text, ReduceContext(tool="bash", arguments={}, session=SessionMemory())
    )
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


async def test_large_original_pages_inline_sized(ledger):
    big = "".join(f"row {i} " + "é" * 30 + "\n" for i in range(8000))  # ~300K chars
    h = cg_hash(big)
    ledger.commit(stash={h: big})
    settings = OffloadSettings()
    size = expand.INLINE_PAGE_CHARS  # under Claude Code's 50K inline limit, not the 100K client limit (issue 11)
    assert size < settings.policy.client_max_result_chars
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


# ---- one retrieval vocabulary (issue 11) ------------------------------------------------

ROWS = "[" + ",".join(f'{{"id": {i}, "name": "item-{i}", "status": "ok"}}' for i in range(4000)) + "]"  # ~170K JSON


async def test_expand_takes_recalls_styles_and_recall_takes_markers(ledger):
    from offload_mcp.tools import recall

    h = cg_hash(ROWS)
    ledger.commit(stash={h: ROWS})
    env = env_for(ledger)
    found = await expand.handle({"marker": marker(h), "query": '"item-3210"'}, env)
    assert not found.is_error
    header, _, shown = found.content[0].text.partition("\n")
    assert (
        "1 match for '\"item-3210\"'" in header
        and '"name": "item-3210"' in shown
        and len(found.content[0].text) < 2_000
    )
    by_path = await expand.handle({"marker": marker(h), "json_path": "$[7].name"}, env)
    assert by_path.content[0].text.partition("\n")[2] == '"item-7"'
    ranged = await expand.handle({"marker": marker(h), "offset": 10, "max_chars": 25}, env)
    assert ranged.content[0].text.partition("\n")[2] == ROWS[10:35]
    # recall_tool_result answers the same call for the marker, byte for byte
    same = await recall.handle({"mem_id": marker(h), "query": '"item-3210"'}, env)
    assert same.content[0].text == found.content[0].text
    assert h in env.session.expanded
    bad = await expand.handle({"marker": marker(h), "lines": "x"}, env)
    assert bad.is_error and "lines 'x' is not a line range" in bad.content[0].text
    typo = await expand.handle({"marker": marker(h), "qeury": "x", "query": "y"}, env)
    assert typo.is_error and "unknown argument(s) qeury" in typo.content[0].text
    nope = await recall.handle({"mem_id": "<<cg:zz>>"}, env)
    assert nope.is_error and "<<cg:HASH>> marker" in nope.content[0].text


async def test_plain_pages_fit_inline_and_name_the_cheaper_call(ledger):
    h = cg_hash(ROWS)
    ledger.commit(stash={h: ROWS})
    first = await expand.handle({"marker": marker(h)}, env_for(ledger))
    assert first.content[0].text == ROWS[: expand.INLINE_PAGE_CHARS]
    note = first.content[1].text
    assert sum(len(c.text) for c in first.content) < expand.TOOL.meta["anthropic/maxResultSizeChars"]
    assert f'context_guru_expand(marker="<<cg:{h}>>", query="text"' in note and note.endswith(
        f"next page: offset={expand.INLINE_PAGE_CHARS}]"
    )


async def test_a_huge_offset_is_clipped_when_echoed(ledger):
    h = cg_hash(NOISY)
    ledger.commit(stash={h: NOISY})
    for offset in (10**400, 1e308):
        out = await expand.handle({"marker": marker(h), "offset": offset}, env_for(ledger))
        assert out.is_error and "offset" in out.content[0].text and len(out.content[0].text) < 250, out.content[0].text


async def test_unknown_arguments_are_refused_with_or_without_a_style(ledger):
    h = cg_hash(ROWS)
    ledger.commit(stash={h: ROWS})
    for args in ({"qurey": "item-5"}, {"qurey": "item-5", "offset": 0}, {"qurey": "item-5", "lines": "1"}):
        out = await expand.handle({"marker": marker(h), **args}, env_for(ledger))
        assert out.is_error and out.content[0].text == (
            "context_guru_expand: unknown argument(s) qurey; valid: marker, offset, query, lines, json_path, max_chars"
        )
    assert not list(ledger.events(kinds=["expand"]))
    legacy = await expand.handle({"hash": h, "offset": 0}, env_for(ledger))
    assert not legacy.is_error and legacy.content[0].text == ROWS[: expand.INLINE_PAGE_CHARS]


async def test_a_damaged_stored_original_says_corrupt_and_points_at_the_original_tool(ledger, tmp_path):
    # "try again shortly" was wrong here: a retry reads the same damaged bytes.
    import sqlite3

    reduce_and_commit(ledger, NOISY)
    h = cg_hash(NOISY)
    outside = sqlite3.connect(tmp_path / "ledger.db")
    outside.execute("UPDATE stash SET original = x'00ff'")
    outside.commit()
    outside.close()
    out = await expand.handle({"marker": marker(h)}, env_for(ledger))
    text = out.content[0].text
    assert out.is_error and "the ledger is corrupt" in text and "call the original tool again" in text
    assert "try again shortly" not in text


async def test_get_expand_of_a_damaged_original_is_500_not_a_retryable_503(ledger, tmp_path):
    import sqlite3
    from types import SimpleNamespace

    import httpx2
    from starlette.applications import Starlette

    from offload_mcp.upstream.http_extras import extra_routes
    from offload_mcp.upstream.metrics import ProxyMetrics

    reduce_and_commit(ledger, NOISY)
    outside = sqlite3.connect(tmp_path / "ledger.db")
    outside.execute("UPDATE stash SET original = x'00ff'")
    outside.commit()
    outside.close()
    state = SimpleNamespace(
        ledger=ledger,
        pool=SimpleNamespace(status=lambda: []),
        catalog=[],
        metrics=ProxyMetrics(),
        settings=OffloadSettings(),
    )
    app = Starlette(routes=extra_routes(state))
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
        response = await http.get(f"/expand/{cg_hash(NOISY)}")
    assert response.status_code == 500 and "the ledger is corrupt" in response.text
