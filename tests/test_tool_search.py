"""search_tools' ranking and its guards, over the real servers' and the GitHub-like tool definitions."""

from __future__ import annotations

import json
from pathlib import Path

import mcp_types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload_mcp.catalog.catalog import build_catalog
from offload_mcp.catalog.search import SearchRefused, ToolIndex, compile_bounded, stem, terms
from offload_mcp.tools import invoke, tool_search

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "catalog"


def github_tools() -> list[types.Tool]:
    return [types.Tool.model_validate(t) for t in json.loads((DATA / "github_like_tools.json").read_text())]


@pytest.fixture(scope="module")
def index() -> ToolIndex:
    return ToolIndex(github_tools())


def test_terms_split_case_and_punctuation_and_fold_synonyms():
    assert terms("listBranches") == terms("list_branches") == terms("list branches") == ["list", "branch"]
    assert terms("Remove the folder") == terms("delete a directory") == ["delet", "directory"]
    assert stem("repositories") == "repository" and stem("running") == "run" and stem("created") == stem("create")
    assert terms("the of and to") == []


def test_bm25_finds_the_tool_a_task_describes(index):
    assert [m.name for m in index.bm25("merge a pull request with squash", 3)][0] == "merge_pull_request"
    assert "get_job_logs" in [m.name for m in index.bm25("download the logs of a failed CI job", 3)]
    assert [m.name for m in index.bm25("get_rate_limit", 1)] == ["get_rate_limit"]


def test_bm25_ranking_is_deterministic_with_a_stable_tie_break():
    tools = [
        types.Tool(name=n, description="Delete a thing.", input_schema={"type": "object"})
        for n in ("zeta", "alpha", "mid")
    ]
    forward = ToolIndex(tools).bm25("delete thing", 5)
    backward = ToolIndex(list(reversed(tools))).bm25("delete thing", 5)
    assert [m.name for m in forward] == [m.name for m in backward] == ["alpha", "mid", "zeta"]
    assert forward[0].score == forward[1].score


def test_empty_and_stopword_queries_are_refused_clearly(index):
    for query in ("", "   ", "the and of", "?!.,;"):
        with pytest.raises(SearchRefused, match="no searchable words"):
            index.bm25(query, 5)


def test_pathological_queries_stay_fast_and_bounded(index):
    huge = "issue " * 20_000 + "x" * 100_000
    assert len(index.bm25(huge, 3)) == 3
    assert index.bm25("zzqqxx unmatched words", 5) == []
    assert index.bm25("日本語 のクエリ", 5) == []  # non-Latin words are terms too; nothing matches them here


@pytest.mark.parametrize(
    "pattern, why",
    [
        ("(a+)+$", "quantifier inside a repeated group"),
        ("(x*)*y", "quantifier inside a repeated group"),
        ("(.*a){20}", "quantifier inside a repeated group"),
        ("((ab|a)+c)*d", "quantifier inside a repeated group"),
        (r"(\w)\1", "backreference"),
        ("(", "not a valid regular expression"),
        ("(?:abc){e<=2}", "not a repeat count"),  # the regex module's fuzzy matching: not offered
        ("a" * 300, "at most 256"),
        ("", "empty"),
    ],
)
def test_risky_or_invalid_patterns_are_refused(pattern, why):
    with pytest.raises(SearchRefused, match=why):
        compile_bounded(pattern)


def test_regex_search_matches_names_first_and_counts_all(index):
    matches, total = index.regex("pull_request", 3, 1.0)
    assert total > 3 and len(matches) == 3
    assert all("pull_request" in m.name for m in matches)
    assert [m.name for m in index.regex("^get_me$", 5, 1.0)[0]] == ["get_me"]
    # an alternation that is exponential under Python's re stays fast here, and is not refused
    assert index.regex("(a|aa)*c", 5, 1.0)[1] > 0


def test_regex_search_is_bounded_in_time():
    big = ToolIndex(
        [types.Tool(name=f"tool_{i}", description="word " * 200, input_schema={"type": "object"}) for i in range(3000)]
    )
    with pytest.raises(SearchRefused, match="took longer than"):
        big.regex("word [a-z]+ zzz", 5, 0.001)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=60))
def test_any_query_text_gives_an_answer_or_a_clear_refusal(text):
    cat = build_catalog({"github": github_tools()[:20]})
    for arguments in ({"query": text}, {"pattern": text}):
        result = tool_search.answer(cat, arguments, default_limit=5, regex_timeout_s=0.2)
        body = result.content[0].text
        if result.is_error:
            assert body.startswith("search_tools: ")
        else:
            assert "matches" in json.loads(body)


def test_search_answer_is_deterministic_json_with_full_schemas():
    cat = build_catalog({"github": github_tools()})
    first = tool_search.answer(cat, {"query": "create an issue"}, default_limit=3, regex_timeout_s=0.2)
    again = tool_search.answer(
        build_catalog({"github": github_tools()}), {"query": "create an issue"}, default_limit=3, regex_timeout_s=0.2
    )
    assert first.content[0].text == again.content[0].text
    body = json.loads(first.content[0].text)
    top = body["matches"][0]
    assert top["name"] == "create_issue" and top["server"] == "github"
    assert top["inputSchema"] == cat.by_name["create_issue"].tool.input_schema
    assert "_meta" not in top and body["searched"] == {"tools": 91, "servers": ["github"]}
    assert "invoke_tool" in body["next"]


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({}, "give `query`"),
        ({"query": "a", "pattern": "b"}, "not both"),
        ({"query": 3}, "must be a string"),
        ({"query": "issue", "limit": 0}, "`limit` must be"),
        ({"query": "issue", "limit": True}, "`limit` must be"),
        ({"query": "issue", "top": 3}, "unknown argument(s) top"),
        ({"pattern": "(a+)+"}, "refused"),
    ],
)
def test_search_arguments_are_checked(arguments, message):
    result = tool_search.answer(
        build_catalog({"github": github_tools()}), arguments, default_limit=5, regex_timeout_s=0.2
    )
    assert result.is_error and message in result.content[0].text


def test_invoke_argument_problems_name_each_missing_unknown_and_mistyped_argument():
    schema = {
        "type": "object",
        "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "issue_number": {"type": "integer"}},
        "required": ["owner", "repo", "issue_number"],
    }
    problems = invoke.argument_problems(schema, {"owner": "o", "repository": "r", "issue_number": "7"})
    assert problems == [
        "missing required argument(s): repo",
        "unknown argument(s): repository (known: issue_number, owner, repo)",
        "issue_number: '7' is not of type 'integer'",
    ]
    assert invoke.argument_problems(schema, {"owner": "o", "repo": "r", "issue_number": 7}) == []
    open_schema = {**schema, "additionalProperties": True}
    assert invoke.argument_problems(open_schema, {"owner": "o", "repo": "r", "issue_number": 7, "extra": 1}) == []
    closed_empty = {"type": "object", "additionalProperties": False}
    assert invoke.argument_problems(closed_empty, {"x": 1}) == ["unknown argument(s): x (known: none)"]
    broken = {"type": "object", "properties": {"a": {"type": "no-such-type"}}}
    assert invoke.argument_problems(broken, {"a": 1}) == []  # the server judges its own broken schema
