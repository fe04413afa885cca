"""Build the MCP-shaped dev corpus: scripted agent sessions against real MCP servers, recorded as replay records.

    .venv/bin/python bench/corpus_mcp.py                       # writes bench/data/corpus/mcp_servers.jsonl.gz
    .venv/bin/python bench/corpus_mcp.py --out /tmp/c.jsonl.gz
    offload-mcp replay bench/data/corpus/mcp_servers.jsonl.gz --client claude-code

Servers, all real and spoken to over stdio with the mcp SDK's client:
- `sqlite` / `postgres`: bench/corpus_servers.py over a sample shop database
  (results shaped like the reference SQLite server: a Python repr of row
  dicts; and the reference Postgres server: rows as indented JSON);
- `memory`: npm @modelcontextprotocol/server-memory (a knowledge graph);
- `filesystem`: npm @modelcontextprotocol/server-filesystem over a generated
  project tree (code, a CSV of orders, an application log);
- `git`: PyPI mcp-server-git over the same tree's history (a generated
  repository: 7 authors, 220 commits, fixed dates);
- `github`: a GitHub REST-shaped JSON API, and GraphQL-shaped issue queries
  and comment mutations (bench/corpus_servers.py);
- `finance`: daily price series, quotes (with structuredContent), options;
- `sheets`, `notion`, `playwright`: a Sheets API-shaped spreadsheet, a
  Notion API-shaped database, Playwright MCP-shaped page snapshots whose
  `[ref=eN]` handles the next click names (bench/corpus_servers.py);
- `warehouse-*` (issue 38): real SQL servers over a warehouse of thousands of
  rows (corpus_servers.warehouse_tables) in a PostgreSQL started in a temp
  folder (tests/support/pg.py) and in SQLite: PyPI `postgres-mcp` (Python-repr rows),
  npm `@modelcontextprotocol/server-postgres` (indented JSON), PyPI
  `mcp-alchemy` (row blocks); server-filesystem reads of a JSON and a CSV
  export; the same results re-encoded by `corpus_servers.py wrap` (the
  Supabase envelope as a JSON string literal, a JSON string, double-encoded,
  a `{"type": "text"}` field, a prose line then JSON); mcp-server-git's log
  of this repository's 545 commits. These servers install into bench/out/ on
  first use (`ensure_sql_servers`; postgres-mcp needs a Python 3.12+).
- `playwright-mcp` (`browser-*` sessions): npm @playwright/mcp driving Debian's
  chromium (headless, isolated) over a generated shop site served on localhost
  (bench/corpus_site.py): catalogs of 800 and 260 rows, product pages, a long
  handbook, an order form; the agent clicks, types and navigates by the refs
  and URLs it read in the snapshots.

`--only browser- --merge` re-records only those sessions into the existing
corpus, every other record kept byte for byte.

Each session is a trajectory whose later calls use values an agent would read
out of earlier results (an order number from the middle of a result set, the
sha of a commit deep in a log, the date of the lowest close, an entity from
the middle of a graph): the needed facts replay's fidelity counts.

Records use the shared corpus format (`source`, `server`, `tool` as
`server.tool`, `call` as a JSON string, `output` as the text blocks joined,
`structured` when the server sent structuredContent, `traj`, `step`,
`is_error`, `chars`). Deterministic: fixed seeds, fixed dates, temporary
paths rewritten to `/srv/corpus`, so two runs write the same bytes (gzip
mtime 0; the browser site's port and Playwright's clock stamps rewritten).
Needs node (the npm servers in node_modules), mcp-server-git, PostgreSQL's
binaries (initdb, pg_ctl) and chromium.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import csv
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import mcp_types as types

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "peers"))

from mcp_drive import open_session  # noqa: E402

from corpus_servers import build_db  # noqa: E402
from corpus_site import Site  # noqa: E402

DEFAULT_OUT = HERE / "data" / "corpus" / "mcp_servers.jsonl.gz"
SOURCE = "offload-mcp:bench/corpus_mcp.py"
FIXED_ROOT = "/srv/corpus"
AUTHORS = [
    ("Ada Lovelace", "ada@acme.example"),
    ("Grace Hopper", "grace@acme.example"),
    ("Alan Turing", "alan@acme.example"),
    ("Edsger Dijkstra", "edsger@acme.example"),
    ("Barbara Liskov", "barbara@acme.example"),
    ("Donald Knuth", "don@acme.example"),
    ("Dev 1", "dev1@acme.example"),
]


# ---- the generated project tree and its history --------------------------------------------


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    base = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(repo),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "LC_ALL": "C",
        "TZ": "UTC",
    }
    done = subprocess.run(
        ["git", *args], cwd=repo, env={**base, **(env or {})}, capture_output=True, text=True, check=True
    )
    return done.stdout


def build_repo(repo: Path) -> None:
    """A small inventory service with 220 commits by 7 authors at fixed dates: same hashes every run."""
    import random

    rng = random.Random(1729)
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    modules = ["stock", "orders", "pricing", "sync", "api"]
    (repo / "src" / "inventory").mkdir(parents=True)
    (repo / "data").mkdir()
    (repo / "logs").mkdir()
    (repo / "notes").mkdir()
    (repo / "README.md").write_text("# inventory-service\n\nKeeps warehouse stock in sync with orders.\n")
    for m in modules:
        (repo / "src" / "inventory" / f"{m}.py").write_text(
            f'"""{m} handling."""\n\nWAREHOUSES = ["WH-12", "WH-31", "WH-47"]\n'
        )
    (repo / "data" / "orders.csv").write_text("order_no,sku,qty,warehouse,status\n")
    (repo / "logs" / "app.log").write_text("")
    base = datetime(2026, 1, 5, 9, 0, 0)
    for i in range(220):
        name, email = AUTHORS[rng.randrange(len(AUTHORS))]
        module = rng.choice(modules)
        kind = rng.choice(["fix", "feat", "refactor", "perf", "chore"])
        with open(repo / "src" / "inventory" / f"{module}.py", "a") as f:
            f.write(
                f'\n\ndef reconcile_{module}_{i:03d}(warehouse: str = "WH-{rng.randint(10, 99)}") -> int:\n'
                f'    """{kind}: threshold tuned for SKU-{rng.randint(1000, 9999)}."""\n'
                f"    return {rng.randint(1, 5000)}\n"
            )
        with open(repo / "data" / "orders.csv", "a") as f:
            for _ in range(3):
                f.write(
                    f"ORD-2026-{rng.randint(1, 99999):05d},SKU-{rng.randint(1000, 9999)},{rng.randint(1, 9)},WH-{rng.randint(10, 99)},"
                    f"{rng.choice(['open', 'picked', 'shipped', 'returned'])}\n"
                )
        with open(repo / "logs" / "app.log", "a") as f:
            for k in range(14):
                when = base + timedelta(hours=3 * i, seconds=97 * k)
                level = "ERROR" if rng.random() < 0.04 else rng.choice(["INFO", "INFO", "INFO", "DEBUG", "WARN"])
                f.write(
                    f"{when.isoformat()}Z {level} [{module}] req=r-{rng.getrandbits(48):012x} "
                    f"{'sync failed for' if level == 'ERROR' else 'processed'} SKU-{rng.randint(1000, 9999)} at WH-{rng.randint(10, 99)} "
                    f"in {rng.randint(2, 900)} ms\n"
                )
        stamp = (base + timedelta(hours=3 * i)).strftime("%Y-%m-%dT%H:%M:%S+0000")
        env = {
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
            "GIT_COMMITTER_DATE": stamp,
        }
        _git(repo, "add", "-A")
        subject = {"fix": "Fix", "feat": "Add", "refactor": "Refactor", "perf": "Speed up", "chore": "Tidy"}[kind]
        _git(repo, "commit", "-q", "-m", f"{subject} {module} reconciliation #{i}", env=env)


# ---- recording -----------------------------------------------------------------------------------


@dataclass
class Recorder:
    root: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    traj: str = ""
    step: int = 0
    rewrite: Callable[[str], str] | None = None
    """Further run-specific text to fix (the browser site's origin, Playwright's file stamps)."""

    def start(self, traj: str) -> None:
        self.traj, self.step = traj, 0

    def _fix(self, text: str) -> str:
        text = text.replace(str(self.root), FIXED_ROOT)
        return self.rewrite(text) if self.rewrite is not None else text

    async def call(self, session: Any, server: str, tool: str, arguments: dict[str, Any]) -> tuple[str, Any]:
        """Call a tool for real and record it; returns (text, structuredContent) as the agent got them."""
        result: types.CallToolResult = await session.call_tool(tool, arguments)
        text = "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))
        structured = result.structured_content
        record: dict[str, Any] = {
            "source": SOURCE,
            "server": server,
            "tool": f"{server}.{tool}",
            "call": self._fix(json.dumps(arguments, sort_keys=True)),
            "output": self._fix(text),
            "traj": self.traj,
            "step": self.step,
            "is_error": bool(result.is_error),
            "truncated_by_agent": False,
        }
        if structured is not None:
            record["structured"] = json.loads(self._fix(json.dumps(structured)))
        record["chars"] = len(record["output"])
        self.records.append(record)
        self.step += 1
        return text, structured


Session = Callable[[Recorder, "Servers"], Awaitable[None]]


@dataclass
class Servers:
    """Commands that start each real server for this run."""

    work: Path
    db: Path
    repo: Path
    real_repo: Path | None
    memory_file: Path
    pg_url: str = ""
    warehouse_sqlite: Path | None = None
    exports: Path | None = None
    long_repo: Path | None = None
    site: Site | None = None

    def command(self, name: str) -> tuple[list[str], dict[str, str]]:
        py = sys.executable
        bin_dir = ROOT / "node_modules" / ".bin"
        if name.startswith("wrap-"):  # wrap-STYLE-of-SERVER: SERVER's results re-encoded by a wrapping server
            style, _, inner = name[len("wrap-") :].partition("-of-")
            command, env = self.command(inner)
            return [py, str(HERE / "corpus_servers.py"), "wrap", style, *command], env
        if name == "postgres-mcp":
            return [str(SQL_SERVERS.postgres_mcp), "--access-mode=unrestricted"], {"DATABASE_URI": self.pg_url}
        if name == "server-postgres":
            return ["node", str(SQL_SERVERS.server_postgres), self.pg_url], {"TZ": "UTC"}
        if name == "alchemy":
            db_url = f"sqlite:///{self.warehouse_sqlite}"
            return [str(SQL_SERVERS.alchemy)], {"DB_URL": db_url, "EXECUTE_QUERY_MAX_CHARS": str(ALCHEMY_MAX_CHARS)}
        if name == "filesystem-exports":
            return [str(bin_dir / "mcp-server-filesystem"), str(self.exports)], {}
        if name in ("sqlite", "postgres"):
            return [py, str(HERE / "corpus_servers.py"), name, str(self.db)], {}
        if name in ("github", "finance", "sheets", "notion"):
            return [py, str(HERE / "corpus_servers.py"), name], {}
        if name == "playwright":
            return [py, str(HERE / "corpus_servers.py"), "browser"], {}
        if name == "playwright-mcp":
            return [str(bin_dir / "playwright-mcp"), *PLAYWRIGHT_ARGS, "--executable-path", _chromium()], {}
        if name == "memory":
            return [str(bin_dir / "mcp-server-memory")], {"MEMORY_FILE_PATH": str(self.memory_file)}
        if name == "filesystem":
            return [str(bin_dir / "mcp-server-filesystem"), str(self.repo)], {}
        if name == "git":
            return [str(Path(py).parent / "mcp-server-git")], {}
        raise KeyError(name)


async def with_server(servers: Servers, name: str, body: Callable[[Any], Awaitable[None]]) -> None:
    command, env = servers.command(name)
    async with open_session(command, env=env, cwd=servers.work, timeout_s=120) as session:
        await body(session)


# ---- scripted sessions ----------------------------------------------------------------------------


def _pick(items: list[Any], fraction: float) -> Any:
    return items[min(len(items) - 1, int(len(items) * fraction))]


def sql_sessions() -> list[tuple[str, Session]]:
    out: list[tuple[str, Session]] = []
    for k, (status, frac) in enumerate([("refunded", 0.6), ("shipped", 0.45), ("cancelled", 0.3), ("delivered", 0.7)]):

        async def s(rec: Recorder, servers: Servers, status: str = status, frac: float = frac) -> None:
            async def body(db: Any) -> None:
                await rec.call(db, "sqlite", "list_tables", {})
                await rec.call(db, "sqlite", "describe_table", {"table_name": "orders"})
                text, _ = await rec.call(
                    db,
                    "sqlite",
                    "read_query",
                    {"query": f"SELECT * FROM orders WHERE status = '{status}' ORDER BY created_at"},
                )
                row = _pick(ast.literal_eval(text), frac)
                await rec.call(
                    db, "sqlite", "read_query", {"query": f"SELECT * FROM customers WHERE id = {row['customer_id']}"}
                )
                text, _ = await rec.call(
                    db, "sqlite", "read_query", {"query": f"SELECT * FROM order_items WHERE order_id = {row['id']}"}
                )
                item = ast.literal_eval(text)[-1]
                await rec.call(
                    db,
                    "sqlite",
                    "read_query",
                    {"query": f"SELECT sku, name, price, stock FROM products WHERE sku = '{item['sku']}'"},
                )
                await rec.call(
                    db,
                    "sqlite",
                    "read_query",
                    {"query": f"SELECT order_no, status, total FROM orders WHERE order_no = '{row['order_no']}'"},
                )

            await with_server(servers, "sqlite", body)

        out.append((f"sqlite-orders-{k}", s))
    for k, city in enumerate(["Lyon", "Tartu", "Graz"]):

        async def c(rec: Recorder, servers: Servers, city: str = city) -> None:
            async def body(db: Any) -> None:
                text, _ = await rec.call(
                    db,
                    "sqlite",
                    "read_query",
                    {
                        "query": f"SELECT id, name, email, city, created_at FROM customers WHERE city = '{city}' ORDER BY id"
                    },
                )
                who = _pick(ast.literal_eval(text), 0.55)
                text, _ = await rec.call(
                    db,
                    "sqlite",
                    "read_query",
                    {"query": f"SELECT * FROM orders WHERE customer_id = {who['id']} ORDER BY created_at"},
                )
                refs = [r for r in ast.literal_eval(text) if r["shipping_ref"]]
                if refs:
                    await rec.call(
                        db,
                        "sqlite",
                        "read_query",
                        {
                            "query": f"SELECT id, order_no, status FROM orders WHERE shipping_ref = '{refs[-1]['shipping_ref']}'"
                        },
                    )
                await rec.call(
                    db,
                    "sqlite",
                    "read_query",
                    {
                        "query": f"SELECT COUNT(*) AS n FROM orders o JOIN customers c ON c.id = o.customer_id WHERE c.email = '{who['email']}'"
                    },
                )

            await with_server(servers, "sqlite", body)

        out.append((f"sqlite-customers-{k}", c))
    for k, (limit, frac) in enumerate([(60, 0.55), (120, 0.8), (25, 0.4)]):

        async def p(rec: Recorder, servers: Servers, limit: int = limit, frac: float = frac) -> None:
            async def body(db: Any) -> None:
                text, _ = await rec.call(
                    db,
                    "postgres",
                    "query",
                    {
                        "sql": "SELECT o.order_no, o.total, o.status, c.email FROM orders o JOIN customers c ON c.id = o.customer_id "
                        f"ORDER BY o.total DESC LIMIT {limit}"
                    },
                )
                row = _pick(json.loads(text), frac)
                text, _ = await rec.call(
                    db, "postgres", "query", {"sql": f"SELECT * FROM orders WHERE order_no = '{row['order_no']}'"}
                )
                order = json.loads(text)[0]
                text, _ = await rec.call(
                    db, "postgres", "query", {"sql": f"SELECT * FROM order_items WHERE order_id = {order['id']}"}
                )
                await rec.call(
                    db, "postgres", "query", {"sql": f"SELECT * FROM customers WHERE email = '{row['email']}'"}
                )

            await with_server(servers, "postgres", body)

        out.append((f"postgres-top-orders-{k}", p))

    async def stock(rec: Recorder, servers: Servers) -> None:
        async def body(db: Any) -> None:
            text, _ = await rec.call(db, "postgres", "query", {"sql": "SELECT * FROM products ORDER BY stock, sku"})
            product = _pick(json.loads(text), 0.5)
            text, _ = await rec.call(
                db,
                "postgres",
                "query",
                {
                    "sql": f"SELECT order_id, qty, unit_price FROM order_items WHERE sku = '{product['sku']}' ORDER BY order_id"
                },
            )
            line = _pick(json.loads(text), 0.5)
            await rec.call(
                db,
                "postgres",
                "query",
                {"sql": f"SELECT order_no, created_at, shipping_ref FROM orders WHERE id = {line['order_id']}"},
            )

        await with_server(servers, "postgres", body)

    out.append(("postgres-stock", stock))
    return out


def github_sessions() -> list[tuple[str, Session]]:
    out: list[tuple[str, Session]] = []
    repo = {"owner": "acme-labs", "repo": "inventory-service"}
    for k, frac in enumerate([0.57, 0.15, 0.85]):

        async def issues(rec: Recorder, servers: Servers, frac: float = frac) -> None:
            async def body(gh: Any) -> None:
                text, _ = await rec.call(gh, "github", "list_issues", {**repo, "state": "open", "per_page": 30})
                issue = _pick(json.loads(text), frac)
                await rec.call(gh, "github", "get_issue", {**repo, "issue_number": issue["number"]})
                text, _ = await rec.call(gh, "github", "get_issue_comments", {**repo, "issue_number": issue["number"]})
                shas = [h for h in re.findall(r"\b[0-9a-f]{10,12}\b", text + "\n" + issue["body"]) if not h.isdigit()]
                if shas:
                    text, _ = await rec.call(gh, "github", "get_commit", {**repo, "sha": shas[-1]})
                    await rec.call(gh, "github", "get_user", {"username": json.loads(text)["author"]["login"]})

            await with_server(servers, "github", body)

        out.append((f"github-issue-{k}", issues))
    for k, (per_page, frac) in enumerate([(60, 0.62), (100, 0.9)]):

        async def commits(rec: Recorder, servers: Servers, per_page: int = per_page, frac: float = frac) -> None:
            async def body(gh: Any) -> None:
                text, _ = await rec.call(gh, "github", "list_commits", {**repo, "per_page": per_page})
                commit = _pick(json.loads(text), frac)
                text, _ = await rec.call(gh, "github", "get_commit", {**repo, "sha": commit["sha"]})
                detail = json.loads(text)
                text, _ = await rec.call(gh, "github", "list_issues", {**repo, "state": "all", "per_page": 90})
                hit = next(
                    (i for i in json.loads(text) if commit["sha"][:12] in (i["body"] or "")),
                    _pick(json.loads(text), 0.66),
                )
                await rec.call(gh, "github", "get_issue", {**repo, "issue_number": hit["number"]})
                await rec.call(gh, "github", "get_user", {"username": detail["author"]["login"]})

            await with_server(servers, "github", body)

        out.append((f"github-commits-{k}", commits))
    for k, frac in enumerate([0.55, 0.8]):

        async def graphql(rec: Recorder, servers: Servers, frac: float = frac) -> None:
            # GraphQL keeps its records down an envelope (data.repository.issues.nodes); a mutation takes
            # the node id of the issue the agent picked from the middle of them.
            async def body(gh: Any) -> None:
                text, _ = await rec.call(gh, "github", "graphql_issues", {**repo, "first": 90, "states": "OPEN,CLOSED"})
                node = _pick(json.loads(text)["data"]["repository"]["issues"]["nodes"], frac)
                await rec.call(gh, "github", "graphql_add_comment", {"subject_id": node["id"], "body": "Reproduced."})

            await with_server(servers, "github", body)

        out.append((f"github-graphql-{k}", graphql))
    return out


def finance_sessions() -> list[tuple[str, Session]]:
    out: list[tuple[str, Session]] = []
    for symbol, exp_index, frac in [("ACME", 2, 0.63), ("GLOBX", 0, 0.4), ("INITECH", 3, 0.77)]:

        async def s(
            rec: Recorder, servers: Servers, symbol: str = symbol, exp_index: int = exp_index, frac: float = frac
        ) -> None:
            async def body(fin: Any) -> None:
                text, _ = await rec.call(
                    fin, "finance", "get_historical_stock_prices", {"symbol": symbol, "period": "1y"}
                )
                rows = json.loads(text)
                low = min(rows, key=lambda r: r["close"])
                await rec.call(fin, "finance", "get_news", {"symbol": symbol, "day": low["date"]})
                _, quote = await rec.call(fin, "finance", "get_quote", {"symbol": symbol})
                expiration = quote["option_expirations"][exp_index]
                text, _ = await rec.call(
                    fin, "finance", "get_option_chain", {"symbol": symbol, "expiration": expiration}
                )
                contract = _pick(json.loads(text)["calls"], frac)
                await rec.call(fin, "finance", "get_option_quote", {"contract_symbol": contract["contractSymbol"]})
                text, _ = await rec.call(fin, "finance", "get_price_table", {"symbol": symbol, "days": 120})
                table = list(csv.DictReader(io.StringIO(text)))
                busiest = max(table, key=lambda r: int(r["Volume"]))
                await rec.call(fin, "finance", "get_news", {"symbol": symbol, "day": busiest["Date"]})

            await with_server(servers, "finance", body)

        out.append((f"finance-{symbol.lower()}", s))
    return out


def memory_sessions() -> list[tuple[str, Session]]:
    import random

    async def build(rec: Recorder, servers: Servers) -> None:
        rng = random.Random(99)

        async def body(mem: Any) -> None:
            entities = [
                {
                    "name": f"Customer C-{1000 + i * 17}",
                    "entityType": "customer",
                    "observations": [
                        f"account ACC-{rng.randint(100000, 999999)}",
                        f"prefers warehouse WH-{rng.randint(10, 99)}",
                        f"last order ORD-2025-{rng.randint(1, 720):05d}",
                        f"contact {rng.choice(['email', 'phone'])}",
                    ],
                }
                for i in range(45)
            ]
            await rec.call(mem, "memory", "create_entities", {"entities": entities})
            relations = [
                {"from": entities[i]["name"], "to": entities[(i * 7 + 3) % 45]["name"], "relationType": "referred"}
                for i in range(30)
            ]
            await rec.call(mem, "memory", "create_relations", {"relations": relations})
            text, structured = await rec.call(mem, "memory", "read_graph", {})
            graph = structured if structured is not None else json.loads(text)
            target = _pick(graph["entities"], 0.6)
            await rec.call(mem, "memory", "open_nodes", {"names": [target["name"]]})
            account = next(o for o in target["observations"] if o.startswith("account "))[len("account ") :]
            await rec.call(
                mem,
                "memory",
                "add_observations",
                {
                    "observations": [
                        {
                            "entityName": target["name"],
                            "contents": [f"escalated ticket SUP-{rng.randint(10000, 99999)}"],
                        }
                    ]
                },
            )
            await rec.call(mem, "memory", "search_nodes", {"query": account})

        await with_server(servers, "memory", body)

    async def recall(rec: Recorder, servers: Servers) -> None:
        async def body(mem: Any) -> None:
            text, structured = await rec.call(mem, "memory", "search_nodes", {"query": "WH-4"})
            graph = structured if structured is not None else json.loads(text)
            if graph["entities"]:
                target = _pick(graph["entities"], 0.7)
                order = next((o for o in target["observations"] if o.startswith("last order ")), "")[
                    len("last order ") :
                ]
                await rec.call(mem, "memory", "open_nodes", {"names": [target["name"]]})
                await rec.call(mem, "memory", "search_nodes", {"query": order})
            await rec.call(mem, "memory", "read_graph", {})

        await with_server(servers, "memory", body)

    return [("memory-build", build), ("memory-recall", recall)]


def filesystem_sessions() -> list[tuple[str, Session]]:
    async def browse(rec: Recorder, servers: Servers) -> None:
        root = str(servers.repo)

        async def body(fs: Any) -> None:
            await rec.call(fs, "filesystem", "list_allowed_directories", {})
            await rec.call(fs, "filesystem", "directory_tree", {"path": root})
            text, _ = await rec.call(fs, "filesystem", "list_directory", {"path": f"{root}/src/inventory"})
            names = re.findall(r"\[FILE\] (\S+)", text)
            path = f"{root}/src/inventory/{_pick(names, 0.5)}"
            text, _ = await rec.call(fs, "filesystem", "read_text_file", {"path": path})
            funcs = re.findall(r"def (reconcile_\w+)", text)
            await rec.call(fs, "filesystem", "read_text_file", {"path": path, "tail": 12})
            await rec.call(
                fs,
                "filesystem",
                "write_file",
                {
                    "path": f"{root}/notes/review.md",
                    "content": f"Review {_pick(funcs, 0.5)} and {_pick(funcs, 0.9)} in {path}\n",
                },
            )

        await with_server(servers, "filesystem", body)

    async def incident(rec: Recorder, servers: Servers) -> None:
        root = str(servers.repo)

        async def body(fs: Any) -> None:
            text, _ = await rec.call(fs, "filesystem", "read_text_file", {"path": f"{root}/logs/app.log"})
            errors = [line for line in text.splitlines() if " ERROR " in line]
            line = _pick(errors, 0.5)
            req = re.search(r"req=(r-[0-9a-f]+)", line).group(1)  # type: ignore[union-attr]
            sku = re.search(r"(SKU-\d+)", line).group(1)  # type: ignore[union-attr]
            text, _ = await rec.call(fs, "filesystem", "read_text_file", {"path": f"{root}/data/orders.csv"})
            rows = list(csv.DictReader(io.StringIO(text)))
            order = _pick([r for r in rows if r["status"] == "returned"], 0.5)
            await rec.call(fs, "filesystem", "search_files", {"path": root, "pattern": "*.md"})
            await rec.call(
                fs,
                "filesystem",
                "write_file",
                {
                    "path": f"{root}/notes/incident.md",
                    "content": f"# Incident\n\nrequest {req} failed for {sku}; returned order {order['order_no']} ({order['sku']}, {order['warehouse']}).\n",
                },
            )
            await rec.call(
                fs, "filesystem", "read_multiple_files", {"paths": [f"{root}/notes/incident.md", f"{root}/README.md"]}
            )

        await with_server(servers, "filesystem", body)

    return [("filesystem-browse", browse), ("filesystem-incident", incident)]


def git_sessions() -> list[tuple[str, Session]]:
    out: list[tuple[str, Session]] = []
    for k, (count, frac) in enumerate([(300, 0.5), (60, 0.7), (150, 0.35)]):

        async def log(rec: Recorder, servers: Servers, count: int = count, frac: float = frac) -> None:
            repo = str(servers.repo)

            async def body(g: Any) -> None:
                await rec.call(g, "git", "git_status", {"repo_path": repo})
                text, _ = await rec.call(g, "git", "git_log", {"repo_path": repo, "max_count": count})
                shas = re.findall(r"Commit: '?([0-9a-f]{40})", text)
                sha = _pick(shas, frac)
                text, _ = await rec.call(g, "git", "git_show", {"repo_path": repo, "revision": sha})
                await rec.call(g, "git", "git_branch", {"repo_path": repo, "branch_type": "local", "contains": sha})
                await rec.call(g, "git", "git_diff", {"repo_path": repo, "target": _pick(shas, min(frac + 0.1, 1.0))})

            await with_server(servers, "git", body)

        out.append((f"git-log-{k}", log))

    async def real(rec: Recorder, servers: Servers) -> None:
        if servers.real_repo is None:
            return
        repo = str(servers.real_repo)

        async def body(g: Any) -> None:
            text, _ = await rec.call(g, "git", "git_log", {"repo_path": repo, "max_count": 120})
            shas = re.findall(r"Commit: '?([0-9a-f]{40})", text)
            await rec.call(g, "git", "git_show", {"repo_path": repo, "revision": _pick(shas, 0.6)})

        await with_server(servers, "git", body)

    out.append(("git-real-history", real))
    return out


def office_sessions() -> list[tuple[str, Session]]:
    out: list[tuple[str, Session]] = []
    for k, frac in enumerate([0.52, 0.81]):

        async def sheet(rec: Recorder, servers: Servers, frac: float = frac) -> None:
            async def body(sh: Any) -> None:
                sid = "1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms"
                text, _ = await rec.call(sh, "sheets", "get_sheet_values", {"spreadsheet_id": sid, "range": "A1:H401"})
                values = json.loads(text)["values"]
                overdue = [(i + 1, r) for i, r in enumerate(values) if r[6] == "overdue"]
                row_no, row = _pick(overdue, frac)
                await rec.call(
                    sh, "sheets", "get_sheet_values", {"spreadsheet_id": sid, "range": f"A{row_no}:H{row_no}"}
                )
                await rec.call(
                    sh,
                    "sheets",
                    "update_cells",
                    {"spreadsheet_id": sid, "range": f"G{row_no}:H{row_no}", "values": [["reminded", row[7]]]},
                )

            await with_server(servers, "sheets", body)

        out.append((f"sheets-overdue-{k}", sheet))
    for k, frac in enumerate([0.45, 0.7]):

        async def notion(rec: Recorder, servers: Servers, frac: float = frac) -> None:
            async def body(no: Any) -> None:
                text, _ = await rec.call(
                    no,
                    "notion",
                    "query_database",
                    {"database_id": "5f1c0d6e-0a4b-4c7e-9d3f-2b8a7e6c1d90", "page_size": 50},
                )
                pages = [
                    p for p in json.loads(text)["results"] if p["properties"]["Status"]["status"]["name"] != "Done"
                ]
                target = _pick(pages, frac)
                await rec.call(no, "notion", "retrieve_page", {"page_id": target["id"]})
                sku = target["properties"]["SKU"]["rich_text"][0]["plain_text"]
                await rec.call(
                    no,
                    "notion",
                    "update_page",
                    {
                        "page_id": target["id"],
                        "properties": {
                            "Status": {"status": {"name": "In progress"}},
                            "Note": {"rich_text": [{"text": {"content": f"ordered {sku}"}}]},
                        },
                    },
                )

            await with_server(servers, "notion", body)

        out.append((f"notion-tasks-{k}", notion))
    for k, frac in enumerate([0.5, 0.2, 0.9]):

        async def browse(rec: Recorder, servers: Servers, frac: float = frac, k: int = k) -> None:
            async def body(pw: Any) -> None:
                text, _ = await rec.call(
                    pw,
                    "playwright",
                    "browser_navigate",
                    {"url": f"https://backoffice.acme.example/orders?page={k + 1}"},
                )
                links = re.findall(r'link "(ORD-[\d-]+)" \[ref=(e\d+)\]', text)
                order, ref = _pick(links, frac)
                text, _ = await rec.call(pw, "playwright", "browser_click", {"element": order, "ref": ref})
                links = re.findall(r'link "(ORD-[\d-]+)" \[ref=(e\d+)\]', text)
                order, ref = _pick(links, 1 - frac)
                await rec.call(pw, "playwright", "browser_click", {"element": order, "ref": ref})

            await with_server(servers, "playwright", body)

        out.append((f"playwright-orders-{k}", browse))
    return out


# ---- real SQL servers over a warehouse of thousands of rows, and the same results re-encoded (issue 38) ----

OUT_DIR = HERE / "out"
ALCHEMY_MAX_CHARS = 120_000
"""mcp-alchemy cuts a result at EXECUTE_QUERY_MAX_CHARS (4,000 by default); raised so a listing is whole."""


@dataclass(frozen=True)
class SqlServers:
    """Where the real SQL servers are installed: bench-only virtualenvs and an npm prefix under bench/out/."""

    postgres_mcp: Path = OUT_DIR / "venv-postgres-mcp" / "bin" / "postgres-mcp"
    alchemy: Path = OUT_DIR / "venv-mcp-alchemy" / "bin" / "mcp-alchemy"
    server_postgres: Path = (
        OUT_DIR / "npm" / "node_modules" / "@modelcontextprotocol" / "server-postgres" / "dist" / "index.js"
    )


SQL_SERVERS = SqlServers()
POSTGRES_MCP_DEPS = [
    # postgres-mcp 0.3.0 pins pglast==7.2.0, which the registry no longer has for this platform; 7.2x
    # keeps its API. So the package goes in without deps and these after it.
    "attrs>=25.3.0",
    "humanize>=4.8.0",
    "instructor>=1.7.9",
    "mcp[cli]>=1.5.0,<2",
    "pglast>=7.20,<8",
    "psycopg-pool>=3.2.6",
    "psycopg[binary]>=3.2.6",
]


def _python_at_least(minor: int) -> str | None:
    """A Python 3.`minor`+ interpreter: $OFFLOAD_BENCH_PYTHON312, one on PATH, or a pyenv version."""
    candidates = [os.environ.get("OFFLOAD_BENCH_PYTHON312", "")]
    candidates += [shutil.which(f"python3.{m}") or "" for m in range(minor, 15)]
    candidates += sorted(str(p) for p in Path.home().glob(".pyenv/versions/3.1[2-9]*/bin/python"))
    for candidate in candidates:
        if not candidate or not Path(candidate).exists():
            continue
        done = subprocess.run(
            [candidate, "-c", f"import sys; print(sys.version_info >= (3, {minor}))"], capture_output=True, text=True
        )
        if done.stdout.strip() == "True":
            return candidate
    return None


def ensure_sql_servers() -> None:
    """Install postgres-mcp (PyPI, needs Python 3.12+), mcp-alchemy (PyPI) and @modelcontextprotocol/server-postgres
    (npm) under bench/out/ on first use; a clear error when one cannot be."""

    def run(*command: str) -> None:
        done = subprocess.run(list(command), capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")

    if not SQL_SERVERS.postgres_mcp.exists():
        python = _python_at_least(12)
        if python is None:
            raise RuntimeError("postgres-mcp needs Python 3.12+: set OFFLOAD_BENCH_PYTHON312 to one")
        venv = OUT_DIR / "venv-postgres-mcp"
        run(python, "-m", "venv", str(venv))
        run(str(venv / "bin" / "pip"), "install", "-q", "--no-deps", "postgres-mcp==0.3.0")
        run(str(venv / "bin" / "pip"), "install", "-q", *POSTGRES_MCP_DEPS)
    if not SQL_SERVERS.alchemy.exists():
        venv = OUT_DIR / "venv-mcp-alchemy"
        run(sys.executable, "-m", "venv", str(venv))
        run(str(venv / "bin" / "pip"), "install", "-q", "mcp-alchemy==2026.10.15.202659")
    if not SQL_SERVERS.server_postgres.exists():
        prefix = OUT_DIR / "npm"
        prefix.mkdir(parents=True, exist_ok=True)
        (prefix / "package.json").write_text('{"private": true}\n')  # so npm installs here, not in the repo's package
        run(
            "npm",
            "install",
            "--prefix",
            str(prefix),
            "--no-audit",
            "--no-fund",
            "@modelcontextprotocol/server-postgres@0.6.2",
        )


def write_exports(folder: Path) -> None:
    """The warehouse's jobs as a JSON file and its prices as CSV, for server-filesystem to read."""
    from corpus_servers import warehouse_tables

    folder.mkdir(parents=True, exist_ok=True)
    tables = warehouse_tables()
    columns, rows = tables["jobs"]
    (folder / "jobs.json").write_text(json.dumps([dict(zip(columns, r, strict=True)) for r in rows], indent=2) + "\n")
    columns, rows = tables["prices"]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    (folder / "prices.csv").write_text(buffer.getvalue())


def _repr_rows(text: str, columns: tuple[str, ...]) -> list[dict[str, str]]:
    """Rows of a Python-repr result (postgres-mcp), the named string columns only, in order."""
    pattern = r"\{[^{}]*?" + r"[^{}]*?".join(rf"'{c}': '(?P<{c}>[^']*)'" for c in columns)
    return [m.groupdict() for m in re.finditer(pattern, text)]


def _unwrap(text: str) -> Any:
    """Decode a wrapped result (JSON string literals, a prose line, a text field, an envelope) to its rows."""
    value: Any = text
    for _ in range(4):
        if isinstance(value, str):
            start = min((i for i in (value.find("["), value.find("{")) if i != -1), default=-1)
            if start == -1:
                break
            body = value[start:]
            end = max(body.rfind("]"), body.rfind("}"))
            try:
                value = json.loads(value) if value.startswith('"') else json.loads(body[: end + 1])
            except json.JSONDecodeError:
                break
        elif isinstance(value, dict) and "text" in value:
            value = value["text"]
        else:
            break
    return value


def warehouse_sessions() -> list[tuple[str, Session]]:
    out: list[tuple[str, Session]] = []

    async def pgmcp_jobs(rec: Recorder, servers: Servers) -> None:
        async def body(db: Any) -> None:
            text, _ = await rec.call(db, "postgres-mcp", "execute_sql", {"sql": "SELECT * FROM jobs ORDER BY id"})
            failed = [
                r for r in _repr_rows(text, ("job_id", "pipeline", "runner", "status")) if r["status"] == "failed"
            ]
            job = _pick(failed, 0.5)
            text, _ = await rec.call(
                db, "postgres-mcp", "execute_sql", {"sql": f"SELECT * FROM jobs WHERE job_id = '{job['job_id']}'"}
            )
            started = _repr_rows(text, ("started_at",))[0]["started_at"]
            await rec.call(
                db,
                "postgres-mcp",
                "execute_sql",
                {
                    "sql": f"SELECT id, job_id, status FROM jobs WHERE runner = '{job['runner']}' "
                    f"AND started_at < '{started}' ORDER BY started_at DESC LIMIT 5"
                },
            )

        await with_server(servers, "postgres-mcp", body)

    out.append(("warehouse-pgmcp-failed-jobs", pgmcp_jobs))

    async def pgmcp_orders(rec: Recorder, servers: Servers) -> None:
        async def body(db: Any) -> None:
            text, _ = await rec.call(
                db,
                "postgres-mcp",
                "execute_sql",
                {
                    "sql": "SELECT order_no, customer_email, status, total, created_at FROM orders "
                    "WHERE status = 'refunded' ORDER BY created_at"
                },
            )
            order = _pick(_repr_rows(text, ("order_no", "customer_email")), 0.63)
            await rec.call(
                db,
                "postgres-mcp",
                "execute_sql",
                {"sql": f"SELECT * FROM orders WHERE order_no = '{order['order_no']}'"},
            )
            await rec.call(
                db,
                "postgres-mcp",
                "execute_sql",
                {"sql": f"SELECT order_no, total FROM orders WHERE customer_email = '{order['customer_email']}'"},
            )

        await with_server(servers, "postgres-mcp", body)

    out.append(("warehouse-pgmcp-refunds", pgmcp_orders))

    async def pg_prices(rec: Recorder, servers: Servers) -> None:
        async def body(db: Any) -> None:
            text, _ = await rec.call(db, "server-postgres", "query", {"sql": "SELECT * FROM prices ORDER BY day"})
            rows = json.loads(text)
            low = min(rows, key=lambda r: (float(r["close"]), r["day"]))
            await rec.call(
                db,
                "server-postgres",
                "query",
                {"sql": f"SELECT day, close, volume FROM prices WHERE day >= '{low['day']}' ORDER BY day LIMIT 5"},
            )

        await with_server(servers, "server-postgres", body)

    out.append(("warehouse-pg-lowest-close", pg_prices))

    async def pg_parts(rec: Recorder, servers: Servers) -> None:
        async def body(db: Any) -> None:
            text, _ = await rec.call(
                db,
                "server-postgres",
                "query",
                {"sql": "SELECT part_num, sku, name, color, stock FROM parts ORDER BY sku"},
            )
            part = _pick([r for r in json.loads(text) if r["stock"] < 300], 0.41)
            await rec.call(
                db, "server-postgres", "query", {"sql": f"SELECT * FROM parts WHERE part_num = '{part['part_num']}'"}
            )

        await with_server(servers, "server-postgres", body)

    out.append(("warehouse-pg-parts", pg_parts))

    async def alchemy_jobs(rec: Recorder, servers: Servers) -> None:
        async def body(db: Any) -> None:
            text, _ = await rec.call(
                db,
                "alchemy",
                "execute_query",
                {
                    "query": "SELECT id, job_id, pipeline, runner, status FROM jobs WHERE pipeline = 'deploy' ORDER BY id"
                },
            )
            job_id = _pick(re.findall(r"^job_id: (\S+)$", text, flags=re.M), 0.7)
            await rec.call(db, "alchemy", "execute_query", {"query": f"SELECT * FROM jobs WHERE job_id = '{job_id}'"})

        await with_server(servers, "alchemy", body)

    out.append(("warehouse-alchemy-deploys", alchemy_jobs))

    async def supabase_small(rec: Recorder, servers: Servers) -> None:
        async def body(db: Any) -> None:
            server = "wrap-supabase-of-server-postgres"
            text, _ = await rec.call(
                db,
                server,
                "query",
                {
                    "sql": "SELECT customer_email, count(*) AS orders FROM orders GROUP BY customer_email "
                    "ORDER BY orders DESC, customer_email LIMIT 25"
                },
            )
            email = _pick(_unwrap(text), 0.52)["customer_email"]
            text, _ = await rec.call(
                db,
                server,
                "query",
                {"sql": f"SELECT order_no, status, total, tracking FROM orders WHERE customer_email = '{email}'"},
            )
            order = _pick(_unwrap(text), 0.5)
            await rec.call(db, server, "query", {"sql": f"SELECT * FROM orders WHERE order_no = '{order['order_no']}'"})

        await with_server(servers, "wrap-supabase-of-server-postgres", body)

    out.append(("warehouse-supabase-customer", supabase_small))

    for style, inner, sql, key, frac in [
        (
            "supabase",
            "server-postgres",
            "SELECT id, order_no, status, total FROM orders WHERE total > 3200 ORDER BY total DESC",
            "order_no",
            0.55,
        ),
        (
            "string",
            "server-postgres",
            "SELECT part_num, sku, name, stock FROM parts WHERE color = 'tan' ORDER BY sku",
            "part_num",
            0.6,
        ),
        (
            "double",
            "server-postgres",
            "SELECT id, job_id, runner, status FROM jobs WHERE pipeline = 'lint' ORDER BY id",
            "job_id",
            0.3,
        ),
        (
            "text_field",
            "server-postgres",
            "SELECT order_no, customer_email, total FROM orders WHERE status = 'cancelled' ORDER BY id LIMIT 200",
            "order_no",
            0.75,
        ),
        (
            "prose_json",
            "server-postgres",
            "SELECT id, order_no, customer_email, total FROM orders WHERE status = 'paid' AND total > 2500 ORDER BY id",
            "customer_email",
            0.45,
        ),
    ]:

        async def wrapped(
            rec: Recorder,
            servers: Servers,
            style: str = style,
            inner: str = inner,
            sql: str = sql,
            key: str = key,
            frac: float = frac,
        ) -> None:
            server = f"wrap-{style}-of-{inner}"

            async def body(db: Any) -> None:
                text, _ = await rec.call(db, server, "query", {"sql": sql})
                value = _pick(_unwrap(text), frac)[key]
                table = "jobs" if key == "job_id" else "parts" if key == "part_num" else "orders"
                await rec.call(db, server, "query", {"sql": f"SELECT * FROM {table} WHERE {key} = '{value}'"})

            await with_server(servers, server, body)

        out.append((f"warehouse-{style.replace('_', '-')}-{inner}", wrapped))

    async def textfield_repr(rec: Recorder, servers: Servers) -> None:
        server = "wrap-text_field-of-postgres-mcp"

        async def body(db: Any) -> None:
            text, _ = await rec.call(
                db,
                server,
                "execute_sql",
                {"sql": "SELECT order_no, status, tracking FROM orders WHERE status = 'shipped' ORDER BY id LIMIT 300"},
            )
            inner = json.loads(text)["text"]
            order = _pick(_repr_rows(inner, ("order_no", "status", "tracking")), 0.35)
            await rec.call(
                db, server, "execute_sql", {"sql": f"SELECT * FROM orders WHERE tracking = '{order['tracking']}'"}
            )

        await with_server(servers, server, body)

    out.append(("warehouse-textfield-postgres-mcp", textfield_repr))

    async def files_jobs(rec: Recorder, servers: Servers) -> None:
        root = f"{servers.exports}"
        failed: list[dict[str, Any]] = []

        async def read(fs: Any) -> None:
            text, _ = await rec.call(fs, "filesystem", "read_text_file", {"path": f"{root}/jobs.json"})
            failed.extend(r for r in json.loads(text) if r["status"] == "failed")

        async def query(db: Any) -> None:
            job = _pick(failed, 0.75)
            await rec.call(
                db, "server-postgres", "query", {"sql": f"SELECT * FROM jobs WHERE job_id = '{job['job_id']}'"}
            )

        await with_server(servers, "filesystem-exports", read)
        await with_server(servers, "server-postgres", query)

    out.append(("warehouse-files-jobs-json", files_jobs))

    async def files_prices(rec: Recorder, servers: Servers) -> None:
        root = f"{servers.exports}"
        found: list[str] = []

        async def read(fs: Any) -> None:
            text, _ = await rec.call(fs, "filesystem", "read_text_file", {"path": f"{root}/prices.csv"})
            rows = list(csv.DictReader(io.StringIO(text)))
            found.append(max(rows, key=lambda r: (int(r["volume"]), r["day"]))["day"])

        async def query(db: Any) -> None:
            await rec.call(db, "postgres-mcp", "execute_sql", {"sql": f"SELECT * FROM prices WHERE day = '{found[0]}'"})

        await with_server(servers, "filesystem-exports", read)
        await with_server(servers, "postgres-mcp", query)

    out.append(("warehouse-files-prices-csv", files_prices))

    async def long_log(rec: Recorder, servers: Servers) -> None:
        if servers.long_repo is None:
            return
        repo = str(servers.long_repo)

        async def body(g: Any) -> None:
            text, _ = await rec.call(g, "git", "git_log", {"repo_path": repo, "max_count": 600})
            shas = re.findall(r"Commit: '?([0-9a-f]{40})", text)
            await rec.call(g, "git", "git_show", {"repo_path": repo, "revision": _pick(shas, 0.8)})

        await with_server(servers, "git", body)

    out.append(("warehouse-git-long-log", long_log))
    return out


# ---- a real browser: @playwright/mcp with Debian's chromium over a generated local site ---------------

PLAYWRIGHT_ARGS = ["--headless", "--isolated", "--no-sandbox", "--viewport-size", "1280x720"]
"""In memory, no window, no sandbox (the corpus runs as root in containers), one viewport size."""
SITE_ORIGIN = "http://127.0.0.1:8080"
"""The origin records name: the site binds a free port, so its real origin is rewritten to this one."""
_PLAYWRIGHT_STAMP = re.compile(r"(\.playwright-mcp/[a-z]+-)\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z")
"""Playwright MCP names the files it writes a snapshot or console log to by the wall clock."""


def _chromium() -> str:
    """Debian's chromium (or $OFFLOAD_BENCH_CHROMIUM): Playwright's own browser download is never needed."""
    path = os.environ.get("OFFLOAD_BENCH_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        raise RuntimeError("the browser sessions need chromium (apt-get install chromium) or $OFFLOAD_BENCH_CHROMIUM")
    return path


def site_rewrite(origin: str) -> Callable[[str], str]:
    """Make a browser record the same bytes every run: the site's origin and Playwright's clock stamps fixed."""

    def fix(text: str) -> str:
        return _PLAYWRIGHT_STAMP.sub(r"\g<1>2026-01-05T09-00-00-000Z", text.replace(origin, SITE_ORIGIN))

    return fix


def catalog_rows(snapshot: str) -> list[tuple[str, str, str]]:
    """(sku, ref of the row's product link, ref of its "Add to cart" button) for each row of a catalog snapshot."""
    ref = r"\[ref=((?:f\d+)?e\d+)\]"
    pattern = rf'cell "(SKU-\d+)" \[ref=(?:f\d+)?e\d+\].*?- link "[^"]*" {ref}.*?button "Add to cart" {ref}'
    return re.findall(pattern, snapshot, flags=re.S)


def _ref(snapshot: str, role: str, name: str) -> str:
    found = re.search(rf'{role} "{re.escape(name)}"[^\n]*?\[ref=((?:f\d+)?e\d+)\]', snapshot)
    if found is None:
        raise RuntimeError(f'no {role} "{name}" in the snapshot')
    return found.group(1)


def browser_sessions() -> list[tuple[str, Session]]:
    out: list[tuple[str, Session]] = []
    for k, (catalog, frac, qty) in enumerate([("fasteners", 0.93, 40), ("fasteners", 0.41, 12), ("tools", 0.6, 2)]):

        async def shop(
            rec: Recorder, servers: Servers, catalog: str = catalog, frac: float = frac, qty: int = qty
        ) -> None:
            assert servers.site is not None
            origin = servers.site.origin

            async def body(pw: Any) -> None:
                await rec.call(pw, "playwright-mcp", "browser_navigate", {"url": f"{origin}/index.html"})
                home, _ = await rec.call(pw, "playwright-mcp", "browser_snapshot", {})
                link = _ref(home, "link", catalog.capitalize())
                await rec.call(pw, "playwright-mcp", "browser_click", {"element": f"{catalog} link", "target": link})
                text, _ = await rec.call(pw, "playwright-mcp", "browser_snapshot", {})
                sku, link, button = _pick(catalog_rows(text), frac)
                await rec.call(
                    pw,
                    "playwright-mcp",
                    "browser_click",
                    {"element": f"Add to cart button in the row of {sku}", "target": button},
                )
                await rec.call(
                    pw, "playwright-mcp", "browser_click", {"element": f"{sku} product link", "target": link}
                )
                text, _ = await rec.call(pw, "playwright-mcp", "browser_snapshot", {})
                bin_ = re.search(r"(BIN-[A-F]\d\d-\d\d)", text).group(1)  # type: ignore[union-attr]
                await rec.call(pw, "playwright-mcp", "browser_navigate", {"url": f"{origin}/order.html"})
                form, _ = await rec.call(pw, "playwright-mcp", "browser_snapshot", {})
                for name, value in [("SKU", sku), ("PO number", f"PO-{bin_}")]:
                    await rec.call(
                        pw,
                        "playwright-mcp",
                        "browser_type",
                        {"element": f"{name} field", "target": _ref(form, "textbox", name), "text": value},
                    )
                await rec.call(
                    pw,
                    "playwright-mcp",
                    "browser_type",
                    {"element": "Quantity field", "target": _ref(form, "spinbutton", "Quantity"), "text": str(qty)},
                )
                await rec.call(
                    pw,
                    "playwright-mcp",
                    "browser_click",
                    {"element": "Place order button", "target": _ref(form, "button", "Place order")},
                )
                await rec.call(pw, "playwright-mcp", "browser_snapshot", {})

            await with_server(servers, "playwright-mcp", body)

        out.append((f"browser-catalog-{catalog}-{k}", shop))
    for k, frac in enumerate([0.3, 0.75]):

        async def handbook(rec: Recorder, servers: Servers, frac: float = frac) -> None:
            assert servers.site is not None
            origin = servers.site.origin

            async def body(pw: Any) -> None:
                await rec.call(pw, "playwright-mcp", "browser_navigate", {"url": f"{origin}/handbook.html"})
                text, _ = await rec.call(pw, "playwright-mcp", "browser_snapshot", {})
                topics = re.findall(r'link "topic \d\d: [^"]*" \[ref=(?:f\d+)?e\d+\][^\n]*\n\s*- /url: (\S+)', text)
                await rec.call(pw, "playwright-mcp", "browser_navigate", {"url": _pick(topics, frac)})
                text, _ = await rec.call(pw, "playwright-mcp", "browser_snapshot", {})
                sku, ref = _pick(re.findall(r'link "(SKU-\d+)" \[ref=((?:f\d+)?e\d+)\]', text), frac)
                await rec.call(pw, "playwright-mcp", "browser_click", {"element": f"link {sku}", "target": ref})
                await rec.call(pw, "playwright-mcp", "browser_snapshot", {})

            await with_server(servers, "playwright-mcp", body)

        out.append((f"browser-handbook-{k}", handbook))
    return out


def all_sessions() -> list[tuple[str, Session]]:
    return [
        *sql_sessions(),
        *github_sessions(),
        *finance_sessions(),
        *memory_sessions(),
        *filesystem_sessions(),
        *git_sessions(),
        *office_sessions(),
        *warehouse_sessions(),
        *browser_sessions(),
    ]


REAL_REPO_COMMIT = "8a9bb35"
"""This project's own history at a fixed commit: a real `git log` of real messages (skipped if unavailable)."""


LONG_HISTORY_COMMIT = "948b2eccb3a9793527b84bbd1eab9f6e66fb3004"
"""This project's history at 545 commits: a long real `git log` (issue 38's class 7)."""


def _real_repo(work: Path, commit: str = REAL_REPO_COMMIT, name: str = "offload-mcp-history") -> Path | None:
    target = work / name
    try:
        full = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", f"{commit}^{{commit}}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(ROOT), str(target)], check=True, capture_output=True)
        subprocess.run(["git", "-C", str(target), "checkout", "-q", full], check=True, capture_output=True)
    except (subprocess.CalledProcessError, OSError) as err:
        print(f"real history skipped: {err}", file=sys.stderr)
        return None
    return target


def _start_warehouse(servers: Servers) -> Any:
    """Install the real SQL servers if needed, start PostgreSQL in a temp folder (tests/support/pg.py), load the warehouse
    into it and into SQLite, write its exports; returns the PostgreSQL server (the caller destroys it)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from corpus_servers import load_warehouse_postgres, load_warehouse_sqlite
    from support.pg import start_server

    ensure_sql_servers()
    pg = start_server()
    try:
        servers.pg_url = pg.url()
        load_warehouse_postgres(servers.pg_url)
        servers.warehouse_sqlite = servers.work / "warehouse.sqlite"
        load_warehouse_sqlite(str(servers.warehouse_sqlite))
        servers.exports = servers.work / "exports"
        write_exports(servers.exports)
    except BaseException:
        pg.destroy()
        raise
    return pg


def merged(previous: bytes, fresh: list[dict[str, Any]], order: list[str]) -> bytes:
    """The previous corpus with the trajectories in `fresh` replaced (or added): every other line is kept
    byte for byte, and trajectories follow the sessions' order."""
    lines: dict[str, list[bytes]] = {}
    for line in previous.splitlines(keepends=True):
        lines.setdefault(json.loads(line)["traj"], []).append(line)
    for record in fresh:
        lines.pop(record["traj"], None)
    for record in fresh:
        lines.setdefault(record["traj"], []).append(_line(record))
    rank = {name: i for i, name in enumerate(order)}
    unknown = sorted(set(lines) - set(rank))
    if unknown:
        raise ValueError(f"the corpus holds trajectories no session records: {', '.join(unknown)}")
    return b"".join(line for traj in sorted(lines, key=rank.__getitem__) for line in lines[traj])


def _line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n").encode()


async def build(out: Path, only: list[str] | None, merge: bool = False) -> int:
    work = Path(tempfile.mkdtemp(prefix="corpus-mcp-"))
    try:
        chosen = [(name, s) for name, s in all_sessions() if not only or any(name.startswith(o) for o in only)]
        names = " ".join(name for name, _ in chosen)
        root = work / "inventory"
        if "filesystem" in names or "git-log" in names:
            build_repo(root)
        db = work / "shop.sqlite"
        if "sqlite" in names or "postgres" in names:
            build_db(str(db))
        real = _real_repo(work) if "git-real" in names else None
        servers = Servers(work=work, db=db, repo=root, real_repo=real, memory_file=work / "memory.jsonl")
        pg = None
        if "warehouse-" in names:
            pg = _start_warehouse(servers)
            if "git-long" in names:
                servers.long_repo = _real_repo(work, LONG_HISTORY_COMMIT, "offload-mcp-long-history")
        rec = Recorder(root=work)
        if "browser-" in names:
            servers.site = Site(work / "site")
            rec.rewrite = site_rewrite(servers.site.origin)
        try:
            for name, session in chosen:
                rec.start(name)
                print(f"session {name}", file=sys.stderr, flush=True)
                await session(rec, servers)
        finally:
            if pg is not None:
                pg.destroy()
            if servers.site is not None:
                servers.site.close()
        data = b"".join(_line(r) for r in rec.records)
        if merge:
            with gzip.open(out, "rb") as previous:
                data = merged(previous.read(), rec.records, [name for name, _ in all_sessions()])
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
            gz.write(data)
        print(
            f"{len(rec.records)} records recorded, {len(data.splitlines())} written -> {out} ({out.stat().st_size:,} bytes)",
            file=sys.stderr,
        )
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"Where to write the corpus (default: {DEFAULT_OUT.relative_to(ROOT)}).",
    )
    parser.add_argument("--only", nargs="*", help="Run only sessions whose name starts with one of these.")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="Replace only the sessions run (with --only) in the existing --out corpus, every other record kept "
        "byte for byte (the other servers need not be installed).",
    )
    args = parser.parse_args(argv)
    if args.merge and not args.out.exists():
        parser.error(f"--merge needs an existing corpus at {args.out}")
    return asyncio.run(build(args.out, args.only, args.merge))


if __name__ == "__main__":
    sys.exit(main())
