"""Stats from the ledger: counts, cache-aware dollars, observed priors, observe mode, the exit summary, the CLI."""

from __future__ import annotations

import json
import subprocess

import pytest

from offload_mcp.analysis.reports import report_from_ledger
from offload_mcp.analysis.stats import aggregate, exit_summary, parse_since, summary_lines
from offload_mcp.policy.settings import PolicySettings
from offload_mcp.store import Ledger, LedgerEvent
from offload_mcp.store.settings import LedgerSettings
from support.decision_records import decision_record, decision_row
from support.zygote import prewarmed

# claude-opus-4-6: cache write 5m $6.25/M, cache read $0.50/M, output $25/M
CW, CR, OUT = 6.25e-6, 0.5e-6, 25e-6


def decision(
    session, server, tool, verdict, reason, chars_in, chars_out, ref="", reducers=(), mode=None, reduced_chars=None
):
    """A decision event as shaping.ResultShaper records it (observe mode: the client got chars_in)."""
    return decision_record(
        session,
        server,
        tool,
        verdict,
        reason,
        chars_in,
        chars_out,
        ref=ref,
        reducers=reducers,
        mode=mode or "enforce",
        reduced_chars=reduced_chars,
    ).ledger_event()


LINECAP = {"reducer": "linecap", "acted": True, "reason": "acted", "chars_before": 4000, "chars_after": 2000}
DEDUP_DECLINED = {"reducer": "dedup", "acted": False, "reason": "first_seen", "chars_before": 4000, "chars_after": 4000}


@pytest.fixture
def ledger(tmp_path):
    led = Ledger.open(LedgerSettings(), tmp_path / "ledger.db")
    yield led
    led.close()


def test_counts_tokens_and_cache_aware_dollars(ledger):
    # session a: offload (3 calls follow it), reduced read, kept read, recall of the offload
    ledger.commit(
        events=[
            decision(
                "a", "git", "git_log", "offload", "gate_fired", 400_000, 1_000, ref="trm_1", reducers=[DEDUP_DECLINED]
            )
        ]
    )
    ledger.commit(
        events=[decision("a", "fs", "read_file", "reduce", "small", 4_000, 2_000, reducers=[LINECAP, DEDUP_DECLINED])]
    )
    ledger.commit(events=[decision("a", "fs", "read_file", "keep", "small", 300, 300)])
    ledger.record_recall("a", "trm_1", ok=True, chars_out=8_000)
    report = report_from_ledger(ledger, PolicySettings())

    rows = {(r.server, r.tool): r for r in report.rows}
    git, fs = rows[("git", "git_log")], rows[("fs", "read_file")]
    assert (git.results, git.reduced, git.offloaded, git.recalls) == (1, 0, 1, 1)
    assert (fs.results, fs.reduced, fs.offloaded) == (2, 1, 0)
    assert git.tokens_saved == pytest.approx(399_000 / 4)
    assert fs.tokens_saved == pytest.approx(2_000 / 4)

    # git_log was carried by 4 requests (the one that read it, 3 later calls): one cache write + 3 cache reads
    # per token, minus the recall hop
    recall_hop = 8_000 / 4 * CW + 200 * OUT
    assert git.usd_saved == pytest.approx(399_000 / 4 * (CW + 3 * CR) - recall_hop)
    # the reduced read was carried by 3 requests; the last call of a session by the one that read it
    assert fs.usd_saved == pytest.approx(2_000 / 4 * (CW + 2 * CR))
    assert report.totals.usd_saved == pytest.approx(git.usd_saved + fs.usd_saved)

    assert report.decisions == {"offload/gate_fired": 1, "reduce/small": 1, "keep/small": 1}
    assert report.reducer_acts == {"linecap": 1}
    assert report.reducer_declines == {"dedup/first_seen": 2}
    assert report.recall.observed == 1.0 and report.recall.samples == 1 and report.recall.suggested is None
    assert report.horizon.observed == 4 and report.horizon.configured == 5
    assert any("cache write" in a for a in report.assumptions)


def test_observed_priors_give_suggestions(ledger):
    events = []
    for i in range(8):  # 8 offloads, each in its own session, followed by i calls; 2 of them recalled
        events.append(decision(f"s{i}", "git", "git_log", "offload", "gate_fired", 200_000, 900, ref=f"trm_{i}"))
        events += [decision(f"s{i}", "git", "git_status", "keep", "small", 100, 100) for _ in range(i)]
    ledger.commit(events=events)
    ledger.record_recall("s3", "trm_3", ok=True, chars_out=500)
    ledger.record_recall("s3", "trm_3", ok=True, chars_out=500)  # twice: still one recalled result
    ledger.record_recall("s5", "trm_5", ok=True, chars_out=500)
    ledger.record_recall("s6", "trm_unknown", ok=False)
    report = report_from_ledger(ledger, PolicySettings(recall_probability=0.5, horizon=5))

    assert report.recall.samples == 8
    assert report.recall.observed == pytest.approx(2 / 8)
    assert report.recall.suggested == 0.25
    assert report.recall_calls == 4 and report.failed_recalls == 1
    # requests: the one that read it + i following calls + recalls made in that session (s3: +2, s5: +1, s6: +1)
    carrying = [1 + n for n in (0, 1, 2, 3 + 2, 4, 5 + 1, 6 + 1, 7)]
    assert report.horizon.observed == pytest.approx(sum(carrying) / 8)
    assert report.horizon.suggested == 5  # the mean (5.125) rounded down: the gate wants an underestimate
    assert report.sessions == 8


def test_unknown_model_counts_tokens_but_no_dollars(ledger):
    ledger.commit(
        events=[
            decision("a", "s", "t", "offload", "over_client_limit", 200_000, 500, ref="trm_x"),
            decision("a", "s", "t", "keep", "small", 10, 10),
        ]
    )
    report = report_from_ledger(ledger, PolicySettings(), model="some-local-model")
    assert not report.priced and report.totals.usd_saved == 0
    assert report.totals.tokens_saved == pytest.approx(199_500 / 4)
    assert "no pricing row" in report.assumptions[0]


def test_a_model_newer_than_the_table_is_priced_by_its_family_and_stats_says_so(ledger):
    # Issue 39: Claude Code's current model had no row, so stats showed n/a and never said why.
    ledger.commit(events=[decision("a", "s", "t", "offload", "over_client_limit", 200_000, 500, ref="trm_x")])
    report = report_from_ledger(ledger, PolicySettings(), model="claude-opus-5-5")
    assert report.priced and report.totals.usd_saved > 0
    assert report.price_note and "priced as" in report.price_note and "claude-opus-5-5" in report.price_note
    assert report.price_note in report.assumptions and report.as_dict()["price_note"] == report.price_note
    unknown = report_from_ledger(ledger, PolicySettings(), model="some-local-model")
    assert not unknown.priced and unknown.price_note and "no known family" in unknown.price_note
    assert report_from_ledger(ledger, PolicySettings(), model="claude-opus-4-6").price_note is None


def test_observe_mode_reports_would_have_saved(ledger):
    ledger.commit(
        events=[
            decision(
                "o", "git", "git_log", "offload", "gate_fired", 400_000, 400_000, mode="observe"
            ),  # a stub: <= 250 tokens
            decision(
                "o",
                "fs",
                "read_file",
                "reduce",
                "small",
                4_000,
                4_000,
                reducers=[LINECAP],
                mode="observe",
                reduced_chars=2_000,
            ),
            decision("o", "fs", "read_file", "keep", "small", 300, 300, mode="observe"),
        ]
    )
    settings = PolicySettings()
    report = report_from_ledger(ledger, settings)
    t = report.totals
    assert report.observe_mode and t.observed == 3
    assert t.tokens_saved == 0 and t.usd_saved == 0
    assert t.would_tokens_saved == pytest.approx((399_000 + 2_000) / 4)
    prior_recall = 0.5 * (2_000 * CW + 200 * OUT)
    assert t.would_usd_saved == pytest.approx(399_000 / 4 * (CW + 2 * CR) - prior_recall + 2_000 / 4 * (CW + CR))
    assert report.recall.observed is None and "observe mode" in report.recall.note
    lines = summary_lines(report)
    assert lines[0].startswith("reducers would have cut 1 of 3 results (linecap x1)")
    assert lines[1] == "would have offloaded 1 result(s) to the ledger (gate_fired x1)"
    assert any(
        line.startswith("against the raw results: would have saved ~$")
        and line.endswith("(~100,250 tokens kept out of the context)")
        for line in lines
    )
    assert "observe mode" in lines[-1]


def test_exit_summary_counts_only_recalls_and_expands_that_brought_details_back(ledger):
    # One session said "43 recall(s), 4 expand(s) brought details back" with 8 recalls working and no expand.
    ledger.commit(events=[decision("s", "git", "git_log", "offload", "gate_fired", 200_000, 900, ref="trm_1")])
    for _ in range(8):
        ledger.record_recall("s", "trm_1", ok=True, chars_out=500)
    for _ in range(35):
        ledger.record_recall("s", "trm_unknown", ok=False)
    for _ in range(4):
        ledger.record_expand("s", "0123456789abcdef", ok=False)
    text = exit_summary(ledger, ["s"])
    assert "  8 recall(s), 0 expand(s) brought details back; 35 recall(s), 4 expand(s) failed" in text.splitlines()
    report = report_from_ledger(ledger, PolicySettings(), session_ids=["s"])
    assert (report.recall_calls, report.failed_recalls, report.expand_calls, report.failed_expands) == (43, 35, 4, 4)
    assert (report.totals.recalls, report.totals.expands) == (1, 0)  # results recalled; expands that worked

    ledger.commit(events=[decision("f", "git", "git_log", "offload", "gate_fired", 200_000, 900, ref="trm_2")])
    ledger.record_recall("f", "trm_unknown", ok=False)
    assert "  1 recall(s), 0 expand(s) failed" in exit_summary(ledger, ["f"]).splitlines()
    assert "brought details back" not in exit_summary(ledger, ["f"])


def test_exit_summary_names_only_levers_that_fired_in_its_sessions(ledger):
    ledger.commit(events=[decision("quiet", "fs", "read_file", "keep", "small", 300, 300)])
    assert exit_summary(ledger, ["quiet"]) == ""  # nothing fired: say nothing
    assert exit_summary(None, ["quiet"]) == ""

    ledger.commit(events=[decision("busy", "fs", "read_file", "reduce", "small", 4_000, 2_000, reducers=[LINECAP])])
    text = exit_summary(ledger, ["busy"])
    assert text.splitlines()[0] == "offload-mcp summary:"
    assert "reducers cut 1 of 1 results (linecap x1)" in text
    assert "offloaded" not in text and "recall" not in text
    assert "kept ~500 tokens out of the context" in text
    assert exit_summary(ledger, ["quiet"]) == ""  # the other session's levers are not ours


def test_since_filters_events():
    events = [
        decision_row(decision_record("a", "s", "old", "keep", "small", 5), id_=1, at=1000.0),
        decision_row(decision_record("a", "s", "new", "keep", "small", 5), id_=2, at=2000.0),
    ]
    report = aggregate(events, since=1500.0)
    assert [r.tool for r in report.rows] == ["new"]


def test_parse_since():
    assert parse_since("7d", now=1_000_000.0) == 1_000_000.0 - 7 * 86400
    assert parse_since("12h", now=100_000.0) == 100_000.0 - 12 * 3600
    assert parse_since("30m", now=10_000.0) == 10_000.0 - 1800
    assert parse_since("2026-01-31") == parse_since("2026-01-31T00:00:00+00:00")
    with pytest.raises(ValueError, match="7d"):
        parse_since("last tuesday")


def run_stats(*args, env=None):
    return subprocess.run(
        prewarmed(["-m", "offload_mcp.cli", "stats", *args]), capture_output=True, text=True, timeout=60, env=env
    )


def test_stats_cli_table_and_json(ledger, tmp_path):
    ledger.commit(
        events=[
            decision("a", "git", "git_log", "offload", "gate_fired", 400_000, 1_000, ref="trm_1"),
            decision("a", "fs", "read_file", "reduce", "small", 4_000, 2_000, reducers=[LINECAP, DEDUP_DECLINED]),
        ]
    )
    path = str(ledger.path)
    table = run_stats("--ledger", path)
    assert table.returncode == 0, table.stderr
    for needle in (
        "git_log",
        "read_file",
        "offload/gate_fired",
        "dedup/first_seen",
        "recall_probability",
        "horizon",
        "assumptions",
        "claude-opus-4-6",
    ):
        assert needle in table.stdout

    as_json = run_stats("--ledger", path, "--json", "--model", "claude-sonnet-4-5")
    data = json.loads(as_json.stdout)
    assert data["model"] == "claude-sonnet-4-5" and data["priced"] is True
    assert data["totals"]["results"] == 2 and data["totals"]["offloaded"] == 1
    assert data["decisions"] == {"offload/gate_fired": 1, "reduce/small": 1}
    assert data["ledger"] == path

    recent = json.loads(run_stats("--ledger", path, "--json", "--since", "1h").stdout)
    assert recent["totals"]["results"] == 2


def test_stats_cli_errors_say_what_to_do(tmp_path):
    missing = run_stats("--ledger", str(tmp_path / "nope.db"))
    assert missing.returncode == 2 and "no ledger at" in missing.stderr and "--ledger PATH" in missing.stderr
    assert not (tmp_path / "nope.db").exists()  # stats never creates a ledger
    directory = run_stats("--ledger", str(tmp_path))
    assert directory.returncode == 2, directory.stderr
    assert (
        f"{tmp_path} is a directory; a ledger file path is expected (e.g. {tmp_path / 'ledger.db'})" in directory.stderr
    )
    assert "no ledger at" not in directory.stderr
    Ledger.open(LedgerSettings(), tmp_path / "l.db").close()
    bad_since = run_stats("--ledger", str(tmp_path / "l.db"), "--since", "yesterday-ish")
    assert bad_since.returncode == 2 and "7d" in bad_since.stderr
    empty = run_stats("--ledger", str(tmp_path / "l.db"))
    assert empty.returncode == 0 and "No results recorded yet" in empty.stdout
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not sqlite" * 100)
    broken = run_stats("--ledger", str(garbage))
    assert broken.returncode == 2 and str(garbage) in broken.stderr and "Traceback" not in broken.stderr


def test_stats_table_in_observe_mode_shows_would_save_columns_and_suggestions(ledger):
    events = [
        decision(f"s{i}", "git", "git_log", "offload", "gate_fired", 400_000, 400_000, mode="observe") for i in range(6)
    ]
    events += [
        decision(f"s{i}", "git", "git_status", "keep", "small", 100, 100, mode="observe")
        for i in range(6)
        for _ in range(i)
    ]
    ledger.commit(events=events)
    table = run_stats("--ledger", str(ledger.path))
    assert table.returncode == 0, table.stderr
    assert "would save tokens" in table.stdout and "would save $" in table.stdout
    assert "observe mode" in table.stdout
    # horizon over the six would-be offloads: 0..5 calls followed, so 1..6 requests; mean 3.5, rounded down
    assert '"horizon": 3' in table.stdout and "horizon: configured 5, observed 3.5 over 6" in table.stdout
    assert "recall_probability: configured 0.50, observed n/a" in table.stdout


def test_search_mode_events_are_calls_and_are_reported(ledger):
    ledger.commit(events=[decision("a", "git", "git_log", "offload", "gate_fired", 400_000, 1_000, ref="trm_1")])
    ledger.record_event(LedgerEvent("tool_search", session_id="a", verdict="ok", reason="matched"))
    ledger.record_event(LedgerEvent("invoke", session_id="a", verdict="refused", reason="unknown_tool"))
    report = report_from_ledger(ledger)
    assert report.search_events == {"tool_search/ok/matched": 1, "invoke/refused/unknown_tool": 1}
    assert report.horizon.observed == 3  # the request that read it, then a search and an invoke: three model hops
    assert "tool search answered 1 search(es); 1 invoke call(s) refused" in summary_lines(report)


def _claims_both(line: str) -> bool:
    saving = any(word in line for word in ("saved", "kept", "out of the context"))
    loss = any(word in line for word in ("cost", "more tokens", " more at ", "$-"))
    return saving and loss


def test_exit_summary_never_claims_a_saving_and_a_cost_at_once(ledger):
    # The issue's session: Claude Code in observe mode, one 1.1 MB result, nothing after it. It printed "kept
    # ~275,916 tokens out of the context, yet ~$0.01 more": the tokens against the raw bytes (which Claude Code
    # rejected, so they never entered the context), the dollars at zero requests (the result was last) minus
    # the recall prior.
    record = decision_record(
        "s", "git", "git_log", "offload", "over_client_limit", 1_103_664, mode="observe", client="claude-code"
    )
    ledger.commit(events=[record.ledger_event()])
    report = report_from_ledger(ledger, PolicySettings(), session_ids=["s"])
    lines = summary_lines(report)
    assert not any(_claims_both(line) for line in lines), lines
    raw = next(line for line in lines if line.startswith("against the raw results:"))
    assert raw.startswith("against the raw results: would have saved ~$")  # the request that read it pays for it
    alone = next(line for line in lines if line.startswith("against Claude Code alone:"))
    # Claude Code alone shows an error naming the file it saved the result to, about as long as the stub: against it
    # the offload costs its recall prior, and the tokens (pointing the other way) are not named beside that cost
    assert alone.startswith("against Claude Code alone: would have cost ~$") and "tokens" not in alone
    assert alone.endswith("; Claude Code alone rejects 1 of these 1 result(s)")
    assert report.client_alone_fates == {"rejected": 1} and report.totals.would_client_usd_saved < 0


@pytest.mark.parametrize("recall_chars", [0, 8_000, 400_000, 4_000_000])
@pytest.mark.parametrize("mode", ["enforce", "observe"])
def test_no_summary_line_claims_a_saving_and_a_cost_at_once(ledger, recall_chars, mode):
    # From a clear saving to recalls that bring back far more than the cut kept out.
    events = [
        decision_record(
            "s", "git", "git_log", "offload", "gate_fired", 200_000, 900, ref="trm_1", mode=mode, client="claude-code"
        ),
        decision_record(
            "s", "fs", "read", "reduce", "small", 60_000, 20_000, mode=mode, client="claude-code", reduced_chars=20_000
        ),
    ]
    ledger.commit(events=[e.ledger_event() for e in events])
    if recall_chars:
        ledger.record_recall("s", "trm_1", ok=True, chars_out=recall_chars)
    for settings in (PolicySettings(), PolicySettings(model="some-local-model")):
        lines = summary_lines(report_from_ledger(ledger, settings, session_ids=["s"]))
        assert lines and not any(_claims_both(line) for line in lines), lines
