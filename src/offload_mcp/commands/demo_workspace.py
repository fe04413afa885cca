"""The demo's downstream: a real MCP server (stdio) that answers like a busy project's tools.

`python -m offload_mcp.commands.demo_workspace` serves five tools whose outputs
have the shapes agents meet every day: `git_status` (small), `git_log` (a long history),
`read_file` (a big CSV export), `run_tests` (a pytest log full of ANSI colour
codes and repeated warnings) and `list_issues` (a JSON list). The content is
generated from a fixed seed, so every run and every machine sees the same
bytes, without git, network or files. One commit carries the detail the demo
recalls at the end (`NEEDLE`).
"""

from __future__ import annotations

import hashlib
import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

NEEDLE = "#4821"
NEEDLE_SUBJECT = f"fix(billing): round invoice totals half-even, not half-up ({NEEDLE})"

_AUTHORS = [
    ("Ana Ruiz", "ana.ruiz@example.com"),
    ("Kenji Watanabe", "kenji@example.com"),
    ("Priya Natarajan", "priya@example.com"),
    ("Tomasz Nowak", "tnowak@example.com"),
    ("Lea Schmidt", "lea.schmidt@example.com"),
    ("Sam Okafor", "sam.okafor@example.com"),
]
_AREAS = ["billing", "ledger", "api", "auth", "search", "ui", "ci", "docs", "importer", "scheduler"]
_VERBS = ["fix", "feat", "refactor", "perf", "test", "chore", "docs"]
_THINGS = [
    "retry a locked write once before giving up",
    "paginate the export endpoint",
    "cache the tenant lookup",
    "drop the unused currency column",
    "validate webhook signatures",
    "stream large CSV downloads",
    "split the nightly job into batches",
    "log the request id on every error",
    "bump the HTTP client timeout",
    "handle empty carts at checkout",
    "index orders by created_at",
    "make the importer idempotent",
    "deduplicate customer emails",
    "tighten the rate limiter",
    "render dates in the user's time zone",
]
_BODIES = [
    "The previous behaviour surfaced as intermittent 500s under load.",
    "Measured on staging: p95 went from 840ms to 310ms.",
    "No functional change intended; this prepares the next migration.",
    "Reported by support; reproduced with the fixture in tests/.",
    "Follow-up to the incident review: make the failure explicit.",
]


def _rng(name: str) -> random.Random:
    return random.Random(int(hashlib.sha256(name.encode()).hexdigest()[:16], 16))


def git_status_text() -> str:
    return (
        "On branch fix/invoice-rounding\nYour branch is up to date with 'origin/fix/invoice-rounding'.\n\n"
        "Changes not staged for commit:\n\tmodified:   src/shop/billing/invoices.py\n\tmodified:   tests/billing/test_billing_exports.py\n"
    )


def git_log_text(max_count: int = 1500) -> str:
    rng = _rng("git_log")
    when = datetime(2026, 11, 27, 18, 4, 11, tzinfo=UTC)
    needle_at = min(1137, max_count - 1)
    out = []
    for i in range(max_count):
        sha = hashlib.sha1(f"commit-{i}".encode()).hexdigest()
        name, email = rng.choice(_AUTHORS)
        if i == needle_at:
            subject = NEEDLE_SUBJECT
            body = [
                "Totals like 10.005 were rounded up; finance reconciles with banker's rounding.",
                "Affects invoices created since v3.2.0; see the migration note in docs/billing.md.",
            ]
        else:
            subject = (
                f"{rng.choice(_VERBS)}({rng.choice(_AREAS)}): {rng.choice(_THINGS)} (#{1000 + rng.randrange(4000)})"
            )
            body = [rng.choice(_BODIES)] if rng.random() < 0.6 else []
        out.append(
            f"commit {sha}\nAuthor: {name} <{email}>\nDate:   {when.strftime('%a %b %d %H:%M:%S %Y +0000')}\n\n    {subject}\n"
        )
        if body:
            out.append("\n" + "".join(f"    {line}\n" for line in body))
        out.append("\n")
        when -= timedelta(minutes=rng.randrange(20, 600))
    return "".join(out)


def read_file_text(path: str = "exports/orders-2026-q3.csv", rows: int = 2500) -> str:
    rng = _rng("read_file:" + path)
    lines = ["order_id,customer_id,sku,quantity,unit_price,currency,status,created_at,shipped_at,warehouse"]
    start = datetime(2026, 7, 1, tzinfo=UTC)
    for i in range(rows):
        created = start + timedelta(minutes=53 * i)
        shipped = (
            (created + timedelta(hours=rng.randrange(4, 96))).strftime("%Y-%m-%dT%H:%M:%SZ")
            if rng.random() < 0.9
            else ""
        )
        lines.append(
            f"ORD-{200000 + i},CUST-{rng.randrange(10000, 99999)},SKU-{rng.choice('ABCDEFGH')}{rng.randrange(100, 999)},"
            f"{rng.randrange(1, 12)},{rng.randrange(199, 99999) / 100:.2f},{rng.choice(['EUR', 'USD', 'GBP'])},"
            f"{rng.choice(['paid', 'paid', 'paid', 'refunded', 'pending'])},{created.strftime('%Y-%m-%dT%H:%M:%SZ')},{shipped},"
            f"{rng.choice(['FRA-1', 'AMS-2', 'DUB-1'])}"
        )
    return "\n".join(lines) + "\n"


def run_tests_text(tests: int = 600) -> str:
    rng = _rng("run_tests")
    green, red, yellow, bold, reset = "\x1b[32m", "\x1b[31m", "\x1b[33m", "\x1b[1m", "\x1b[0m"
    modules = [f"tests/{area}/test_{area}_{n}.py" for area in _AREAS for n in ("api", "models", "jobs")]
    out = [
        f"{bold}============================= test session starts =============================={reset}",
        "platform linux -- Python 3.12.7, pytest-8.3.4, pluggy-1.5.0",
        "rootdir: /home/ci/work/shop",
        "configfile: pyproject.toml",
        "plugins: xdist-3.6.1, cov-6.0.0, asyncio-0.24.0",
        f"collected {tests} items",
        "",
    ]
    failed_at = tests * 2 // 3
    for i in range(tests):
        module = modules[i % len(modules)]
        name = f"test_{rng.choice(_AREAS)}_{rng.choice(['creates', 'rejects', 'updates', 'lists', 'exports'])}_{i}"
        pct = f"[{(i + 1) * 100 // tests:3d}%]"
        status = f"{green}PASSED{reset}"
        if i == failed_at:  # the test the failure report and the short summary below name
            module, name, status = (
                "tests/billing/test_billing_exports.py",
                "test_invoice_total_rounding",
                f"{red}FAILED{reset}",
            )
        out.append(f"{module}::{name} {status} {green}{pct}{reset}")
    out += ["", f"{yellow}=============================== warnings summary ==============================={reset}"]
    for i in range(150):
        out += [
            f"{modules[i % len(modules)]}::test_{i}",
            "  /home/ci/work/shop/.venv/lib/python3.12/site-packages/sqlalchemy/orm/query.py:1187: "
            "SAWarning: Query.get() is deprecated; use Session.get() instead (deprecated since: 2.0)",
            "    return self._get_impl(ident, loading.load_on_pk_identity)",
            "",
        ]
    out += [
        "-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html",
        "",
        f"{red}=================================== FAILURES ==================================={reset}",
        f"{red}{bold}_________________________ test_invoice_total_rounding _________________________{reset}",
        "",
        "    def test_invoice_total_rounding():",
        '        invoice = make_invoice(lines=[("SKU-A100", 3, Decimal("3.335"))])',
        f'{red}>       assert invoice.total == Decimal("10.00"){reset}',
        f"{red}E       AssertionError: assert Decimal('10.01') == Decimal('10.00'){reset}",
        "",
        f"tests/billing/test_billing_exports.py:{88 + failed_at % 40}: AssertionError",
        f"{red}=========================== short test summary info ============================{reset}",
        f"{red}FAILED{reset} tests/billing/test_billing_exports.py::test_invoice_total_rounding - AssertionError",
        f"{red}============ 1 failed, {tests - 1} passed, 150 warnings in 41.87s ============{reset}",
    ]
    return "\n".join(out) + "\n"


def list_issues_text(count: int = 300) -> str:
    rng = _rng("list_issues")
    issues = []
    for i in range(count):
        number = 4900 - i
        issues.append(
            {
                "number": number,
                "title": f"{rng.choice(_AREAS)}: {rng.choice(_THINGS)}",
                "state": "open" if rng.random() < 0.35 else "closed",
                "labels": sorted(
                    rng.sample(["bug", "enhancement", "p1", "p2", "needs-triage", "good first issue", "billing"], 2)
                ),
                "author": rng.choice(_AUTHORS)[0],
                "comments": rng.randrange(0, 40),
                "created_at": (datetime(2026, 11, 20, tzinfo=UTC) - timedelta(hours=7 * i)).strftime(
                    "%Y-%m-%dT%H:%M:%SZ"
                ),
                "url": f"https://tracker.example.com/shop/issues/{number}",
            }
        )
    return json.dumps(issues, indent=1)


TOOLS: dict[str, tuple[str, dict[str, Any], Any]] = {
    "git_status": ("Show the working tree status.", {}, lambda a: git_status_text()),
    "git_log": (
        "Show the commit history of the repository (newest first).",
        {"max_count": {"type": "integer", "minimum": 1, "maximum": 5000, "default": 1500}},
        lambda a: git_log_text(int(a.get("max_count", 1500))),
    ),
    "read_file": (
        "Read a file of the workspace.",
        {"path": {"type": "string", "default": "exports/orders-2026-q3.csv"}},
        lambda a: read_file_text(str(a.get("path", "exports/orders-2026-q3.csv"))),
    ),
    "run_tests": ("Run the test suite and return pytest's output.", {}, lambda a: run_tests_text()),
    "list_issues": (
        "List issues in the tracker as JSON.",
        {"state": {"type": "string", "enum": ["all", "open", "closed"], "default": "all"}},
        lambda a: list_issues_text(),
    ),
}


def build_server() -> Any:
    import mcp_types as types
    from mcp.server import Server

    tools = [
        types.Tool(
            name=name,
            description=desc,
            input_schema={"type": "object", "properties": props, "additionalProperties": False},
        )
        for name, (desc, props, _) in TOOLS.items()
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        entry = TOOLS.get(params.name)
        if entry is None:
            return types.CallToolResult(content=[types.TextContent(text=f"unknown tool {params.name}")], is_error=True)
        return types.CallToolResult(content=[types.TextContent(text=entry[2](params.arguments or {}))])

    return Server("offload-mcp-demo-workspace", on_list_tools=list_tools, on_call_tool=call_tool)


def main() -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server()

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
