"""Plain HTTP routes served beside the MCP endpoint on the SSE and streamable-HTTP transports.

`extra_routes(state)` returns starlette routes; each feature adds its own here
(/healthz, /expand/{hash}: a stashed original as text/plain, /metrics, /dashboard: the stats as one
page, analysis/dashboard.py).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from ..record import DecisionRecordError
from ..store import LedgerCorrupt, LedgerError, UnknownId
from ..tools.retrieval import parse_hash
from .identity import owner_key, principal_of
from .metrics import metrics_route
from .security import is_authorized, public_server_status

if TYPE_CHECKING:
    from ..analysis.dashboard import ReportCache
    from ..store import Ledger

logger = logging.getLogger(__name__)

LEDGER_PROBE_DEADLINE_S = 0.5
"""A probe slower than this counts as unreachable: a health check must answer while the ledger hangs
(and a load balancer's probe timeout is often 1 s)."""
LEDGER_PROBE_TIMEOUT_S = LEDGER_PROBE_DEADLINE_S + 0.25
"""The wait for the probe's worker thread itself, should the host be too loaded to start it."""


async def ledger_health(ledger: Ledger | None) -> str:
    """`ok`, `unreachable` (the error goes to the log, not to an unauthenticated caller) or `none`.

    The ledger's `reachable()` is a trivial query against its backend; while the database is stalled
    (a call is past its deadline) it is unreachable at once, without another query queued behind it.
    """
    if ledger is None:
        return "none"
    try:
        with anyio.fail_after(LEDGER_PROBE_TIMEOUT_S):
            ok, why = await anyio.to_thread.run_sync(
                lambda: ledger.reachable(LEDGER_PROBE_DEADLINE_S), abandon_on_cancel=True
            )
    except Exception as err:
        ok, why = False, f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    if not ok:
        logger.warning("healthz: ledger unreachable: %s", why)
        return "unreachable"
    return "ok"


if TYPE_CHECKING:
    from .proxy import ProxyState


def extra_routes(state: ProxyState) -> list[Route]:
    async def healthz(request: Request) -> JSONResponse:
        servers = state.pool.status()
        ledger = await ledger_health(state.ledger)
        ok = all(s["state"] == "ready" for s in servers) and ledger != "unreachable"
        body: dict[str, Any] = {"status": "ok" if ok else "degraded"}
        if is_authorized(request.scope):
            # Details only for a token holder (or a loopback bind without a token), redacted even then.
            body.update(tools=len(state.catalog), ledger=ledger, servers=[public_server_status(s) for s in servers])
        return JSONResponse(body, status_code=200)

    async def expand(request: Request) -> Response:
        return await http_expand(request, state)

    # The page's code loads with the routes, not with every import.
    from ..analysis.dashboard import CheckpointKeeper, ReportCache

    reports = ReportCache()
    if state.ledger is not None and state.ledger.writable:
        CheckpointKeeper(state.ledger, state.settings.policy, reports).start()

    async def dashboard(request: Request) -> Response:
        return await http_dashboard(request, state, reports)

    routes = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/expand/{hash}", expand, methods=["GET"]),
        Route("/dashboard", dashboard, methods=["GET"]),
    ]
    routes.append(metrics_route(state.metrics))
    return routes


async def http_expand(request: Request, state: ProxyState) -> Response:
    """GET /expand/{hash}: the original as text/plain; 400 for a malformed hash, 404 for an unknown one, 503 with no
    ledger or one that cannot be reached, 500 for a stored original that is damaged."""
    raw = request.path_params.get("hash", "")
    hash_ = parse_hash(raw)

    def answer(status: int, text: str) -> Response:
        state.metrics.observe_expand(status == 200, "http")
        return PlainTextResponse(text, status_code=status, media_type="text/plain; charset=utf-8")

    if hash_ is None:
        return answer(
            400, f"malformed marker hash {raw[:40]!r}: expected 16 hex digits, e.g. GET /expand/0123456789abcdef\n"
        )
    ledger = state.ledger
    if ledger is None:
        return answer(503, "no ledger is open in this offload-mcp process\n")
    scope = ledger.settings.scope
    if scope == "session":
        # A plain GET carries no MCP session, so under session scope nobody may read a stash this way.
        return answer(403, "ledger scope is `session`: GET /expand has no session; use the context_guru_expand tool\n")
    owner = None
    if scope == "principal":
        # The bearer token names the caller: only markers handed to that principal are readable.
        owner = owner_key(scope, principal=principal_of(request), session_id="")
    try:
        original = await anyio.to_thread.run_sync(lambda: ledger.get_stash(hash_, session_id=owner))
    except UnknownId as err:
        return answer(404, f"no stashed original for <<cg:{hash_}>>: {err}\n")
    except LedgerCorrupt as err:  # not a passing outage (503 invites a retry): the stored bytes are damaged
        return answer(500, f"the stored original cannot be read, the ledger is corrupt: {ledger.for_client(err)}\n")
    except LedgerError as err:
        return answer(503, f"the ledger cannot be read right now: {ledger.for_client(err)}\n")
    return answer(200, original)


def dashboard_viewer(request: Request, state: ProxyState) -> tuple[str | None, str]:
    """Whose rows the caller may see: (the ledger owner key to keep, or None for all; words for the page).

    Under `ledger.scope: principal` a caller sees the rows recorded for its own principal, an operator
    (`offload.server.operator_principals`) every caller's; under the other scopes the ledger is one tenant."""
    settings = state.settings
    principal = principal_of(request)
    if settings.ledger.scope != "principal" or principal in settings.server.operator_principals:
        return None, "every caller"
    return owner_key("principal", principal=principal, session_id=""), f"principal {principal}"


async def http_dashboard(request: Request, state: ProxyState, reports: ReportCache) -> Response:
    """GET /dashboard: the stats of the ledger as one HTML page (analysis/dashboard.py); read-only, paged tables.

    The Guard has checked the bearer token before this runs (/dashboard is not an open path)."""
    from ..analysis.dashboard import Pages, render_page

    ledger = state.ledger
    if ledger is None:
        return PlainTextResponse("no ledger is open in this offload-mcp process\n", status_code=503)
    pages = Pages(tools=_page_number(request, "tools_page"), largest=_page_number(request, "largest_page"))
    owner, viewer = dashboard_viewer(request, state)

    def render() -> str:
        counted = reports.report(ledger, state.settings.policy, owner)
        return render_page(counted.report, ledger=ledger.location, viewer=viewer, pages=pages, counted=counted)

    try:
        page = await anyio.to_thread.run_sync(render, abandon_on_cancel=True)
    except LedgerError as err:
        return PlainTextResponse(f"the ledger cannot be read right now: {ledger.for_client(err)}\n", status_code=503)
    except DecisionRecordError as err:
        logger.warning("dashboard: %s", err)
        return PlainTextResponse(f"the ledger holds a row this build cannot read: {err}\n", status_code=500)
    headers = {
        "Cache-Control": "no-store",
        "Content-Security-Policy": DASHBOARD_CSP,
        "X-Content-Type-Options": "nosniff",
    }
    return HTMLResponse(page, headers=headers)


DASHBOARD_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'"
"""The page loads nothing and runs no script: its own inline style is all it may use."""


def _page_number(request: Request, name: str) -> int:
    """A page index from the query string; anything that is not a small non-negative integer is page 0."""
    raw = request.query_params.get(name, "0")
    return int(raw) if raw.isdigit() and len(raw) < 7 else 0
