"""Resources, prompts and completions: which wrapped server answers a client's request.

How it works: the router reads the downstream pool's listings (each server's
resources, resource templates and prompts, refreshed when a server changes)
and forwards each request to the server that owns the name or URI:

- `resources/read` and (un)subscribe go to the server that lists the URI, else
  the first whose template matches it, else every server with resources (the
  first that answers wins);
- prompts keep their names unless two servers share one, then both get the
  server prefix (`rebuild` recomputes the routes; `prompts/get` restores the
  downstream name);
- `completion/complete` follows the prompt route or the resource template; a
  server without completions (or none) answers with no values.

`_meta` goes downstream without our caller's progress token and reserved
protocol keys (`strip_meta`). Inert when no wrapped server offers resources or
prompts: the lists are empty and reads fail with "Resource not found".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from ..catalog.catalog import server_prefix
from ..downstream.pool import DownstreamPool


def strip_meta(meta: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """`_meta` to send downstream: minus our caller's progress token and reserved protocol keys."""
    if not meta:
        return None
    kept = {
        k: v
        for k, v in meta.items()
        if k not in ("progress_token", "progressToken") and not k.startswith("io.modelcontextprotocol/")
    }
    return kept or None


class ResourcePromptRouter:
    """Routes resources, prompts and completions to the wrapped server that owns them."""

    def __init__(self, pool: DownstreamPool) -> None:
        self.pool = pool
        self.prompt_routes: dict[str, tuple[str, str]] = {}
        """Listed prompt name -> (server, the server's own name for it)."""

    def rebuild(self, separator: str) -> None:
        self.prompt_routes = route_prompts(
            {s.name: s.prompts for s in self.pool.servers.values() if s.prompts}, separator
        )

    def _resource_servers(self, uri: str) -> list[str]:
        owners = [s.name for s in self.pool.servers.values() if any(str(r.uri) == uri for r in s.resources)]
        if owners:
            return owners[:1]
        for s in self.pool.servers.values():
            if any(template_matches(t.uri_template, uri) for t in s.resource_templates):
                return [s.name]
        return [s.name for s in self.pool.servers.values() if s.capabilities and s.capabilities.resources is not None]

    async def read_resource(self, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        candidates = self._resource_servers(uri)
        if not candidates:
            raise MCPError(code=-32002, message=f"Resource not found: {uri} (no wrapped server serves resources)")
        params = params.model_copy(update={"meta": strip_meta(params.meta)})
        last: MCPError | None = None
        for name in candidates:
            try:
                return await self.pool.servers[name].request("resources/read", params, types.ReadResourceResult)
            except MCPError as err:
                last = err
        assert last is not None
        raise last

    async def get_prompt(self, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        route = self.prompt_routes.get(params.name)
        if route is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
        server, downstream_name = route
        forwarded = params.model_copy(update={"name": downstream_name, "meta": strip_meta(params.meta)})
        return await self.pool.servers[server].request("prompts/get", forwarded, types.GetPromptResult)

    async def subscribe(
        self, method: str, params: types.SubscribeRequestParams | types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        uri = str(params.uri)
        forwarded = params.model_copy(update={"meta": strip_meta(params.meta)})
        for name in self._resource_servers(uri):
            server = self.pool.servers[name]
            caps = server.capabilities
            if caps is not None and caps.resources is not None and caps.resources.subscribe:
                await server.request(method, forwarded, types.EmptyResult)
        return types.EmptyResult()

    async def complete(self, params: types.CompleteRequestParams) -> types.CompleteResult:
        """Argument completion, routed like prompts/get (prompt ref) or by resource template (template ref)."""
        ref = params.ref
        target: str | None = None
        if isinstance(ref, types.PromptReference):
            route = self.prompt_routes.get(ref.name)
            if route is not None:
                target, original = route
                ref = ref.model_copy(update={"name": original})
        else:
            target = next(
                (
                    s.name
                    for s in self.pool.servers.values()
                    if any(t.uri_template == ref.uri for t in s.resource_templates)
                ),
                None,
            )
        server = self.pool.servers.get(target) if target else None
        if server is None or server.capabilities is None or server.capabilities.completions is None:
            return types.CompleteResult(completion=types.Completion(values=[]))
        forwarded = params.model_copy(update={"ref": ref, "meta": strip_meta(params.meta)})
        return await server.request("completion/complete", forwarded, types.CompleteResult)

    def list_prompts(self) -> list[types.Prompt]:
        out = []
        for listed, (server, original) in self.prompt_routes.items():
            prompt = next(p for p in self.pool.servers[server].prompts if p.name == original)
            out.append(prompt if listed == original else prompt.model_copy(update={"name": listed}))
        return out

    def list_resources(self) -> list[types.Resource]:
        seen: set[str] = set()
        out = []
        for s in self.pool.servers.values():
            for r in s.resources:
                if str(r.uri) not in seen:
                    seen.add(str(r.uri))
                    out.append(r)
        return out

    def list_resource_templates(self) -> list[types.ResourceTemplate]:
        return [t for s in self.pool.servers.values() for t in s.resource_templates]


def template_matches(template: str, uri: str) -> bool:
    pattern = re.escape(template)
    pattern = re.sub(r"\\\{[^}]*\\\}", "[^/]+", pattern)
    return re.fullmatch(pattern, uri) is not None


def route_prompts(server_prompts: Mapping[str, list[types.Prompt]], separator: str) -> dict[str, tuple[str, str]]:
    counts: dict[str, int] = {}
    for prompts in server_prompts.values():
        for p in prompts:
            counts[p.name] = counts.get(p.name, 0) + 1
    routes: dict[str, tuple[str, str]] = {}
    for server, prompts in server_prompts.items():
        for p in prompts:
            name = p.name if counts[p.name] == 1 else server_prefix(server, separator) + p.name
            routes.setdefault(name, (server, p.name))
    return routes
