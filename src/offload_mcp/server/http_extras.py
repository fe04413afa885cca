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
        from .security import is_authorized, public_server_status

        servers = state.pool.status()
        ok = all(s["state"] == "ready" for s in servers)
        body: dict[str, Any] = {"status": "ok" if ok else "degraded"}
        if is_authorized(request.scope):
            # Details only for a token holder (or a loopback bind without a token), redacted even then.
            body.update(tools=len(state.catalog), servers=[public_server_status(s) for s in servers])
        return JSONResponse(body, status_code=200)

    async def expand(request: Request) -> Response:
        from ..tools.expand import http_expand

        return await http_expand(request, state)

    routes = [Route("/healthz", healthz, methods=["GET"]), Route("/expand/{hash}", expand, methods=["GET"])]
    if getattr(state, "metrics", None) is not None:
        from .metrics import metrics_route

        routes.append(metrics_route(state.metrics))
    return routes
