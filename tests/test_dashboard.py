"""The dashboard (analysis/dashboard.py, GET /dashboard, `stats --html`): what `stats --json` says, drawn as one page.

Through a real streamable-HTTP proxy on a real SQLite ledger: a replay of the MCP-servers corpus
(197 decisions) plus calls by two principals. Headless Chromium (tests/support/browser.py, over DevTools
so the bearer token goes in a header) opens the page, reads every `data-figure` and writes a
screenshot to the test's folder; each figure must equal the `stats --json` value at its path.
Without a token the page is refused; under `ledger.scope: principal` bob's page holds none of
alice's rows, and the operator's holds everyone's.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from pydantic import ValidationError

from offload_mcp.config import Config
from support.browser import LoadedPage, open_page
from support.principals import LONG_LINES, session_call
from support.proxy import OFFLOAD_MCP, TRM, running_proxy, text_of
from support.servers import HOSTILE, ROOT, write_config
from support.zygote import prewarmed

ALICE, BOB, OPS = "alice-secret-token", "bob-secret-token", "operator-secret-token"
CORPUS = ROOT / "bench" / "data" / "corpus" / "mcp_servers.jsonl.gz"


def stats_json(ledger: Path | str, *extra: str) -> dict[str, Any]:
    done = subprocess.run(
        prewarmed([OFFLOAD_MCP, "stats", "--ledger", str(ledger), "--json", *extra]),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return dict(json.loads(done.stdout))


def at_path(data: Any, path: str) -> Any:
    for part in path.split("."):
        data = data[int(part)] if isinstance(data, list) else data[part]
    return data


def assert_figures_match(figures: list[tuple[str, str]], expected: dict[str, Any]) -> None:
    """Every figure on the page is the `stats --json` value at its path, exactly (both are orjson's dump)."""
    assert figures, "the page shows no figure"
    wrong = [
        (path, value, at_path(expected, path))
        for path, value in figures
        if json.loads(value) != at_path(expected, path)
    ]
    assert not wrong, wrong[:5]


def open_current(url: str, token: str, screenshot: Path) -> LoadedPage:
    """The page once it counts every event: on a loaded host the recount after the last calls can
    outlast the page's wait, and the page then says so (and shows the report before them)."""
    for _ in range(20):
        page = open_page(url, token=token, screenshot=screenshot)
        if "being counted" not in page.text:
            return page
        time.sleep(0.5)
    raise AssertionError(f"the page still counts newer events after 20 loads: {page.text[:300]}")


def replay_into(ledger: Path) -> None:
    subprocess.run(
        prewarmed([OFFLOAD_MCP, "replay", str(CORPUS), "--ledger", str(ledger)]),
        capture_output=True,
        check=True,
        timeout=300,
    )


async def test_dashboard_in_chromium_shows_what_stats_json_says_and_respects_principals(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.db"
    replay_into(ledger)
    config = write_config(
        tmp_path,
        {"hostile": {"command": HOSTILE[0], "args": HOSTILE[1:]}},
        {
            "server": {"auth_tokens": {"alice": ALICE, "bob": BOB, "ops": OPS}, "operator_principals": ["ops"]},
            "ledger": {"scope": "principal"},
        },
    )
    with running_proxy(["-c", str(config), "--ledger", str(ledger)]) as proxy:
        stub, _cut = await session_call(
            proxy.url, ALICE, ("chunks", {"size": 120_000, "seed": 5}), ("echo", {"text": LONG_LINES})
        )
        trm_id = TRM.search(text_of(stub)).group(0)  # type: ignore[union-attr]
        (recall,) = await session_call(proxy.url, ALICE, ("recall_tool_result", {"mem_id": trm_id}))
        assert not recall.is_error  # type: ignore[attr-defined]
        await session_call(proxy.url, BOB, ("echo", {"text": "bob says hello"}))

        base = proxy.url.rsplit("/mcp", 1)[0]
        with httpx2.Client(base_url=base, timeout=30) as http:
            refused = http.get("/dashboard")
            assert refused.status_code == 401 and "offload-mcp dashboard" not in refused.text
            assert http.get("/dashboard", headers={"Authorization": "Bearer not-a-known-token"}).status_code == 401
            served = http.get("/dashboard", headers={"Authorization": f"Bearer {OPS}"})
            assert served.status_code == 200 and served.headers["content-type"].startswith("text/html")
            # Nothing is fetched: no script, no remote stylesheet, font or image.
            assert "<script" not in served.text and "http://" not in served.text.replace('xmlns="http://', "")
            assert "default-src 'none'" in served.headers["content-security-policy"]
            assert http.post("/dashboard", headers={"Authorization": f"Bearer {OPS}"}).status_code == 405

        everyone = open_current(f"{base}/dashboard", OPS, tmp_path / "dashboard-operator.png")
        bob = open_current(f"{base}/dashboard", BOB, tmp_path / "dashboard-bob.png")
        alice = open_current(f"{base}/dashboard", ALICE, tmp_path / "dashboard-alice.png")

    print(f"screenshots: {tmp_path}/dashboard-*.png")
    for name in ("operator", "bob", "alice"):
        png = (tmp_path / f"dashboard-{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 20_000
    assert everyone.status == 200 and "showing every caller" in everyone.text
    expected = stats_json(ledger)
    assert expected["totals"]["results"] >= 197 + 3
    assert_figures_match(everyone.figures, expected)
    paths = {path for path, _ in everyone.figures}
    assert {
        "totals.tokens_saved",
        "totals.usd_saved",
        "recall.observed",
        "rows.0.chars_in",
        "largest.0.chars_in",
    } <= paths

    assert "showing principal bob" in bob.text
    assert_figures_match(bob.figures, stats_json(ledger, "--principal", "bob"))
    assert dict(bob.figures)["totals.results"] == "1"
    assert trm_id not in bob.text and "chunks" not in bob.text and "filesystem" not in bob.text

    assert_figures_match(alice.figures, stats_json(ledger, "--principal", "alice"))
    assert dict(alice.figures)["totals.results"] == "2" and dict(alice.figures)["recall_calls"] == "1"
    assert trm_id in alice.text and "bob" not in alice.text.replace("showing principal alice", "")


def test_stats_html_is_one_offline_file_with_the_json_figures_and_the_same_bytes_each_time(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.db"
    replay_into(ledger)
    first, second = tmp_path / "a.html", tmp_path / "b.html"
    for out in (first, second):
        subprocess.run(
            prewarmed([OFFLOAD_MCP, "stats", "--ledger", str(ledger), "--html", str(out)]), check=True, timeout=120
        )
    page = first.read_text(encoding="utf-8")
    assert first.read_bytes() == second.read_bytes()
    assert "<script" not in page and not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    figures = re.findall(r'data-figure="([^"]+)" data-value="([^"]+)"', page)
    assert_figures_match(figures, stats_json(ledger))
    # The file holds every row (no pager): each tool of the report and each kept large result.
    expected = stats_json(ledger)
    assert sum(1 for path, _ in figures if re.fullmatch(r"rows\.\d+\.results", path)) == len(expected["rows"])
    assert sum(1 for path, _ in figures if re.fullmatch(r"largest\.\d+\.chars_in", path)) == len(expected["largest"])
    assert "recall_tool_result {&quot;mem_id&quot;:&quot;trm_" in page

    unwritable = subprocess.run(
        prewarmed(
            [OFFLOAD_MCP, "stats", "--ledger", str(ledger), "--html", str(tmp_path / "no" / "such" / "dir.html")]
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert unwritable.returncode != 0 and "--html" in unwritable.stderr and "cannot write the page" in unwritable.stderr


def test_operator_principals_must_name_a_configured_principal() -> None:
    ok = Config.model_validate(
        {"offload": {"server": {"auth_tokens": {"ops": OPS}, "operator_principals": ["ops", "default"]}}}
    )
    assert ok.offload.server.operator_principals == ["ops", "default"]
    with pytest.raises(ValidationError, match="'eve' is not a principal of auth_tokens"):
        Config.model_validate({"offload": {"server": {"auth_tokens": {"ops": OPS}, "operator_principals": ["eve"]}}})


def test_report_cache_keeps_a_report_until_the_ledger_records_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from offload_mcp.analysis import dashboard
    from offload_mcp.analysis.dashboard import ReportCache
    from offload_mcp.policy.settings import PolicySettings
    from offload_mcp.store import Ledger
    from offload_mcp.store.settings import LedgerSettings

    path = tmp_path / "ledger.db"
    replay_into(path)
    ledger = Ledger.open(LedgerSettings(), path, connect_now=True)
    try:
        cache, settings = ReportCache(), PolicySettings()
        first = cache.report(ledger, settings, None)
        assert first.newer == 0 and first.mark == ledger.events_mark()
        assert cache.report(ledger, settings, None).report is first.report
        assert cache.report(ledger, settings, "principal:bob").report.totals.results == 0  # replayed rows have no owner
        ledger.record_recall("s-new", "trm_0123456789abcdef", ok=False)
        again = cache.report(ledger, settings, None)
        assert again.report is not first.report and again.newer == 0
        assert again.report.recall_calls == first.report.recall_calls + 1
        assert again.report.failed_recalls == first.report.failed_recalls + 1

        # A refresh slower than the wait (held here until released): the page gets the last report, told
        # how many events it lacks; once the refresh is done the next page counts them.
        release = threading.Event()
        real = dashboard.report_from_ledger

        def held(*args: Any, **kw: Any) -> Any:
            release.wait(60)
            return real(*args, **kw)

        monkeypatch.setattr(dashboard, "report_from_ledger", held)
        ledger.record_recall("s-new", "trm_0123456789abcdef", ok=False)
        stale = cache.report(ledger, settings, None)
        assert stale.report is again.report and stale.newer == 1 and stale.mark == again.mark
        assert "1 event(s) recorded since are being counted" in dashboard.render_page(
            stale.report, ledger="l", counted=stale
        )
        release.set()
        for _ in range(600):
            fresh = cache.report(ledger, settings, None)
            if fresh.report is not again.report:
                break
            time.sleep(0.05)
        assert fresh.newer == 0 and fresh.report.recall_calls == again.report.recall_calls + 1
    finally:
        ledger.close()


def test_a_fresh_process_page_carries_on_from_the_stored_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ledger checkpoint` stores the fold; a page of a fresh cache reads only the events after it and
    shows what `stats --json` (and the full fold) says; the serving proxy's keeper carries it on."""
    import sqlite3

    import orjson

    from offload_mcp.analysis.dashboard import CheckpointKeeper, ReportCache
    from offload_mcp.analysis.reports import report_from_ledger
    from offload_mcp.policy.settings import PolicySettings
    from offload_mcp.store import Ledger
    from offload_mcp.store.settings import LedgerSettings

    path = tmp_path / "ledger.db"
    replay_into(path)
    with sqlite3.connect(path) as conn:  # yesterday's calls: old enough for a checkpoint to count
        conn.execute("UPDATE events SET at = at - 86400")
    written = subprocess.run(
        prewarmed([OFFLOAD_MCP, "ledger", "checkpoint", str(path)]), capture_output=True, text=True, timeout=300
    )
    assert written.returncode == 0, written.stderr
    assert written.stdout.startswith("checkpoint of all: every event before ")
    ledger = Ledger.open(LedgerSettings(), path, connect_now=True)
    try:
        stored = ledger.read_checkpoint("all")
        assert stored is not None
        ledger.record_recall("s-new", "trm_0123456789abcdef", ok=False)
        ledger.flush_quietly()
        starts: list[float] = []
        read = ledger.events_in_order

        def watched(since: float | None, *args: Any, **kwargs: Any) -> Any:
            starts.append(since or 0.0)
            return read(since, *args, **kwargs)

        monkeypatch.setattr(ledger, "events_in_order", watched)
        settings = PolicySettings()
        page = ReportCache().report(ledger, settings, None)
        assert starts == [stored.through_at]
        whole = report_from_ledger(ledger, settings, checkpoint=False)
        assert orjson.dumps(page.report.as_dict()) == orjson.dumps(whole.as_dict())
        assert page.report.failed_recalls == 1 and page.report.totals.results >= 197
        assert stats_json(path) == {**json.loads(orjson.dumps(whole.as_dict())), "ledger": str(path)}

        keeper = CheckpointKeeper(ledger, settings, ReportCache(), min_new=1)
        assert keeper.run_once() == 1  # every caller's checkpoint, carried on
        assert keeper.run_once() == 0  # nothing recorded since
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE events SET at = at - 3600 WHERE id = (SELECT max(id) FROM events)")
        ledger.record_recall("s-other", "trm_0123456789abcdef", ok=True, chars_out=10)
        ledger.flush_quietly()
        assert keeper.run_once() == 1
        carried = ledger.read_checkpoint("all")
        assert carried is not None and carried.through_id > stored.through_id
        assert orjson.loads(carried.state)["events"] == orjson.loads(stored.state)["events"] + 1
    finally:
        ledger.close()


async def test_dashboard_on_a_postgresql_ledger_matches_stats_json_per_principal(tmp_path: Path, pg_url: str) -> None:
    config = write_config(
        tmp_path,
        {"hostile": {"command": HOSTILE[0], "args": HOSTILE[1:]}},
        {
            "server": {"auth_tokens": {"alice": ALICE, "bob": BOB, "ops": OPS}, "operator_principals": ["ops"]},
            "ledger": {"scope": "principal"},
        },
    )
    with running_proxy(["-c", str(config), "--ledger", pg_url]) as proxy:
        (stub,) = await session_call(proxy.url, ALICE, ("chunks", {"size": 120_000, "seed": 5}))
        trm_id = TRM.search(text_of(stub)).group(0)  # type: ignore[union-attr]
        await session_call(proxy.url, ALICE, ("recall_tool_result", {"mem_id": trm_id}))
        await session_call(proxy.url, BOB, ("echo", {"text": "bob says hello"}))
        base = proxy.url.rsplit("/mcp", 1)[0]
        with httpx2.Client(base_url=base, timeout=60) as http:
            assert http.get("/dashboard").status_code == 401

            def current(token: str, holds: str = "") -> str:
                # The proxy writes its decisions to the ledger a moment after answering (and the page may
                # still be counting them): load until the page shows them all.
                for _ in range(60):
                    text = http.get("/dashboard", headers={"Authorization": f"Bearer {token}"}).text
                    if "being counted" not in text and holds in text:
                        return text
                    time.sleep(0.5)
                raise AssertionError(f"the page never showed {holds!r}: {text[:300]}")

            pages = {OPS: current(OPS, 'data-figure="totals.results" data-value="2"')}
            pages |= {token: current(token) for token in (ALICE, BOB)}
    for token, extra in ((OPS, ()), (ALICE, ("--principal", "alice")), (BOB, ("--principal", "bob"))):
        figures = re.findall(r'data-figure="([^"]+)" data-value="([^"]+)"', pages[token])
        assert_figures_match(figures, stats_json(pg_url, *extra))
    assert trm_id in pages[ALICE] and trm_id in pages[OPS] and trm_id not in pages[BOB]
    assert 'data-figure="totals.results" data-value="2"' in pages[OPS]  # alice's chunks, bob's echo
    assert 'data-figure="recall_calls" data-value="1"' in pages[ALICE]


def test_result_search_counts_show_where_the_report_has_them() -> None:
    from types import SimpleNamespace

    from offload_mcp.analysis.dashboard import render_page
    from offload_mcp.analysis.stats import aggregate

    report = aggregate([])
    assert "result searches" not in render_page(report, ledger="l") or hasattr(report, "result_search")
    # The report of issue 42 (stats' `result_search`): its counts are figures at their --json paths.
    report.result_search = SimpleNamespace(searches=4, failed=1, hits=9, hops_saved=2)  # type: ignore[attr-defined]
    page = render_page(report, ledger="l")
    figures = dict(re.findall(r'data-figure="([^"]+)" data-value="([^"]+)"', page))
    assert {k: figures[f"result_search.{k}"] for k in ("searches", "failed", "hits", "hops_saved")} == {
        "searches": "4",
        "failed": "1",
        "hits": "9",
        "hops_saved": "2",
    }
