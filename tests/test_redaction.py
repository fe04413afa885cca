"""One redaction function for every URL and command line the proxy shows (issue 40 D2, D9), and a
log that does not flood with one warning (D10).

- A PostgreSQL URL's `?password=` never reaches recall's error text (the model's context), the `stats`
  header or the log; client-facing errors name the ledger only as "the ledger", without host, port,
  user or database name.
- A downstream's `--api-key=...` and a remote URL's `user:pass@` and `?token=` are `***` in the log.
- 300 refused relays from one call write the refusal once, then once more at exit with the count.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

from offload_mcp.redaction import ledger_for_client, redact_secrets
from support.pg import free_port
from support.proxy import OFFLOAD_MCP, proxy_env, stdio_params, text_of
from support.servers import ROOT, fixture_entry, python_entry, write_config
from support.zygote import prewarmed

PASSWORD = "Pw-9c1e77-never-show"
TOKEN = "Tk-5ab203-never-show"
API_KEY = "Ak-77f0e1-never-show"
RELAY_SERVER = str(ROOT / "tests" / "fixtures" / "relay_server.py")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("postgresql://u:pw@h:5432/db", "postgresql://u:***@h:5432/db"),
        ("postgresql://u@h/db?sslmode=require&password=pw", "postgresql://u@h/db?sslmode=require&password=***"),
        ("GET http://a:b@x/y?token=t1&q=2 failed", "GET http://a:***@x/y?token=***&q=2 failed"),
        ("https://x/api?key=abc&secret=def", "https://x/api?key=***&secret=***"),
        ("npx server --api-key=abc --region eu", "npx server --api-key=*** --region eu"),
        ("serve --auth-token abc --host 0.0.0.0", "serve --auth-token *** --host 0.0.0.0"),
        ("PGPASSWORD=hunter2 psql", "PGPASSWORD=*** psql"),
        ('{"client_secret": "s", "n": 1}', '{"client_secret": "***", "n": 1}'),
        ("Authorization: Bearer abcdef123456", "Authorization: Bearer ***"),
        # Counts and plain words stay readable: names are matched at their end.
        ("max_tokens=500 tokens_in=3 keys=4", "max_tokens=500 tokens_in=3 keys=4"),
        ("the token must be at least 8 characters", "the token must be at least 8 characters"),
    ],
)
def test_one_function_hides_every_secret_a_url_or_command_line_holds(text: str, shown: str) -> None:
    assert redact_secrets(text) == shown
    assert redact_secrets(redact_secrets(text)) == shown  # stable: a second pass changes nothing


def test_a_client_sees_the_ledger_named_only_as_the_ledger() -> None:
    where = f"postgresql://bob@db.example:5433/ledger?password={PASSWORD}"
    error = (
        "ledger postgresql://bob@db.example:5433/ledger?password=***: PostgreSQL is unreachable (connection to "
        'server at "db.example" (10.1.2.3), port 5433 failed: FATAL: password authentication failed for user "bob")'
    )
    shown = ledger_for_client(error, where)
    assert shown.startswith("the ledger: PostgreSQL is unreachable (")
    for hidden in (PASSWORD, "db.example", "10.1.2.3", "5433", '"bob"', "postgresql://"):
        assert hidden not in shown, (hidden, shown)
    assert ledger_for_client("ledger /srv/state/l.db: read failed (disk I/O error)", "/srv/state/l.db") == (
        "the ledger: read failed (disk I/O error)"
    )


async def test_a_password_in_the_url_query_never_reaches_recall_errors_or_the_log(tmp_path: Path) -> None:
    """A ledger URL to a refused port with `?password=`: recall's error says "the ledger" and why, and
    neither it nor the log shows the password, host, port or user."""
    port = free_port()
    url = f"postgresql://ledgeruser@127.0.0.1:{port}/ledgerdb?password={PASSWORD}"
    config = write_config(tmp_path, {"fx": fixture_entry()}, {"ledger": {"busy_timeout_s": 0.5}})
    log = tmp_path / "proxy.log"
    with log.open("w") as errlog:
        params = stdio_params(["-c", str(config), "--log-level", "info", "--ledger", url], None)
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            answer = await s.call_tool("recall_tool_result", {"mem_id": "trm_0123456789abcdef"})
            await s.call_tool("make_text", {"size": 200_000})  # passes through: the ledger is down
    said = text_of(answer)
    assert answer.is_error and "the ledger cannot be read right now" in said, said
    for hidden in (PASSWORD, "ledgeruser", "ledgerdb", str(port), "127.0.0.1", "postgresql://"):
        assert hidden not in said, (hidden, said)
    text = log.read_text()
    assert "unreachable" in text and "ledgeruser" in text  # the log names the ledger, for its operator...
    assert PASSWORD not in text and "password=***" in text  # ...without its password


def test_the_stats_header_hides_a_password_given_in_the_query(pg_url: str, tmp_path: Path) -> None:
    url = f"{pg_url}&password={PASSWORD}"  # the test server trusts local connections: the password is unused
    done = subprocess.run(
        prewarmed([OFFLOAD_MCP, "stats", "--ledger", url]), capture_output=True, text=True, timeout=60, env=proxy_env()
    )
    assert done.returncode == 0, done.stderr
    assert "password=***" in done.stdout and PASSWORD not in done.stdout + done.stderr, done.stdout[:500]


async def test_downstream_secrets_are_not_in_the_log(tmp_path: Path) -> None:
    """D9: `--api-key=...` of a stdio server (logged at INFO when it is ready) and a remote server's
    `user:pass@` and `?token=` (an ERROR when it cannot be reached) are `***` in the log."""
    remote = f"http://alice:{PASSWORD}@127.0.0.1:{free_port()}/mcp?token={TOKEN}"
    config = write_config(
        tmp_path,
        {
            "fx": fixture_entry(f"--api-key={API_KEY}"),
            "remote": {"type": "http", "url": remote},
        },
        {"downstream": {"startup_timeout_s": 5, "restart_backoff_s": 10}},
    )
    log = tmp_path / "proxy.log"
    with log.open("w") as errlog:
        params = stdio_params(["-c", str(config), "--log-level", "info", "--ledger", str(tmp_path / "l.db")], None)
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            assert text_of(await s.call_tool("echo", {"text": "hi"})) == "hi"
            # The model reads why a server is not serving (an unknown tool's error): its secrets are hidden too.
            unknown = text_of(await s.call_tool("remote_tool", {}))
    assert "alice:***@" in unknown and "token=***" in unknown, unknown
    assert PASSWORD not in unknown and TOKEN not in unknown
    text = log.read_text()
    assert "--api-key=***" in text and "alice:***@" in text and "token=***" in text, text[-3000:]
    for secret in (PASSWORD, TOKEN, API_KEY):
        assert secret not in text


async def test_repeated_identical_warnings_are_written_once_with_their_count(tmp_path: Path) -> None:
    """D10: a server whose 300 sampling requests are all refused (this client declared no sampling)
    made 300 WARNING lines; now the first is written and, at exit, one line with the count held."""
    config = write_config(tmp_path, {"relay": python_entry(RELAY_SERVER)})
    log = tmp_path / "proxy.log"
    with log.open("w") as errlog:
        params = stdio_params(["-c", str(config), "--ledger", str(tmp_path / "l.db")], None)
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            said = text_of(await s.call_tool("sample_many", {"n": 300}))
    assert said.startswith("refused 300 of 300: offload-mcp did not relay sampling/createMessage"), said
    lines = [line for line in log.read_text().splitlines() if "did not relay sampling/createMessage" in line]
    assert len(lines) == 2, lines[:5]
    assert re.search(r"\(repeated 299 more times, not written\)$", lines[1]), lines[1]
