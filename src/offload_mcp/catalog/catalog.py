"""The catalog: every downstream tool under the name the client sees, and the way back.

Naming (deterministic, documented for users):

- A downstream tool keeps its own name when no other wrapped server, and no
  tool of the proxy itself (`recall_tool_result`, `context_guru_expand`, ...),
  lists the same name.
- When two or more servers list the same name (or a server lists a name the
  proxy reserves), each of those downstream tools is listed as
  `<server><separator><tool>`, e.g. `git__status` (separator `__` by
  default). The server part is the config key with every character outside
  `[A-Za-z0-9_-]` replaced by `_`. Tools that do not collide keep their names.
- `catalog.prefix: "always"` prefixes every downstream tool;
  `"never"` refuses a collision (start-up fails naming both servers; after a
  list_changed the later server's duplicate is dropped and logged).
- If a prefixed name is itself taken, `_2`, `_3`, ... is appended in order.

Order: servers in config order, each server's tools in the order that server
listed them (all pages). Same downstream answers + same config = same list,
byte for byte.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import mcp_types as types

from ..policy.stub import admit_stub
from .settings import CatalogSettings

logger = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class CatalogCollision(Exception):
    """Two servers list the same tool name and `catalog.prefix` is `never`."""


@dataclass(frozen=True)
class CatalogEntry:
    """One downstream tool as the client sees it."""

    name: str
    """The listed name (prefixed or not)."""
    server: str
    downstream_name: str
    tool: types.Tool
    """The downstream definition as listed: `name` set to the listed name, and its outputSchema
    widened to also admit the stub object an offloaded result carries (policy/stub.py `admit_stub`)."""
    downstream_output_schema: dict | None = None
    """The outputSchema the downstream server declared: what its own results are checked against."""

    @property
    def output_schema(self) -> dict | None:
        return self.downstream_output_schema


class Catalog:
    def __init__(self, entries: Sequence[CatalogEntry]) -> None:
        self.entries: list[CatalogEntry] = list(entries)
        self.by_name: dict[str, CatalogEntry] = {e.name: e for e in self.entries}

    def lookup(self, name: str) -> CatalogEntry | None:
        return self.by_name.get(name)

    def __len__(self) -> int:
        return len(self.entries)


def server_prefix(server: str, separator: str) -> str:
    return (_UNSAFE.sub("_", server) or "server") + separator


def build_catalog(
    server_tools: Mapping[str, Sequence[types.Tool]],
    settings: CatalogSettings | None = None,
    reserved: Iterable[str] = (),
    *,
    strict: bool = True,
) -> Catalog:
    """Name every downstream tool (see module docstring). `strict=False` drops instead of raising."""
    settings = settings or CatalogSettings()
    reserved_names = set(reserved)
    counts: Counter[str] = Counter()
    for tools in server_tools.values():
        counts.update({t.name for t in tools})

    def collides(name: str) -> bool:
        return counts[name] > 1 or name in reserved_names

    if settings.prefix == "never":
        clashing = sorted(n for n in counts if collides(n))
        if clashing and strict:
            owners = {n: [s for s, ts in server_tools.items() if any(t.name == n for t in ts)] for n in clashing}
            detail = "; ".join(f"`{n}` from {', '.join(owners[n]) or 'the proxy'}" for n in clashing)
            raise CatalogCollision(f"catalog.prefix is `never` but tool names collide: {detail}")

    taken = set(reserved_names)
    entries: list[CatalogEntry] = []
    for server, tools in server_tools.items():
        seen_here: set[str] = set()
        for tool in tools:
            if tool.name in seen_here:
                logger.warning("server %r lists tool %r twice; keeping the first", server, tool.name)
                continue
            seen_here.add(tool.name)
            if settings.prefix == "always" or (settings.prefix == "auto" and collides(tool.name)):
                name = server_prefix(server, settings.separator) + tool.name
            else:
                name = tool.name
            if name in taken:
                if settings.prefix == "never":
                    logger.error("dropping tool %r of server %r: the name is already listed", tool.name, server)
                    continue
                base, n = name, 2
                while f"{base}_{n}" in taken:
                    n += 1
                name = f"{base}_{n}"
            taken.add(name)
            update: dict[str, object] = {} if name == tool.name else {"name": name}
            if tool.output_schema is not None:
                update["output_schema"] = admit_stub(tool.output_schema)
            listed = tool.model_copy(update=update) if update else tool
            entries.append(
                CatalogEntry(
                    name=name,
                    server=server,
                    downstream_name=tool.name,
                    tool=listed,
                    downstream_output_schema=tool.output_schema,
                )
            )
    return Catalog(entries)
