"""What downstream sessions declare for one or several clients, and what a client lacks for a request."""

from __future__ import annotations

import time

import anyio
import mcp_types as types
import pytest

from offload_mcp.downstream.pool import DownstreamPool
from offload_mcp.relay.capabilities import lacks, relayed_part, union, wire
from offload_mcp.relay.router import Relay


def caps(**kw: object) -> types.ClientCapabilities:
    return types.ClientCapabilities.model_validate(kw)


def test_union_keeps_every_sub_capability_and_drops_the_rest() -> None:
    a = caps(sampling={"tools": {}}, elicitation={"form": {}}, experimental={"x": {}})
    b = caps(sampling={"context": {}}, elicitation={"url": {}}, roots={"listChanged": True})
    assert wire(union(relayed_part(a), relayed_part(b))) == {
        "sampling": {"context": {}, "tools": {}},
        "elicitation": {"form": {}, "url": {}},
        "roots": {"listChanged": True},
    }
    assert wire(union(relayed_part(None), relayed_part(caps()))) == {}


def test_empty_elicitation_means_form_mode() -> None:
    assert wire(relayed_part(caps(elicitation={}))) == {"elicitation": {"form": {}}}


def test_lacks_names_the_missing_capability() -> None:
    form = types.ElicitRequestFormParams(message="m", requested_schema={"type": "object", "properties": {}})
    url = types.ElicitRequestURLParams(message="m", url="https://example.com", elicitation_id="e")
    plain = types.CreateMessageRequestParams(messages=[], max_tokens=1)
    with_tools = plain.model_copy(update={"tools": [types.Tool(name="t", input_schema={"type": "object"})]})
    with_context = plain.model_copy(update={"include_context": "thisServer"})
    client = caps(sampling={}, elicitation={"form": {}})
    assert lacks(client, "sampling/createMessage", plain) is None
    assert lacks(client, "sampling/createMessage", with_tools) == "sampling.tools"
    assert lacks(client, "sampling/createMessage", with_context) == "sampling.context"
    assert lacks(client, "elicitation/create", form) is None
    assert lacks(client, "elicitation/create", url) == "elicitation.url"
    assert lacks(caps(elicitation={"url": {}}), "elicitation/create", form) == "elicitation.form"
    assert lacks(client, "roots/list") == "roots"
    assert lacks(None, "sampling/createMessage", plain) == "sampling"


@pytest.mark.anyio
async def test_a_first_session_waits_for_the_first_declaration_at_most_the_bound() -> None:
    waiting = Relay(5.0, declaration_wait_s=0.3)
    started = time.monotonic()
    with anyio.fail_after(60):  # a hang guard, not a speed bound: nobody declared, so only the bound ends the wait
        await waiting.first_declaration()  # it gives up after the bound, and declares nothing
    assert time.monotonic() - started >= 0.25  # it did wait (anyio never ends a wait early)
    waiting.observe(caps(roots={}))
    with anyio.fail_after(0.1):
        await waiting.first_declaration()  # observed: no wait at all
    with anyio.fail_after(0.1):
        await Relay(5.0).first_declaration()  # no bound (HTTP): never waits


@pytest.mark.anyio
async def test_a_declaration_noted_at_initialize_is_applied_by_the_first_request_over_stdio_only() -> None:
    stdio = DownstreamPool({}, declaration_wait_s=2.0)
    stdio.note_declaration(caps(roots={}))
    assert stdio.relay.declared == caps(roots={})  # folded at once: sessions still starting declare it
    http = DownstreamPool({})
    http.note_declaration(caps(roots={}))
    assert http.relay.declared == caps()  # over HTTP a client's declaration waits for its first request, as before
    await http.declare_for(caps(roots={}))
    assert http.relay.declared == caps(roots={})
