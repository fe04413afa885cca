"""Who may talk to the proxy over HTTP: loopback by default, Host/Origin checked on every route,
an optional bearer token (required off loopback). Real proxy processes, real HTTP."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from support.proxy import OFFLOAD_MCP, initialize_request, proxy_env, proxy_http, text_of
from support.servers import fixture_cmd
from support.zygote import prewarmed

TOKEN = "s3cret-token-for-tests"
INIT = initialize_request("2025-11-25")
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def base(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


@pytest.fixture(scope="module", params=["streamable-http", "sse"])
def open_proxy(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    ledger = tmp_path_factory.mktemp("sec") / "ledger.db"
    with proxy_http(["--ledger", str(ledger), "--", *fixture_cmd()], request.param) as url:
        yield request.param, url


@pytest.fixture(scope="module", params=["streamable-http", "sse"])
def token_proxy(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    ledger = tmp_path_factory.mktemp("sec") / "ledger.db"
    with proxy_http(
        ["--ledger", str(ledger), "--", *fixture_cmd()], request.param, env={"OFFLOAD_MCP_AUTH_TOKEN": TOKEN}
    ) as url:
        yield request.param, url


def test_http_transports_bind_loopback_by_default(open_proxy: tuple[str, str]) -> None:
    _, url = open_proxy
    assert urlsplit(url).hostname == "127.0.0.1"


@pytest.mark.parametrize("path", ["/mcp", "/sse", "/expand/0123456789abcdef", "/healthz", "/metrics"])
def test_a_foreign_host_header_is_refused_on_every_route(open_proxy: tuple[str, str], path: str) -> None:
    """DNS rebinding: a page on evil.example re-pointed at 127.0.0.1 sends Host: evil.example."""
    _, url = open_proxy
    with httpx2.Client(base_url=base(url), timeout=10) as http:
        refused = http.get(path, headers={"host": "evil.example:8765"})
        assert refused.status_code == 421, refused.text
        assert "Invalid Host header" in refused.text
        cross = http.get(path, headers={"origin": "http://evil.example"})
        assert cross.status_code == 403 and "Invalid Origin header" in cross.text


def test_loopback_host_and_origin_are_served(open_proxy: tuple[str, str]) -> None:
    _, url = open_proxy
    with httpx2.Client(base_url=base(url), timeout=10) as http:
        # The proxy serves at once while its downstream server starts (issue 11): healthy once it is up.
        deadline = time.monotonic() + 30
        while True:
            ok = http.get("/healthz", headers={"origin": "http://localhost:3000"})
            if ok.status_code != 200 or ok.json()["status"] == "ok" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert ok.status_code == 200 and ok.json()["status"] == "ok"
        missing = http.get("/expand/0123456789abcdef")
        assert missing.status_code == 404  # reached the route: only the hash is unknown


def test_without_the_token_every_route_but_healthz_is_refused(token_proxy: tuple[str, str]) -> None:
    transport, url = token_proxy
    with httpx2.Client(base_url=base(url), timeout=10) as http:
        for path in ("/expand/0123456789abcdef", "/metrics"):
            for auth in (None, "Bearer wrong", f"Basic {TOKEN}", f"Bearer {TOKEN}x"):
                headers = {"authorization": auth} if auth else {}
                refused = http.get(path, headers=headers)
                assert refused.status_code == 401, (path, auth, refused.status_code)
                assert refused.headers.get("www-authenticate") == "Bearer"
        if transport == "streamable-http":
            post = http.post("/mcp", json=INIT, headers=MCP_HEADERS)
        else:
            post = http.post("/messages/?session_id=00000000000000000000000000000000", json=INIT)
        assert post.status_code == 401
        assert http.get("/healthz").status_code == 200
        granted = http.get("/expand/0123456789abcdef", headers={"authorization": f"Bearer {TOKEN}"})
        assert granted.status_code == 404


async def test_a_client_with_the_token_works(token_proxy: tuple[str, str]) -> None:
    transport, url = token_proxy
    headers = {"Authorization": f"Bearer {TOKEN}"}
    if transport == "streamable-http":
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(url, http_client=http) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    assert text_of(await s.call_tool("echo", {"text": "authorized"})) == "authorized"
    else:
        async with sse_client(url, headers=headers) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                assert text_of(await s.call_tool("echo", {"text": "authorized"})) == "authorized"


def test_the_auth_token_flag_is_enforced(tmp_path: Path) -> None:
    with proxy_http(["--auth-token", TOKEN, "--ledger", str(tmp_path / "l.db"), "--", *fixture_cmd()]) as url:
        with httpx2.Client(base_url=base(url), timeout=10) as http:
            assert http.post("/mcp", json=INIT, headers=MCP_HEADERS).status_code == 401
            ok = http.post("/mcp", json=INIT, headers={**MCP_HEADERS, "authorization": f"Bearer {TOKEN}"})
            assert ok.status_code == 200


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10"])
def test_binding_a_non_loopback_address_without_a_token_is_refused(host: str) -> None:
    done = subprocess.run(
        prewarmed(
            [
                OFFLOAD_MCP,
                "serve",
                "--transport",
                "streamable-http",
                "--host",
                host,
                "--port",
                "0",
                "--",
                *fixture_cmd(),
            ]
        ),
        capture_output=True,
        text=True,
        env=proxy_env(),
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    assert f"--host {host}: binding a non-loopback address needs offload.server.auth_token" in done.stderr


@pytest.mark.parametrize(
    ("host", "given", "said"),
    [
        ("0.0.0.0", {"flag": "x"}, "has 1 characters; a non-loopback address needs at least 8"),
        ("0.0.0.0", {"config": "a"}, "has 1 characters; a non-loopback address needs at least 8"),
        ("192.0.2.10", {"env": "short"}, "has 5 characters; a non-loopback address needs at least 8"),
        ("0.0.0.0", {"config": "        "}, "is blank: no client could ever send it"),
        ("127.0.0.1", {"flag": "   "}, "is blank: no client could ever send it"),
        ("127.0.0.1", {"env": " padded-token "}, "starts or ends with whitespace"),
        ("0.0.0.0", {"tokens": {"alice": "\t\t\t\t\t\t\t\t\t"}}, "without whitespace at its ends"),
    ],
)
def test_a_weak_or_blank_token_is_refused_however_it_is_given(
    tmp_path: Path, host: str, given: dict[str, object], said: str
) -> None:
    """Issue 40 D8: `auth_token: "a"` and `--auth-token x` served on 0.0.0.0 (auth_tokens entries needed 8
    characters), and a blank token started a server nobody could use. One rule for every way a token is given."""
    import json

    server: dict[str, object] = {}
    if "config" in given:
        server["auth_token"] = given["config"]
    if "tokens" in given:
        server["auth_tokens"] = given["tokens"]
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}, "offload": {"server": server}}))
    args = ["serve", "-c", str(config), "--transport", "streamable-http", "--host", host, "--port", "0"]
    if "flag" in given:
        args += ["--auth-token", str(given["flag"])]
    env = proxy_env({"OFFLOAD_MCP_AUTH_TOKEN": str(given["env"])} if "env" in given else None)
    done = subprocess.run(
        prewarmed([OFFLOAD_MCP, *args, "--", *fixture_cmd()]),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    assert said in done.stderr, done.stderr


def test_the_guard_unit_rules() -> None:
    from offload_mcp.upstream.security import _matches, allowed_hosts, allowed_origins

    hosts = allowed_hosts("127.0.0.1")
    assert _matches("127.0.0.1:8765", hosts) and _matches("localhost:1", hosts) and _matches("[::1]:80", hosts)
    assert not _matches("127.0.0.1.evil.example:80", hosts)
    assert not _matches("127.0.0.1:80@evil", hosts)
    assert not _matches("evil.example", hosts)
    assert _matches("10.0.0.5:9000", allowed_hosts("10.0.0.5"))
    origins = allowed_origins(["https://app.example"])
    assert _matches("http://localhost:3000", origins) and _matches("https://app.example", origins)
    assert not _matches("http://localhost.evil.example:3000", origins)
