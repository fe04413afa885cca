"""Plain HTTP routes served beside the MCP endpoint on the SSE and streamable-HTTP transports.

`extra_routes(state)` returns starlette routes; each feature adds its own here
(/healthz, /expand/{hash}, /metrics).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


def extra_routes(state: Any) -> list[Route]:
    async def healthz(request: Request) -> JSONResponse:
        servers = state.pool.status()
        ok = all(s["state"] == "ready" for s in servers)
        body = {"status": "ok" if ok else "degraded", "tools": len(state.catalog), "servers": servers}
        return JSONResponse(body, status_code=200)

    async def expand(request: Request) -> Response:
        from ..tools.expand import http_expand

        return await http_expand(request, state)

    routes = [Route("/healthz", healthz, methods=["GET"]), Route("/expand/{hash}", expand, methods=["GET"])]
    if getattr(state, "metrics", None) is not None:
        from .metrics import metrics_route

        routes.append(metrics_route(state.metrics))
    return routes
