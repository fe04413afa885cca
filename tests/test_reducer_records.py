"""Reducers keep data: records an agent reads stay whole, cuts name what they removed, 1 MB is decided first."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import mcp_types as t
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload_mcp.config import OffloadSettings
from offload_mcp.reducers.base import Acted, Declined, ReduceContext, trailer
from offload_mcp.reducers.extract import is_json_document_shaped, may_have_noise_lines
from offload_mcp.reducers.linecap import Linecap, is_record_line, never_truncate
from offload_mcp.reducers.pipeline import build_pipeline, floor_scan_step
from offload_mcp.reducers.settings import LinecapSettings, ReducerSettings
from offload_mcp.session import SessionMemory, cg_hash
from offload_mcp.shaping import CallInfo, build_shaper
from support.proxy import proxy_session, text_of

GIT_SERVER = str(Path(sys.executable).parent / "mcp-server-git")


def ctx() -> ReduceContext:
    return ReduceContext(tool="t", arguments={}, session=SessionMemory())


def git_repo(root: Path, commits: int) -> Path:
    """A repository whose history repeats three authors (the case linecap folded to `(x3)`)."""
    root.mkdir()
    run = lambda *a: subprocess.run(["git", *a], cwd=root, check=True, capture_output=True)  # noqa: E731
    run("init", "-q")
    for i in range(commits):
        (root / f"f{i % 5}.txt").write_text(f"revision {i}\n")
        run("add", ".")
        run(
            "-c",
            f"user.name=Dev {i % 3}",
            "-c",
            f"user.email=dev{i % 3}@example.com",
            "commit",
            "-qm",
            f"change {i}: update f{i % 5}",
        )
    return root


async def test_git_log_through_the_proxy_keeps_every_author_line(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", 40)
    async with proxy_session(["--ledger", str(tmp_path / "l.db"), "--", GIT_SERVER, "--repository", str(repo)]) as s:
        out = text_of(await s.call_tool("git_log", {"repo_path": str(repo), "max_count": 40}))
    authors = subprocess.run(
        ["git", "log", "--format=%an"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.split()
    assert 4_000 < len(out) < 12_000, len(out)  # the 6K case of issue 12
    shown = [line for line in out.split("\n") if line.startswith("Author:")]
    assert len(shown) == 40 and "(x" not in out
    assert [line.split()[-1] for line in shown] == [a for a in authors if a.isdigit()]
    assert "<<cg:" not in out  # nothing else to cut: the log comes back unchanged


def test_linecap_folds_log_noise_but_not_record_fields() -> None:
    records = "".join(
        f"Commit: {i:040x}\nAuthor: Dev {i % 2}\nStatus: shipped to production\nrequest handled by worker pool\n"
        for i in range(30)
    )
    text = "head one\nhead two\nhead three\n" + records + "tail one\ntail two\ntail three"
    out = Linecap(LinecapSettings()).reduce(text, ctx())
    assert isinstance(out, Acted)
    assert out.text.count("Author: Dev 0") == 15 and out.text.count("Status: shipped to production") == 30
    assert "request handled by worker pool (x30)" in out.text
    note = out.text.split("\n")[-2]
    assert note.startswith("[linecap dropped repeat lines 11, 15, 19") and "expand" in note
    assert out.text.endswith(trailer(cg_hash(text)))


def test_linecap_keeps_an_entry_under_each_directory_header() -> None:
    dirs = [f"./pkg/module{i}:" for i in range(8)]
    listing = "\n\n".join(f"{d}\n__init__.py\nhelpers_{i}.py\nshared_constants.py" for i, d in enumerate(dirs))
    text = ".:\nREADME.md\nsetup.cfg\n\n" + listing + "\n\nend one\nend two\nend three"
    assert Linecap(LinecapSettings()).reduce(text, ctx()) == Declined("no_long_or_repeated_lines")
    plain = (
        "start a\nstart b\nstart c\n"
        + "\n\n".join("deprecated call in worker loop of the scheduler\nretrying" for _ in range(12))
        + "\nend a\nend b\nend c"
    )
    out = Linecap(LinecapSettings()).reduce(plain, ctx())
    assert (
        isinstance(out, Acted) and "deprecated call in worker loop of the scheduler (x12)" in out.text
    )  # no header: log noise still folds


def test_linecap_does_not_cap_data_lines_and_names_the_lines_it_cut() -> None:
    ids = "Object IDs: " + ", ".join(str(283_000 + i) for i in range(120))
    row = '{"id": 7, "rows": [' + ", ".join(str(i) for i in range(200)) + "]}"
    blob = "x" * 900
    text = f"a line\nanother\n{ids}\n{row}\n{blob}\nend one\nend two\nend three"
    out = Linecap(LinecapSettings()).reduce(text, ctx())
    assert isinstance(out, Acted)
    assert ids in out.text and row in out.text and blob not in out.text
    assert "[linecap cut line 5 at 500 chars; expand for all]" in out.text
    assert Linecap(LinecapSettings()).reduce(f"a\nb\n{ids}\n{row}\nc\nd\ne", ctx()) == Declined(
        "no_long_or_repeated_lines"
    )


def test_a_numbered_record_line_is_a_record_line() -> None:
    """A file read with its line numbers (Claude Code's Read: `    37→`, `cat -n`: `    37\\t`) keeps its
    JSON lines whole as an unnumbered read does: the shared dev corpus's one value a reducer hid was an
    `agentId` at the end of a 3.8K JSONL line read by `Read(offset=37, limit=1)`, cut at 500 chars."""
    record = '{"type": "progress", "data": "' + "d" * 900 + '", "agentId": "afb92ff"}'
    prose = "p" * 900
    for mark in ("→", "\t"):
        text = "\n".join(f"{n:>6}{mark}{line}" for n, line in enumerate(["a", record, prose], 36))
        out = Linecap(LinecapSettings()).reduce(text, ctx())
        assert isinstance(out, Acted), mark
        assert record in out.text and "afb92ff" in out.text and prose not in out.text
        assert "[linecap cut line 3 at 500 chars; expand for all]" in out.text
        assert is_record_line(f"    12{mark}Author: Dev 1 <dev1@example.com>")
    assert not is_record_line("    38→" + prose)


def test_dedup_points_only_at_copies_the_model_saw_whole() -> None:
    pipeline = build_pipeline(ReducerSettings())
    session = SessionMemory()
    call = ReduceContext(tool="read", arguments={}, session=session)
    cut = "first\nsecond\nthird\n" + "z" * 2_000 + "\nlast one\nlast two\nlast three"
    whole = "\n".join(f"status line {i} of a plain report" for i in range(40))
    for text in (cut, whole):
        first = pipeline.run(text, call)
        pipeline.commit_session(first, call)
    assert [e.reducer for e in pipeline.run(cut, call).events if e.acted] == ["linecap"]  # cut afresh, no pointer
    again = pipeline.run(whole, call)
    assert [e.reducer for e in again.events if e.acted] == ["dedup"] and again.text.startswith(
        "[repeat of earlier `read`"
    )


LINES = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "",
                "  ",
                "same line repeated here",
                "Author: Dev 1",
                "x" * 700,
                "see src/app/module.py " + "q" * 700,  # linecap keeps it whole
                "[=====>    ] 50%",
                "\x1b[31mred\x1b[0m",
            ]
        ),
        st.text(alphabet="ab c:\r", max_size=40),
        st.text(max_size=600),
        st.sampled_from(
            ['{"rows": [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]}', '[{"k": 1.50}]', '{"a": "' + "y" * 700 + '"}']
        ),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(LINES)
def test_floor_never_exceeds_what_the_reducers_leave(lines: list[str]) -> None:
    text = "\n".join(lines)
    pipeline = build_pipeline(
        ReducerSettings(
            pipeline=["dedup", "extract", "tabulate", "linecap"], tabulate={"min_chars": 0, "max_chars": 50}
        )
    )
    floor = pipeline.floor_chars(text, ctx(), len(text) + 1)
    if floor is not None:
        assert floor <= len(pipeline.run(text, ctx()).text)


NOISY_LINES = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "",
                "\x1b[0m",
                "\x1b[32mINFO\x1b[0m step done",
                "\x1b[1mAuthor: " + "y" * 700,  # a record only once cleaned: extract may decline, linecap caps it
                "Author: Dev 1\r",
                "\x1b[31m" + "z" * 700 + "\x1b[0m",
                "downloading 10%\rdownloading 55%\rdownloading 100%",
                "[=====>    ] 50%",
                "[==========] 100%",
                "\u280b working",
                "same line repeated here",
                '\x1b[0m{"rows": [{"id": 1}, {"id": 2}]}',
                "\x1b]8;;https://x.io\x1b\\link\x1b]8;;\x1b\\",
                "\x1b]0;title\nspans\x07",
                "x" * 700,
            ]
        ),
        st.text(alphabet="ab c:\r\x1b[m", max_size=40),
    ),
    max_size=80,
)


@settings(max_examples=200, deadline=None)
@given(NOISY_LINES, st.sampled_from(["\n", "\r\n"]), st.integers(min_value=1, max_value=3))
def test_floor_of_a_noisy_text_never_exceeds_what_the_reducers_leave(lines: list[str], end: str, copies: int) -> None:
    """ANSI, carriage returns and progress lines: the floor reads the lines as extract rewrites them,
    and stays a lower bound whether extract acts (the cleaned lines) or declines (the raw ones)."""
    text = end.join(lines * copies)
    for names in (["dedup", "extract", "tabulate", "linecap"], ["extract", "linecap"], ["extract"]):
        pipeline = build_pipeline(ReducerSettings(pipeline=names, tabulate={"min_chars": 0, "max_chars": 50}))
        floor = pipeline.floor_chars(text, ctx(), len(text) + 1)
        if floor is not None:
            assert floor <= len(pipeline.run(text, ctx()).text), names


_RECORDS_JSON = json.dumps([{"id": i, "name": f"item {i}", "status": "ok"} for i in range(400)], indent=2)


@pytest.mark.parametrize(
    "text",
    [
        # an OSC title that spans 3,000 lines: extract removes it whole, a piece at a time it would not be
        "\x1b]0;" + "".join(f"title line {i} " + "t" * 50 + "\n" for i in range(3_000)) + "\x07" + "done\n" * 3,
        # 3,000 distinct bar lines in a run: extract keeps the last
        "\n".join(f"fetching item {i} [{'=' * (i % 20):20}] {i % 100}%" for i in range(3_000)),
        "\n".join(f"\x1b[1;39m{line}\x1b[0m" for line in _RECORDS_JSON.split("\n")),  # jq -C: JSON once cleaned
    ],
    ids=["osc-spans-lines", "progress-run", "coloured-json"],
)
def test_floor_of_a_noisy_text_read_in_pieces_stays_below_the_reduced_text(text: str) -> None:
    pipeline = build_pipeline(ReducerSettings(pipeline=["dedup", "extract", "tabulate", "linecap"]))
    floor = pipeline.floor_chars(text, ctx(), 100_000)  # the client limit: pieces of ~106K chars
    assert floor is None or floor <= len(pipeline.run(text, ctx()).text)


def test_a_long_line_linecap_keeps_whole_counts_whole_in_the_floor(tmp_path: Path) -> None:
    """A minified bundle's one long line names a URL: linecap never cuts it, so its floor is the whole
    line and the shaper offloads it before any reducer runs; a base64 line may be cut: they run."""
    shaper = build_shaper(OffloadSettings(), tmp_path / "l.db")
    bundle = 'var u="https://cdn.example.com/app.js";' + "".join(
        f"function f{i}(a){{return a+{i}}};" for i in range(12_000)
    )
    blob = base64.b64encode(bytes(range(256)) * 1_200).decode()
    for text, first in ((bundle, True), (blob, False)):
        result = t.CallToolResult(content=[t.TextContent(text=text)])
        _, rep = shaper.shape_with_report(CallInfo(server="s", tool="read", downstream_tool="read"), result)
        assert rep.verdict == "offload"
        assert ({e.reason for e in rep.reducer_events} == {"offload_decided_first"}) is first, rep.reducer_events


def test_a_large_noisy_log_is_offloaded_before_any_reducer_runs(tmp_path: Path) -> None:
    """A 1 MB coloured log and a CRLF one: the floor of their cleaned lines decides (no reducer runs);
    a log of progress bars that extract folds to a few lines still reaches the reducers."""
    shaper = build_shaper(OffloadSettings(), tmp_path / "l.db")
    coloured = "".join(f"\x1b[32mINFO\x1b[0m step {i} of the build done\n" for i in range(30_000))
    crlf = "".join(f"2026-12-02T10:00:{i % 60:02d}Z request {i} served\r\n" for i in range(30_000))
    bars = "".join(
        f"\rfetching {i % 100}% [{'#' * (i % 20):20}]" + ("\n" if i % 100 == 99 else "") for i in range(30_000)
    )
    for n, text in enumerate((coloured, crlf)):
        result = t.CallToolResult(content=[t.TextContent(text=text)])
        out, rep = shaper.shape_with_report(
            CallInfo(server="s", tool="run", downstream_tool="run", arguments={"n": n}), result
        )
        assert rep.verdict == "offload" and {e.reason for e in rep.reducer_events} == {"offload_decided_first"}
    result = t.CallToolResult(content=[t.TextContent(text=bars)])
    out, rep = shaper.shape_with_report(CallInfo(server="s", tool="run", downstream_tool="run"), result)
    assert "offload_decided_first" not in {e.reason for e in rep.reducer_events}
    assert rep.verdict == "reduce" and len(text_of(out)) < 2_000


def _floor_by_lines(text: str, cap: int, enough: int) -> int:
    """Pipeline.floor_chars's scan as its plain definition: line by line, in order, in its chunks."""
    distinct: set[str] = set()
    floor, start, step = 0, 0, floor_scan_step(enough)
    while start < len(text):
        chunk = text[start : start + step]
        if start + step < len(text):
            if chunk.rfind("\n") < 0:
                step *= 2
                continue
            chunk = chunk[: chunk.rfind("\n")]
        start += len(chunk) + 1
        for line in chunk.split("\n"):
            if line not in distinct and line.strip():
                distinct.add(line)
                kept_whole = len(line) <= cap or is_record_line(line) or never_truncate(line)
                floor += (len(line) if kept_whole else cap) + 1
        if floor > enough:
            break
    return max(floor - 1, 0)


@settings(max_examples=100, deadline=None)
@given(LINES, st.integers(min_value=1, max_value=40), st.sampled_from([100, 5_000, 10**9]))
def test_floor_is_the_line_by_line_sum(lines: list[str], copies: int, enough: int) -> None:
    text = "\n".join(lines * copies) + "\n" + "\u2028 \t\n" * 3 + "Author: Dev 1\n" * 5_000  # over one 64K chunk
    pipeline = build_pipeline(ReducerSettings(pipeline=["dedup", "linecap"]))
    cap = LinecapSettings().max_line_chars
    assert pipeline.floor_chars(text, ctx(), enough) == _floor_by_lines(text, cap, enough)


@pytest.mark.parametrize("enough", [50_000, 100_000, 300_000, 10**9])
@pytest.mark.parametrize("head", ["", "\n", "  \n\n", "line 7: " + "x" * 60 + "\n"])
def test_floor_of_distinct_lines_is_the_line_by_line_sum(enough: int, head: str) -> None:
    """A log of distinct lines, each chunk's lines all new (the shortcut) or, with a repeated or blank
    head, not: over one, two and many chunks, the same sum as line by line."""
    text = head + "".join(f"line {i}: " + "x" * (60 + i % 700) + "\n" for i in range(4_000))
    pipeline = build_pipeline(ReducerSettings(pipeline=["dedup", "linecap"]))
    cap = LinecapSettings().max_line_chars
    assert pipeline.floor_chars(text, ctx(), enough) == _floor_by_lines(text, cap, enough)


def test_a_json_document_with_a_progress_bar_in_a_string_is_offloaded_before_any_reducer_runs(tmp_path: Path) -> None:
    """`pip inspect`'s 1.3 MB listing holds a README with a click progress bar (`[####...]  100%`): the bar
    sits inside one JSON string, on that string's one line, yet extract's noise check read it as a possible
    progress line, so the floor was not taken and every reducer ran (extract's 30,000 lines: 34 ms of 52)."""
    readme = "Insert rows:\n\n    $ sqlite-utils insert dogs.db dogs dogs.csv --csv\n    [" + "#" * 36 + "]  100%\n"
    doc = {
        "items": [
            {"name": f"pkg-{i}", "version": f"1.{i}", "description": readme if i == 7 else f"Package {i}."}
            for i in range(9_000)
        ]
    }
    text = json.dumps(doc, indent=2) + "\n"
    assert is_json_document_shaped(text) and not may_have_noise_lines(text)
    assert may_have_noise_lines("\n".join(text.splitlines()[1:]))  # not a document: the bar is looked at
    shaper = build_shaper(OffloadSettings(), tmp_path / "l.db")
    _, rep = shaper.shape_with_report(
        CallInfo("s", "read", "read", {}), t.CallToolResult(content=[t.TextContent(text=text)])
    )
    assert rep.verdict == "offload" and {e.reason for e in rep.reducer_events} == {"offload_decided_first"}
    assert shaper.ledger.get_body(rep.trm_id)["content"][0]["text"] == text


@given(st.text(st.sampled_from(" \n\t{}[]ab"), max_size=40), st.integers(0, 9000), st.integers(0, 9000))
@settings(max_examples=200, deadline=None)
def test_json_document_shape_is_read_at_the_ends_as_the_stripped_text_shows_it(
    middle: str, before: int, after: int
) -> None:
    text = " " * before + middle + "\n" * after
    stripped = text.strip()
    assert is_json_document_shaped(text) == (stripped[:1] in ("{", "[") and stripped[-1:] in ("}", "]"))


def test_one_megabyte_is_offloaded_before_any_reducer_runs(tmp_path: Path) -> None:
    log = "".join(
        f"2026-11-29T16:{i // 60 % 60:02d}:{i % 60:02d}Z request {i:07d} served in {i % 97} ms\n" for i in range(20_000)
    )
    shaper = build_shaper(OffloadSettings(), tmp_path / "l.db")
    out, rep = shaper.shape_with_report(
        CallInfo("s", "read", "read", {}), t.CallToolResult(content=[t.TextContent(text=log)])
    )
    assert rep.verdict == "offload" and rep.reason == "over_client_limit"
    assert {e.reason for e in rep.reducer_events} == {"offload_decided_first"}
    assert shaper.ledger.get_body(rep.trm_id)["content"][0]["text"] == log
    # a log whose repeats could bring it under the limit is still reduced first
    noisy = "\n".join(["same warning line about the cache"] * 40_000)
    _, rep = shaper.shape_with_report(
        CallInfo("s", "read", "read", {}), t.CallToolResult(content=[t.TextContent(text=noisy)])
    )
    assert "offload_decided_first" not in {e.reason for e in rep.reducer_events}
