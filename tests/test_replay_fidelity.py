"""Replay's measure: --dump, needed facts (fidelity), the client models, recall-hop dollars, determinism."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import orjson
import pytest

from offload_mcp.analysis.clients import ClaudeCodeClient, PlainClient, client_model
from offload_mcp.analysis.fidelity import Observed, fact_tokens, measure
from offload_mcp.analysis.replay import read_records, replay
from offload_mcp.config import OffloadSettings
from support.proxy import run_offload_mcp
from support.servers import record_mcp_corpus

MCP_DEV = Path("/work/shared/corpus/mcp_dev.jsonl.gz")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_offload_mcp("replay", *args)


def _write(tmp_path: Path, rows: list[dict[str, object]], name: str = "c.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def big_listing(special: str) -> str:
    """~190K chars of rows; `special` sits in the middle, far from any stub head."""
    rows = [f"row {i:05d} id=ID{i:06d} status=ok owner=team-{i % 13}" for i in range(4000)]
    rows[2000] = f"row 02000 id={special} status=failed owner=team-x"
    return "\n".join(rows) + "\n"


# ---- fact tokens ----------------------------------------------------------------


def test_fact_tokens_take_values_not_keys_or_plain_words():
    call = json.dumps(
        {
            "repository_path": "/srv/repo",
            "sha": "a1b2c3d4e5",
            "count": 123456,
            "small": 42,
            "note": "deploy tomorrow please",
            "nested": {"ids": ["ORD-77812", "short"]},
        }
    )
    assert fact_tokens(call) == ["/srv/repo", "a1b2c3d4e5", "123456", "ORD-77812"]
    assert fact_tokens("sed -n 100,200p astropy/modeling/separable.py") == ["astropy/modeling/separable.py"]
    assert fact_tokens("grep -rn 'Traceback' src/") == []  # a plain word and a 3-char path
    assert fact_tokens('{"broken": ') == []


# ---- counting on hand-made trajectories ------------------------------------------


def obs(
    line: int, traj: str, call: str, raw: str, seen: str | None = None, verdict: str = "keep", **kw: object
) -> Observed:
    sent = kw.pop("sent", seen if seen is not None else raw)
    return Observed(
        line=line,
        traj=traj,
        tool=str(kw.pop("tool", "t")),
        call=call,
        raw=raw,
        sent=str(sent),
        seen=seen if seen is not None else raw,
        verdict=verdict,
        **kw,
    )  # type: ignore[arg-type]


def test_measure_counts_each_loss_where_it_happened():
    observed = [
        obs(1, "a", "", "ids: USR-1001 USR-1002 file src/app/main.py", tool="list"),
        obs(2, "a", "", "big table ... ORD-5555 ...", seen="stub trm_x", verdict="offload", tool="query"),
        obs(
            3,
            "a",
            "",
            "rows ROW-0007 ROW-0008",
            seen="rows ROW-0007 <<cg:0123456789abcdef>>",
            verdict="reduce",
            tool="rows",
        ),
        # uses: one visible, one behind the stub, one cut, one from nowhere, USR-1001 twice (counted once)
        obs(4, "a", '{"user": "USR-1001", "order": "ORD-5555", "row": "ROW-0008", "other": "NEW-9999"}', "ok"),
        obs(5, "a", '{"user": "USR-1001", "path": "src/app/main.py"}', "ok"),
        # another trajectory never sees trajectory a's outputs
        obs(6, "b", '{"user": "USR-1002"}', "ok"),
    ]
    seen_blame: list[tuple[int, str]] = []

    def blame(index: int, token: str) -> str:
        seen_blame.append((index, token))
        return "smartcrush"

    report = measure(observed, blame)
    d = report.as_dict()
    assert (d["needed"], d["visible"], d["behind_stub"], d["hidden_by_reducer"]) == (4, 2, 1, 1)
    assert d["by_reducer"] == {"smartcrush": 1} and seen_blame == [(2, "ROW-0008")]
    assert d["by_tool"]["query"]["behind_stub"] == 1 and d["by_tool"]["list"]["visible"] == 2
    assert report.hops == 2 and d["recall_hops"] == 2
    assert report.hidden_at == {1: ["ORD-5555"], 2: ["ROW-0008"]}
    assert d["visible_pct"] == 50.0
    assert d["echoed"] == 0 and d["learned"] == 4


def test_measure_tells_echoes_from_learned_facts():
    observed = [
        obs(1, "a", '{"repo": "acme/inventory-2"}', "issues of acme/inventory-2: BUG-777777"),
        obs(2, "a", '{"repo": "acme/inventory-2", "issue": "BUG-777777"}', "ok", seen="ok"),
    ]
    d = measure(observed).as_dict()
    # both qualify; the repository was the agent's own argument before any output held it
    assert (d["needed"], d["visible"], d["echoed"], d["learned"], d["learned_visible_pct"]) == (2, 2, 1, 1, 100.0)


def test_measure_names_client_losses_and_visibility_anywhere_earlier():
    observed = [
        obs(1, "a", "", "old copy of KEY-123456", tool="first"),
        obs(
            2,
            "a",
            "",
            "new copy of KEY-123456 and SHA-abcdef",
            seen="preview only",
            sent="new copy of KEY-123456 and SHA-abcdef",
            fate="file",
        ),
        obs(3, "a", "", "TOK-999999", seen="Error: too large", sent="TOK-999999", fate="rejected"),
        obs(4, "a", '{"k": "KEY-123456", "s": "SHA-abcdef", "t": "TOK-999999"}', "ok"),
    ]
    d = measure(observed).as_dict()
    # KEY-123456 is still visible in the first output's view, although the latest source filed it
    assert (d["needed"], d["visible"], d["behind_client_file"], d["rejected_by_client"]) == (3, 1, 1, 1)


def test_measure_shown_scores_a_peer_the_same_way():
    from offload_mcp.analysis.fidelity import measure_shown

    items = [
        (1, "a", "q", "{}", "rows ROW-000001 ROW-000002", "rows ROW-000001 [1 more]"),
        (2, "a", "q", '{"r": ["ROW-000001", "ROW-000002"]}', "ok", "ok"),
    ]
    d = measure_shown(items).as_dict()
    assert (d["needed"], d["visible"], d["other"]) == (2, 1, 1)


def test_measure_a_call_needs_an_earlier_output():
    observed = [obs(1, "a", '{"id": "JOB-424242"}', "created JOB-424242"), obs(2, "a", '{"id": "JOB-424243"}', "ok")]
    d = measure(observed).as_dict()
    assert d["needed"] == 0  # a value first seen in the call's own output is not needed from before
    assert d["visible_pct"] == 100.0 and d["hidden_by_reducer_pct"] == 0.0 and d["behind_stub_pct"] == 0.0


# ---- client models -----------------------------------------------------------------


def test_client_models():
    body = {
        "content": [
            {"type": "text", "text": "one"},
            {"type": "image", "data": "x", "mimeType": "image/png"},
            {"type": "text", "text": "two"},
        ]
    }
    assert PlainClient().view(body).text == "one\ntwo"
    cc = ClaudeCodeClient()
    structured = {"content": [{"type": "text", "text": "ignored"}], "structuredContent": {"rows": [1, 2]}}
    assert cc.view(structured).text == '{"rows":[1,2]}'
    big = {"content": [{"type": "text", "text": "x" * 60_000}]}
    filed = cc.view(big)
    assert filed.fate == "file" and filed.text.endswith("x" * 2_000 + "\n...\n</persisted-output>")
    assert len(filed.text) < 2_300
    assert filed.text == cc.view(big).text  # the path derives from the content: byte-stable
    assert cc.view(big, declared_max_chars=100_000).fate == "inline"
    assert cc.view({"content": [{"type": "text", "text": "x" * 600_000}]}, declared_max_chars=10**7).fate == "rejected"
    # over 400,000 chars (what Claude Code 2.1.332 did, tests/test_claude_code_e2e.py): an error naming a file
    assert cc.view({"content": [{"type": "text", "text": "x" * 400_000}]}).fate == "file"
    huge = cc.view({"content": [{"type": "text", "text": "x" * 400_001}]}, tool="q", declared_max_chars=500_000)
    assert huge.fate == "rejected" and "(400,001 characters)" in huge.text and "xxxx" not in huge.text
    assert len(huge.text) < 1_500
    assert cc.inline_limit(10**7) == 500_000 and cc.inline_limit(1_000) == 50_000
    with pytest.raises(ValueError, match="unknown client 'cursor'"):
        client_model("cursor")


# ---- replay end to end ------------------------------------------------------------


def test_replay_dump_fidelity_and_claude_code_view(tmp_path: Path):
    rows = [
        {"tool": "list_orders", "call": "{}", "output": big_listing("ORD-SPECIAL-7"), "traj": "t1", "step": 0},
        {
            "tool": "get_user",
            "call": '{"id": "u1"}',
            "output": '{"user": "USR-31337", "name": "Ada"}',
            "traj": "t1",
            "step": 1,
        },
        {
            "tool": "get_order",
            "call": '{"order": "ORD-SPECIAL-7", "user": "USR-31337"}',
            "output": "ok",
            "traj": "t1",
            "step": 2,
        },
        {"tool": "get_order", "call": '{"order": "ID002001"}', "output": "ok", "traj": "t2", "step": 0},
    ]
    corpus = _write(tmp_path, rows)
    dump = tmp_path / "seen.jsonl"
    done = run_cli(str(corpus), "--json", "--client", "claude-code", "--dump", str(dump))
    assert done.returncode == 0, done.stderr
    d = json.loads(done.stdout)
    f = d["fidelity"]
    assert d["client"] == "claude-code"
    lines = [json.loads(x) for x in dump.read_text().splitlines()]
    assert [x["line"] for x in lines] == [1, 2, 3, 4]
    assert set(lines[0]) >= {"line", "traj", "step", "tool", "verdict", "reason", "seen"}
    # 190K chars is over what Claude Code accepts: offloaded whatever the gate says
    assert lines[0]["verdict"] == "offload" and "trm_" in lines[0]["seen"]
    if "ORD-SPECIAL-7" in lines[0]["seen"]:  # a stub index that names the odd row out
        assert (f["needed"], f["visible"], f["behind_stub"]) == (2, 2, 0), f
    else:
        assert (f["needed"], f["visible"], f["behind_stub"]) == (2, 1, 1), f
        assert f["examples"][0]["fact"] == "ORD-SPECIAL-7" and f["examples"][0]["source_line"] == 1
        assert lines[0]["hidden_facts"] == ["ORD-SPECIAL-7"]
    assert lines[1]["seen"] == rows[1]["output"] and lines[1]["verdict"] == "keep"
    # tokens are those of the model's context: the stub, not the 190K body
    assert d["chars_out"] == sum(len(x["seen"]) for x in lines)
    # Claude Code alone would file the 190K result with a 2,000-char preview: the fact is out of view there too
    alone = d["client_alone"]
    assert alone["fates"] == {"file": 1, "inline": 3} and alone["fidelity"]["behind_client_file"] == 1
    # one recall hop per needed fact not seen, beside the prior
    usd = d["dollars"]["claude-sonnet-4-6"]
    assert (
        usd["recall_hops"] == f["behind_stub"]
        and (usd["recall_usd"] > 0) == (f["behind_stub"] > 0)
        and "recall_usd_prior" in usd
    )
    limits = d["client_limits"]
    assert limits["declared_max_result_chars"] == 100_000 and limits["client_inline_chars"] == 100_000
    assert limits["largest_sent_chars"] < 2_000 and limits["rejected"] == 0
    tables = run_cli(str(corpus), "--client", "claude-code")
    assert tables.returncode == 0 and "needed facts" in tables.stdout and "visible to the model" in tables.stdout
    assert "maxResultSizeChars=100000" in tables.stdout.replace("\n", "")


def test_replay_is_deterministic(tmp_path: Path):
    corpus = _write(
        tmp_path,
        [
            {"tool": "q", "call": "{}", "output": big_listing("ORD-1"), "traj": "t", "step": 0},
            {"tool": "q", "call": '{"id": "ID000007"}', "output": "x " * 400, "traj": "t", "step": 1},
        ],
    )
    outs = []
    for n in (1, 2):
        dump = tmp_path / f"d{n}.jsonl"
        report = replay(read_records(corpus), OffloadSettings(), client="claude-code", dump=dump).as_dict()
        report.pop("seconds"), report.pop("records_per_second"), report.pop("mb_per_second")
        outs.append((orjson.dumps(report, option=orjson.OPT_SORT_KEYS), dump.read_bytes()))
    assert outs[0] == outs[1]


@pytest.mark.skipif(not MCP_DEV.exists(), reason="the shared MCP corpus is not on this machine")
def test_fidelity_agrees_with_the_dump_on_real_mcp_results(tmp_path: Path):
    """Invariant on real data: a fact counts as visible iff it occurs in an earlier dumped `seen` of its trajectory."""
    records = read_records(MCP_DEV, limit=300)
    dump = tmp_path / "d.jsonl"
    report = replay(records, OffloadSettings(), dump=dump)
    rows = [json.loads(x) for x in dump.read_text().splitlines()]
    assert len(rows) == len(records) and [r["line"] for r in rows] == [r.line for r in records]
    visible = needed = 0
    for traj in dict.fromkeys(r.traj for r in records):
        idx = [i for i, r in enumerate(records) if r.traj == traj]
        counted: set[str] = set()
        for pos, i in enumerate(idx):
            for token in fact_tokens(records[i].call):
                if token in counted or not any(token in records[j].output for j in idx[:pos]):
                    continue
                counted.add(token)
                needed += 1
                visible += any(token in rows[j]["seen"] for j in idx[:pos])
    assert report.fidelity is not None and needed > 20
    assert (report.fidelity.needed, report.fidelity.visible) == (needed, visible)


def test_bad_client_and_unwritable_dump_are_clear_errors(tmp_path: Path):
    corpus = _write(tmp_path, [{"tool": "t", "output": "x"}])
    bad = run_cli(str(corpus), "--client", "cursor")
    assert bad.returncode == 2 and "invalid choice: 'cursor'" in bad.stderr
    unwritable = run_cli(str(corpus), "--dump", str(tmp_path / "no" / "such" / "dir" / "d.jsonl"))
    assert unwritable.returncode == 2 and "cannot write the dump" in unwritable.stderr


def test_structured_records_are_what_claude_code_shows(tmp_path: Path):
    corpus = tmp_path / "s.jsonl.gz"
    rows = [
        {
            "tool": "get",
            "call": "{}",
            "output": "summary only",
            "structured": {"id": "REC-424242"},
            "traj": "t",
            "step": 0,
        },
        {"tool": "use", "call": '{"id": "REC-424242"}', "output": "ok", "traj": "t", "step": 1},
    ]
    corpus.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    plain = replay(read_records(corpus), OffloadSettings()).fidelity
    cc = replay(read_records(corpus), OffloadSettings(), client="claude-code").fidelity
    assert plain is not None and cc is not None
    # the id is only in structuredContent: a plain client never shows it, Claude Code does
    assert (plain.needed, plain.visible, plain.losses["hidden_by_client_view"]) == (1, 0, 1)
    assert (cc.needed, cc.visible) == (1, 1)
    bad = _write(tmp_path, [{"tool": "t", "output": "x", "structured": [1]}])
    done = run_cli(str(bad))
    assert done.returncode == 2 and "`structured` must be a JSON object" in done.stderr


def _corpus_session(name: str, out: Path) -> Path:
    """`out`, written by bench/corpus_mcp.py with the one session `name` (its real servers over stdio)."""
    return record_mcp_corpus(out, "--only", name, timeout=120)


def test_mcp_corpus_script_is_deterministic_and_yields_needed_facts(tmp_path: Path):
    """One real session of bench/corpus_mcp.py (SQLite-shaped server over stdio), twice: same bytes, real needed facts."""

    outs = [_corpus_session("sqlite-orders-0", tmp_path / f"c{n}.jsonl.gz").read_bytes() for n in (1, 2)]
    assert outs[0] == outs[1]
    records = read_records(tmp_path / "c1.jsonl.gz")
    assert [r.tool for r in records][:3] == ["sqlite.list_tables", "sqlite.describe_table", "sqlite.read_query"]
    fidelity = replay(records, OffloadSettings()).fidelity
    assert (
        fidelity is not None and fidelity.needed >= 4
    )  # customer id, order id, sku, order number came from earlier rows


def test_a_graphql_issue_id_picked_from_a_stubbed_answer_is_in_view(tmp_path: Path):
    """The GitHub GraphQL session of bench/corpus_mcp.py, from its real server over stdio: 90 issues under
    data.repository.issues.nodes (~63K chars, offloaded), then a comment mutation on the node id of the
    issue picked from their middle. The stub's index finds the records down the envelope: the id is in
    view in Claude Code's context (before, it sat behind the stub)."""
    records = read_records(_corpus_session("github-graphql-0", tmp_path / "graphql.jsonl.gz"))
    assert [r.tool for r in records] == ["github.graphql_issues", "github.graphql_add_comment"]
    dump = tmp_path / "seen.jsonl"
    report = replay(records, OffloadSettings(), client="claude-code", dump=dump)
    first = json.loads(dump.read_text().splitlines()[0])
    assert first["verdict"] == "offload" and "index of 90 items at $.data.repository.issues.nodes" in first["seen"]
    fidelity = report.fidelity
    assert fidelity is not None and (fidelity.needed, fidelity.visible) == (1, 1)


def test_reducer_blame_names_the_reducer_after_which_a_fact_is_gone():
    """Two reducers acted on one output: the prefix re-run names the one that removed each fact."""
    from offload_mcp.analysis.replay import Record, _reducer_blame
    from offload_mcp.reducers.base import Acted, Declined, ReduceContext, marker
    from offload_mcp.reducers.pipeline import Pipeline, ReducerEvent
    from offload_mcp.session import cg_hash
    from offload_mcp.shaping import ResultShaper

    class DropLines:
        def __init__(self, name: str, needle: str) -> None:
            self.name, self.needle = name, needle

        def reduce(self, text: str, ctx: ReduceContext) -> Acted | Declined:
            kept = [line for line in text.splitlines() if self.needle not in line]
            if len(kept) == len(text.splitlines()):
                return Declined("nothing_to_drop")
            return Acted("\n".join(kept) + "\n" + marker(cg_hash(text)), {cg_hash(text): text})

    shaper = ResultShaper(
        OffloadSettings(), None, pipeline=Pipeline([DropLines("first", "AAA"), DropLines("second", "BBB")])
    )
    pad = " ." * 40  # each dropped line must outweigh its marker
    text = "\n".join(["keep KEY-000001", "AAA KEY-000002" + pad, "BBB KEY-000003" + pad, "filler " * 20])
    record = Record(1, "t", "", text, "traj", 0)

    class Shaped:
        reducer_events = [ReducerEvent("first", True, "acted", 1, 0), ReducerEvent("second", True, "acted", 1, 0)]

    blame = _reducer_blame(shaper, [record], [Shaped()])
    assert blame(0, "KEY-000002") == "first" and blame(0, "KEY-000003") == "second"
    assert blame(0, "KEY-000001") == "first+second"  # still there after each alone: both are named


def test_a_function_named_after_a_source_read_is_in_view_of_the_stub(tmp_path: Path):
    """A 55K-char module read through server-filesystem is stubbed; the function an agent greps for next is
    defined far down it, away from the head. The stub's outline of the source keeps its name in view
    (bench/code_reads.py: 0/40 -> 40/40 on real modules)."""
    module = "".join(
        f"def handler_{i:03d}(request, *, retries=3):\n"
        f'    """Handle request kind {i}."""\n'
        f"    return dispatch(request, kind={i}, retries=retries)\n\n\n"
        for i in range(420)
    )
    rows = [
        {
            "tool": "filesystem.read_text_file",
            "call": '{"path": "/repo/handlers.py"}',
            "output": module,
            "structured": {"content": module},
            "traj": "t",
            "step": 1,
        },
        {
            "tool": "filesystem.search_files",
            "call": '{"pattern": "handler_165"}',
            "output": "none",
            "traj": "t",
            "step": 2,
        },
    ]
    corpus = _write(tmp_path, rows)
    dump = tmp_path / "seen.jsonl"
    report = replay(read_records(corpus), OffloadSettings(), client="claude-code", dump=dump)
    seen = [json.loads(line) for line in dump.read_text().splitlines()]
    assert len(module) > 50_000 and seen[0]["verdict"] == "offload"
    assert "definitions in" in seen[0]["seen"] and "handler_165" in seen[0]["seen"]
    assert report.fidelity is not None and (report.fidelity.needed, report.fidelity.visible) == (1, 1)


def test_replay_counts_the_facts_behind_a_stub_one_search_for_the_fact_finds(tmp_path: Path) -> None:
    """Issue 42: the upper bound of what search adds. Two large listings are offloaded; a later call uses
    an order id from the middle of the second one, which its stub does not show."""

    def listing(prefix: str) -> str:
        return "\n".join(f"{prefix}-{i:06d} status shipped total {i * 3 % 997}.50 eur" for i in range(6000))

    rows = [
        {"tool": "list_a", "call": '{"page": 1}', "output": listing("INV"), "traj": "t1", "step": 0},
        {"tool": "list_b", "call": '{"page": 2}', "output": listing("ORD"), "traj": "t1", "step": 1},
        {"tool": "get_order", "call": '{"order": "ORD-003217"}', "output": "ok", "traj": "t1", "step": 2},
    ]
    corpus = _write(tmp_path, rows)
    report = replay(read_records(corpus), OffloadSettings(), client="claude-code")
    f = report.fidelity.as_dict()  # type: ignore[union-attr]
    assert (f["needed"], f["behind_stub"]) == (1, 1), f
    assert report.search_reach == {"behind_stub": 1, "found": 1, "found_first": 1}
    assert report.as_dict()["search_reach"] == report.search_reach
