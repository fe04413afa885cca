"""`ledger.scope: principal`: ids and markers belong to the authenticated caller, not the connection.

Through one real streamable-HTTP proxy (stateful: handshake-era sessions) with two bearer tokens:
two sessions of one principal share their ids; the other principal is refused on recall, expand
and GET /expand; an unknown token gets 401. The config forms of `auth_tokens` and their errors
are checked without a process.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx2
import pytest
from mcp.client.session import ClientSession
from pydantic import ValidationError

from offload_mcp.config import Config
from offload_mcp.upstream.identity import DEFAULT_PRINCIPAL, owner_key, token_table
from support.principals import ALICE, BOB, LONG_LINES, session_call
from support.proxy import TRM, running_proxy, text_of
from support.servers import HOSTILE, write_config

MARKER = re.compile(r"<<cg:([0-9a-f]{16})>>")


def test_auth_tokens_accept_a_mapping_or_a_list_and_refuse_ambiguity() -> None:
    as_map = Config.model_validate({"offload": {"server": {"auth_tokens": {"alice": ALICE, "bob": BOB}}}})
    as_list = Config.model_validate(
        {
            "offload": {
                "server": {"auth_tokens": [{"principal": "alice", "token": ALICE}, {"principal": "bob", "token": BOB}]}
            }
        }
    )
    assert as_map.offload.server.auth_tokens == as_list.offload.server.auth_tokens == {"alice": ALICE, "bob": BOB}
    # The single auth_token keeps working, as the principal `default`, beside the named ones.
    both = Config.model_validate(
        {"offload": {"server": {"auth_token": "single-token-1", "auth_tokens": {"alice": ALICE}}}}
    )
    assert token_table(both.offload.server, {}) == {ALICE: "alice", "single-token-1": DEFAULT_PRINCIPAL}
    bad = [
        ({"alice": ALICE, "bob": ALICE}, "two principals share one token"),
        ({"alice": "short"}, "at least 8 characters"),
        ([{"principal": "alice", "token": ALICE}, {"principal": "alice", "token": BOB}], "named twice"),
        ([{"name": "alice", "token": ALICE}], "exactly `principal` and `token`"),
    ]
    for tokens, message in bad:
        with pytest.raises(ValidationError, match=message):
            Config.model_validate({"offload": {"server": {"auth_tokens": tokens}}})
    assert owner_key("principal", principal="alice", session_id="s1") == owner_key(
        "principal", principal="alice", session_id="s2"
    )
    assert owner_key("session", principal="alice", session_id="s1") != owner_key(
        "session", principal="alice", session_id="s2"
    )


async def test_principal_scope_follows_the_token_not_the_session(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {"hostile": {"command": HOSTILE[0], "args": HOSTILE[1:]}},
        {"server": {"auth_tokens": {"alice": ALICE, "bob": BOB}}, "ledger": {"scope": "principal"}},
    )
    with running_proxy(["-c", str(config), "--ledger", str(tmp_path / "l.db")]) as proxy:
        stub, cut = await session_call(
            proxy.url, ALICE, ("chunks", {"size": 120_000, "seed": 5}), ("echo", {"text": LONG_LINES})
        )
        trm_id = TRM.search(text_of(stub)).group(0)  # type: ignore[union-attr]
        hash_ = MARKER.findall(text_of(cut))[0]

        # Another session of the same principal reads both.
        recall, expand = await session_call(
            proxy.url,
            ALICE,
            ("recall_tool_result", {"mem_id": trm_id}),
            ("context_guru_expand", {"marker": f"<<cg:{hash_}>>"}),
        )
        assert not recall.is_error and not expand.is_error and text_of(expand) in LONG_LINES  # type: ignore[attr-defined]

        # The other principal is refused, clearly, without a byte of the body.
        recall, expand = await session_call(
            proxy.url,
            BOB,
            ("recall_tool_result", {"mem_id": trm_id}),
            ("context_guru_expand", {"marker": f"<<cg:{hash_}>>"}),
        )
        assert recall.is_error and "belongs to another principal (ledger scope is `principal`)" in text_of(recall)  # type: ignore[attr-defined]
        assert expand.is_error and LONG_LINES[500:600] not in text_of(expand)  # type: ignore[attr-defined]

        base = proxy.url.rsplit("/mcp", 1)[0]
        with httpx2.Client(base_url=base, timeout=10) as http:
            assert http.get(f"/expand/{hash_}", headers={"Authorization": f"Bearer {ALICE}"}).status_code == 200
            refused = http.get(f"/expand/{hash_}", headers={"Authorization": f"Bearer {BOB}"})
            assert refused.status_code == 404 and "belongs to another principal" in refused.text
            assert (
                http.get(f"/expand/{hash_}", headers={"Authorization": "Bearer not-a-known-token"}).status_code == 401
            )

        # Once Bob is himself shown the same content, he may read it too (ids are content hashes).
        (again,) = await session_call(proxy.url, BOB, ("chunks", {"size": 120_000, "seed": 5}))
        assert TRM.search(text_of(again)).group(0) == trm_id  # type: ignore[union-attr]
        (recall,) = await session_call(proxy.url, BOB, ("recall_tool_result", {"mem_id": trm_id}))
        assert not recall.is_error  # type: ignore[attr-defined]


def test_stateless_with_session_scope_is_refused_at_start(tmp_path: Path) -> None:
    from offload_mcp.commands.serve import resolve_config
    from offload_mcp.config import ConfigError

    config = write_config(
        tmp_path, {"hostile": {"command": HOSTILE[0], "args": HOSTILE[1:]}}, {"ledger": {"scope": "session"}}
    )

    class Args:
        command: list[str] = []
        name = None
        deferral = None
        observe = False
        stateless = True

    args = Args()
    args.config = str(config)  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="scope `session` could never match a caller"):
        resolve_config(args, {})  # type: ignore[arg-type]


async def test_principal_scope_on_sse(tmp_path: Path) -> None:
    """SSE carries the principal on each POSTed message: the same separation as streamable HTTP."""
    from mcp.client.sse import sse_client

    config = write_config(
        tmp_path,
        {"hostile": {"command": HOSTILE[0], "args": HOSTILE[1:]}},
        {
            "server": {"auth_tokens": [{"principal": "alice", "token": ALICE}, {"principal": "bob", "token": BOB}]},
            "ledger": {"scope": "principal"},
        },
    )

    async def calls(url: str, token: str, *todo: tuple[str, dict[str, object]]) -> list[object]:
        async with sse_client(url, headers={"Authorization": f"Bearer {token}"}) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return [await session.call_tool(name, args) for name, args in todo]

    with running_proxy(["-c", str(config), "--ledger", str(tmp_path / "l.db")], transport="sse") as proxy:
        (stub,) = await calls(proxy.url, ALICE, ("chunks", {"size": 120_000, "seed": 9}))
        trm_id = TRM.search(text_of(stub)).group(0)  # type: ignore[union-attr]
        (theirs,) = await calls(proxy.url, BOB, ("recall_tool_result", {"mem_id": trm_id}))
        assert theirs.is_error and "belongs to another principal" in text_of(theirs)  # type: ignore[attr-defined]
        (own,) = await calls(proxy.url, ALICE, ("recall_tool_result", {"mem_id": trm_id}))
        assert not own.is_error  # type: ignore[attr-defined]
