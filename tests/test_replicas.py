"""Three stateless replicas behind a real nginx (round-robin, no stickiness) on one shared ledger.

The deployment is the deployment guide's example (docs/deploy/offload.json + docs/deploy/nginx.conf),
rendered with test tokens, a fixture server and the shared ledger. One replica set and two
balancers (over 2 and over 3 replicas) serve the whole module.

- Offload through one replica; recall, expand and GET /expand through each of the others
  and through both balancers, byte for byte, in both protocol eras (the handshake-era
  `ClientSession` and the 2026-era `mcp.Client`).
- The same call gives the same bytes on every replica (stub, markers, ids).
- A tenant's ids and markers are refused to another tenant on every replica.
- /healthz reports the shared ledger's reachability.
"""

from __future__ import annotations

import re
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from support.cluster import (
    ALICE,
    BOB,
    DEPLOY,
    LoadBalancer,
    bearer_client,
    deployment_config,
    handshake,
    host_port,
    load_balancer,
    needs_nginx,
    replicas,
)
from support.proxy import TRM, RunningProxy, recall_whole, text_of
from support.servers import ROOT

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
import hostile_server  # noqa: E402

pytestmark = needs_nginx

MARKER = re.compile(r"<<cg:([0-9a-f]{16})>>")
LONG_LINES = "\n".join(f"row {i} - " + " ".join(f"tok{(i * 7 + k) % 89}" for k in range(130)) for i in range(30))
"""Lines far over linecap's limit: the answer carries markers to the exact originals."""


@dataclass
class Deployment:
    replicas: list[RunningProxy]
    lb2: LoadBalancer
    lb3: LoadBalancer
    ledger: str

    @property
    def urls(self) -> list[str]:
        return [r.url for r in self.replicas]


def postgres_server(request: pytest.FixtureRequest) -> Any | None:
    """The session's real PostgreSQL (conftest `postgres`), or None where it cannot run here."""
    try:
        return request.getfixturevalue("postgres")
    except (pytest.FixtureLookupError, pytest.skip.Exception):
        return None


@pytest.fixture(scope="module")
def shared_ledger(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The ledger every replica shares: a schema of its own on the real PostgreSQL; where PostgreSQL
    is not installed, one SQLite file in WAL mode (the same harness, a weaker sharing)."""
    server = postgres_server(request)
    if server is not None:
        return str(server.url(server.new_schema()))
    return str(tmp_path_factory.mktemp("ledger") / "shared.db")


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory, shared_ledger: str) -> Iterator[Deployment]:
    tmp = tmp_path_factory.mktemp("deploy")
    config = deployment_config(tmp, shared_ledger)
    with replicas(3, ["-c", str(config)]) as procs:
        backends = [host_port(p.url) for p in procs]
        with load_balancer(tmp / "lb2", backends[:2]) as lb2, load_balancer(tmp / "lb3", backends) as lb3:
            yield Deployment(procs, lb2, lb3, shared_ledger)


@asynccontextmanager
async def modern(url: str, token: str) -> AsyncIterator[Any]:
    async with bearer_client(token) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client


def era(name: str, url: str, token: str) -> Any:
    return handshake(url, token) if name == "handshake" else modern(url, token)


def base(url: str) -> str:
    return url.rsplit("/mcp", 1)[0]


@pytest.mark.parametrize("protocol", ["handshake", "modern"])
async def test_offload_through_one_replica_recall_and_expand_through_the_others(
    deployment: Deployment, protocol: str
) -> None:
    seed = 11 if protocol == "handshake" else 12
    expected = "\n".join(hostile_server.chunk_blocks(120_000, seed))
    first, *others = deployment.urls
    async with era(protocol, first, ALICE) as a:
        stub = text_of(await a.call_tool("chunks", {"size": 120_000, "seed": seed}))
        cut = text_of(await a.call_tool("echo", {"text": LONG_LINES + protocol}))
    trm_id = TRM.search(stub).group(0)  # type: ignore[union-attr]
    hashes = MARKER.findall(cut)
    assert hashes, cut[:300]

    # Each other replica directly, then both balancers (round-robin: consecutive requests alternate).
    for url in [*others, deployment.lb2.url, deployment.lb3.url]:
        async with era(protocol, url, ALICE) as client:
            assert await recall_whole(client, trm_id, max_chars=50_000) == expected
            for hash_ in hashes:
                page = await client.call_tool("context_guru_expand", {"marker": f"<<cg:{hash_}>>"})
                assert not page.is_error, text_of(page)
                assert text_of(page) in LONG_LINES + protocol
    for url in [*others, deployment.lb3.url]:
        with httpx2.Client(base_url=base(url), headers={"Authorization": f"Bearer {ALICE}"}, timeout=10) as http:
            for _ in range(3):
                got = http.get(f"/expand/{hashes[0]}")
                assert got.status_code == 200 and got.text in LONG_LINES + protocol


async def test_the_same_call_gives_the_same_bytes_on_every_replica(deployment: Deployment) -> None:
    answers = []
    for url in deployment.urls:
        async with handshake(url, ALICE) as session:
            stub = await session.call_tool("chunks", {"size": 90_000, "seed": 21})
            cut = await session.call_tool("echo", {"text": LONG_LINES})
            # Twice in one session: a stateless replica keeps no dedup history, so the repeat is identical too.
            again = await session.call_tool("echo", {"text": LONG_LINES})
            answers.append((stub.model_dump_json(), cut.model_dump_json(), again.model_dump_json()))
    assert answers[0][1] == answers[0][2]
    assert all(a == answers[0] for a in answers), "replicas disagree on the bytes of the same call"


@pytest.mark.parametrize("protocol", ["handshake", "modern"])
async def test_a_tenants_ids_are_refused_to_another_tenant_on_every_replica(
    deployment: Deployment, protocol: str
) -> None:
    seed = 31 if protocol == "handshake" else 32
    async with era(protocol, deployment.lb3.url, ALICE) as alice:
        stub = text_of(await alice.call_tool("chunks", {"size": 100_000, "seed": seed}))
        cut = text_of(await alice.call_tool("echo", {"text": LONG_LINES + f"tenant {seed}"}))
    trm_id = TRM.search(stub).group(0)  # type: ignore[union-attr]
    hash_ = MARKER.findall(cut)[0]
    for url in [*deployment.urls, deployment.lb3.url]:
        async with era(protocol, url, BOB) as bob:
            theirs = await bob.call_tool("recall_tool_result", {"mem_id": trm_id})
            assert theirs.is_error and "belongs to another principal" in text_of(theirs), text_of(theirs)
            assert hostile_server.chunk_blocks(100_000, seed)[0][:200] not in text_of(theirs)
            theirs_cut = await bob.call_tool("context_guru_expand", {"marker": f"<<cg:{hash_}>>"})
            assert theirs_cut.is_error and "belongs to another principal" in text_of(theirs_cut)
            # recall_tool_result takes a marker too: the same owner check.
            theirs_marker = await bob.call_tool("recall_tool_result", {"mem_id": f"<<cg:{hash_}>>"})
            assert theirs_marker.is_error and "belongs to another principal" in text_of(theirs_marker), text_of(
                theirs_marker
            )
        with httpx2.Client(base_url=base(url), timeout=10) as http:
            refused = http.get(f"/expand/{hash_}", headers={"Authorization": f"Bearer {BOB}"})
            assert refused.status_code == 404 and "belongs to another principal" in refused.text
            assert http.get(f"/expand/{hash_}").status_code == 401
            assert http.get(f"/expand/{hash_}", headers={"Authorization": f"Bearer {ALICE}"}).status_code == 200
        async with era(protocol, url, ALICE) as alice:
            assert not (await alice.call_tool("recall_tool_result", {"mem_id": trm_id})).is_error
            assert not (await alice.call_tool("recall_tool_result", {"mem_id": f"<<cg:{hash_}>>"})).is_error


async def test_a_search_on_any_replica_finds_the_callers_result_and_never_another_tenants(
    deployment: Deployment,
) -> None:
    def listing(owner: str) -> str:
        rows = [f"{owner} order {i:05d} sku GEN-{i % 97:03d}-X qty {i % 5}" for i in range(3000)]
        rows[2021] = f"{owner} order 02021 sku REPLICA-SKU-77 qty 9"
        return "\n".join(rows)

    first, second, _ = deployment.urls
    async with era("modern", first, ALICE) as alice:
        alice_id = TRM.search(text_of(await alice.call_tool("echo", {"text": listing("alice")}))).group(0)  # type: ignore[union-attr]
    async with era("modern", second, BOB) as bob:
        bob_id = TRM.search(text_of(await bob.call_tool("echo", {"text": listing("bob")}))).group(0)  # type: ignore[union-attr]
    for url in [*deployment.urls, deployment.lb2.url, deployment.lb3.url]:
        for token, own, other, line in [
            (ALICE, alice_id, bob_id, "L2022: alice order 02021 sku REPLICA-SKU-77 qty 9"),
            (BOB, bob_id, alice_id, "L2022: bob order 02021 sku REPLICA-SKU-77 qty 9"),
        ]:
            async with era("modern", url, token) as client:
                found = text_of(await client.call_tool("recall_tool_result", {"query": "replica-sku-77"}))
            assert re.findall(r"^\d+\. (trm_[0-9a-f]{16})", found, re.M) == [own], (url, found)
            assert line in found and other not in found, (url, found)


def test_healthz_reports_the_shared_ledger(deployment: Deployment) -> None:
    for url in [*deployment.urls, deployment.lb2.url]:
        health = httpx2.get(base(url) + "/healthz", headers={"Authorization": f"Bearer {BOB}"}, timeout=10).json()
        assert health["ledger"] == "ok" and health["status"] == "ok", health
        # Without a token: the overall status only (a balancer's health check needs no more).
        assert httpx2.get(base(url) + "/healthz", timeout=10).json() == {"status": "ok"}


async def test_kill_9_of_a_replica_under_load_loses_nothing_handed_out(tmp_path: Path, shared_ledger: str) -> None:
    """Five clients offload through the balancer; one replica dies (SIGKILL) midway. Calls in flight
    on it may fail; every id any client was handed reads back byte for byte from the survivor."""
    import os
    import signal

    import anyio

    config = deployment_config(tmp_path, shared_ledger)
    with replicas(2, ["-c", str(config)]) as (doomed, survivor):
        with load_balancer(tmp_path / "lb", [host_port(doomed.url), host_port(survivor.url)]) as lb:
            handed: dict[str, tuple[int, int]] = {}
            failures: list[str] = []
            done = anyio.Event()
            calls = 0

            async def client(n: int) -> None:
                nonlocal calls
                async with handshake(lb.url, ALICE) as session:
                    for i in range(6):
                        size, seed = 60_000 + 1_000 * n, 1_000 + n * 100 + i
                        try:
                            with anyio.fail_after(30):
                                result = await session.call_tool("chunks", {"size": size, "seed": seed})
                        except Exception as err:  # the replica died under this call: the client sees an error
                            failures.append(f"{type(err).__name__}: {err}"[:200])
                            continue
                        calls += 1
                        if calls == 10:
                            done.set()
                        found = TRM.search(text_of(result))
                        if found:
                            handed[found.group(0)] = (size, seed)

            async def killer() -> None:
                await done.wait()
                os.kill(doomed.pid, signal.SIGKILL)

            async with anyio.create_task_group() as tg:
                tg.start_soon(killer)
                for n in range(5):
                    tg.start_soon(client, n)
            assert doomed.proc.wait(5) == -signal.SIGKILL
            assert len(handed) >= 20, (len(handed), failures)
            assert len(failures) <= 5, failures  # at most the calls in flight on the killed replica
            async with handshake(survivor.url, ALICE) as session:
                for trm_id, (size, seed) in handed.items():
                    assert await recall_whole(session, trm_id) == "\n".join(hostile_server.chunk_blocks(size, seed))


def test_the_deployment_guide_shows_the_example_the_tests_run() -> None:
    guide = (ROOT / "docs" / "deployment.md").read_text()
    assert (DEPLOY / "offload.json").read_text().rstrip("\n") in guide
    assert "docs/deploy/nginx.conf" in guide
    for placeholder in re.findall(
        r"{{[A-Z_]+}}", (DEPLOY / "nginx.conf").read_text() + (DEPLOY / "offload.json").read_text()
    ):
        assert f"`{placeholder}`" in guide, f"{placeholder} is not explained in docs/deployment.md"
    assert "docs/deployment.md" in (ROOT / "README.md").read_text()


async def test_a_postgresql_outage_passes_results_through_and_the_replicas_recover(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """PostgreSQL stops mid-load: results pass through untouched (never a stub without a stored body),
    recall says the ledger cannot be read, /healthz says unreachable; PostgreSQL starts again and
    every replica offloads and recalls again, without being restarted."""
    import anyio

    server = postgres_server(request)
    if server is None:
        pytest.skip("PostgreSQL is not installed here (.ci/run installs it)")
    # A short wait for a connection: each call during the outage passes through after it.
    config = deployment_config(tmp_path, str(server.url(server.new_schema())), busy_timeout_s=0.5)
    with replicas(2, ["-c", str(config)]) as procs:
        with load_balancer(tmp_path / "lb", [host_port(p.url) for p in procs]) as lb:
            async with handshake(lb.url, ALICE) as session:
                earlier = TRM.search(text_of(await session.call_tool("chunks", {"size": 60_000, "seed": 41}))).group(0)  # type: ignore[union-attr]
                server.stop()
                try:
                    for seed in range(50, 52):
                        with anyio.fail_after(60):
                            result = await session.call_tool("chunks", {"size": 60_000, "seed": seed})
                        assert not result.is_error and TRM.search(text_of(result)) is None
                        assert text_of(result) == "".join(hostile_server.chunk_blocks(60_000, seed))
                    with anyio.fail_after(60):
                        recall = await session.call_tool("recall_tool_result", {"mem_id": earlier})
                    assert recall.is_error and "ledger" in text_of(recall).lower(), text_of(recall)
                    for proc in procs:
                        health = httpx2.get(
                            base(proc.url) + "/healthz", headers={"Authorization": f"Bearer {ALICE}"}, timeout=30
                        ).json()
                        assert health["ledger"] == "unreachable" and health["status"] == "degraded", health
                finally:
                    server.start()
                # Recovery: every replica offloads again by itself within a bounded time.
                for proc in procs:
                    async with handshake(proc.url, ALICE) as direct:
                        with anyio.fail_after(60):
                            while True:
                                result = await direct.call_tool("chunks", {"size": 60_000, "seed": 60})
                                if TRM.search(text_of(result)):
                                    break
                                await anyio.sleep(0.5)
                        assert await recall_whole(direct, earlier) == "\n".join(hostile_server.chunk_blocks(60_000, 41))
                    assert (
                        httpx2.get(
                            base(proc.url) + "/healthz", headers={"Authorization": f"Bearer {ALICE}"}, timeout=30
                        ).json()["ledger"]
                        == "ok"
                    )
            assert all(p.proc.poll() is None for p in procs), "a replica had to restart"
