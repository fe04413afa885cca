"""Recalls of a large body are read off the event loop, and in pieces: other calls keep their pace.

A recall's answer (a query's lowercase, counts and finds; a line range's line index) was computed on
the event loop. On a 60 MB body each `str.lower`, `str.count` or `str.find` holds the GIL for 37-44 ms,
so a query stood every other call still for ~100 ms. Now the answer is read in a worker thread and
those passes go a piece of ~1M chars at a time (tools/text_pieces.py), so the loop waits a piece.
"""

from __future__ import annotations

import re
import statistics
import time
from pathlib import Path

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import fixture_entry, proxy_session, text_of, write_config
from offload_mcp.tools import text_pieces
from test_hardening_load import report

TRM = re.compile(r"trm_[0-9a-f]{16}")
BIG = 40_000_000
QUERIES = 8

# Line breaks, a final-sigma context, a letter whose lowercase is longer, and plain letters.
ALPHABET = st.sampled_from(["\n", "Σ", "σ", "ς", "A", "a", "İ", " ", "b", "'"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(ALPHABET, max_size=60).map("".join),
    st.integers(1, 12),
    st.integers(0, 70),
    st.integers(0, 70),
    st.integers(1, 4),
)
def test_pieces_answer_what_one_call_answers(text: str, piece: int, start: int, length: int, needle_len: int) -> None:
    assert text_pieces.lower(text, piece) == text.lower()
    for needle in {text[start : start + needle_len], "a\n", "Σ", "ba"} - {""}:
        assert text_pieces.count(text, needle, piece=piece) == text.count(needle)
        assert text_pieces.count(text, needle, start, start + length, piece) == text.count(
            needle, start, start + length
        )
        assert text_pieces.find(text, needle, start, piece) == text.find(needle, start)


async def test_queries_on_a_40_mb_body_leave_other_calls_their_pace(tmp_path: Path) -> None:
    """One client, two tasks on one session (as a model's parallel tool calls): one pages a 40 MB result
    with queries, the other echoes. On the loop, each query held every echo for most of its own time."""
    config = write_config(tmp_path, {"fx": fixture_entry()}, {"reducers": {"pipeline": []}})
    async with proxy_session(["-c", str(config), "--ledger", str(tmp_path / "ledger.db")]) as s:
        stub = await s.call_tool("make_text", {"size": BIG})
        (trm_id,) = set(TRM.findall(text_of(stub)))
        first = await s.call_tool("recall_tool_result", {"mem_id": trm_id, "query": "line 1:"})
        assert not first.is_error and "1 match for" in text_of(first), text_of(first)[:300]

        queries: list[float] = []
        echoes: list[float] = []
        done = anyio.Event()

        async def page() -> None:
            for i in range(QUERIES):
                line = 100_000 + i * 50_000
                started = time.perf_counter()
                found = await s.call_tool("recall_tool_result", {"mem_id": trm_id, "query": f"line {line}:"})
                queries.append(time.perf_counter() - started)
                assert f"line {line}:" in text_of(found) and "1 match for" in text_of(found)
            done.set()

        async def echo() -> None:
            while not done.is_set():
                started = time.perf_counter()
                assert text_of(await s.call_tool("echo", {"text": "ping"})) == "ping"
                echoes.append(time.perf_counter() - started)
                await anyio.sleep(0.005)

        async with anyio.create_task_group() as tg:
            tg.start_soon(echo)
            tg.start_soon(page)

    query_s, echo_s = statistics.median(queries), statistics.median(echoes)
    report("recall_off_loop", query_ms=round(query_s * 1000, 1), echo_ms=round(echo_s * 1000, 1), echoes=len(echoes))
    # Measured here (median echo / median query): on the loop 76.8 / 41.6 ms, each echo queued behind the
    # queries; off it 13 / 44 ms, an echo waiting only for the GIL's switch interval (5 ms) a few times.
    assert len(echoes) >= QUERIES
    assert echo_s < query_s / 2, (echo_s, query_s)
