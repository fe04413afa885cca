"""What a downstream server reports changing, as typed events the catalog view acts on.

The pool hands each event to its listeners with the server's name: a list the server
announced as changed (and that was refetched), a restart (the tool list may differ), a late
start (every list may have grown) or one resource's contents updated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ListKind = Literal["tools", "resources", "prompts"]


@dataclass(frozen=True, slots=True)
class ListChanged:
    """The server sent `notifications/<kind>/list_changed`; its copy of that list is refreshed."""

    kind: ListKind


@dataclass(frozen=True, slots=True)
class Restarted:
    """The server's process or connection was restarted; its tools were listed again."""


@dataclass(frozen=True, slots=True)
class Joined:
    """The server finished starting after the proxy began serving."""


@dataclass(frozen=True, slots=True)
class ResourceUpdated:
    """The server sent `notifications/resources/updated` for a subscribed `uri`."""

    uri: str


DownstreamChange = ListChanged | Restarted | Joined | ResourceUpdated
