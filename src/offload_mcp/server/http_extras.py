"""Plain HTTP routes served beside the MCP endpoint on the SSE and streamable-HTTP transports.

`extra_routes(state)` returns starlette routes; each feature adds its own here
(/healthz, /expand/{hash}: a stashed original as text/plain, /metrics).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from ..store import UnknownId
from ..tools.expand import parse_hash
from .metrics import metrics_route

if TYPE_CHECKING:
    from .proxy import ProxyState


def extra_routes(state: ProxyState) -> list[Route]:
    async def healthz(request: Request) -> JSONResponse:
        servers = state.pool.status()
        ok = all(s["state"] == "ready" for s in servers)
        body = {"status": "ok" if ok else "degraded", "tools": len(state.catalog), "servers": servers}
        return JSONResponse(body, status_code=200)

    async def expand(request: Request) -> Response:
        return await http_expand(request, state)

    routes = [Route("/healthz", healthz, methods=["GET"]), Route("/expand/{hash}", expand, methods=["GET"])]
    routes.append(metrics_route(state.metrics))
    return routes


async def http_expand(request: Request, state: ProxyState) -> Response:
    """GET /expand/{hash}: the original as text/plain; 400 for a malformed hash, 404 for an unknown one, 503 with no ledger."""
    raw = request.path_params.get("hash", "")
    hash_ = parse_hash(raw)

    def answer(status: int, text: str) -> Response:
        state.metrics.observe_expand(status == 200, "http")
        return PlainTextResponse(text, status_code=status, media_type="text/plain; charset=utf-8")

    if hash_ is None:
        return answer(400, f"malformed marker hash {raw[:40]!r}: expected 16 hex digits, e.g. GET /expand/0123456789abcdef\n")
    ledger = state.ledger
    if ledger is None:
        return answer(503, "no ledger is open in this offload-mcp process\n")
    if ledger.settings.scope == "session":
        # A plain GET carries no MCP session, so under session scope nobody may read a stash this way.
        return answer(403, "ledger scope is `session`: GET /expand has no session; use the context_guru_expand tool\n")
    try:
        original = await anyio.to_thread.run_sync(ledger.get_stash, hash_)
    except UnknownId as err:
        return answer(404, f"no stashed original for <<cg:{hash_}>>: {err}\n")
    return answer(200, original)
