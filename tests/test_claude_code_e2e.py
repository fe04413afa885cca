"""What Claude Code's model actually sees through the proxy (issue 11): the real CLI, headless.

Each case runs `claude -p PROMPT --output-format json` once, with an isolated HOME, telemetry,
auto-update and nonessential traffic off, and ANTHROPIC_BASE_URL pointing at a fake Messages API
(tests/support/fake_messages_api.py) that plays scripted `tool_use` turns and records the
`tool_result` blocks Claude Code sends back: the ground truth for what the model sees. The proxy
runs as Claude Code's one MCP server (`mcp__proxy__*` tools) in front of real servers.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support.claude_code import CLAUDE, INLINE, assert_inline, results_of, run_claude, seen
from support.fake_messages_api import Step, tool_use
from support.proxy import OFFLOAD_MCP
from support.servers import NPM_BIN, ROOT, fixture_entry, needs_npm, python_entry
from support.zygote import prewarmed

HOSTILE = str(ROOT / "tests" / "fixtures" / "hostile_server.py")
STRUCTURED_SERVER = str(ROOT / "tests" / "fixtures" / "structured_server.py")
TRM = re.compile(r"trm_[0-9a-f]{16}")
RELAY_GATED = ("trigger-elicitation-request", "trigger-url-elicitation", "get-roots-list")
"""server-everything's tools listed only to a client that declared elicitation (form, URL) or roots."""

pytestmark = pytest.mark.skipif(
    not CLAUDE.exists(), reason="@anthropic-ai/claude-code is not installed (npm install in the repo root)"
)


def recall_of(tool: str, **style: Any) -> Callable[[list[dict[str, Any]]], Step]:
    """A turn that recalls from the id the latest result of `tool` carried."""

    def step(results: list[dict[str, Any]]) -> Step:
        (trm_id,) = set(TRM.findall(seen([r for r in results if r["tool"] == f"mcp__proxy__{tool}"][-1])))
        return tool_use("mcp__proxy__recall_tool_result", mem_id=trm_id, **style)

    return step


# ---------------------------------------------------------------------- cases


@pytest.mark.skipif(
    not (NPM_BIN / "mcp-server-memory").exists(), reason="@modelcontextprotocol/server-memory not installed"
)
def test_memory_read_graph_of_3000_entities_then_recall_one(tmp_path: Path) -> None:
    memory = tmp_path / "memory.jsonl"
    lines = [
        json.dumps(
            {
                "type": "entity",
                "name": f"person-{i:04d}",
                "entityType": "person",
                "observations": [f"works on project {i % 97}", f"lives in city-{i % 211}", "likes tea and long walks"],
            }
        )
        for i in range(3000)
    ]
    lines += [
        json.dumps(
            {
                "type": "relation",
                "from": f"person-{i:04d}",
                "to": f"person-{(i * 7) % 3000:04d}",
                "relationType": "knows",
            }
        )
        for i in range(1000)
    ]
    memory.write_text("\n".join(lines))
    servers = {"memory": {"command": str(NPM_BIN / "mcp-server-memory"), "env": {"MEMORY_FILE_PATH": str(memory)}}}
    api, _ = run_claude(
        tmp_path,
        servers,
        [
            tool_use("mcp__proxy__read_graph"),
            recall_of("read_graph", query='"person-2345"'),
            {"text": "done"},
        ],
    )
    (graph,) = results_of(api, "read_graph")
    assert_inline(graph)
    # stub (1,000 chars) + identifier index (grown with the result to at most 49,000 chars: half the client's
    # limit with the stub), JSON-escaped in structuredContent
    assert len(graph) < 60_000 and len(set(TRM.findall(graph))) == 1
    assert "index of 3,000 items at $.entities" in graph
    assert "stored, not shown here" in graph and "array[3000]" in graph  # says plainly what is missing
    assert "recall_tool_result" in graph
    (found,) = results_of(api, "recall_tool_result")
    assert_inline(found)
    assert '"name": "person-2345"' in found and "lives in city-" in found


@pytest.mark.skipif(
    not (NPM_BIN / "mcp-server-filesystem").exists(), reason="@modelcontextprotocol/server-filesystem not installed"
)
def test_filesystem_directory_tree_and_a_1mb_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for d in range(40):
        sub = data / f"package_{d:02d}" / "src" / "components"
        sub.mkdir(parents=True)
        for f in range(60):
            (sub / f"component_with_a_long_name_{f:03d}.tsx").write_text("")
    big = "".join(f"{i:07d} the quick brown fox jumps over the lazy dog, again and again\n" for i in range(15_000))
    assert len(big) > 1_000_000
    (data / "big.txt").write_text(big)
    servers = {"fs": {"command": str(NPM_BIN / "mcp-server-filesystem"), "args": [str(data)]}}
    api, _ = run_claude(
        tmp_path,
        servers,
        [
            tool_use("mcp__proxy__directory_tree", path=str(data)),
            tool_use("mcp__proxy__read_text_file", path=str(data / "big.txt")),
            recall_of("read_text_file", lines="5001-5002"),
            {"text": "done"},
        ],
    )
    (tree,) = results_of(api, "directory_tree")
    (read,) = results_of(api, "read_text_file")
    for text in (tree, read):
        assert_inline(text)
        # the index grows with the result, up to half the client's limit with the stub (JSON-escaped here)
        assert len(text) < 60_000 and TRM.search(text) and "stored, not shown here" in text
    assert f"{len(big):,} chars" in read  # the size recall pages through, stated plainly
    (lines,) = results_of(api, "recall_tool_result")
    assert lines.partition("\n")[2] == big.splitlines(keepends=True)[5000] + big.splitlines(keepends=True)[5001]


@needs_npm
def test_a_colour_test_log_a_module_a_document_and_a_page_reach_the_model_by_their_index(tmp_path: Path) -> None:
    # The demo's run_tests stub said "prose / plain text", had no index and showed ESC bytes: the model
    # learned neither which test failed nor the tally, the two things it ran the tests for. A module's
    # stub said "looks like source code" over 6 head lines: now it lists the module's definitions. A
    # document's listed its URLs only: now its headings too, where the section the model wants starts.
    # A GraphQL answer's records sit down an envelope: now indexed at their path, ids and all. A page
    # snapshot's stub listed its links only: now its search box, fields and buttons too, by ref. An HTML
    # page's listed an SVG namespace and its <head>: now its sections and where its links lead.
    from offload_mcp.commands.demo_workspace import run_tests_text

    log = run_tests_text()
    module = "".join(
        f'def handler_{i:03d}(request, *, retries=3):\n    """Handle request kind {i}."""\n'
        f"    return dispatch(request, kind={i}, retries=retries)\n\n\n"
        for i in range(420)  # 55K chars: past what Claude Code alone shows whole, so the proxy offloads it
    )
    guide = "# Widget API\n\n" + "".join(
        f"## `widget.part{i}(options)`\n\nWhat part {i} does.\n\n```sh\n# install part {i}\nnpm i part{i}\n```\n\n"
        + f"Details of part {i}, at length.\n" * 20
        + "\n"
        for i in range(75)  # 53K chars
    )
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "pytest.log").write_text(log)
    (tmp_path / "data" / "handlers.py").write_text(module)
    (tmp_path / "data" / "guide.md").write_text(guide)
    nodes = [
        {"id": f"I_kwDOLm{n:06d}", "number": n, "title": f"Stock drifts in WH-{n}", "bodyText": "x " * 150}
        for n in range(200)
    ]
    (tmp_path / "data" / "issues.json").write_text(json.dumps({"data": {"repository": {"issues": {"nodes": nodes}}}}))
    page = (ROOT / "tests" / "fixtures" / "playwright_orders_snapshot.txt").read_text(encoding="utf-8")
    (tmp_path / "data" / "page.md").write_text(page, encoding="utf-8")
    chapter = (ROOT / "tests" / "fixtures" / "mdbook_advanced_traits.html").read_text(encoding="utf-8")
    (tmp_path / "data" / "chapter.html").write_text(chapter, encoding="utf-8")
    servers = {"fs": {"command": str(NPM_BIN / "mcp-server-filesystem"), "args": [str(tmp_path / "data")]}}
    api, _ = run_claude(
        tmp_path,
        servers,
        [
            tool_use("mcp__proxy__read_text_file", path=str(tmp_path / "data" / "pytest.log")),
            tool_use("mcp__proxy__read_text_file", path=str(tmp_path / "data" / "handlers.py")),
            tool_use("mcp__proxy__read_text_file", path=str(tmp_path / "data" / "guide.md")),
            tool_use("mcp__proxy__read_text_file", path=str(tmp_path / "data" / "issues.json")),
            tool_use("mcp__proxy__read_text_file", path=str(tmp_path / "data" / "page.md")),
            tool_use("mcp__proxy__read_text_file", path=str(tmp_path / "data" / "chapter.html")),
            {"text": "done"},
        ],
    )
    shown, source, document, graphql, snapshot, html_page = results_of(api, "read_text_file")
    assert_inline(html_page)
    html_page = html_page.replace("\\n", "\n")
    assert TRM.search(html_page) and "looks like HTML/XML" in html_page and "index of the 8 headings" in html_page
    assert "\n  833: ### Implementing External Traits with the Newtype Pattern\n" in html_page
    assert "\n  ch20-03-advanced-types.html\n" in html_page  # the next chapter's link
    assert_inline(snapshot)
    snapshot = snapshot.replace("\\n", "\n")
    assert TRM.search(snapshot) and "looks like a web page snapshot (accessibility tree)" in snapshot
    assert "\npage: http://127.0.0.1:8765/orders.html (Orders · Acme Back Office)\n" in snapshot
    assert "\n  e12 searchbox Search orders\n" in snapshot and "\n  e1229 button Next page\n" in snapshot
    assert "\n  e33 button Refund (x150: e33, e41, e49, e57, …)\n" in snapshot
    # The last order's row: its id, its link's ref and its Refund and Edit buttons' refs.
    assert re.search(
        r"\n  ORD-2025-00647 (\| [^\n]*\(link e1221, button e1225, button e1226\)|e1221 e1225 e1226)\n", snapshot
    )
    assert_inline(graphql)
    # read_text_file's structuredContent {content: "<the file>"}: its JSON is read decoded, by the index as
    # by recall's json_path (issue 38), so the path that pages the issues goes through $.content
    assert TRM.search(graphql) and "index of 200 items at $.content.data.repository.issues.nodes" in graphql
    assert "I_kwDOLm000123" in graphql, graphql.replace("\\n", "\n")
    assert_inline(document)
    assert len(guide) > INLINE and TRM.search(document) and "index of the 76 headings in" in document
    assert "\n  903: ## `widget.part30(options)`\n" in document.replace("\\n", "\n")
    assert guide.split("\n")[902] == "## `widget.part30(options)`" and "install part" not in document
    assert_inline(source)
    assert len(module) > INLINE and TRM.search(source) and "looks like source code" in source
    # the index grows with the result: room for each whole definition line
    assert "index of 420 definitions in 2,100 lines of source" in source
    assert "\n  826: def handler_165(request, *, retries=3):\n" in source.replace("\\n", "\n")
    assert_inline(shown)
    assert TRM.search(shown) and "looks like a test log" in shown
    assert "tests/billing/test_billing_exports.py::test_invoice_total_rounding FAILED" in shown
    assert "1 failed, 599 passed, 150 warnings in 41.87s" in shown
    assert "\x1b" not in shown and "\\u001b" not in shown and "\x1b" in log


@needs_npm
def test_the_error_rows_of_a_2000_item_list_reach_the_model_by_their_ids(tmp_path: Path) -> None:
    # A list of 2,000 items with 2 error items was indexed by 530 names, no id and no sign of the errors:
    # the id the model passes next (the failed item's, to retry or inspect it) sat behind the stub. The
    # index now leads with the identifier, counts the status, and lists the rows that stand out whole.
    items = [
        {
            "name": f"Nightly export {i % 40}",
            "job_uuid": f"{i * 2654435761 % 2**32:08x}-7c1e-4a2b-9d3f-{i:012x}",
            "status": "succeeded",
            "duration_s": 30 + i % 17,
        }
        for i in range(2000)
    ]
    for k in (613, 1742):
        items[k].update(status="failed", error=f"worker {k % 7} lost its lease")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "jobs.json").write_text(json.dumps(items))
    servers = {"fs": {"command": str(NPM_BIN / "mcp-server-filesystem"), "args": [str(tmp_path / "data")]}}
    api, _ = run_claude(
        tmp_path,
        servers,
        [tool_use("mcp__proxy__read_text_file", path=str(tmp_path / "data" / "jobs.json")), {"text": "done"}],
    )
    (shown,) = results_of(api, "read_text_file")
    assert_inline(shown)
    shown = shown.replace("\\n", "\n").replace('\\"', '"')
    # read_text_file's structuredContent {content: "<the file>"} is read decoded: its rows sit at $.content
    assert TRM.search(shown) and "index of 2,000 items at $.content, one line each: job_uuid" in shown
    assert "status (value counts): succeeded 1,998, failed 2" in shown
    for k in (613, 1742):
        assert f'item {k}: {{"job_uuid":"{items[k]["job_uuid"]}"' in shown and items[k]["error"] in shown


def test_output_schema_tool_with_3mb_structured_content(tmp_path: Path) -> None:
    servers = {"rows": python_entry(STRUCTURED_SERVER)}
    api, _ = run_claude(
        tmp_path,
        servers,
        [
            tool_use("mcp__proxy__big_rows", count=30_000),
            recall_of("big_rows", json_path="$.rows[12345]"),
            {"text": "done"},
        ],
    )
    (stub,) = results_of(api, "big_rows")
    assert_inline(stub)
    assert len(stub) < 60_000 and TRM.search(stub) and "stored, not shown here" in stub  # index grown with it
    assert "validation" not in stub.lower() and "error" not in stub.lower()[:200]
    (row,) = results_of(api, "recall_tool_result")
    assert json.loads(row.partition("\n")[2]) == {
        "id": 12345,
        "name": "row-12345",
        "payload": "12345-" + "abcdefghij" * 7,
    }


def test_expand_of_a_170k_original_comes_back_inline_in_pages(tmp_path: Path) -> None:
    items = [{"id": i, "name": f"item-{i}", "status": "ok"} for i in range(3400)]
    original = json.dumps(items)
    assert 165_000 < len(original) < 200_000

    def next_page(results: list[dict[str, Any]]) -> Step:
        last = seen(results[-1])
        if results[-1]["tool"] == "mcp__proxy__json_array":
            (marker,) = set(re.findall(r"<<cg:[0-9a-f]{16}>>", last))
            return tool_use("mcp__proxy__context_guru_expand", marker=marker)
        if "last page" in last or "next page" not in last:
            return {"text": "done"}
        marker = re.search(r"<<cg:[0-9a-f]{16}>>", last).group(0)
        return tool_use(
            "mcp__proxy__context_guru_expand", marker=marker, offset=int(last.rsplit("offset=", 1)[1].rstrip("]"))
        )

    # issue 12: by default a 170K array goes to a stub (smartcrush no longer windows records below
    # 60K, and above the client limit yields to offload); this case needs the marker path, so the
    # policy is off and smartcrush has no floor
    reducer_marker = {"policy": {"enabled": False}, "reducers": {"smartcrush": {"min_chars": 0}}}
    api, _ = run_claude(
        tmp_path,
        {"fx": fixture_entry()},
        [tool_use("mcp__proxy__json_array", count=3400)] + [next_page] * 8,
        offload=reducer_marker,
    )
    (cut,) = results_of(api, "json_array")
    assert len(cut) < 2_000 and "context_guru_expand" in cut
    pages = [r for r in api.tool_results if r["tool"] == "mcp__proxy__context_guru_expand"]
    assert 4 <= len(pages) <= 6
    restored = ""
    for page in pages:
        text = seen(page)
        assert_inline(text)
        blocks = page["content"]
        restored += blocks[0]["text"] if isinstance(blocks, list) else blocks
    assert restored == original


def test_each_server_starts_once_though_claude_code_declares_roots_and_elicitation(tmp_path: Path) -> None:
    # Its first session waits for Claude Code's declaration (it used to declare nothing, then be restarted
    # to declare it: every server started twice), and it is the process started before the SDK's import.
    starts = tmp_path / "starts.txt"
    servers = {"fx": fixture_entry("--record-start", str(starts)), "gx": fixture_entry("--record-start", str(starts))}
    api, _ = run_claude(tmp_path, servers, [tool_use("mcp__proxy__fx__echo", text="once"), {"text": "done"}])
    assert results_of(api, "fx__echo") == ["once"]
    assert len(starts.read_text().split()) == 2, starts.read_text()


def test_a_hung_server_beside_a_healthy_one(tmp_path: Path) -> None:
    servers = {"hung": python_entry(HOSTILE, "--hang-on-initialize"), "good": fixture_entry()}
    started = time.monotonic()
    api, out = run_claude(
        tmp_path,
        servers,
        [tool_use("mcp__proxy__echo", text="still here"), {"text": "done"}],
        offload={"downstream": {"startup_timeout_s": 60, "first_list_wait_s": 10}},
    )
    # Under a load far past CI's (six CPU spinners beside it) Claude Code once sent its first turn before
    # the proxy's listing arrived (22 built-in tools, the proxy's 24 joined on the next turn): say so.
    why = f"tools per turn {[len(t) for t in api.tools_seen]}, results {api.tool_results}, turns {out.get('num_turns')}"
    assert time.monotonic() - started < 45  # the old proxy held initialize for the whole startup_timeout_s
    assert "mcp__proxy__echo" in api.tools_seen[0], why
    assert results_of(api, "echo") == ["still here"], why


def test_every_server_failing_is_visible_to_the_model(tmp_path: Path) -> None:
    servers = {"broken": fixture_entry("--fail-at-start"), "ghost": {"command": str(tmp_path / "no-such-server")}}
    api, _ = run_claude(tmp_path, servers, [tool_use("mcp__proxy__offload_mcp_status"), {"text": "done"}])
    assert "mcp__proxy__offload_mcp_status" in api.tools_seen[0]
    (status,) = results_of(api, "offload_mcp_status")
    assert "Servers not serving: broken (server 'broken'" in status and "ghost (server 'ghost'" in status


@pytest.mark.skipif(
    not (NPM_BIN / "mcp-server-filesystem").exists(), reason="@modelcontextprotocol/server-filesystem not installed"
)
def test_filesystem_in_roots_mode_reads_under_claude_codes_directory(tmp_path: Path) -> None:
    # Issue 15: no directory arguments, so server-filesystem takes Claude Code's roots (its working directory).
    # The reads are Claude Code's FIRST calls, two in one turn (Claude Code runs them concurrently): they
    # reach the server only once it has applied the roots it fetched for the first of them (Claude Code
    # speaks the 2026 era to the proxy, so the roots come in that call's first round).
    (tmp_path / "note.txt").write_text("read through the client's root")
    (tmp_path / "other.txt").write_text("and another file")
    servers = {"fs": {"command": str(NPM_BIN / "mcp-server-filesystem")}}
    api, _ = run_claude(
        tmp_path,
        servers,
        [
            {
                "parallel": [
                    tool_use("mcp__proxy__read_text_file", path=str(tmp_path / "note.txt")),
                    tool_use("mcp__proxy__read_text_file", path=str(tmp_path / "other.txt")),
                ]
            },
            tool_use("mcp__proxy__list_allowed_directories"),
            {"text": "done"},
        ],
        {"mode": "observe"},
    )
    assert sorted(results_of(api, "read_text_file")) == sorted(
        ['{"content":"read through the client\'s root"}', '{"content":"and another file"}']
    ), results_of(api, "read_text_file")
    (allowed,) = results_of(api, "list_allowed_directories")
    assert str(tmp_path.resolve()) in allowed, allowed


@needs_npm
def test_elicitation_and_roots_reach_the_model_as_they_do_without_the_proxy(tmp_path: Path) -> None:
    # Issue 15: server-everything (handshake era, like most servers) elicits in form and URL mode and lists
    # roots. Claude Code declares roots and both elicitation modes, and headless (-p) it answers every
    # elicitation with "cancel" (docs/relay.md). Directly it is asked on the server's own connection; through
    # the proxy, which Claude Code talks to in the 2026 era, in input_required rounds. The model must see the
    # same tool results either way, byte for byte (observe mode: the proxy does not reshape them).
    everything = {"command": str(NPM_BIN / "mcp-server-everything")}
    steps: list[Step | Callable[[list[dict[str, Any]]], Step]] = [
        tool_use("mcp__proxy__trigger-elicitation-request"),
        tool_use("mcp__proxy__trigger-url-elicitation", url="https://example.com/consent", elicitationId="e2e-1"),
        tool_use("mcp__proxy__get-roots-list"),
        {"text": "done"},
    ]
    gated = {f"mcp__proxy__{t}" for t in ("trigger-sampling-request", *RELAY_GATED)}
    seen_by_model: dict[bool, list[tuple[Any, Any, Any]]] = {}
    offered: dict[bool, set[str]] = {}
    for direct in (True, False):
        api, _ = run_claude(tmp_path, {"everything": everything}, steps, {"mode": "observe"}, direct=direct)
        seen_by_model[direct] = [(r["tool"], r.get("is_error", False), r["content"]) for r in api.tool_results]
        offered[direct] = gated & set(api.tools_seen[0])
    # The server offers what Claude Code's declaration unlocks (no sampling: Claude Code declares none).
    assert offered[False] == offered[True] == {f"mcp__proxy__{t}" for t in RELAY_GATED}
    assert seen_by_model[False] == seen_by_model[True]
    form, url, roots = (seen(r) for r in api.tool_results)
    assert "cancel" in form and "cancel" in url, (form, url)  # the elicitations reached Claude Code and came back
    assert tmp_path.as_uri() in roots, roots


def test_stats_counts_against_what_claude_code_alone_shows(tmp_path: Path) -> None:
    # Issue 39: four big results through the proxy from the real CLI, then the same four with no proxy. Claude Code
    # introduces itself (clientInfo `claude-code`), the ledger records it, and stats' model of Claude Code alone
    # (what it rejects, files or keeps) is what the real CLI did with the raw results.
    calls = [
        ("make_text", {"size": 1_467_635}),
        ("make_text", {"size": 300_000}),
        ("json_records", {"count": 3_000}),
        ("make_text", {"size": 70_000}),
    ]
    steps: list[Step] = [tool_use(f"mcp__proxy__{tool}", **args) for tool, args in calls]
    proxied, _ = run_claude(tmp_path, {"fx": fixture_entry()}, [*steps, {"text": "done"}])
    direct, _ = run_claude(tmp_path, {"fx": fixture_entry()}, [*steps, {"text": "done"}], direct=True)

    stats = subprocess.run(
        prewarmed([OFFLOAD_MCP, "stats", "--ledger", str(tmp_path / "ledger.db"), "--json"]),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert stats.returncode == 0, stats.stderr
    data = json.loads(stats.stdout)
    assert data["clients"] == {"claude-code": 4}, data["clients"]

    alone = [seen(r) for r in direct.tool_results]
    fates = {"rejected": 0, "file": 0, "inline": 0}
    for text in alone:
        fates[
            "rejected"
            if "exceeds maximum allowed tokens" in text
            else "file"
            if "Output too large" in text or "saved to" in text
            else "inline"
        ] += 1
    assert {k: v for k, v in fates.items() if v} == data["client_alone_fates"] == {"file": 3, "rejected": 1}
    # the proxy's answers reach the model whole (no rejection, no file), as stats' model says
    assert data["client_fates"] == {"inline": 4}
    for text in (seen(r) for r in proxied.tool_results):
        assert_inline(text)
    # and the tokens against Claude Code alone are what the real CLI showed, within the model's message wording
    real = (sum(map(len, alone)) - sum(len(seen(r)) for r in proxied.tool_results)) / 4
    assert data["totals"]["client_tokens_saved"] == pytest.approx(real, abs=400)


def test_a_sql_result_on_one_line_and_json_inside_json_reach_the_model(tmp_path: Path) -> None:
    """Issue 38, classes 1 and 2. A 3K SQL result the server sends as one JSON string literal (Supabase's
    prose envelope around the rows) reached the model cut at 500 chars: now every row's key is in the
    tool_result. A 2,000-row document sent as JSON text in a field (`{"type": "text", "text": "<JSON>"}`)
    was a stub describing `text: str(N chars)` whose json_path read nothing inside: now its shape names the
    rows' fields, and a row drawn at random comes back through the stub's json_path."""
    import random

    from support.rows import rows, supabase

    key, few = rows(3, 40)  # sku
    sql = supabase(json.dumps(few), 3)
    assert "\n" not in sql and 2_000 < len(sql) < 25_000
    doc_key, many = rows(4, 2000)  # part_num
    wrapped = json.dumps({"type": "text", "text": json.dumps(many)})
    pick = random.Random(38).randrange(len(many))
    api, _ = run_claude(
        tmp_path,
        {"fx": fixture_entry()},
        [
            tool_use("mcp__proxy__echo", text=sql),
            tool_use("mcp__proxy__echo", text=wrapped),
            recall_of("echo", json_path=f"$.text[{pick}].{doc_key}"),
            {"text": "done"},
        ],
    )
    small, stub = results_of(api, "echo")
    assert_inline(small)
    assert all(row[key] in small for row in few), small[-600:]
    assert_inline(stub)
    assert TRM.search(stub) and "array[2000] of object{part_num, name, status" in stub
    assert "with the JSON text of $.text decoded" in stub and many[0][doc_key] in stub
    (found,) = results_of(api, "recall_tool_result")
    assert "read decoded" in found and found.partition("\n")[2] == json.dumps(many[pick][doc_key])


def test_after_five_offloaded_results_one_search_finds_the_value_and_the_next_recall_returns_it(
    tmp_path: Path,
) -> None:
    """Issue 42: the model knows a value, not which of five stubs holds it; one search names the result
    and its line, and the recall it names brings the line back."""

    def listing(seed: int) -> str:
        rows = [f"batch {seed} order {i:05d} sku GEN-{(i * seed) % 97:03d}-X qty {i % 5}" for i in range(3000)]
        if seed == 3:
            rows[2345] = f"batch {seed} order 02345 sku LAPTOP-14-M3 qty 7"
        return "\n".join(rows)

    def recall_the_hit(results: list[dict[str, Any]]) -> Step:
        found = seen(results[-1])
        hit = re.search(r"^1\. (trm_[0-9a-f]{16}) .*\n   L(\d+): ", found, re.M)
        assert hit, f"the search's tool_result as the model received it:\n{found}"
        return tool_use("mcp__proxy__recall_tool_result", mem_id=hit.group(1), lines=hit.group(2))

    hostile = {"hostile": python_entry(HOSTILE)}
    steps: list[Step | Callable[[list[dict[str, Any]]], Step]] = [
        tool_use("mcp__proxy__echo", text=listing(seed)) for seed in range(1, 6)
    ]
    steps += [tool_use("mcp__proxy__recall_tool_result", query="LAPTOP-14-M3"), recall_the_hit, {"text": "done"}]
    api, _ = run_claude(tmp_path, hostile, steps)
    stubs = results_of(api, "echo")
    ids = [TRM.findall(stub)[0] if TRM.findall(stub) else "" for stub in stubs]
    assert len(stubs) == 5 and all(ids), "\n---\n".join(s[:600] for s in stubs)
    found, recalled = results_of(api, "recall_tool_result")
    assert re.findall(r"^\d+\. (trm_[0-9a-f]{16})", found, re.M) == [ids[2]], f"the model received:\n{found}"
    assert "L2346: batch 3 order 02345 sku LAPTOP-14-M3 qty 7" in found, f"the model received:\n{found}"
    assert recalled.endswith("batch 3 order 02345 sku LAPTOP-14-M3 qty 7\n"), f"the model received:\n{recalled}"
    print("a stub as the model received it:\n" + stubs[0])
