"""The proxy's parts in-process (upstream/catalog_view.py, upstream/sessions.py, dispatch.py, connection_limits.py SessionCaps).

Each part is built on its own over a real DownstreamPool in front of the real fixture server; the
upstream tests connect real SDK clients over in-memory streams (one `Server.run` per client, as on
stdio and SSE) or the real streamable-HTTP app over an in-process ASGI transport. No proxy
subprocess: the wrapped server is the only process started.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.session import ClientSession
from mcp.server import Server
from mcp.server.subscriptions import ServerEvent, ToolsListChanged
from mcp.shared.memory import create_client_server_memory_streams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from offload_mcp.config import Config, parse_config
from offload_mcp.downstream.pool import DownstreamPool
from offload_mcp.session import ANONYMOUS_PREFIX
from offload_mcp.shaping import build_shaper
from offload_mcp.tools.own import load_own_tools
from offload_mcp.upstream.catalog_view import STATUS_TOOL, CatalogView
from offload_mcp.upstream.connection_limits import SessionCaps
from offload_mcp.upstream.dispatch import CallDispatcher
from offload_mcp.upstream.identity import refusal
from offload_mcp.upstream.metrics import ProxyMetrics
from offload_mcp.upstream.proxy import ProxyState, build_server, initialization_options
from offload_mcp.upstream.routing import ResourcePromptRouter
from offload_mcp.upstream.sessions import UpstreamSessions
from offload_mcp.upstream.transports import streamable_http_app
from support.proxy import initialize_request, recall_whole, text_of
from support.servers import fixture_entry

TRM = re.compile(r"trm_[0-9a-f]{16}")
BIG = 120_000
"""Characters of `make_text` that the default policy offloads behind a stub."""


def config(offload: dict[str, Any] | None = None, **servers: dict[str, Any]) -> Config:
    return parse_config({"mcpServers": servers or {"fx": fixture_entry()}, "offload": offload or {}})


def parts(pool: DownstreamPool, cfg: Config, ledger: Path) -> tuple[CatalogView, UpstreamSessions, CallDispatcher]:
    """The three parts wired the way ProxyState wires them, with nothing else around."""
    shaper = build_shaper(cfg.offload, ledger)
    own_always, own_optional = load_own_tools()
    view = CatalogView(
        pool,
        cfg.offload,
        own_always=own_always,
        own_optional=own_optional,
        routing=ResourcePromptRouter(pool),
        process_session="process",
        ledger=lambda: shaper.ledger,
    )
    upstream = UpstreamSessions(pool, cfg.offload, process_session="process")
    dispatch = CallDispatcher(pool, cfg.offload, view, upstream, shaper, metrics=ProxyMetrics())
    view.follow(upstream)
    return view, upstream, dispatch


class Caller:
    """One session's view of the dispatcher, shaped like a client session (`call_tool(name, args)`)."""

    def __init__(self, dispatch: CallDispatcher, session_id: str) -> None:
        self.dispatch, self.session_id = dispatch, session_id
        self.calls = 0

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        self.calls += 1
        return await self.dispatch.call_tool(name, arguments, session_id=self.session_id, owner=self.session_id)


async def until(check: Any, seconds: float = 10) -> None:
    with anyio.fail_after(seconds):
        while not check():
            await anyio.sleep(0.02)


# ---- catalog view --------------------------------------------------------------------------


async def test_catalog_view_follows_the_pool_and_tells_upstream(tmp_path: Path) -> None:
    cfg = config()
    async with DownstreamPool(cfg.mcpServers, cfg.offload.downstream) as pool:
        view, upstream, _ = parts(pool, cfg, tmp_path / "l.db")
        events: list[ServerEvent] = []
        upstream.bus.subscribe(events.append)

        listed = [t.name for t in view.presentation().tools]
        assert "echo" in listed and "recall_tool_result" in listed and STATUS_TOOL not in listed
        assert view.status_tool() is None and view.not_serving() == ""
        await view.wait_for_first_listing()  # every server settled: returns at once, and never waits again

        # The server adds a tool and says so: the view rebuilds and 2026-era listeners hear it.
        await pool.servers["fx"].call_tool("add_tool", {"name": "late_tool"}, None, None)
        await until(lambda: view.catalog.lookup("late_tool") is not None)
        await until(lambda: any(isinstance(e, ToolsListChanged) for e in events))
        assert "late_tool" in [t.name for t in view.presentation().tools]

        # While one tools/list is answered, every presentation() is that request's.
        pinned = view.presentation("one-session")
        with view.presenting(pinned):
            assert view.presentation() is pinned
        assert view.presentation() is not pinned


async def test_no_server_serving_is_a_listed_status_tool_and_a_clear_call_error(tmp_path: Path) -> None:
    cfg = config(broken=fixture_entry("--fail-at-start"))
    async with DownstreamPool(cfg.mcpServers, cfg.offload.downstream) as pool:
        view, _, dispatch = parts(pool, cfg, tmp_path / "l.db")
        status = view.status_tool()
        assert status is not None and status.name == STATUS_TOOL
        assert "Servers not serving: broken (" in (status.description or "")
        answer = await dispatch.call_tool(STATUS_TOOL, {}, session_id="s")
        assert answer.is_error and text_of(answer).startswith("offload-mcp: Servers not serving: broken (")
        unknown = await dispatch.call_tool("echo", {}, session_id="s")
        assert unknown.is_error and text_of(unknown).startswith("Unknown tool 'echo'. Servers not serving: broken (")


# ---- call dispatch -------------------------------------------------------------------------


async def test_dispatcher_forwards_checks_shapes_and_recalls(tmp_path: Path) -> None:
    cfg = config()
    async with DownstreamPool(cfg.mcpServers, cfg.offload.downstream) as pool:
        _, _, dispatch = parts(pool, cfg, tmp_path / "l.db")
        echoed = await dispatch.call_tool("echo", {"text": "hi"}, session_id="s1", owner="s1")
        assert text_of(echoed) == "hi" and not echoed.is_error

        # A result its own outputSchema rejects is passed on, marked as an error, never shaped.
        bad = await dispatch.call_tool("bad_structured", {}, session_id="s1", owner="s1")
        assert bad.is_error and "returned a result its own schema rejects" in text_of(bad)

        # A large result comes back as a stub whose id the own tool reads back exactly.
        direct = await pool.servers["fx"].call_tool("make_text", {"size": BIG}, None, None)
        stub = await dispatch.call_tool("make_text", {"size": BIG}, session_id="s1", owner="s1")
        (trm_id,) = set(TRM.findall(text_of(stub)))
        assert len(text_of(stub)) < BIG // 10
        reader = Caller(dispatch, "s1")
        assert await recall_whole(reader, trm_id) == text_of(direct)

        unknown = await dispatch.call_tool("nope", {}, session_id="s1")
        assert unknown.is_error and text_of(unknown) == "Unknown tool 'nope'."
        huge = await dispatch.call_tool("n" * 1_000_000, {}, session_id="s1")  # repeated as its start, not whole
        assert huge.is_error and text_of(huge) == f"Unknown tool '{'n' * 80}… (1,000,000 chars)'."
        assert dispatch.sessions_seen == {"s1"}
        metrics = dispatch.metrics
        assert metrics is not None
        # Own tools are counted by outcome: every page read back was a good recall.
        assert f'offload_mcp_recalls_total{{outcome="ok"}} {reader.calls}.0'.encode() in metrics.render()


async def test_dispatcher_without_a_session_identity_passes_through_under_session_scope(tmp_path: Path) -> None:
    cfg = config({"ledger": {"scope": "session"}})
    async with DownstreamPool(cfg.mcpServers, cfg.offload.downstream) as pool:
        _, _, dispatch = parts(pool, cfg, tmp_path / "l.db")
        nobody = ANONYMOUS_PREFIX + "x"
        direct = await pool.servers["fx"].call_tool("make_text", {"size": BIG}, None, None)
        passed = await dispatch.call_tool("make_text", {"size": BIG}, session_id=nobody, owner=nobody)
        assert text_of(passed) == text_of(direct) and not TRM.findall(text_of(passed))
        refused = await dispatch.call_tool("recall_tool_result", {"mem_id": "trm_" + "0" * 16}, session_id=nobody)
        assert refused.is_error and text_of(refused) == refusal("recall_tool_result")
        assert dispatch.sessions_seen == set()  # a stateless key never comes back: nothing to summarise


# ---- upstream sessions -----------------------------------------------------------------------


@asynccontextmanager
async def stream_client(server: Server[Any], on_message: Any = None) -> AsyncIterator[ClientSession]:
    """A handshake-era client on a stream of its own: one `Server.run`, as stdio and each SSE connection get."""
    async with create_client_server_memory_streams() as (client_side, server_side), anyio.create_task_group() as tg:
        tg.start_soon(server.run, server_side[0], server_side[1], initialization_options(server))
        async with ClientSession(client_side[0], client_side[1], message_handler=on_message) as session:
            await session.initialize()
            yield session
        tg.cancel_scope.cancel()


async def test_each_stream_is_one_session_that_hears_list_changes(tmp_path: Path) -> None:
    cfg = config({"ledger": {"scope": "session"}})
    async with DownstreamPool(cfg.mcpServers, cfg.offload.downstream) as pool:
        state = ProxyState(cfg, pool, ledger_path=tmp_path / "l.db")
        server = build_server(state)
        heard = {"a": anyio.Event(), "b": anyio.Event()}

        def listener(name: str) -> Any:
            async def on_message(message: object) -> None:
                if isinstance(message, types.ToolListChangedNotification):
                    heard[name].set()

            return on_message

        async with stream_client(server, listener("a")) as a, AsyncExitStack() as b_open:
            b = await b_open.enter_async_context(stream_client(server, listener("b")))
            await a.list_tools()
            await b.list_tools()
            assert state.upstream.connection_count == 2 and len(pool.relay.standalone()) == 2

            # A body offloaded for A belongs to A's stream: under `ledger.scope: session` B cannot read it.
            stub = await a.call_tool("make_text", {"size": BIG})
            (trm_id,) = set(TRM.findall(text_of(stub)))
            assert not (await a.call_tool("recall_tool_result", {"mem_id": trm_id})).is_error
            assert (await b.call_tool("recall_tool_result", {"mem_id": trm_id})).is_error
            assert len(state.sessions_seen) == 2  # one key per stream, the same on each of its calls

            # A change downstream reaches every connected client.
            heard.update(a=anyio.Event(), b=anyio.Event())
            await a.call_tool("add_tool", {"name": "late_tool"})
            with anyio.fail_after(10):
                await heard["a"].wait()
                await heard["b"].wait()

            await b_open.aclose()  # B's stream ends: it is forgotten, not notified forever
            await until(lambda: state.upstream.connection_count == 1)
            assert len(pool.relay.standalone()) == 1  # server requests outside a call have one client again


async def test_a_2026_client_on_a_stream_keeps_one_session_and_no_standing_connection(tmp_path: Path) -> None:
    cfg = config({"ledger": {"scope": "session"}})
    async with DownstreamPool(cfg.mcpServers, cfg.offload.downstream) as pool:
        state = ProxyState(cfg, pool, ledger_path=tmp_path / "l.db")
        async with Client(build_server(state)) as client:
            assert client.protocol_version in MODERN_PROTOCOL_VERSIONS
            stub = await client.call_tool("make_text", {"size": BIG})
            (trm_id,) = set(TRM.findall(text_of(stub)))
            # Each 2026-era request is a connection of its own, yet all on one stream share its session.
            assert not (await client.call_tool("recall_tool_result", {"mem_id": trm_id})).is_error
            assert len(state.sessions_seen) == 1
            assert state.upstream.connection_count == 0  # it hears changes on listen streams instead


# ---- per-peer session caps (streamable HTTP), from our own book of sessions ------------------------

INIT = initialize_request("2025-06-18")
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


async def test_http_sessions_are_capped_per_peer_and_forgotten_when_they_end(tmp_path: Path) -> None:
    idle_s = 300.0
    cfg = config({"server": {"max_sessions_per_peer": 2, "session_idle_timeout_s": idle_s}})
    async with DownstreamPool(cfg.mcpServers, cfg.offload.downstream) as pool:
        state = ProxyState(cfg, pool, ledger_path=tmp_path / "l.db")
        state.upstream.stateless_wire = True  # what serve() sets for streamable HTTP
        caps = streamable_http_app(state, build_server(state), "127.0.0.1", 0)
        assert isinstance(caps, SessionCaps)
        now = [0.0]
        caps.clock = lambda: now[0]  # idle time passes when the test says so, however loaded the machine is
        starlette: Any = caps.app
        transport = httpx2.ASGITransport(app=caps)
        async with (
            starlette.router.lifespan_context(starlette),
            httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as http,
        ):

            async def open_session() -> httpx2.Response:
                return await http.post("/mcp", json=INIT, headers=HEADERS)

            first, second = await open_session(), await open_session()
            assert first.status_code == second.status_code == 200
            sid = first.headers["mcp-session-id"]
            in_session = {**HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"}
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await http.post("/mcp", json=note, headers=in_session)).status_code == 202
            listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
            assert (await http.post("/mcp", json=listing, headers=in_session)).status_code == 200
            assert state.upstream.connection_count == 1  # the session is known by its Mcp-Session-Id

            refused = await open_session()
            assert refused.status_code == 429 and "max_sessions_per_peer" in refused.text

            # DELETE ends a session: its slot is free again and the upstream sessions forget it.
            assert (await http.delete("/mcp", headers=in_session)).status_code < 400
            assert state.upstream.connection_count == 0
            assert (await open_session()).status_code == 200
            assert (await open_session()).status_code == 429

            # Sessions with no request in flight for session_idle_timeout_s expire (the SDK's rule and setting;
            # test_hardening_load checks it against the SDK's own expiry): the peer may open sessions again.
            now[0] += idle_s / 2
            assert (await open_session()).status_code == 429
            now[0] += idle_s
            assert (await open_session()).status_code == 200
