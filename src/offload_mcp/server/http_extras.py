"""Plain HTTP routes served beside the MCP endpoint on the SSE and streamable-HTTP transports.

`extra_routes(state)` returns starlette routes; each feature adds its own here
(/healthz, /expand/{hash}, /metrics).
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

logger = logging.getLogger(__name__)

LEDGER_PROBE_TIMEOUT_S = 2.0
"""A probe slower than this counts as unreachable: a health check must answer while the ledger hangs."""


async def ledger_health(ledger: Any | None) -> str:
    """`ok`, `unreachable` (the error goes to the log, not to an unauthenticated caller) or `none`.

    The ledger's own `reachable()` (a trivial query) where it has one, else one cheap read
    through the same interface recall uses.
    """
    if ledger is None:
        return "none"

    def probe() -> tuple[bool, str]:
        reachable = getattr(ledger, "reachable", None)
        if callable(reachable):
            return reachable()  # type: ignore[no-any-return]
        ledger.has_body("trm_healthz")
        return True, ""

    try:
        with anyio.fail_after(LEDGER_PROBE_TIMEOUT_S):
            ok, why = await anyio.to_thread.run_sync(probe, abandon_on_cancel=True)
    except Exception as err:
        ok, why = False, f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    if not ok:
        logger.warning("healthz: ledger unreachable: %s", why)
        return "unreachable"
    return "ok"


def extra_routes(state: Any) -> list[Route]:
    async def healthz(request: Request) -> JSONResponse:
        from .security import is_authorized, public_server_status

        servers = state.pool.status()
        ledger = await ledger_health(getattr(state, "ledger", None))
        ok = all(s["state"] == "ready" for s in servers) and ledger != "unreachable"
        body: dict[str, Any] = {"status": "ok" if ok else "degraded"}
        if is_authorized(request.scope):
            # Details only for a token holder (or a loopback bind without a token), redacted even then.
            body.update(tools=len(state.catalog), ledger=ledger, servers=[public_server_status(s) for s in servers])
        return JSONResponse(body, status_code=200)

    async def expand(request: Request) -> Response:
        from ..tools.expand import http_expand

        return await http_expand(request, state)

    routes = [Route("/healthz", healthz, methods=["GET"]), Route("/expand/{hash}", expand, methods=["GET"])]
    if getattr(state, "metrics", None) is not None:
        from .metrics import metrics_route

        routes.append(metrics_route(state.metrics))
    return routes
