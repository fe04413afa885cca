"""The shaper: reducers -> policy -> one ledger commit -> the bytes the client gets."""

import base64
import logging
import sqlite3

import mcp_types as t
import orjson
import pytest

from offload_mcp.config import OffloadSettings
from offload_mcp.shaping import CallInfo, ResultShaper, StubPricer, build_shaper, dump_result
from offload_mcp.store import Ledger

BIG = "".join(f"row {i}: value={i * 7} status=ok\n" for i in range(6000))  # ~170K chars, over the client limit
FITS = BIG[:90_000]
"""Offloaded, yet within the client limit: when the ledger fails it passes through whole (a larger one is cut)."""
STATUS = "\n".join(f"line {i} of status output with some words" for i in range(60))
CALL = CallInfo("git", "git_log", "git_log", {"max_count": 3000}, session_id="s1")


def settings(**offload):
    return OffloadSettings.model_validate(offload)


def no_reducers(**offload):
    return settings(reducers={"pipeline": []}, **offload)


def result(*texts, **kw):
    return t.CallToolResult(content=[t.TextContent(text=x) for x in texts], **kw)


@pytest.fixture
def shaper(tmp_path):
    return build_shaper(no_reducers(), tmp_path / "ledger.db")


def test_offload_returns_a_stub_only_after_the_original_is_committed(shaper):
    original = result(BIG)
    out, rep = shaper.shape_with_report(CALL, original)
    assert (rep.verdict, rep.reason) == ("offload", "over_client_limit")
    assert rep.trm_id and rep.trm_id in out.content[0].text
    stub, link = out.content  # the stub, and the link a host reads the whole body by (upstream/stored_resources.py)
    assert rep.chars_out == len(stub.text) < 1000
    assert (link.type, link.uri, link.name, link.mime_type, link.size) == (
        "resource_link",
        f"offload://result/{rep.trm_id}",
        rep.trm_id,
        "text/plain",
        len(BIG.encode()),
    )
    assert shaper.ledger.get_body(rep.trm_id) == dump_result(original)
    info = shaper.ledger.body_info(rep.trm_id)
    assert (info.server, info.tool, info.arguments, info.session_id, info.chars) == (
        "git",
        "git_log",
        {"max_count": 3000},
        "s1",
        len(BIG),
    )
    (event,) = list(shaper.ledger.events(kinds=["decision"]))
    assert (event["verdict"], event["reason"], event["ref_id"]) == ("offload", "over_client_limit", rep.trm_id)
    assert event["detail"]["decision"]["gate"]["fire"] is True


def test_a_stub_without_its_resource_link_when_turned_off(tmp_path):
    out, rep = build_shaper(no_reducers(policy={"resource_link": False}), tmp_path / "l.db").shape_with_report(
        CALL, result(BIG)
    )
    assert rep.verdict == "offload" and [b.type for b in out.content] == ["text"]


def test_gate_fires_between_prefilter_and_client_limit(shaper):
    out, rep = shaper.shape_with_report(CALL, result(BIG[:80_000]))
    assert (rep.verdict, rep.reason) == ("offload", "gate_fired")
    assert rep.priced_terms["net_saving_usd"] > 0


def test_small_result_passes_through_as_the_same_object(shaper):
    original = result("hello")
    out, rep = shaper.shape_with_report(CALL, original)
    assert out is original and (rep.verdict, rep.reason) == ("keep", "small")
    assert [e["reason"] for e in shaper.ledger.events()] == ["small"]


def test_same_result_same_bytes_across_shapers(tmp_path):
    a = build_shaper(no_reducers(), tmp_path / "a.db").shape(CALL, result(BIG))
    b = build_shaper(no_reducers(), tmp_path / "b.db").shape(CALL, result(BIG))
    assert orjson.dumps(dump_result(a)) == orjson.dumps(dump_result(b))


def test_result_the_reducers_bring_under_the_bound_stores_nothing(tmp_path):
    """Over the client bound, so prepared for storing at once, but its repeats fold under the bound:
    the reducers run, the result is reduced, and no body is committed."""
    shaper = build_shaper(settings(), tmp_path / "l.db")
    noisy = "\n".join(["same warning line about the cache"] * 40_000)
    out, rep = shaper.shape_with_report(CALL, result(noisy))
    assert rep.verdict == "reduce" and rep.trm_id is None
    assert "offload_decided_first" not in {e.reason for e in rep.reducer_events}
    assert shaper.ledger.counts()["bodies"] == 0 and len(out.content[0].text) < 100_000


def test_multimodal_result_is_kept_and_image_untouched(shaper):
    png = base64.b64encode(b"\x89PNG fake bytes").decode()
    original = t.CallToolResult(content=[t.TextContent(text=BIG), t.ImageContent(data=png, mime_type="image/png")])
    out, rep = shaper.shape_with_report(CALL, original)
    assert (rep.verdict, rep.reason) == ("keep", "multimodal")
    assert out is original


def test_blob_resource_counts_as_multimodal(shaper):
    blob = t.EmbeddedResource(
        resource=t.BlobResourceContents(uri="file:///x.bin", blob="AAAA", mime_type="application/octet-stream")
    )
    out, rep = shaper.shape_with_report(CALL, t.CallToolResult(content=[t.TextContent(text=BIG), blob]))
    assert rep.reason == "multimodal"


def test_own_tool_output_is_never_reduced_or_offloaded(tmp_path):
    shaper = build_shaper(settings(), tmp_path / "l.db")
    own = CallInfo("offload-mcp", "recall_tool_result", "recall_tool_result", {})
    original = result(BIG)
    out, rep = shaper.shape_with_report(own, original)
    assert out is original and rep.reason == "own_tool" and rep.reducer_events == []


def test_policy_disabled_keeps_everything(tmp_path):
    shaper = build_shaper(no_reducers(policy={"enabled": False}), tmp_path / "l.db")
    original = result(BIG)
    out, rep = shaper.shape_with_report(CALL, original)
    assert out is original and rep.reason == "disabled"


def test_observe_mode_records_what_would_have_happened(tmp_path):
    shaper = build_shaper(no_reducers(mode="observe"), tmp_path / "l.db")
    original = result(BIG)
    out, rep = shaper.shape_with_report(CALL, original)
    assert out is original
    assert (rep.verdict, rep.would_be, rep.reason) == ("keep", "offload", "over_client_limit")
    assert rep.would_chars_out < 1000
    assert shaper.ledger.counts()["bodies"] == 0
    (event,) = list(shaper.ledger.events())
    assert event["verdict"] == "offload" and event["detail"]["mode"] == "observe" and event["chars_out"] == len(BIG)


def test_reduced_result_commits_its_stash_first(tmp_path):
    shaper = build_shaper(settings(), tmp_path / "l.db")
    first, _ = shaper.shape_with_report(CALL, result(STATUS))
    second, rep = shaper.shape_with_report(CALL, result(STATUS))
    assert first.content[0].text == STATUS
    assert rep.verdict == "reduce" and rep.stash_hashes
    assert f"<<cg:{rep.stash_hashes[0]}>>" in second.content[0].text
    assert shaper.ledger.get_stash(rep.stash_hashes[0]) == STATUS


def test_offloaded_body_is_the_original_not_the_reduction(tmp_path):
    long_lines = "".join(
        f"{i:06d} " + "abcdefghij" * 100 + "\n" for i in range(200)
    )  # 1,008-char lines: linecap cuts them
    shaper = build_shaper(settings(reducers={"pipeline": ["linecap"]}), tmp_path / "l.db")
    original = result(long_lines)
    out, rep = shaper.shape_with_report(CALL, original)
    assert any(e.acted for e in rep.reducer_events)
    assert rep.verdict == "offload" and rep.decision.chars < len(long_lines)
    assert shaper.ledger.get_body(rep.trm_id)["content"][0]["text"] == long_lines
    assert shaper.ledger.counts()["stash"] == 0  # no marker was shown, so no cut needs storing


def test_locked_ledger_passes_the_result_through_and_names_the_cause(tmp_path, caplog):
    shaper = build_shaper(no_reducers(ledger={"busy_timeout_s": 0.1}), tmp_path / "l.db")
    blocker = sqlite3.connect(shaper.ledger.path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    original = result(FITS)
    with caplog.at_level(logging.WARNING):
        out, rep = shaper.shape_with_report(CALL, original)
    blocker.execute("ROLLBACK")
    assert out is original
    assert (rep.verdict, rep.reason, rep.trm_id) == ("keep", "ledger_error", None)
    assert "locked" in rep.warning and "locked" in caplog.text and "unmodified" in caplog.text
    assert shaper.ledger.counts()["bodies"] == 0


def test_full_disk_passes_the_result_through(shaper):
    shaper.shape(CALL, result("warm up"))
    shaper.ledger.sqlite.cap_file_size(0)
    original = result(FITS)
    out, rep = shaper.shape_with_report(CALL, original)
    assert out is original and rep.reason == "ledger_error" and "full" in rep.warning


def test_failed_commit_leaves_no_dedup_history(tmp_path):
    shaper = build_shaper(settings(ledger={"busy_timeout_s": 0.1}), tmp_path / "l.db")
    shaper.shape(CALL, result(STATUS))  # seen once: history now has it
    blocker = sqlite3.connect(shaper.ledger.path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    out, rep = shaper.shape_with_report(CALL, result(STATUS))  # dedup would act, but the stash cannot be stored
    blocker.execute("ROLLBACK")
    assert out.content[0].text == STATUS and rep.reason == "ledger_error"
    other = CallInfo("git", "git_log", "git_log", {}, session_id="fresh")
    blocker.execute("BEGIN IMMEDIATE")
    shaper.shape(other, result(STATUS))  # first sight in a new session fails to record its event only
    blocker.execute("ROLLBACK")
    out, rep = shaper.shape_with_report(other, result(STATUS))
    assert rep.verdict == "reduce"  # the kept first result was seen by the model, so dedup applies


def test_no_ledger_means_no_stub(tmp_path):
    shaper = ResultShaper(no_reducers(), None)
    original = result(FITS)
    out, rep = shaper.shape_with_report(CALL, original)
    assert out is original and rep.reason == "no_ledger"


def test_unopenable_ledger_gives_a_pass_through_shaper(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with caplog.at_level(logging.WARNING):
        shaper = build_shaper(no_reducers(), blocker / "x" / "ledger.db")
    assert shaper.ledger is None and "cannot create ledger" in caplog.text
    original = result(FITS)
    assert shaper.shape(CALL, original) is original


SCHEMA = {"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]}


def _sent(out) -> int:
    body = dump_result(out)
    texts = sum(len(b.get("text", "")) for b in body.get("content", []))
    return (
        texts
        + len(orjson.dumps(body.get("structuredContent")))
        * ("structuredContent" in body and body["structuredContent"] is not None)
        + (len(orjson.dumps(body["_meta"])) if body.get("_meta") is not None else 0)
    )


def test_output_schema_tool_gets_the_stub_object_in_structured_content(shaper):
    # Issue 11: structuredContent used to pass through (or shrink silently); now both channels carry the stub.
    call = CallInfo("fs", "read_text_file", "read_text_file", {}, output_schema=SCHEMA)
    original = result(BIG, structured_content={"content": BIG})
    out, rep = shaper.shape_with_report(call, original)
    assert rep.verdict == "offload" and rep.structured == "stub"
    assert out.structured_content == {"offloaded_result": {"mem_id": rep.trm_id, "summary": out.content[0].text}}
    assert rep.chars_in == len(BIG) + len(orjson.dumps({"content": BIG}))
    assert rep.chars_out == _sent(out) < 4_000
    assert shaper.ledger.get_body(rep.trm_id)["structuredContent"] == {"content": BIG}


def test_strict_output_schema_still_gets_the_stub_never_the_whole_result(shaper):
    schema = {"type": "object", "properties": {"content": {"type": "string", "minLength": 100000}}}
    call = CallInfo("fs", "read_text_file", "read_text_file", {}, output_schema=schema)
    out, rep = shaper.shape_with_report(call, result(BIG, structured_content={"content": BIG}))
    assert rep.verdict == "offload" and out.structured_content["offloaded_result"]["mem_id"] == rep.trm_id


def test_structured_content_becomes_the_stub_when_no_schema(shaper):
    out, rep = shaper.shape_with_report(CALL, result(BIG, structured_content={"content": BIG}))
    assert out.structured_content == {"offloaded_result": {"mem_id": rep.trm_id, "summary": out.content[0].text}}


def test_big_structured_content_beside_small_text_is_offloaded(shaper):
    # The text says little; the data is in structuredContent, which Claude Code shows its model.
    graph = {"entities": [{"name": f"e{i}", "observations": ["x" * 40]} for i in range(3000)]}
    out, rep = shaper.shape_with_report(CALL, result("3000 entities", structured_content=graph))
    assert (rep.verdict, rep.reason) == ("offload", "over_client_limit")
    assert (
        "3,000" in out.structured_content["offloaded_result"]["summary"]
        or "array[3000]" in out.structured_content["offloaded_result"]["summary"]
    )
    assert rep.chars_out == _sent(out) <= shaper.settings.policy.client_max_result_chars


def test_two_channels_that_fit_apart_but_not_together_are_bounded(tmp_path):
    shaper = build_shaper(
        no_reducers(
            policy={"small_threshold_chars": 1000, "large_threshold_chars": 50_000, "client_max_result_chars": 60_000}
        ),
        tmp_path / "l.db",
    )
    text = "".join(f"word {i} " for i in range(6000))[:40_000]
    other = {"rows": [f"r{i}" for i in range(8000)]}  # ~50K of JSON that is not the text
    out, rep = shaper.shape_with_report(CALL, result(text, structured_content=other))
    assert rep.verdict == "offload" and rep.chars_out == _sent(out) <= 60_000
    # The same data in both channels: dropping the repeat is enough, nothing is offloaded.
    out, rep = shaper.shape_with_report(CALL, result(text, structured_content={"content": text}))
    assert (rep.verdict, rep.structured) == ("keep", "dropped_duplicate") and out.structured_content is None
    assert out.content[0].text == text and rep.chars_out == len(text)


def test_huge_meta_does_not_ride_along_with_a_stub(shaper):
    out, rep = shaper.shape_with_report(CALL, result(BIG, _meta={"trace": "t" * 10_000}))
    assert rep.verdict == "offload" and out.meta is None and rep.chars_out == _sent(out)
    assert shaper.ledger.get_body(rep.trm_id)["_meta"] == {"trace": "t" * 10_000}


def test_error_results_keep_their_flag(shaper):
    out, rep = shaper.shape_with_report(CALL, result(BIG, is_error=True))
    assert rep.verdict == "offload" and out.is_error is True


def test_session_memory_is_per_session(shaper):
    assert shaper.session_memory("a") is shaper.session_memory("a")
    assert shaper.session_memory("a") is not shaper.session_memory("b")


def test_ledger_survives_reopen(tmp_path):
    path = tmp_path / "l.db"
    _, rep = build_shaper(no_reducers(), path).shape_with_report(CALL, result(BIG))
    assert Ledger.open(None, path).get_body(rep.trm_id)["content"][0]["text"] == BIG


READ_ONLY_SCRIPT = """
import logging, sys
import mcp_types as t
from offload_mcp.config import OffloadSettings
from offload_mcp.shaping import CallInfo, build_shaper
logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
shaper = build_shaper(OffloadSettings.model_validate({"reducers": {"pipeline": []}}), sys.argv[1])
original = t.CallToolResult(content=[t.TextContent(text="row\\n" * 20_000)])
out, rep = shaper.shape_with_report(CallInfo("git", "git_log", "git_log", {}), original)
print(out is original, rep.verdict, rep.reason, sep="|")
"""


@pytest.mark.parametrize("what", ["file", "directory"])
def test_read_only_ledger_passes_the_result_through_with_a_warning(tmp_path, what):
    import os
    import sys

    from support.processes import run_unprivileged

    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "ledger.db"
    Ledger.open(None, path).close()
    if what == "file":  # the directory stays writable: sqlite opens the file read-only, every commit fails
        os.chmod(path, 0o444)
        os.chmod(folder, 0o777)
    else:  # nothing in the directory can be created: the WAL file cannot be opened at all
        os.chmod(folder, 0o555)
    os.chmod(tmp_path, 0o755)
    try:
        done = run_unprivileged([sys.executable, "-c", READ_ONLY_SCRIPT, str(path)])
    finally:
        os.chmod(folder, 0o755)
    assert done.returncode == 0, done.stderr
    expected = "ledger_error" if what == "file" else "no_ledger"
    assert done.stdout.strip() == f"True|keep|{expected}", done.stderr
    assert str(path) in done.stderr
    assert "read-only" in done.stderr or "readonly" in done.stderr or "unable to open" in done.stderr, done.stderr
    assert "unmodified" in done.stderr


# collapse is the fallback for what nothing more specific handled; offload is more specific.
GIT_LOG = "".join(
    f"commit {i:040x}\nAuthor: Dev {i % 7} <dev{i % 7}@example.com>\nDate:   2026-01-{i % 28 + 1:02d}\n\n    change number {i}\n\n"
    for i in range(6000)
)


def test_offload_wins_over_collapse_for_a_huge_output(tmp_path):
    shaper = build_shaper(settings(), tmp_path / "ledger.db")
    original = result(GIT_LOG)
    out, rep = shaper.shape_with_report(CALL, original)
    assert (rep.verdict, rep.reason) == ("offload", "over_client_limit")
    assert rep.trm_id in out.content[0].text and "<<cg:" not in out.content[0].text
    assert shaper.ledger.get_body(rep.trm_id) == dump_result(original)


def test_collapse_still_caps_what_the_policy_keeps_inline(tmp_path):
    # An unpriced model cannot prove a saving, and 70K chars is under the client limit: the gate declines,
    # so collapse's head/tail window (here from 15,000 tokens) is what keeps the result from riding whole.
    shaper = build_shaper(
        settings(policy={"model": "no-such-model"}, reducers={"collapse": {"max_tokens": 15_000}}),
        tmp_path / "ledger.db",
    )
    text = GIT_LOG[:70_000]
    out, rep = shaper.shape_with_report(CALL, result(text))
    assert (rep.verdict, rep.reason) == ("reduce", "small")  # judged on the collapsed size
    assert any(e.reducer == "collapse" and e.acted for e in rep.reducer_events)
    (hash_,) = rep.stash_hashes
    assert shaper.ledger.get_stash(hash_) == text


def test_a_repeat_names_the_tool_as_the_client_listed_it(tmp_path):
    # The model only knows the listed (possibly prefixed) name; the downstream name would point nowhere.
    shaper = build_shaper(settings(), tmp_path / "ledger.db")
    call = CallInfo("git", "git__git_status", "git_status", {}, session_id="s1")
    shaper.shape(call, result(STATUS))
    again = shaper.shape(call, result(STATUS))
    assert again.content[0].text.startswith("[repeat of earlier `git__git_status`")


def test_stub_carries_an_identifier_index_bounded_by_the_client_limit(tmp_path):
    log = "".join(
        f"commit {i:040x}\nAuthor: Dev {i % 3}\nDate:   2026-01-01\n\n    Change {i}\n\n" for i in range(3000)
    )
    shaper = build_shaper(no_reducers(), tmp_path / "a.db")
    out, rep = shaper.shape_with_report(CALL, result(log, structured_content={"content": log}))
    text = out.content[0].text
    assert rep.verdict == "offload" and rep.trm_id in text
    # 3,000 commits do not fit the index, and bare shas would list less than half of them: the first ones
    # by sha, date and subject (index/render.py)
    assert "index of 3,000 commits, one line each: sha date subject (first 48 chars); first" in text
    assert f"\n  {0:040x} 2026-01-01 Change 0\n" in text
    assert "more not shown, from line" in text
    assert out.structured_content["offloaded_result"]["summary"] == text
    # The index grows with the result (stub_index_share), up to half of what the client accepts with the stub.
    assert shaper.settings.policy.stub_index_chars + 1000 < len(text) <= shaper.policy.stub_bound_chars(len(log)) + 1
    assert len(text) <= shaper.settings.policy.client_max_result_chars // 2 + 200
    # A client that accepts little gets a smaller index: the whole stub stays within half its limit (plus the header).
    small = build_shaper(
        no_reducers(
            policy={"small_threshold_chars": 1000, "large_threshold_chars": 3000, "client_max_result_chars": 4000}
        ),
        tmp_path / "b.db",
    )
    out, rep = small.shape_with_report(CALL, result(log))
    assert (
        rep.verdict == "offload"
        and len(out.content[0].text) <= 2000 + 400
        and "index of 3,000 commits" in out.content[0].text
    )
    off = build_shaper(no_reducers(policy={"stub_index_chars": 0}), tmp_path / "c.db")
    out, rep = off.shape_with_report(CALL, result(log))
    assert "index of" not in out.content[0].text and len(out.content[0].text) <= 1000


def test_a_small_kept_result_is_shaped_on_the_callers_thread_as_a_worker_would(tmp_path):
    # The proxy shapes a small result on its event loop (no thread hop): same bytes, same record, same event.
    inline, threaded = build_shaper(settings(), tmp_path / "a.db"), build_shaper(settings(), tmp_path / "b.db")
    original = result("a small result: forty bytes of text.....")
    shaped = inline.shape_without_blocking(CALL, original)
    assert shaped is not None
    out, rep = shaped
    expected_out, expected_rep = threaded.shape_with_report(CALL, original)
    assert out is original and expected_out is original and rep == expected_rep
    assert [e["detail"] for e in inline.ledger.events()] == [e["detail"] for e in threaded.ledger.events()]
    assert inline.session_memory("s1").seen == threaded.session_memory("s1").seen


def test_a_large_structured_result_is_left_to_the_worker_before_it_is_dumped(tmp_path, monkeypatch):
    """Told by its text's length or structuredContent's orjson length, never by dump_result on the loop;
    a small structured result is still shaped in line, exactly as the worker would."""
    import offload_mcp.shaping.shaper as shaping

    shaper = build_shaper(settings(), tmp_path / "l.db")
    records = {"records": [{"id": i, "name": f"item-{i}", "tags": ["a", "b"]} for i in range(200)]}
    dumped: list[object] = []
    real_dump = shaping.dump_result
    monkeypatch.setattr(shaping, "dump_result", lambda r, **kw: dumped.append(r) or real_dump(r, **kw))
    text_and_structured = t.CallToolResult(
        content=[t.TextContent(text=orjson.dumps(records).decode())], structured_content=records
    )
    structured_only = t.CallToolResult(content=[], structured_content=records)
    assert shaper.shape_without_blocking(CALL, text_and_structured) is None
    assert shaper.shape_without_blocking(CALL, structured_only) is None
    assert dumped == []
    small = t.CallToolResult(content=[t.TextContent(text='{"value": 1}')], structured_content={"value": 1})
    shaped = shaper.shape_without_blocking(CALL, small)
    assert shaped is not None and shaped[0] is small and dumped == [small]
    out, rep = shaper.shape_with_report(CALL, structured_only)
    assert rep.chars_in == len(orjson.dumps(records))


def test_a_result_to_commit_or_a_large_one_is_left_to_the_worker_with_nothing_done(tmp_path):
    limits = {"client_max_result_chars": 300, "large_threshold_chars": 300, "small_threshold_chars": 100}
    shaper = build_shaper(settings(policy=limits), tmp_path / "l.db")
    small_but_offloaded = result("x " * 400)  # 800 chars, over this client's limit: its body must be committed
    assert shaper.shape_without_blocking(CALL, small_but_offloaded) is None
    assert shaper.shape_without_blocking(CALL, result(STATUS)) is None  # over INLINE_MAX_CHARS
    assert shaper.ledger.counts()["bodies"] == 0 and list(shaper.ledger.events()) == []
    assert not shaper.session_memory("s1").seen
    out, rep = shaper.shape_with_report(CALL, small_but_offloaded)
    assert rep.verdict == "offload" and rep.trm_id in out.content[0].text


def test_gate_prices_the_stub_it_would_send_not_stub_tokens(tmp_path):
    # 60 shas as JSON: 3,000 chars, ~750 tokens. Their stub lists every sha (policy/index), so it is as large
    # as the result itself: priced at stub_tokens (250) the gate would offload it; priced as built, replacing
    # the result saves nothing and it stays inline. The same shas in a larger result do offload.
    items = [{"sha": f"{i:040x}"} for i in range(60)]
    text = orjson.dumps(items).decode()
    policy = {"small_threshold_chars": 1000, "large_threshold_chars": 2000, "horizon": 1, "recall_probability": 0.0}
    shaper = build_shaper(no_reducers(policy=policy), tmp_path / "a.db")
    out, rep = shaper.shape_with_report(CALL, result(text))
    assert rep.verdict == "keep" and rep.reason == "gate_declined" and out.content[0].text == text
    gate = rep.decision.gate
    assert gate is not None and not gate.fire
    pricer = StubPricer(shaper.settings, shaper.policy, CALL, result(text), dump_result(result(text)), gated=True)
    built = pricer.stub_text(pricer.body_record())
    assert len(built) >= len(text) and f"S={-(-len(built) // 4)} " in gate.reason
    padded = orjson.dumps([{**it, "message": "x" * 200} for it in items]).decode()
    out, rep = shaper.shape_with_report(CALL, result(padded))
    assert rep.verdict == "offload" and rep.reason == "gate_fired"
    assert out.content[0].text.count("\n  0000") == 60  # the stub sent is the one priced: every sha listed
    # Without the stub as built (a caller that has none), the gate prices the largest stub the settings allow.
    assert shaper.policy.gate_inputs(len(text)).stub_tokens == 250 + 6000 // 4
