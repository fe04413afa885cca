"""Fuzz the proxy's own tools and GET /expand with hypothesis: no crash, no hang, bounded output,
every error clear (an isError result that names the tool), against a real SQLite ledger.

The handlers are called in process (thousands of inputs in seconds); the same handlers behind a
real proxy are exercised end to end by the other test files.
"""

from __future__ import annotations

import re
import time
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote

import anyio
import httpx2
import mcp_types as types
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offload_mcp.catalog.catalog import build_catalog
from offload_mcp.catalog.settings import CatalogSettings
from offload_mcp.config import OffloadSettings
from offload_mcp.session import SessionMemory, cg_hash
from offload_mcp.store import BodyRecord, Ledger
from offload_mcp.tools import expand, invoke, recall, tool_search
from offload_mcp.tools.registry import ToolEnv

SETTINGS = OffloadSettings()
RECALL_CAP = SETTINGS.recall.max_chars
HEADER_ALLOWANCE = 2_000
"""An answer is its one header line plus at most recall.max_chars of body."""
TIME_LIMIT_S = 7.0
"""The slowest bounded step (JSONPath evaluation) stops at 5 s; nothing may take longer."""

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _bodies() -> list[dict[str, Any]]:
    lines = "\n".join(f"{i:05d} alpha beta {i * 7919 % 10007} gamma" for i in range(4000))
    doc = {
        "items": [
            {"id": i, "name": f"item-{i}", "tags": ["a", "b"], "nested": {"x": [i, {"y": i}]}} for i in range(3000)
        ]
    }
    return [
        {"content": [{"type": "text", "text": lines}]},
        {"content": [{"type": "text", "text": orjson.dumps(doc).decode()}]},
        {"content": [{"type": "text", "text": "x"}], "structuredContent": doc},
        {
            "content": [
                {"type": "text", "text": "ÄÖÜ straße İstanbul\u0130\u0307 " * 500},
                {"type": "text", "text": "second block"},
            ]
        },
        {"content": [{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]},
    ]


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("fuzz") / "ledger.db"
    opened = Ledger.open(path=path)
    records = [BodyRecord.of(b, server="fx", tool="t", arguments={}, session_id="s", chars=0) for b in _bodies()]
    originals = {"short original": None, "long original " * 20_000: None}
    stash = {cg_hash(text): text for text in originals}
    opened.commit(bodies=records, stash=stash)
    opened.fuzz_ids = [r.trm_id for r in records]  # type: ignore[attr-defined]
    opened.fuzz_hashes = sorted(stash)  # type: ignore[attr-defined]
    yield opened
    opened.close()


def env_for(ledger: Any, catalog: Any = None) -> ToolEnv:
    async def forward(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text=f"forwarded {name}")])

    return ToolEnv(
        settings=SETTINGS, ledger=ledger, session_id="fuzz", session=SessionMemory(), forward=forward, catalog=catalog
    )


def run_tool(module: Any, arguments: Any, env: ToolEnv) -> tuple[types.CallToolResult, float]:
    """The answer and how long the client waited for it (an abandoned worker thread is not the client's wait)."""

    async def timed() -> tuple[types.CallToolResult, float]:
        started = time.monotonic()
        result = await module.handle(arguments, env)
        return result, time.monotonic() - started

    return anyio.run(timed)


def check(result: Any, elapsed: float, name: str, cap: int) -> str:
    assert isinstance(result, types.CallToolResult)
    assert elapsed < TIME_LIMIT_S, f"{name} took {elapsed:.1f}s"
    text = "".join(getattr(b, "text", "") for b in result.content)
    assert len(text) <= cap, f"{name} answered {len(text):,} chars"
    if result.is_error:
        assert text.startswith(name), text[:200]
        assert "Traceback" not in text and "failed inside offload-mcp" not in text, text[:300]
    return text


def ids_and_junk(ledger: Any) -> Any:
    return st.one_of(st.sampled_from(ledger.fuzz_ids), st.text(max_size=40), json_values, st.just("trm_" + "0" * 16))


@given(data=st.data())
@FUZZ
def test_fuzz_recall_tool_result(ledger: Any, data: st.DataObject) -> None:
    paths = st.sampled_from(
        ["$", "$..*", "$.items[*].nested..y", "$..", "$[?(@.id > 5)]", "$.items[-1:]", "$..x[0]", "$.items[0:3].name"]
    )
    args = data.draw(
        st.fixed_dictionaries(
            {},
            optional={
                "mem_id": ids_and_junk(ledger),
                "query": st.one_of(
                    st.text(max_size=20), st.sampled_from(["alpha", "İ", "ß", "\n", "item-1", "a" * 600]), json_values
                ),
                "offset": st.one_of(st.integers(min_value=-5, max_value=10**16), json_values),
                "max_chars": st.one_of(st.integers(min_value=-5, max_value=10**9), json_values),
                "json_path": st.one_of(paths, st.text(max_size=30), json_values),
                "lines": st.one_of(
                    st.sampled_from(["1-5", "3999-", "0", "5-2", "100000", " 7 - 9 "]),
                    st.text(max_size=12),
                    json_values,
                ),
                "unexpected": json_values,
            },
        )
    )
    result, elapsed = run_tool(recall, args, env_for(ledger))
    check(result, elapsed, "recall_tool_result", RECALL_CAP + HEADER_ALLOWANCE)


@given(data=st.data())
@FUZZ
def test_fuzz_context_guru_expand(ledger: Any, data: st.DataObject) -> None:
    marker = st.one_of(
        st.sampled_from(ledger.fuzz_hashes).map(lambda h: f"<<cg:{h}>>"),
        st.sampled_from(ledger.fuzz_hashes),
        st.text(max_size=40),
        json_values,
        st.just("<<cg:" + "f" * 16 + ">>"),
    )
    args = data.draw(
        st.fixed_dictionaries(
            {}, optional={"marker": marker, "offset": st.one_of(st.integers(-3, 10**7), json_values), "hash": marker}
        )
    )
    result, elapsed = run_tool(expand, args, env_for(ledger))
    page = expand.page_chars(SETTINGS)
    check(result, elapsed, "context_guru_expand", page + HEADER_ALLOWANCE)


def _catalog() -> Any:
    def tool(name: str, schema: dict[str, Any], description: str = "") -> types.Tool:
        return types.Tool(name=name, description=description or f"{name} does things", input_schema=schema)

    servers = {
        "git": [
            tool(
                "git_log",
                {
                    "type": "object",
                    "properties": {"max_count": {"type": "integer"}, "repo": {"type": "string"}},
                    "required": ["repo"],
                },
            ),
            tool(
                "git_diff",
                {"type": "object", "properties": {"target": {"type": "string", "pattern": "^[a-z0-9/._-]{1,80}$"}}},
            ),
        ],
        "fs": [
            tool(
                "read_file",
                {
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                    "additionalProperties": False,
                },
            ),
            tool(
                "search",
                {"type": "object", "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": False},
            ),
        ],
    }
    return build_catalog(servers, CatalogSettings())


@given(data=st.data())
@FUZZ
def test_fuzz_search_tools(ledger: Any, data: st.DataObject) -> None:
    catalog = _catalog()
    regexes = st.sampled_from(
        ["(a+)+$", "(a|aa)*b", "(.*)*x", "([a-z]+)*\\d", "\\", "[", "(?P<x>", "git", ".*", "a{1000000}", "(a*)*" * 5]
    )
    args = data.draw(
        st.fixed_dictionaries(
            {},
            optional={
                "query": st.one_of(st.text(max_size=60), json_values),
                "pattern": st.one_of(regexes, st.text(max_size=30), json_values),
                "limit": st.one_of(st.integers(-2, 100), json_values),
                "other": json_values,
            },
        )
    )
    result, elapsed = run_tool(tool_search, args, env_for(ledger, catalog))
    check(result, elapsed, "search_tools", 200_000)


@given(data=st.data())
@FUZZ
def test_fuzz_invoke_tool(ledger: Any, data: st.DataObject) -> None:
    catalog = _catalog()
    names = st.one_of(
        st.sampled_from(["git_log", "git_diff", "read_file", "search", "recall_tool_result", "invoke_tool", "gti_log"]),
        st.text(max_size=20),
        json_values,
    )
    args = data.draw(
        st.fixed_dictionaries(
            {},
            optional={
                "name": names,
                "arguments": st.one_of(
                    st.dictionaries(
                        st.sampled_from(["repo", "max_count", "path", "target", "x-a", "zz"]), json_values, max_size=4
                    ),
                    json_values,
                ),
                "extra": json_values,
            },
        )
    )
    result, elapsed = run_tool(invoke, args, env_for(ledger, catalog))
    text = check(result, elapsed, "invoke_tool", 50_000)
    if not result.is_error:
        assert re.fullmatch(r"forwarded \S+", text)


def test_a_slow_json_path_is_bounded_in_time(ledger: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The JSONPath time limit ends an evaluation that would run on (its answer says so), whatever the
    machine's load: a limit far under the evaluation's cost, not a wall-time bound on the whole call."""
    monkeypatch.setattr(recall, "_JSON_PATH_TIME_LIMIT_S", 0.05)
    big = {
        "content": [{"type": "text", "text": "x"}],
        "structuredContent": {"rows": [[{"a": [i, [i, {"b": i}]]} for i in range(50)] for _ in range(400)]},
    }
    record = BodyRecord.of(big, server="fx", tool="t", arguments={}, session_id="s", chars=0)
    ledger.commit(bodies=[record])
    result, _ = run_tool(recall, {"mem_id": record.trm_id, "json_path": "$..*..*..*"}, env_for(ledger))
    text = "".join(getattr(b, "text", "") for b in result.content)
    assert len(text) <= RECALL_CAP + HEADER_ALLOWANCE
    assert result.is_error and "took longer than" in text, text[:300]


@pytest.mark.parametrize("pattern", ["(a+)+$", "(a|a)*$", "(x+x+)+y", "(.*a){12}"])
def test_catastrophic_search_patterns_are_refused_or_bounded(ledger: Any, pattern: str) -> None:
    catalog = build_catalog(
        {"s": [types.Tool(name="t", description="a" * 5000, input_schema={"type": "object"})]}, CatalogSettings()
    )
    result, elapsed = run_tool(tool_search, {"pattern": pattern}, env_for(ledger, catalog))
    check(result, elapsed, "search_tools", 200_000)
    assert elapsed < 2.0


def test_a_catastrophic_schema_pattern_does_not_hang_invoke(ledger: Any) -> None:
    """A downstream schema's `pattern` is run on the model's argument: it must not hang the proxy."""
    schema = {"type": "object", "properties": {"q": {"type": "string", "pattern": "^(a+)+$"}}}
    catalog = build_catalog({"s": [types.Tool(name="t", input_schema=schema)]}, CatalogSettings())
    result, elapsed = run_tool(invoke, {"name": "t", "arguments": {"q": "a" * 34 + "!"}}, env_for(ledger, catalog))
    check(result, elapsed, "invoke_tool", 50_000)
    assert elapsed < TIME_LIMIT_S


# ---- GET /expand/{hash} ---------------------------------------------------------------


def _expand_app(ledger: Any) -> Any:
    from starlette.applications import Starlette

    from offload_mcp.upstream.http_extras import extra_routes
    from offload_mcp.upstream.metrics import ProxyMetrics

    state = SimpleNamespace(
        ledger=ledger, pool=SimpleNamespace(status=lambda: []), catalog=[], metrics=ProxyMetrics(), settings=SETTINGS
    )
    return Starlette(routes=extra_routes(state))


@given(data=st.data())
@FUZZ
def test_fuzz_get_expand(ledger: Any, data: st.DataObject) -> None:
    raw = data.draw(
        st.one_of(
            st.sampled_from(ledger.fuzz_hashes),
            st.sampled_from(ledger.fuzz_hashes).map(lambda h: h.upper()),
            st.text(min_size=1, max_size=200),
            st.just("a" * 60_000),
            st.just("..%2F..%2Fetc%2Fpasswd"),
        )
    )
    app = _expand_app(ledger)

    async def get() -> Any:
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
            return await http.get("/expand/" + quote(raw, safe=""))

    started = time.monotonic()
    response = anyio.run(get)
    elapsed = time.monotonic() - started
    assert elapsed < TIME_LIMIT_S
    if "/" in raw and response.status_code in (307, 404):
        return  # an encoded slash makes another path: routing, not the expand handler, answers
    assert response.status_code in (200, 400, 404), (response.status_code, response.text[:200])
    if response.status_code == 200:
        assert response.text in ("short original", "long original " * 20_000)
    else:
        assert len(response.text) < 500 and response.text.strip()
