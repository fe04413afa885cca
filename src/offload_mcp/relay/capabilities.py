"""What the downstream sessions declare: the client capabilities of the upstream clients.

A downstream session declares client capabilities once, at `initialize`. One
upstream client (stdio) makes that exactly its own declaration. A shared HTTP
proxy serves several clients through one downstream session, so the session
declares the union of what the clients seen so far declared (a server may
then offer a feature one client lacks: that client's requests get a clear
error naming the missing capability). The union only grows, so downstream
sessions are re-declared (reconnected) a bounded number of times.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.client.session import ClientSession


def relayed_part(caps: types.ClientCapabilities | None) -> types.ClientCapabilities:
    """The relayable part of a client's declaration (sampling, elicitation, roots), normalised."""
    if caps is None:
        return types.ClientCapabilities()
    elicitation = caps.elicitation
    if elicitation is not None and elicitation.form is None and elicitation.url is None:
        # The spec reads an empty elicitation capability as form mode.
        elicitation = types.ElicitationCapability(form=types.FormElicitationCapability())
    return types.ClientCapabilities(sampling=caps.sampling, elicitation=elicitation, roots=caps.roots)


def union(a: types.ClientCapabilities, b: types.ClientCapabilities) -> types.ClientCapabilities:
    """Everything either declaration offers (sub-capabilities included)."""
    sampling = None
    if a.sampling is not None or b.sampling is not None:
        sa, sb = a.sampling or types.SamplingCapability(), b.sampling or types.SamplingCapability()
        sampling = types.SamplingCapability(context=sa.context or sb.context, tools=sa.tools or sb.tools)
    elicitation = None
    if a.elicitation is not None or b.elicitation is not None:
        ea, eb = a.elicitation or types.ElicitationCapability(), b.elicitation or types.ElicitationCapability()
        elicitation = types.ElicitationCapability(form=ea.form or eb.form, url=ea.url or eb.url)
    roots = None
    if a.roots is not None or b.roots is not None:
        listed = bool((a.roots and a.roots.list_changed) or (b.roots and b.roots.list_changed))
        roots = types.RootsCapability(list_changed=True if listed else None)
    return types.ClientCapabilities(sampling=sampling, elicitation=elicitation, roots=roots)


def wire(caps: types.ClientCapabilities) -> dict[str, Any]:
    return caps.model_dump(by_alias=True, mode="json", exclude_none=True)


def lacks(caps: types.ClientCapabilities | None, method: str, params: Any = None) -> str | None:
    """The capability a client lacks to take `method`, as words; None when it can take it."""
    caps = relayed_part(caps)
    if method == "sampling/createMessage":
        if caps.sampling is None:
            return "sampling"
        if getattr(params, "tools", None) and caps.sampling.tools is None:
            return "sampling.tools"
        include = getattr(params, "include_context", None)
        if include not in (None, "none") and caps.sampling.context is None:
            return "sampling.context"
        return None
    if method == "elicitation/create":
        if caps.elicitation is None:
            return "elicitation"
        mode = getattr(params, "mode", None) or "form"
        if mode == "url" and caps.elicitation.url is None:
            return "elicitation.url"
        if mode == "form" and caps.elicitation.form is None:
            return "elicitation.form"
        return None
    if method == "roots/list":
        return "roots" if caps.roots is None else None
    return None


class DeclaringClientSession(ClientSession):
    """A ClientSession that declares the capabilities it is given, not the ones its callbacks imply.

    The SDK derives the declaration from which callbacks are set (elicitation
    always as form + URL, roots always with listChanged); a proxy must declare
    what its clients declared, so the relayed part is replaced.
    """

    def __init__(self, *args: Any, declared: types.ClientCapabilities, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.declared = declared

    def _build_capabilities(self, version: str) -> types.ClientCapabilities:
        base = super()._build_capabilities(version)
        return base.model_copy(
            update={
                "sampling": self.declared.sampling,
                "elicitation": self.declared.elicitation,
                "roots": self.declared.roots,
            }
        )
