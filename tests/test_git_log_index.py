"""The stub's index of a git log: wherever the log sits in the result, its reverts, its dates as written.

A git log that a server wraps (a JSON string literal, double-encoded, `{"type": "text", "text": ...}`, a
result field, prose or a markdown fence around it) is indexed as the log it holds, and paged by an offset into
the stored text; a long log's reverts are listed whole above its commits; an ISO date keeps its time and zone.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from offload_mcp.policy.stub import build_stub
from support.git_repos import repo_of_commits
from support.proxy import TRM, proxy_session, text_of
from support.servers import ROOT, python_entry, write_config

FIXTURE = str(ROOT / "tests" / "fixtures" / "fixture_server.py")

TRM_ID = "trm_0123456789abcdef"


def mcp_git_log(count: int, reverts: tuple[int, ...] = ()) -> str:
    """mcp-server-git's git_log text: `Commit:` / `Author:` / `Date:` / `Message:` blocks, newest first."""
    parts = ["Commit history:"]
    for i in range(count):
        verb = "Revert" if i in reverts else "Tune"
        hour = 23 - i % 24
        parts.append(
            f"Commit: {sha(i)}\nAuthor: Grace Hopper\n"
            f"Date: 2026-02-{1 + i // 24 % 28:02d} {hour:02d}:15:00+00:00\n"
            f"Message: {verb} the ledger compaction for shard {i}\n"
        )
    return "\n".join(parts)


def sha(i: int) -> str:
    return f"{i:010x}{'c0ffee' * 5}"


def stub_of(text: str, structured: dict | None = None) -> str:
    body: dict = {"content": [{"type": "text", "text": text}]}
    if structured is not None:
        body["structuredContent"] = structured
    return build_stub(trm_id=TRM_ID, tool="git.git_log", body=body, chars=len(text), index_chars=6000)


WRAPS = {
    "a JSON string literal": lambda log: json.dumps(log),
    "double-encoded": lambda log: json.dumps(json.dumps(log)),
    "a text field": lambda log: json.dumps({"type": "text", "text": log}),
    "a result field": lambda log: json.dumps({"success": True, "result": log}),
    "prose around a text field": lambda log: (
        f"Below is the log.\n\n<untrusted-data>\n{json.dumps({'type': 'text', 'text': log})}\n</untrusted-data>\n"
    ),
    "a fence around a string literal": lambda log: f"```json\n{json.dumps(log)}\n```",
    "a string literal holding a fence": lambda log: json.dumps(f"```json\n{log}\n```"),
}


@pytest.mark.parametrize("wrap", sorted(WRAPS))
def test_a_wrapped_git_log_is_indexed_as_the_log_it_holds(wrap):
    text = WRAPS[wrap](mcp_git_log(3000))
    out = stub_of(text)
    assert "index of 3,000 commits, one line each: sha date subject" in out
    assert f"\n  {sha(0)} 2026-02-01 23:15:00+00:00 Tune the ledger compaction" in out
    # the paging call reads on from the first commit not listed, in the text recall reads (the stored text)
    listed = [i for i in range(3000) if f"  {sha(i)} " in out]
    assert listed == list(range(len(listed))) and len(listed) > 50
    offset = int(
        re.search(r'more not shown, from line [\d,]+: recall_tool_result\(mem_id="trm_\w+", offset=(\d+)', out)[1]
    )
    assert text[offset:].startswith(f"Commit: {sha(len(listed))}")


def test_a_log_in_structured_content_alone_is_indexed_too():
    log = json.dumps(mcp_git_log(3000))
    out = build_stub(
        trm_id=TRM_ID,
        tool="git.git_log",
        body={"content": [], "structuredContent": {"content": log}},
        chars=len(log),
        index_chars=6000,
    )
    assert "index of 3,000 commits" in out and sha(0) in out


def test_a_long_logs_reverts_are_listed_whole_above_its_commits():
    out = stub_of(mcp_git_log(3000, reverts=(1500, 2900)))
    head, rest = out.split("\nindex of 3,000 commits", 1)
    reverts = rest.split("\n  ", 1)[1]
    assert rest.split("\n", 2)[1] == "reverts (2), whole:"
    assert reverts.startswith(
        f"{sha(1500)} 2026-02-07 11:15:00+00:00 Revert the ledger compaction for shard 1500 (Grace Hopper)"
    )
    assert (
        f"\n  {sha(2900)} 2026-02-09 03:15:00+00:00 Revert the ledger compaction for shard 2900 (Grace Hopper)" in rest
    )


def test_reverts_that_are_not_rare_are_not_singled_out():
    out = stub_of(mcp_git_log(3000, reverts=tuple(range(0, 3000, 100))))
    assert "reverts (" not in out and "index of 3,000 commits" in out


def test_an_iso_date_keeps_its_time_and_zone_and_a_git_date_its_day():
    out = stub_of(mcp_git_log(3000))
    assert f"{sha(30)} 2026-02-02 17:15:00+00:00 Tune" in out
    native = "".join(
        f"commit {i:040x}\nAuthor: Ada <a@example.com>\nDate:   Fri Nov 17 08:32:20 2023 +0000\n\n    Tune {i}\n\n"
        for i in range(3000)
    )
    assert f"{0:040x} 2023-11-17 Tune 0" in stub_of(native)


def test_the_index_of_a_wrapped_log_is_byte_stable():
    text = WRAPS["a text field"](mcp_git_log(2000, reverts=(700,)))
    assert stub_of(text) == stub_of(text)


# ---- end to end: mcp-server-git behind the real proxy -------------------------------------------

GIT_SERVER = str(Path(sys.executable).parent / "mcp-server-git")
NO_REDUCERS = {"reducers": {"pipeline": []}}  # the log reaches the policy whole


@pytest.fixture(scope="module")
def repo_with_a_revert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1,500 commits by git fast-import; commit 400 (1,100th newest) reverts another."""
    subjects = (
        'Revert "Change 399: tune module_7"' if i == 400 else f"Change {i}: tune module_{i % 97}" for i in range(1500)
    )
    messages = [f"{subject}\n\nBody line for commit {i}.\n" for i, subject in enumerate(subjects)]
    return repo_of_commits(tmp_path_factory.mktemp("revertrepo"), messages, seconds_apart=3_700)


async def whole(session: Any, trm_id: str) -> str:
    """The stored text, paged through by recall's `next` offsets."""
    parts, offset = [], 0
    while True:
        answer = text_of(await session.call_tool("recall_tool_result", {"mem_id": trm_id, "offset": offset}))
        header, _, data = answer.partition("\n")
        parts.append(data)
        more = re.search(r"next: recall_tool_result\(mem_id=\"trm_\w+\", offset=(\d+)\)\]$", header)
        if more is None:
            return "".join(parts)
        offset = int(more[1])


async def test_a_real_git_log_stub_lists_its_revert_whole_and_a_wrapped_one_pages_from_the_stored_text(
    repo_with_a_revert: Path, tmp_path: Path
) -> None:
    repo = str(repo_with_a_revert)
    config = write_config(
        tmp_path,
        {
            "git": python_entry(GIT_SERVER, "--repository", repo),
            "fx": python_entry(FIXTURE),
        },
        NO_REDUCERS,
    )
    async with proxy_session(["-c", str(config), "--ledger", str(tmp_path / "ledger.db")]) as s:
        stub = text_of(await s.call_tool("git_log", {"repo_path": repo, "max_count": 1500}))
        (trm_id,) = set(TRM.findall(stub))
        log = await whole(s, trm_id)
        revert = re.search(r"Commit: ([0-9a-f]{40})\nAuthor: .*\nDate: (.+)\nMessage: Revert ", log)
        assert revert is not None and len(log) > 200_000
        assert f'reverts (1), whole:\n  {revert[1]} {revert[2]} Revert "Change 399: tune module_7"' in stub
        newest = re.search(r"Commit: ([0-9a-f]{40})\nAuthor: .*\nDate: (.+)\n", log)
        assert f"\n  {newest[1]} {newest[2]} Change 1499: tune module_44" in stub  # its time and zone as written

        # the same log as a server that wraps its text in JSON returns it
        wrapped = json.dumps({"type": "text", "text": log})
        stub = text_of(await s.call_tool("echo", {"text": wrapped}))
        (trm_id,) = set(TRM.findall(stub))
        assert "index of 1,500 commits, one line each: sha date subject" in stub and newest[1] in stub
        offset = int(
            re.search(r"more not shown, from line [\d,]+: recall_tool_result\(mem_id=\"trm_\w+\", offset=(\d+)", stub)[
                1
            ]
        )
        listed = len(re.findall(r"\n  [0-9a-f]{40} ", stub.split("reverts (1), whole:", 1)[1])) - 1
        page = text_of(await s.call_tool("recall_tool_result", {"mem_id": trm_id, "offset": offset, "max_chars": 8000}))
        first_unlisted = re.findall(r"Commit: ([0-9a-f]{40})", log)[listed]
        assert page.partition("\n")[2].startswith(f"Commit: {first_unlisted}")


def test_a_wrapped_table_pages_from_its_first_row_not_listed_even_when_the_row_is_quoted():
    csv = "name,sku,price\n" + "".join(f'"Brick {i} red",BRK-{i:06d},{i}.25\n' for i in range(5_000))
    for text in (json.dumps({"type": "text", "text": csv}), json.dumps(json.dumps(csv))):
        out = stub_of(text)
        assert "index of 5,000 rows" in out
        listed = sum(1 for i in range(5_000) if f'\n  "Brick {i} red"' in out)
        assert 50 < listed < 5_000
        offset = int(
            re.search(r"more not shown, from line [\d,]+: recall_tool_result\(mem_id=\"trm_\w+\", offset=(\d+)", out)[1]
        )
        row = json.dumps(f'"Brick {listed} red",BRK-{listed:06d}')[1:-1]
        assert text[offset:].startswith(row if text.startswith("{") else json.dumps(row)[1:-1])
