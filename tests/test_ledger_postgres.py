"""The PostgreSQL ledger: selected by URL everywhere a path is accepted, its schema versioned,
an outage passing results through untouched and recovering by itself (issue 16).

The backend-independent contract (round trips, retention, scope, concurrent identical writes)
runs against PostgreSQL in tests/test_ledger.py; here is what only a server-backed ledger has.
"""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path

import anyio
import pytest

from offload_mcp.config import OffloadSettings
from offload_mcp.session import SessionMemory
from offload_mcp.store import ENV_VAR, Ledger, LedgerEvent, LedgerUnavailable, LedgerWriteError
from offload_mcp.store.location import redact, resolve, scrub
from offload_mcp.store.schema import POSTGRES_SCHEMA_VERSION
from offload_mcp.store.settings import LedgerSettings
from offload_mcp.tools import recall
from offload_mcp.tools.registry import ToolEnv
from support.ledgers import assert_untouched, big_result, call, make_shaper, make_text
from support.pg import free_port
from support.proxy import OFFLOAD_MCP, proxy_env, proxy_session, recall_whole, text_of
from support.servers import fixture_cmd, fixture_entry, write_config
from support.zygote import prewarmed

TRM = re.compile(r"trm_[0-9a-f]{16}")


def test_a_url_is_never_a_file_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    url = "postgresql://u:secret@db.example:5432/ledger"
    # A URL in `path` stays a URL (a Path would fold it into the folder name `postgresql:`).
    assert resolve(LedgerSettings.model_validate({"path": url})).url == url
    assert resolve(LedgerSettings(url=url, path=tmp_path / "l.db")).url == url
    assert resolve(LedgerSettings(path=tmp_path / "l.db")).path == tmp_path / "l.db"
    monkeypatch.setenv(ENV_VAR, "postgres://env@h/db")
    assert resolve(LedgerSettings(url=url)).url == "postgres://env@h/db"  # the environment beats the config
    assert resolve(LedgerSettings(url=url), tmp_path / "cli.db").path == tmp_path / "cli.db"  # --ledger beats all
    with pytest.raises(LedgerUnavailable, match="unsupported scheme 'mysql'"):
        resolve(LedgerSettings(), "mysql://u@h/db")
    assert redact(url) == "postgresql://u:***@db.example:5432/ledger"
    assert "secret" not in redact(url)


def test_a_driver_error_loses_the_password_and_keeps_its_words() -> None:
    quoted = 'invalid percent-encoded token: "p%zzw0rd"'
    assert scrub(quoted, "postgresql://u:p%zzw0rd@h/db") == 'invalid percent-encoded token: "***"'
    assert scrub("at p@ss and p%40ss", "postgresql://u:p%40ss@h/db") == "at *** and ***"  # decoded or not
    # A short password: wherever it stands apart, never inside a word of the message.
    message = 'could not parse "u:a@h" at a point: a_b failed'
    assert scrub(message, "postgresql://u:a@h/db") == 'could not parse "u:***@h" at *** point: a_b failed'
    assert scrub("pw@h: pw; pwd", "postgresql://u:pw@h/db") == "***@h: ***; pwd"


# libpq quotes the piece of a URL it cannot read: here the password. Before, serve's log repeated it
# at every pool reconnect ('invalid percent-encoded token: "p%zzw0rd"').
BAD_PASSWORD_URLS = (
    "postgresql://nobody:p%zzw0rd@127.0.0.1:{port}/nowhere",
    "postgresql://nobody:p w0rd@127.0.0.1:{port}/nowhere",
)


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("postgresql://nobody:pw@127.0.0.1:{port}/nowhere", "PostgreSQL is unreachable"),
        *((url, "not a URL libpq reads") for url in BAD_PASSWORD_URLS),
    ],
)
async def test_serve_with_an_unreachable_postgresql_url_creates_no_folder_and_passes_through(
    tmp_path: Path, url: str, named: str
) -> None:
    """Before: `serve --ledger postgresql://...` quietly wrote SQLite into a folder named `postgresql:`."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    url = url.format(port=free_port())
    config = write_config(tmp_path, {"fx": fixture_entry()}, {"ledger": {"busy_timeout_s": 0.5}})
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    params = StdioServerParameters(
        command=OFFLOAD_MCP,
        args=["serve", "-c", str(config), "--ledger", url],
        env=proxy_env({"XDG_STATE_HOME": str(tmp_path / "xdg")}),
        cwd=str(cwd),
    )
    log = tmp_path / "proxy.log"
    with log.open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            result = await s.call_tool("make_text", {"size": 90_000})
            assert text_of(result) == make_text(90_000)  # untouched: never a stub without a stored body
    assert list(cwd.iterdir()) == [] and not (tmp_path / "xdg").exists()  # no `postgresql:` folder, no local ledger
    text = log.read_text()
    password = url.split(":")[2].split("@")[0]
    assert named in text and password not in text and "w0rd" not in text, text  # named, password redacted


async def test_the_real_proxy_offloads_into_postgresql_and_another_process_reads_it(pg_url: str) -> None:
    async with proxy_session(["--ledger", pg_url, "--", *fixture_cmd()]) as s:
        shown = text_of(await s.call_tool("make_text", {"size": 200_000}))
        found = TRM.search(shown)
        assert found, shown[:300]
        assert await recall_whole(s, found.group(0), max_chars=100_000) == make_text(200_000)
    ledger = Ledger.open(LedgerSettings(), pg_url)  # another replica's view
    assert ledger.get_body(found.group(0))["content"][0]["text"] == make_text(200_000)
    assert ledger.path is None and "127.0.0.1" in ledger.location
    ledger.close()


def test_schema_is_versioned_and_a_newer_one_is_refused(postgres: object, pg_url: str) -> None:
    ledger = Ledger.open(LedgerSettings(), pg_url)
    backend = ledger.backend
    assert backend.schema_version() == POSTGRES_SCHEMA_VERSION  # type: ignore[attr-defined]
    ledger.close()
    schema = pg_url.rsplit("%3D", 1)[1]
    postgres.execute(f"UPDATE {schema}.offload_meta SET value = '99' WHERE key = 'schema_version'")  # type: ignore[attr-defined]
    newer = Ledger.open(LedgerSettings(), pg_url)  # the proxy still starts...
    with pytest.raises(LedgerWriteError, match="schema version 99, newer than this offload-mcp knows"):
        newer.record_event(LedgerEvent("decision"))  # ...and every write says why it cannot be used
    newer.close()


def test_an_outage_passes_results_through_and_the_pool_recovers_by_itself(
    postgres: object, pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = OffloadSettings.model_validate({"ledger": {"busy_timeout_s": 1.0}})
    ledger = Ledger.open(settings.ledger, pg_url)
    shaper = make_shaper(settings, ledger)
    kept = shaper.shape_with_report(call(1), big_result(1))[1].trm_id
    assert kept
    postgres.stop()  # type: ignore[attr-defined]
    try:
        with caplog.at_level(logging.WARNING):
            started = time.monotonic()
            original = big_result(2)
            out, report = shaper.shape_with_report(call(2), original)
            assert_untouched(out, original)
            assert report.reason == "ledger_error" and "unreachable" in (report.warning or "")
            assert time.monotonic() - started < 10  # bounded by busy_timeout_s, not hung
        with pytest.raises(LedgerUnavailable, match="unreachable"):
            ledger.get_body(kept)  # a clear error, not "unknown id"
        answer = anyio.run(
            recall.handle,
            {"mem_id": kept, "max_chars": 100},
            ToolEnv(settings=settings, ledger=ledger, session_id="s1", session=SessionMemory()),
        )
        assert (
            answer.is_error
            and "cannot be read right now" in text_of(answer)
            and "not in the ledger" not in text_of(answer)
        )
    finally:
        postgres.start()  # type: ignore[attr-defined]
    deadline = time.monotonic() + 30
    while True:  # the same handle, never reopened: the pool reconnects by itself
        out, report = shaper.shape_with_report(call(3), big_result(3))
        if report.verdict == "offload" or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert report.verdict == "offload" and report.trm_id
    assert ledger.get_body(report.trm_id)["content"][0]["text"] == big_result(3).content[0].text
    assert ledger.get_body(kept)["content"][0]["text"] == big_result(1).content[0].text
    ledger.close()


def test_stats_reads_a_postgresql_ledger_named_by_the_environment(pg_url: str, tmp_path: Path) -> None:
    import json
    import os
    import subprocess

    ledger = Ledger.open(LedgerSettings(), pg_url)
    from support.decision_records import decision_record

    ledger.commit(events=[decision_record("a", "git", "git_log", "keep", "small", 10).ledger_event()])
    ledger.close()
    env = {**os.environ, ENV_VAR: pg_url}
    done = subprocess.run(
        prewarmed(["-m", "offload_mcp.cli", "stats", "--json"]),
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["ledger"].startswith("postgresql://") and data["totals"]["results"] == 1
    assert list(tmp_path.iterdir()) == []  # nothing local was created


def test_one_off_commands_name_an_unreachable_server_once_and_at_once(tmp_path: Path) -> None:
    """Before: `stats` waited out busy_timeout_s with a psycopg.pool warning per retry, then a serving
    proxy's "results pass through unmodified until it answers", then its error; `ledger migrate`
    echoed the target URL's password in its message."""
    import subprocess

    port = free_port()
    url = f"postgresql://nobody:pw@127.0.0.1:{port}/nowhere"
    source = tmp_path / "source.db"
    Ledger.open(LedgerSettings(), source).close()
    runs = {
        "stats": ["stats", "--ledger", url],
        "migrate": ["ledger", "migrate", "--from", str(source), "--to", url],
    }
    for name, args in runs.items():
        started = time.monotonic()
        done = subprocess.run(
            prewarmed([OFFLOAD_MCP, *args]), capture_output=True, text=True, timeout=60, env=proxy_env(), cwd=tmp_path
        )
        assert done.returncode == (2 if name == "stats" else 1), (name, done.stderr)
        assert done.stdout == ""
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, (name, done.stderr)  # one line: no pool retries, no serve-time warning
        assert "PostgreSQL is unreachable (connection failed:" in lines[0] and "Connection refused" in lines[0]
        assert "nobody:***@" in lines[0] and "pw@" not in lines[0], lines[0]
        assert time.monotonic() - started < 15
    assert sorted(p.name for p in tmp_path.iterdir()) == ["source.db"]  # nothing local was created

    for bad in BAD_PASSWORD_URLS:
        done = subprocess.run(
            prewarmed([OFFLOAD_MCP, "stats", "--ledger", bad.format(port=port)]),
            capture_output=True,
            text=True,
            timeout=60,
            env=proxy_env(),
            cwd=tmp_path,
        )
        assert done.returncode == 2 and "not a URL libpq reads" in done.stderr, done.stderr
        assert "w0rd" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


@pytest.mark.parametrize("connect_now", [False, True])
def test_a_url_libpq_cannot_read_is_refused_before_any_connection_without_its_password(connect_now: bool) -> None:
    for bad in BAD_PASSWORD_URLS:
        with pytest.raises(LedgerUnavailable, match="not a URL libpq reads") as caught:
            Ledger.open(LedgerSettings(), bad.format(port=free_port()), connect_now=connect_now)
        assert "w0rd" not in str(caught.value) and "nobody:***@" in str(caught.value)
