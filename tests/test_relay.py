"""Sampling, elicitation, roots and logging relayed through the proxy, with a server of the tests' own.

tests/fixtures/relay_server.py (an MCPServer) samples, elicits (form and URL),
lists roots, logs and records logging/setLevel and roots/list_changed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from offload_mcp.relay.capabilities import DeclaringClientSession
from support.proxy import proxy_http, proxy_session, stdio_params, text_of
from support.relay import relay_config, wait_for
from support.servers import NPM_BIN, PYTHON, RELAY_SERVER, ROOT, fixture_cmd, python_entry, write_config

SLOW_ROOTS_SERVER = str(ROOT / "tests" / "fixtures" / "slow_roots_server.py")


class Answers:
    """One client's callbacks; `seen` records every request that reached this client."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.seen: list[str] = []
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.hold: anyio.Event | None = None
        self.holding = anyio.Event()
        self.cancelled = anyio.Event()

    async def sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.seen.append("sampling")
        if self.hold is not None:
            self.holding.set()
            try:
                await self.hold.wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled.set()
                raise
        prompt = getattr(params.messages[0].content, "text", "")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text=f"{self.tag}:{prompt}"), model=self.tag
        )

    async def elicitation(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.seen.append(f"elicitation:{params.mode or 'form'}")
        if isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"name": f"Ada-{self.tag}"})

    async def roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        self.seen.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri=f"file:///roots/{self.tag}")])

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    def kwargs(self) -> dict[str, Any]:
        return {
            "sampling_callback": self.sampling,
            "elicitation_callback": self.elicitation,
            "list_roots_callback": self.roots,
            "logging_callback": self.log,
        }


async def failure(call: Any) -> str:
    """The error a call ends in, whether the server made it an isError result or a JSON-RPC error."""
    try:
        result = await call
    except MCPError as err:
        return err.error.message
    assert result.is_error, text_of(result)
    return text_of(result)


@pytest.mark.filterwarnings("ignore:The (logging|roots) capability is deprecated")  # handshake-era features, on purpose
async def test_stdio_declares_exactly_and_relays_everything(tmp_path: Path) -> None:
    answers = Answers("a")
    declared = types.ClientCapabilities(
        sampling=types.SamplingCapability(tools=types.SamplingToolsCapability()),
        elicitation=types.ElicitationCapability(form=types.FormElicitationCapability()),
        roots=types.RootsCapability(),
    )
    config = relay_config(tmp_path, {"downstream": {"call_timeout_s": 3}})
    async with stdio_client(stdio_params(config, None)) as (read, write):
        async with DeclaringClientSession(read, write, declared=declared, **answers.kwargs()) as s:
            await s.initialize()
            # Exactly what this client declared: sampling.tools, form-only elicitation, roots without listChanged.
            got = json.loads(text_of(await s.call_tool("declared", {})))
            assert got == {"elicitation": {"form": {}}, "roots": {}, "sampling": {"tools": {}}}
            assert text_of(await s.call_tool("sample", {"prompt": "hi"})) == "a:hi (model a)"
            assert text_of(await s.call_tool("ask_name", {})) == "accept Ada-a"
            assert text_of(await s.call_tool("roots", {})) == "file:///roots/a"
            refused = await failure(s.call_tool("open_url", {"url": "https://example.com/login"}))
            assert "did not declare the elicitation.url capability" in refused
            assert answers.seen == ["sampling", "elicitation:form", "roots"]

            # Logging: named by the server, setLevel applied downstream.
            assert text_of(await s.call_tool("chatty", {"n": 3})) == "logged 3"
            await wait_for(lambda: len(answers.logs) >= 3)
            assert [(m.logger, m.data) for m in answers.logs] == [("relay/chat", f"message {i}") for i in range(3)]
            await s.set_logging_level("debug")
            assert text_of(await s.call_tool("level", {})) == "debug"
            await s.call_tool("chatty", {"n": 0})
            await wait_for(lambda: len(answers.logs) >= 4)
            assert answers.logs[3].level == "debug" and answers.logs[3].logger == "relay/chat"

            # A client that never answers: bounded by the call timeout, like a tool call.
            answers.hold = anyio.Event()
            with anyio.fail_after(30):
                assert "within 3s" in await failure(s.call_tool("sample", {"prompt": "never"}))
            answers.hold.set()

            # The client gives up on its call: the cancellation travels down and the relayed request comes back cancelled.
            answers.hold, answers.holding = anyio.Event(), anyio.Event()
            with anyio.move_on_after(20):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(s.call_tool, "sample", {"prompt": "abandoned"})
                    await answers.holding.wait()
                    tg.cancel_scope.cancel()
            with anyio.fail_after(10):
                await answers.cancelled.wait()
            answers.hold = None

            # roots/list_changed is passed on.
            await s.send_roots_list_changed()
            for _ in range(100):
                if text_of(await s.call_tool("roots_changes", {})) == "1":
                    break
                await anyio.sleep(0.05)
            assert text_of(await s.call_tool("roots_changes", {})) == "1"


async def test_modern_era_stdio_relays_through_input_required_rounds(tmp_path: Path) -> None:
    answers = Answers("m")
    servers = {
        "relay": python_entry(RELAY_SERVER),
        "fx": {"command": PYTHON, "args": fixture_cmd()[1:]},
    }
    config = ["-c", str(write_config(tmp_path, servers))]
    async with Client(stdio_params(config, None), mode="2026-07-28", log_level="info", **answers.kwargs()) as c:
        assert text_of(await c.call_tool("sample", {"prompt": "yo"})) == "m:yo (model m)"
        assert text_of(await c.call_tool("ask_name", {})) == "accept Ada-m"
        assert text_of(await c.call_tool("open_url", {"url": "https://example.com/pay"})) == "decline"
        assert text_of(await c.call_tool("roots", {})) == "file:///roots/m"
        assert text_of(await c.call_tool("chatty", {"n": 2})) == "logged 2"
        await wait_for(lambda: len(answers.logs) >= 2)
        assert [m.logger for m in answers.logs] == ["relay/chat", "relay/chat"]
        assert answers.seen == ["sampling", "elicitation:form", "elicitation:url", "roots"]

        # Bad rounds: a requestState we never issued, and an answer of the wrong kind.
        stale = await c.session.call_tool(
            "sample", {"prompt": "x"}, request_state="offload-relay:not-ours", allow_input_required=True
        )
        assert (
            isinstance(stale, types.CallToolResult) and stale.is_error and "no longer holds the call" in text_of(stale)
        )
        first = await c.session.call_tool("sample", {"prompt": "manual"}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult) and first.input_requests is not None
        [(key, asked)] = first.input_requests.items()
        assert isinstance(asked, types.CreateMessageRequest)
        wrong = {key: types.ListRootsResult(roots=[])}
        assert "could not relay sampling/createMessage" in await failure(
            c.session.call_tool(
                "sample",
                {"prompt": "manual"},
                input_responses=wrong,
                request_state=first.request_state,
                allow_input_required=True,
            )
        )

        # Progress of a call that runs parked still reaches the client.
        steps: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            steps.append(progress)

        assert text_of(await c.call_tool("progress", {"steps": 2}, progress_callback=on_progress)) == "done"
        assert steps == [1, 2]

        # Subscriptions named on a listen stream reach the server that owns the resource.
        assert text_of(await c.call_tool("touch_resource", {})) == "touched fixture://hello (not subscribed)"
        async with c.listen(resource_subscriptions=["fixture://hello"]) as sub:
            assert text_of(await c.call_tool("touch_resource", {})) == "touched fixture://hello"
            with anyio.fail_after(10):
                event = await sub.__anext__()
            assert getattr(event, "uri", None) == "fixture://hello"
        # The stream ended: the downstream subscription is released.
        for _ in range(50):
            if text_of(await c.call_tool("touch_resource", {})).endswith("(not subscribed)"):
                break
            await anyio.sleep(0.05)
        assert text_of(await c.call_tool("touch_resource", {})) == "touched fixture://hello (not subscribed)"


async def test_two_http_clients_never_get_each_others_requests(tmp_path: Path) -> None:
    a, b, m = Answers("A"), Answers("B"), Answers("M")
    with proxy_http(relay_config(tmp_path)) as url, anyio.fail_after(120):
        async with Client(url, mode="legacy") as plain:
            # A client that declared nothing: downstream declares nothing, and requests to it are refused clearly.
            assert json.loads(text_of(await plain.call_tool("declared", {}))) == {}
            for tool, args, missing in [
                ("sample", {"prompt": "x"}, "sampling"),
                ("roots", {}, "roots"),
                ("ask_name", {}, "elicitation"),
            ]:
                assert f"did not declare the {missing} capability" in await failure(plain.call_tool(tool, args))
        async with (
            Client(url, mode="legacy", **a.kwargs()) as ca,
            Client(url, mode="legacy", **b.kwargs()) as cb,
            Client(url, mode="2026-07-28", **m.kwargs()) as cm,
        ):
            # One at a time: each request reaches the client whose call caused it, in either era.
            assert text_of(await ca.call_tool("sample", {"prompt": "1"})) == "A:1 (model A)"
            assert text_of(await cb.call_tool("sample", {"prompt": "2"})) == "B:2 (model B)"
            assert text_of(await cm.call_tool("sample", {"prompt": "5"})) == "M:5 (model M)"
            assert (a.seen, b.seen, m.seen) == (["sampling"], ["sampling"], ["sampling"])

            # At once: A's request is held in A's callback while B calls. B's server request
            # could be either's, so it goes to neither; A's still completes.
            a.hold = anyio.Event()
            results: dict[str, Any] = {}

            async def call(name: str, client: Client, prompt: str) -> None:
                if name == "B":
                    results[name] = await failure(client.call_tool("sample", {"prompt": prompt}))
                else:
                    results[name] = await client.call_tool("sample", {"prompt": prompt})

            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "A", ca, "3")
                with anyio.fail_after(20):
                    await a.holding.wait()
                await call("B", cb, "4")
                results["M"] = await failure(cm.call_tool("sample", {"prompt": "6"}))
                a.hold.set()
            assert text_of(results["A"]) == "A:3 (model A)"
            assert "calls of 2 clients are in flight" in results["B"]
            assert "calls of 2 clients are in flight" in results["M"]
            assert (a.seen, b.seen, m.seen) == (["sampling", "sampling"], ["sampling"], ["sampling"])


@pytest.mark.parametrize("era", ["handshake", "modern"])
async def test_filesystem_in_roots_mode_sees_the_clients_root(tmp_path: Path, era: str) -> None:
    data = tmp_path / "project"
    data.mkdir()
    (data / "note.txt").write_text("inside the client's root")

    async def roots(context: ClientRequestContext) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=data.as_uri(), name="project")])

    config = write_config(tmp_path, {"fs": {"command": str(NPM_BIN / "mcp-server-filesystem")}}, {"mode": "observe"})
    if era == "handshake":
        connect = proxy_session(["-c", str(config)], list_roots_callback=roots)
    else:
        # A 2026-era client cannot be asked at the server's start-up: its first call brings the roots.
        connect = Client(stdio_params(["-c", str(config)], None), mode="2026-07-28", list_roots_callback=roots)
    reads: list[types.CallToolResult] = []
    async with connect as s:
        # The very first calls read, three at once (as Claude Code runs read-only tools): the server applies
        # roots asynchronously after it fetched them, and the proxy holds the calls until it has
        # (relay/roots.py, downstream/settle.py); in the 2026 era the roots come in one call's round.

        async def read() -> None:
            reads.append(await s.call_tool("read_text_file", {"path": str(data / "note.txt")}))

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(read)
        assert [text_of(r) for r in reads] == ["inside the client's root"] * 3
        assert str(data) in text_of(await s.call_tool("list_allowed_directories", {}))


@pytest.mark.parametrize("era", ["handshake", "modern"])
async def test_a_server_slow_to_apply_its_roots_sees_them_on_the_first_call(tmp_path: Path, era: str) -> None:
    # The fixture applies the roots it fetched only after 0.4 s of work in a worker thread: a call sent right
    # behind the roots answer (or after a ping alone) is always refused, so this fails without the idle wait.
    root = tmp_path / "root"

    async def roots(context: ClientRequestContext) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=root.as_uri())])

    # Not pre-warmed: the proxy watches this server's own process settle (downstream/settle.py reads its /proc).
    config = ["-c", str(write_config(tmp_path, {"slow": {"command": PYTHON, "args": [SLOW_ROOTS_SERVER]}}))]
    if era == "handshake":
        connect = proxy_session(config, list_roots_callback=roots)
    else:
        connect = Client(stdio_params(config, None), mode="2026-07-28", list_roots_callback=roots)
    async with connect as s:
        inside = await s.call_tool("inside", {"path": str(root / "a.txt")})
        assert not inside.is_error and text_of(inside) == f"inside {root}", text_of(inside)


def test_typescript_sdk_client_through_the_proxy(tmp_path: Path) -> None:
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    from support.proxy import OFFLOAD_MCP, proxy_env

    script = ROOT / "tests" / "clients" / "ts_relay_client.mjs"
    run = subprocess.run(
        [node, str(script), OFFLOAD_MCP, "serve", *relay_config(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=proxy_env(),
        cwd=str(ROOT),
    )
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["sample"] == "ts:hey (model ts-model)"
    assert out["ask_name"] == "accept Ada-ts"
    assert out["open_url"] == "accept"
    assert out["roots"] == "file:///roots/ts"
    assert out["chatty"] == "logged 2" and out["logs"] == ["relay/chat", "relay/chat"]
    # notifications/elicitation/complete is relayed to the client whose call sent it (order vs. the next call is free).
    assert "complete:elicit-1" in out["seen"]
    assert [s for s in out["seen"] if not s.startswith("complete:")] == [
        "sampling",
        "elicitation:form",
        "elicitation:url",
        "roots",
    ]


async def test_a_relayed_request_over_the_size_limit_is_refused_to_the_server(tmp_path: Path) -> None:
    """Issue 40 D6: a 5 MB sampling/createMessage broke a handshake-era streamable-HTTP client's stream (its
    SDK reads at most 1 MiB per event) and the call died with a transport error. Now the server is told why."""
    answers = Answers("A")
    with proxy_http(relay_config(tmp_path)) as url, anyio.fail_after(120):
        async with Client(url, mode="legacy", **answers.kwargs()) as client:
            said = text_of(await client.call_tool("sample_big", {"chars": 5_000_000}))
            assert said.startswith(
                "refused: offload-mcp did not relay sampling/createMessage from server 'relay': it is 5,000,"
            ), said[:300]
            assert "over the 1,000,000 bytes a relayed request may have" in said and answers.seen == []
            # Under the limit, the same client and stream still work.
            assert text_of(await client.call_tool("sample_big", {"chars": 900_000})) == "answered by A"
            assert answers.seen == ["sampling"]


async def test_the_relayed_request_limit_is_configurable(tmp_path: Path) -> None:
    answers = Answers("S")
    args = relay_config(tmp_path, {"downstream": {"max_relayed_request_bytes": 20_000}})
    async with proxy_session(args, **answers.kwargs()) as s:
        said = text_of(await s.call_tool("sample_big", {"chars": 30_000}))
        assert "over the 20,000 bytes a relayed request may have" in said, said[:300]
        assert text_of(await s.call_tool("sample_big", {"chars": 10_000})) == "answered by S"
    assert answers.seen == ["sampling"]
