"""linecap: per-line cap with the never-truncate allow-list, non-adjacent duplicate collapse."""

import base64
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload_mcp.analysis.replay import read_records
from offload_mcp.reducers.base import Acted, Declined, ReduceContext, marker, trailer
from offload_mcp.reducers.linecap import NEVER_TRUNCATE_RE, Linecap, never_truncate
from offload_mcp.reducers.settings import LinecapSettings
from offload_mcp.session import SessionMemory, cg_hash


def ctx(session=None):
    return ReduceContext(tool="t", arguments={}, session=session or SessionMemory())


def run(text, **kw):
    return Linecap(LinecapSettings(**kw)).reduce(text, ctx())


BANNER = "banner one\nbanner two\nbanner three\n"
SUMMARY = "\nsummary one\nsummary two\nsummary three"


def test_seed_example_duplicates_then_cap():
    body = "".join(f"resolving dependency graph for module\nstep {i} done\n" for i in range(1, 31))
    blob = "m" * 2000
    text = BANNER + body + blob + SUMMARY
    out = run(text)
    assert isinstance(out, Acted)
    lines = out.text.split("\n")
    assert lines[3] == "resolving dependency graph for module (x30)"
    assert lines[4] == "step 1 done" and lines[5] == "step 2 done"
    assert out.text.count("resolving dependency") == 1
    assert "m" * 497 + "...[+1503 chars]" in lines
    assert lines[-1] == trailer(cg_hash(text))
    assert out.stash == {cg_hash(text): text}


def test_xn_is_rendered_after_the_cap():
    long_dup = "k" * 900
    text = BANNER + f"{long_dup}\nother line here\n{long_dup}\n" + SUMMARY
    out = run(text)
    assert isinstance(out, Acted)
    assert "k" * 497 + "...[+403 chars] (x2)" in out.text.split("\n")


def test_allow_list_lines_survive_the_cap():
    keep = [
        "src/app/module.py " + "a" * 600,
        "/usr/lib/python3/site.py:120:5 " + "b" * 600,
        '  File "x.py", line 3, in f ' + "c" * 600,
        "ValueError: bad " + "d" * 600,
        "FAILED tests/test_a.py::test_b " + "e" * 600,
        "process exited with code 1 " + "f" * 600,
        "@@ -1,3 +1,4 @@ " + "g" * 600,
        "see https://example.com/" + "h" * 600,
    ]
    for line in keep:
        assert never_truncate(line), line
    assert not never_truncate("x" * 600)


LONG = 4_096
"""Filler chars around a fact: a long line, where one search of the whole alternation cost the most."""

# Pieces of the allow-list's facts, whole and broken, and their neighbours: joined at random they make
# lines that match one alternative, several, or just miss (`Errorx`, `exit  code`, `.py:x`).
_PIECES = (
    "error|Error|ERROR|errors|Exception|exception|Traceback|fatal|PANIC|Errorx|PASS|PASSED|XFAIL|FAIL|SKIPPED"
    "| passed| failed|3 passed|12 errors|exit |exited |EXIT |code|status|with|return|returncode|return code"
    '|/|./|../|~/|src/app|.py|.ts|:|:12|:3:4|://|http|https://|ftp|File "|", line |  at |(|)|@@ -1,2 +1,3 @@'
    "|diff --git |+++ |--- |index 1a..2b| |  |\t|=|'|\"|[|x|7|_|-|.|+|@|é|\u212a|ſ"
).split("|")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12), st.sampled_from(["x", " ", "ab+/", "0123456789", "word "]))
def test_never_truncate_answers_as_the_whole_alternation(pieces, filler):
    """On ASCII, each alternative searched alone behind its substrings: the one search of
    NEVER_TRUNCATE_RE, for the facts alone and at a long line's start, middle and end."""
    fact = "".join(pieces)
    pad = (filler * (LONG // len(filler) + 1))[:LONG]
    for line in (fact, pad + fact, fact + pad, pad + fact + pad, pad[:100] + fact + pad):
        assert never_truncate(line) == (NEVER_TRUNCATE_RE.search(line) is not None), line[:200]


@pytest.mark.parametrize(
    "fact",
    (
        'src/app/module.py| ./a/b.py|a.py:12| util.ts:3:4|File "x.py", line 3|  at f (x.js:1:2)| fatal |IOException'
        "|ValueError|XFAIL| 3 passed| 2 errors|exited with|EXIT CODE|returncode|return code|diff --git a"
        "|@@ -1 +1 @@|ftp://x| Traceback|panic:"
    ).split("|"),
)
def test_each_fact_is_found_in_a_long_line_wherever_it_sits(fact):
    pad = "x " * LONG
    lines = (
        [fact + pad]
        if fact.startswith(("src", "a.py", "File", "  at", "diff", "@@"))
        else [pad + fact, pad + fact + " " + pad]
    )
    for line in lines:
        assert never_truncate(line) and NEVER_TRUNCATE_RE.search(line), line[-60:]


CORPORA = [
    Path(__file__).resolve().parents[2] / "shared" / "corpus" / "dev.jsonl.gz",
    Path(__file__).resolve().parents[2] / "shared" / "corpus" / "mcp_dev.jsonl.gz",
    Path(__file__).resolve().parents[1] / "bench" / "data" / "corpus" / "mcp_servers.jsonl.gz",
]


@pytest.mark.parametrize("corpus", CORPORA, ids=lambda path: path.name)
def test_never_truncate_answers_as_the_whole_alternation_on_real_lines(corpus):
    """Every line of the corpora over 200 chars, as it is and padded to a long one."""
    if not corpus.exists():
        pytest.skip(f"{corpus} is not here")
    checked = 0
    for record in read_records(corpus):
        for line in record.output.split("\n"):
            if len(line) <= 200:
                continue
            for probe in (line, line + " " * LONG):
                assert never_truncate(probe) == (NEVER_TRUNCATE_RE.search(probe) is not None), probe[:200]
            checked += 1
    assert checked > 50


def test_a_long_blob_line_is_capped_and_a_long_line_with_a_fact_is_kept():
    blob = base64.b64encode(random.Random(5).randbytes(300_000)).decode()
    assert not never_truncate(blob)
    assert never_truncate(blob + " see src/app/module.py")
    assert never_truncate("ValueError " + blob)
    out = run(BANNER + blob + SUMMARY)
    assert isinstance(out, Acted) and len(out.text) < 2_000


def test_guards():
    # first/last 3 lines are never collapsed
    dup = "same line repeated"
    text = f"{dup}\nb\nc\n" + "".join(f"line {i}\n" for i in range(60)) + f"{dup}\n" + "x\ny\nz"
    assert run(text) == Declined("no_long_or_repeated_lines")
    # lines differing only in a source location stay two findings
    findings = "".join(f"src/a.py:{i}: W123 unused import\nfiller {i}\n" for i in range(30))
    assert run(BANNER + findings + SUMMARY) == Declined("no_long_or_repeated_lines")
    # short and indented lines are not collapsed
    code = BANNER + "".join(f"def f{i}():\n    return None\n" for i in range(40)) + "ok\n" * 1 + SUMMARY
    assert run(code) == Declined("no_long_or_repeated_lines")


def test_declines_with_named_reasons():
    assert run("short") == Declined("below_min_size")
    diff = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,3 @@\n" + "+ return nil\n context\n" * 40
    assert run(diff) == Declined("diff_shaped")
    assert run('{"a": "' + "x" * 1000 + '"}') == Declined("json_document")
    assert run("x" * 600 + marker("d" * 16)) == Declined("already_marked")
    long_once = "p" * 520 + "\n" + "q" * 10
    assert run(long_once) == Declined("marker_no_win")
    text = BANNER + "n" * 3000 + SUMMARY
    assert Linecap(LinecapSettings()).reduce(text, ctx(SessionMemory(expanded={cg_hash(text)}))) == Declined(
        "kept_verbatim_after_expand"
    )
    assert run(text, max_line_chars=0, collapse_duplicate_lines=False) == Declined("no_long_or_repeated_lines")


def test_opt_ins_restore_the_seed_behaviour():
    code = BANNER + "".join(f"def f{i}():\n    return None\n" for i in range(40)) + SUMMARY
    out = run(code, collapse_indented_duplicates=True)
    assert isinstance(out, Acted) and "    return None (x40)" in out.text.split("\n")
    record = '{"a": "' + "x" * 1000 + '"}'
    capped = run(record, cap_json_documents=True)
    assert isinstance(capped, Acted) and capped.stash == {cg_hash(record): record}
