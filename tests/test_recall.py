"""recall_tool_result against a real ledger: exact paging, every style, every bad input."""

import re
import time

import mcp_types as t
import orjson
import pytest
from hypothesis import given
from hypothesis import settings as settings_
from hypothesis import strategies as st

from offload_mcp.config import OffloadSettings
from offload_mcp.session import SessionMemory
from offload_mcp.shaping import CallInfo, build_shaper
from offload_mcp.store import Ledger
from offload_mcp.tools import recall
from offload_mcp.tools.registry import ToolEnv

TEXT = "".join(f"line {i}: Ünïcode ✓ value={i}\r\n" if i % 7 else f"line {i}: needle here\n" for i in range(20_000))
ITEMS = {"items": [{"id": i, "name": f"item {i}", "price": i + 0.5} for i in range(2000)], "total": 2000}


def settings(**offload):
    return OffloadSettings.model_validate({"reducers": {"pipeline": []}, **offload})


@pytest.fixture
def env(tmp_path):
    s = settings()
    shaper = build_shaper(s, tmp_path / "ledger.db")
    return ToolEnv(settings=s, ledger=shaper.ledger, session_id="s1", session=SessionMemory()), shaper


def offload(shaper, result):
    _, rep = shaper.shape_with_report(CallInfo("srv", "tool", "tool", {}), result)
    assert rep.verdict == "offload"
    return rep.trm_id


async def call(env, **args):
    res = await recall.handle(args, env)
    text = res.content[0].text
    return res.is_error, text


def split(text):
    header, _, data = text.partition("\n")
    return header, data


async def test_paging_reassembles_the_body_exactly(env):
    env, shaper = env
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=TEXT)]))
    parts, args, pages = [], {"mem_id": trm}, 0
    while True:
        err, text = await call(env, **args)
        assert not err
        header, data = split(text)
        parts.append(data)
        pages += 1
        if "end of body" in header:
            break
        nxt = int(header.split("offset=")[1].rstrip(")]"))
        args = {"mem_id": trm, "offset": nxt, "max_chars": 50_000}
    assert "".join(parts) == TEXT
    assert pages > 10  # capped at recall.max_chars per answer


async def test_no_arguments_gives_the_start_capped_with_total_and_next(env):
    env, shaper = env
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=TEXT)]))
    err, text = await call(env, mem_id=trm)
    header, data = split(text)
    assert data == TEXT[:8000]
    assert f"of {len(TEXT):,}" in header and f'recall_tool_result(mem_id="{trm}", offset=8000)' in header


async def test_query_windows_counts_and_positions(env):
    env, shaper = env
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=TEXT)]))
    err, text = await call(env, mem_id=trm, query="NEEDLE")  # has a capital: exact case -> none
    assert not err and "0 matches" in text
    err, text = await call(env, mem_id=trm, query="needle")
    header, body = split(text)
    total = TEXT.count("needle")
    first = TEXT.find("needle")
    assert f"{total:,} matches" in header and f"at chars {first:,}" in header
    assert f"--- match at char {first:,} (line 1) ---" in body
    assert 'query="needle", offset=' in header
    resume = int(header.split("offset=")[1].rstrip(")]"))
    shown = int(header.split("showing matches 1–")[1].split(" ")[0])
    assert shown >= 10  # max_matches windows, and any further match that lies whole in the last of them
    err, text2 = await call(env, mem_id=trm, query="needle", offset=resume)
    assert f"showing matches {shown + 1}–" in text2 and not err


async def test_query_is_deterministic(env):
    env, shaper = env
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=TEXT)]))
    assert await call(env, mem_id=trm, query="value=77") == await call(env, mem_id=trm, query="value=77")


async def test_line_ranges(env):
    env, shaper = env
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=TEXT)]))
    lines = TEXT.split("\n")
    err, text = await call(env, mem_id=trm, lines="3-5")
    header, data = split(text)
    assert data == "\n".join(lines[2:5]) + "\n"
    assert 'lines="6-"' in header
    err, text = await call(env, mem_id=trm, lines="7")
    assert split(text)[1] == lines[6] + "\n"
    err, text = await call(env, mem_id=trm, lines="19999-")
    assert split(text)[1] == "\n".join(lines[19998:]) and "end of body" in text
    err, text = await call(env, mem_id=trm, lines="1-20000", max_chars=1000)
    header, data = split(text)
    assert TEXT.startswith(data) and data.endswith("\n") and len(data) <= 1000 and "capped" in header


async def test_json_path_into_text_json_and_structured_content(env):
    env, shaper = env
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=orjson.dumps(ITEMS).decode())]))
    err, text = await call(env, mem_id=trm, json_path="$.items[3].price")
    assert not err and split(text)[1] == "3.5" and "text block 1" in text
    err, text = await call(env, mem_id=trm, json_path="$.items[0:2].name")
    assert split(text)[1] == '$.items[0].name = "item 0"\n$.items[1].name = "item 1"'
    err, text = await call(env, mem_id=trm, json_path="$.items[?(@.id > 1997)]")
    assert split(text)[1].splitlines() == [
        '$.items[1998] = {"id":1998,"name":"item 1998","price":1998.5}',
        '$.items[1999] = {"id":1999,"name":"item 1999","price":1999.5}',
    ]
    err, text = await call(env, mem_id=trm, json_path="$.nothing")
    assert not err and "matched nothing" in text and "items" in text
    trm2 = offload(shaper, t.CallToolResult(content=[t.TextContent(text="x" * 200_000)], structured_content=ITEMS))
    err, text = await call(env, mem_id=trm2, json_path="$.total")
    assert split(text)[1] == "2000" and "structuredContent" in text


@pytest.mark.parametrize(
    "doc,example",
    [
        (
            {f"2020-01-{d:02d}T00:00:00-05:00": {"Close": 100 + d} for d in range(1, 29)},
            "$['2020-01-01T00:00:00-05:00']",
        ),
        ({"where": 1, "名前": {"a": 2}, "it's": 3}, "$['where']"),  # a parser word, not a plain name
        ({"where": [0] * 30, "rows": [1] * 30}, "$.rows[0:20]"),
    ],
    ids=["date-keyed", "no-plain-key", "plain-list"],
)
async def test_the_stubs_json_path_example_reads_back_as_it_stands(env, doc, example):
    """A map keyed by date has no plain-name key: its stub showed `json_path="$.key"`, which reads nothing.
    The example is now the first key, quoted as the recall tool reads it; copied as it stands, it answers."""
    env, shaper = env
    text = orjson.dumps(doc).decode() + " " * 100_000  # offloaded whatever the doc's size
    result = t.CallToolResult(content=[t.TextContent(text=text)])
    out, rep = shaper.shape_with_report(CallInfo("srv", "tool", "tool", {}), result)
    assert rep.verdict == "offload"
    stub = out.content[0].text
    assert f'json_path="{example}"' in stub, stub
    err, answer = await call(env, mem_id=rep.trm_id, json_path=example)
    assert not err and "matched nothing" not in answer, answer


async def _pages(env, **args) -> list[str]:
    """Every page of one answer, following each header's `next` offset to the end."""
    pages = []
    while True:
        _, text = await call(env, **args)
        header, data = split(text)
        pages.append(data)
        if "end of answer" in header:
            return pages
        args["offset"] = int(header.split("offset=")[1].rstrip(")]"))


async def test_json_path_answers_page_too(env):
    env, shaper = env
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=orjson.dumps(ITEMS).decode())]))
    assert orjson.loads("".join(await _pages(env, mem_id=trm, json_path="$.items"))) == ITEMS["items"]
    # Several matches: each page holds whole lines, one match each, and the pages join to the whole answer.
    # Over the first 400 items: each page is one evaluation in a worker process (the 2,000 names on
    # pages of 1,000 chars took ~60 of them, 53 s of the suite on a loaded machine).
    pages = await _pages(env, mem_id=trm, json_path="$.items[:400].name", max_chars=1000)
    assert len(pages) > 10 and all(p.endswith("\n") and len(p) <= 1000 for p in pages[:-1])
    assert "".join(pages).splitlines() == [f'$.items[{i}].name = "item {i}"' for i in range(400)]


@pytest.mark.parametrize(
    "args,says",
    [
        ({}, "mem_id is required"),
        ({"mem_id": "trm_nothex"}, "not a recall id"),
        ({"mem_id": "trm_0000000000000000"}, "not in the ledger"),
        ({"mem_id": "@", "offset": 1}, "not a recall id"),
        ({"offset": -1}, "offset must be >= 0"),
        ({"offset": 10**18}, "absurdly large"),
        ({"offset": 10**9}, "past the end"),
        ({"offset": True}, "whole number"),
        ({"offset": "ten"}, "whole number"),
        ({"max_chars": 0}, "max_chars must be >= 1"),
        ({"lines": "a-b"}, "not a line range"),
        ({"lines": "0-3"}, "start at 1"),
        ({"lines": "9-3"}, "before the start"),
        ({"lines": "999999"}, "past the end"),
        ({"lines": "1-2", "offset": 3}, "cannot be combined"),
        ({"query": "a", "lines": "1"}, "choose one style"),
        ({"query": ""}, "must not be empty"),
        ({"query": 5}, "must be a string"),
        ({"json_path": "$.[[["}, "not valid JSONPath"),
        ({"json_path": "$." + "a" * 600}, "at most 512"),
        ({"json_path": "$.a"}, "holds no JSON"),
        ({"bogus": 1}, "unknown argument(s) bogus"),
    ],
)
async def test_bad_input_is_an_error_that_says_what_is_valid(env, args, says):
    env, shaper = env
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=TEXT)]))
    args = {"mem_id": trm, **args} if "mem_id" not in args and args != {} else args
    err, text = await call(env, **args)
    assert err, text
    assert says in text


async def test_evicted_id_says_when_and_why(tmp_path):
    s = settings(ledger={"max_age_days": 1})
    shaper = build_shaper(s, tmp_path / "l.db")
    env = ToolEnv(settings=s, ledger=shaper.ledger, session_id="s", session=SessionMemory())
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=TEXT)]))
    shaper.ledger.evict(now=time.time() + 3 * 86400)
    err, text = await call(env, mem_id=trm)
    assert err and "was evicted" in text and "max_age_days=1" in text and "UTC" in text


async def test_evicted_after_a_cached_read_still_says_evicted(tmp_path):
    s = settings(ledger={"max_age_days": 1})
    shaper = build_shaper(s, tmp_path / "l.db")
    env = ToolEnv(settings=s, ledger=shaper.ledger, session_id="s", session=SessionMemory())
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=TEXT)]))
    assert not (await call(env, mem_id=trm))[0]
    shaper.ledger.evict(now=time.time() + 3 * 86400)
    err, text = await call(env, mem_id=trm)
    assert err and "was evicted" in text


async def test_window_mode_refuses_json_path_and_structural_mode_refuses_windows(tmp_path):
    for mode, args, says in (
        ("window", {"json_path": "$.a"}, "recall.mode is `window`"),
        ("structural", {"query": "a"}, "recall.mode is `structural`"),
    ):
        s = settings(recall={"mode": mode})
        shaper = build_shaper(s, tmp_path / f"{mode}.db")
        env = ToolEnv(settings=s, ledger=shaper.ledger, session_id="s", session=SessionMemory())
        trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=orjson.dumps(ITEMS).decode())]))
        err, text = await call(env, mem_id=trm, **args)
        assert err and says in text


async def test_slow_json_path_is_bounded_in_time(env, monkeypatch):
    env, shaper = env
    deep = {"level": [{"a": [{"b": list(range(200))} for _ in range(200)]} for _ in range(20)]}
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=orjson.dumps(deep).decode())]))
    monkeypatch.setattr(recall, "_JSON_PATH_TIME_LIMIT_S", 0.01)
    started = time.perf_counter()
    err, text = await call(env, mem_id=trm, json_path="$..*")
    assert err and "took longer than" in text
    assert time.perf_counter() - started < 2


async def test_no_ledger_is_an_error(tmp_path):
    env = ToolEnv(settings=settings(), ledger=None, session_id="s", session=SessionMemory())
    err, text = await call(env, mem_id="trm_0123456789abcdef")
    assert err and "no ledger" in text


async def test_recall_events_are_recorded(env):
    env, shaper = env
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=TEXT)]))
    await call(env, mem_id=trm, query="needle")
    await call(env, mem_id=trm, offset=-5)
    events = [(e["verdict"], e["ref_id"], e["detail"].get("style")) for e in shaper.ledger.events(kinds=["recall"])]
    assert events == [("ok", trm, "query"), ("error", trm, None)]


async def test_recall_from_a_new_ledger_handle(tmp_path):
    s = settings()
    shaper = build_shaper(s, tmp_path / "l.db")
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=TEXT)]))
    env = ToolEnv(
        settings=s, ledger=Ledger.open(s.ledger, tmp_path / "l.db"), session_id="other", session=SessionMemory()
    )
    err, text = await call(env, mem_id=trm, lines="1-2")
    assert not err and split(text)[1] == TEXT.split("\n", 2)[0] + "\n" + TEXT.split("\n", 2)[1] + "\n"


async def test_mem_id_with_surrounding_whitespace_is_found_as_expand_finds_markers(env):
    env, shaper = env
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=TEXT)]))
    for padded in (f"{trm}\n", f"  {trm}\t"):
        err, text = await call(env, mem_id=padded, lines="1")
        assert not err and split(text)[1] == TEXT.split("\n", 1)[0] + "\n", text[:200]
    err, text = await call(env, mem_id=f"{trm}\nx")
    assert err and "not a recall id" in text
    assert [e["ref_id"] for e in shaper.ledger.events(kinds=["recall"])][:2] == [trm, trm]


@pytest.mark.parametrize("bad,kind", [(12345, "int"), (["trm_0123456789abcdef"], "list"), ({"id": 1}, "dict")])
async def test_a_mem_id_that_is_not_a_string_says_what_it_must_be(env, bad, kind):
    env, _ = env
    err, text = await call(env, mem_id=bad)
    assert (
        err
        and text == f"recall_tool_result: mem_id must be a string like trm_0123456789abcdef (from the stub); got {kind}"
    )


@pytest.mark.parametrize(
    "args,says",
    [
        ({"max_chars": 1e308}, "max_chars 1e+308 is absurdly large"),
        ({"offset": 10**400}, "offset 1000000000"),
        ({"offset": -1e308}, "offset must be >= 0, got -1e+308"),
    ],
)
async def test_huge_numbers_are_clipped_when_echoed(env, args, says):
    env, shaper = env
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=TEXT)]))
    err, text = await call(env, mem_id=trm, **args)
    assert err and says in text and len(text) < 250, text


async def test_a_json_path_regex_that_runs_too_long_is_named_as_the_cause(env, monkeypatch):
    env, shaper = env
    doc = {"list": [{"n": "a" * 30 + "b"} for _ in range(500)], "pad": "x" * 40_000}
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=orjson.dumps(doc).decode())]))
    monkeypatch.setattr(recall, "_JSON_PATH_TIME_LIMIT_S", 1.0)
    err, text = await call(env, mem_id=trm, json_path="$.list[?(@.n =~ '(a|a)*$')]")
    assert err and "took longer than 1s" in text and "regex filter (=~)" in text and "`..`" not in text, text
    monkeypatch.setattr(recall, "_JSON_PATH_TIME_LIMIT_S", 0.01)  # whatever the path: the advice follows its text
    err, text = await call(env, mem_id=trm, json_path="$..*")
    assert err and "avoid `..` on large documents" in text and "regex" not in text, text
    err, text = await call(env, mem_id=trm, json_path="$.list[0:400].n")
    assert err and "no `..` or regex filter" in text and "try again" in text and "avoid" not in text, text


async def test_json_nested_deeper_than_the_parser_takes_says_so(env):
    env, shaper = env
    deep = '{"a":' * 2000 + "1" + "}" * 2000 + " " * 40_000
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=deep)]))
    err, text = await call(env, mem_id=trm, json_path="$.a")
    assert err and text == (
        "recall_tool_result: text block 1 is JSON nested too deeply to query by path "
        "(over 1,024 levels); use query or lines"
    ), text


async def test_a_query_found_only_in_structured_content_points_to_json_path(env):
    env, shaper = env
    structured = {"meta": {"page": 1}, "items": [{"id": i, "name": f"order-{4800 + i}"} for i in range(40)]}
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text="x" * 200_000)], structured_content=structured))
    err, text = await call(env, mem_id=trm, query="ORDER-4821")  # a capital: exact case, as in the text
    assert not err and text == f"[{trm}: 0 matches for 'ORDER-4821' (0 in all) in 200,000 chars]\n"
    err, text = await call(env, mem_id=trm, query="order-4821")
    assert not err and text == (
        f"[{trm}: 0 matches for 'order-4821' (0 in all) in 200,000 chars of text; it occurs 1 time in the "
        f'structuredContent, which query does not search: recall_tool_result(mem_id="{trm}", json_path="$.items[21]")]\n'
    )
    err, text = await call(env, mem_id=trm, json_path="$.items[21]")
    assert not err and "order-4821" in split(text)[1]
    err, text = await call(env, mem_id=trm, query='"page":1')  # across keys and values: no one place to point to
    assert not err and text.endswith(
        f'structuredContent, which query does not search: recall_tool_result(mem_id="{trm}", json_path="$")]\n'
    )
    keyword = offload(
        shaper,
        t.CallToolResult(
            content=[t.TextContent(text="y" * 200_000)], structured_content={"where": {"k": "order-4821"}}
        ),
    )
    err, text = await call(env, mem_id=keyword, query="order-4821")  # $.where is not valid JSONPath
    assert not err and text.endswith(f'recall_tool_result(mem_id="{keyword}", json_path="$")]\n')
    deep = {"k" + "e" * 600: {"k": "order-4821"}}  # a path through it is over json_path's 512 chars
    long_key = offload(shaper, t.CallToolResult(content=[t.TextContent(text="z" * 200_000)], structured_content=deep))
    err, text = await call(env, mem_id=long_key, query="order-4821")
    assert not err and text.endswith(f'recall_tool_result(mem_id="{long_key}", json_path="$")]\n'), text[-200:]


MADE = "".join(f"line {i}: " + "x" * 60 + "\n" for i in range(5000))[:300_000]  # the fixture server's make_text
PIECE = re.compile(r"--- match at char ([\d,]+) \(line [\d,]+\) ---\n")


async def test_a_small_max_chars_centres_the_query_window_on_the_match(env):
    env, shaper = env
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=MADE)]))
    err, text = await call(env, mem_id=trm, query="line 17:", max_chars=200)
    header, data = split(text)
    p = MADE.find("line 17:")
    label = f"--- match at char {p:,} (line 18) ---\n"
    room = 200 - len(label) - len("line 17:") - 1
    before, after = room // 2, room - room // 2
    assert not err and data == label + MADE[p - before : p + 8 + after] + "\n" and len(data) == 200
    whole = f'recall_tool_result(mem_id="{trm}", offset={p - 300}, max_chars=608)'
    assert header == (
        f"[{trm}: 1 match for 'line 17:' in 300,000 chars; showing matches 1–1 at chars {p:,}; ±300 chars each, "
        f"this one cut to {before} before and {after} after to fit 200 chars (whole window: {whole}); no more matches]"
    )
    err, text = await call(env, mem_id=trm, offset=p - 300, max_chars=608)
    assert split(text)[1] == MADE[p - 300 : p + 308]


@pytest.mark.parametrize("max_chars", [1, 39, 40, 45, 46, 120, 200, 399, 650, 700, 1400, 8000])
@pytest.mark.parametrize(
    "query", ["line 17:", "line 0:", "line 4181: xxxxxx", "xxxxxxxxxxxxxxxx\nline 2", "line 1", "xx", "8"]
)
async def test_every_match_a_query_header_names_is_in_the_body(env, max_chars, query):
    env, shaper = env
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=MADE)]))
    err, text = await call(env, mem_id=trm, query=query, max_chars=max_chars)
    if err:  # not even a label and one char of the match fit
        label = f"--- match at char {MADE.find(query):,} (line {MADE.count(chr(10), 0, MADE.find(query)) + 1:,}) ---\n"
        assert max_chars < len(label) + 2 and "too small to show a match" in text, text
        return
    header, data = split(text)
    assert len(data) <= max_chars
    listing = header.split(" at chars ")[1].split(";")[0]
    listed = [int(n.replace(",", "")) for n in listing.split(" and ")[0].split(", ")]
    if " more inside the last window" in listing:  # counted past max_matches, not listed
        extra = int(listing.split(" and ")[1].split(" ")[0].replace(",", ""))
        listed += [m.start() for m in re.finditer(re.escape(query), MADE) if m.start() > listed[-1]][:extra]
    labels = [int(n.replace(",", "")) for n in PIECE.findall(data)]
    assert labels[0] == listed[0] and set(labels) <= set(listed), text
    pieces = PIECE.split(data)[2::2]
    shown = header.split("showing matches ")[1].split(" ")[0]
    assert ("no more matches" in header) == (shown.endswith(f"–{MADE.count(query)}")), header
    if "this one cut to the first" in header:  # only a match longer than max_chars, and then its start
        n = int(header.split("this one cut to the first ")[1].split(" ")[0])
        assert listed == [MADE.find(query)] and pieces == [query[:n] + "\n"] and n < len(query)
        return
    spans = []  # where each labelled piece lies in the body: it starts at or before its match
    for first, piece in zip(labels, pieces, strict=True):
        lo = MADE.find(piece[:-1], max(0, first - 300))
        assert 0 <= lo <= first and piece.endswith("\n")
        spans.append((lo, lo + len(piece) - 1))
    for p in listed:  # each match, whole and in place, under one label
        assert MADE[p : p + len(query)] == query and any(lo <= p and p + len(query) <= hi for lo, hi in spans)
    # and each match shown whole is listed: `next` would show it a second time (it did, in a shrunk window)
    every = [m.start() for m in re.finditer(re.escape(query), MADE)]
    assert [p for p in every if any(lo <= p and p + len(query) <= hi for lo, hi in spans)] == listed, text


async def test_a_query_copied_from_a_colour_logs_stub_names_the_lines_that_hold_it(env):
    # The stub reads a colourised log without its escapes; the stored text keeps them, so the index's
    # `FAILED tests/...` has a colour code between its two words there and a plain query found nothing.
    from offload_mcp.commands.demo_workspace import run_tests_text

    e, shaper = env
    log = run_tests_text()
    mem_id = offload(shaper, t.CallToolResult(content=[t.TextContent(text=log)]))
    err, text = await call(e, mem_id=mem_id, query="FAILED tests/billing")
    assert not err and "0 matches for 'FAILED tests/billing'" in text
    (line,) = re.findall(r'lines="(\d+)-\1"', text)
    assert "occurs 1 time, on line " in text and "terminal colour codes" in text
    err, shown = await call(e, mem_id=mem_id, lines=f"{line}-{line}")
    assert not err and split(shown)[1] == log.split("\n")[int(line) - 1] + "\n"
    assert "\x1b[31mFAILED\x1b[0m tests/billing/test_billing_exports.py::test_invoice_total_rounding" in shown
    err, text = await call(e, mem_id=mem_id, query="no such text anywhere")
    assert not err and "terminal colour codes" not in text  # only a query the plain view holds is pointed at


KEYS = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6) | st.sampled_from(
    ["where", "wherenot", "true", "false", "null", "a b", "x.y", "it's", "a\\b", "0", "", "*", "..", "@", "$"]
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)


@settings_(max_examples=150, deadline=None)
@given(doc=st.dictionaries(KEYS, JSON_VALUES, min_size=1, max_size=4))
def test_each_match_is_shown_at_a_path_that_reads_back_to_it_alone(doc):
    """A match's shown path, fed back as json_path, finds that value and nothing else: quoted keys, the
    parser's own words (`where`, `null`...) and digits stay keys."""
    from jsonpath_ng.ext import parse

    from offload_mcp.tools.jsonpath_worker import match_path

    for found in parse("$..*").find(doc):
        shown = match_path(found.full_path)
        assert [m.value for m in parse(shown).find(doc)] == [found.value], shown


async def test_the_decoded_bodies_kept_are_bounded_in_size_not_only_in_count(env, monkeypatch):
    """Four 60 MB bodies, each with its lowercase and line index, took the process from 72 to 737 MB: the
    bodies kept hold at most recall._CACHE_CHARS of text together, the most recent one whatever its size."""
    env, shaper = env
    monkeypatch.setattr(recall, "_CACHE", type(recall._CACHE)())
    monkeypatch.setattr(recall, "_CACHE_CHARS", 2 * len(TEXT) + 10, raising=False)
    ids = [offload(shaper, t.CallToolResult(content=[t.TextContent(text=f"{k}\n{TEXT}")])) for k in range(3)]
    for trm in ids:
        err, text = await call(env, mem_id=trm, query="needle")
        assert not err and "matches for 'needle'" in text
    assert [key[1] for key in recall._CACHE] == ids[1:]  # the oldest went: three would pass the budget
    monkeypatch.setattr(recall, "_CACHE_CHARS", 10)
    err, _ = await call(env, mem_id=ids[0], lines="1-2")
    assert not err and [key[1] for key in recall._CACHE] == ids[:1]  # alone over the budget, still kept


async def test_a_json_path_that_matches_nothing_lists_the_top_level_keys_clipped(env):
    """The answer names the top-level keys to look under; each is clipped as an echo is, so a document of
    20 keys of 50K chars gave a 1 MB one-line answer, where a recall answer must stay inline."""
    env, shaper = env
    doc = {f"k{i}-" + "x" * 50_000: i for i in range(30)} | {"items": [1, 2]}
    trm = offload(shaper, t.CallToolResult(content=[t.TextContent(text=orjson.dumps(doc).decode())]))
    err, text = await call(env, mem_id=trm, json_path="$.nope")
    assert not err and "matched nothing" in text and len(text) < 4_000, len(text)
    assert "'k0-xxxx" in text and "… (50,005 chars)" in text  # the repr of the 50,003-char key, clipped
    err, text = await call(
        env,
        mem_id=offload(shaper, t.CallToolResult(content=[t.TextContent(text=orjson.dumps(ITEMS).decode())])),
        json_path="$.nope",
    )
    assert "top level: ['items', 'total']" in text  # short keys as before
