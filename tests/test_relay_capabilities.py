"""What downstream sessions declare for one or several clients, and what a client lacks for a request."""

from __future__ import annotations

import mcp_types as types

from offload_mcp.relay.capabilities import lacks, relayed_part, union, wire


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
