"""dedup: exact-byte repeats in one session become a pointer naming the producing call."""

from offload_mcp.reducers.base import Acted, Declined, ReduceContext, marker
from offload_mcp.reducers.dedup import Dedup, describe_call
from offload_mcp.reducers.pipeline import build_pipeline
from offload_mcp.reducers.settings import DedupSettings, ReducerSettings
from offload_mcp.session import SessionMemory, cg_hash

CONFIG = "server:\n  port: 8080\n  workers: 4\n" * 40


def ctx(tool="cat", arguments=None, session=None):
    return ReduceContext(
        tool=tool,
        arguments=arguments if arguments is not None else {"command": "cat /etc/app/config.yaml"},
        session=session or SessionMemory(),
    )


def test_seed_example_names_the_producing_command():
    pipeline = build_pipeline(ReducerSettings(pipeline=["dedup"]))
    session = SessionMemory()
    first_ctx = ctx(session=session)
    first = pipeline.run(CONFIG, first_ctx)
    assert first.text == CONFIG and first.events[0].reason == "no_earlier_copy"
    pipeline.commit_session(first, first_ctx)
    second = pipeline.run(CONFIG, ctx(tool="other", arguments={}, session=session))
    h = cg_hash(CONFIG)
    assert second.text == f"[repeat of earlier `cat cat /etc/app/config.yaml`; expand {marker(h)}]"
    assert second.stash == {h: CONFIG}
    assert second.events[0].acted and second.events[0].chars_after == len(second.text)


def seen_once(text: str, producer: str) -> SessionMemory:
    session = SessionMemory()
    session.remember(cg_hash(text), len(text), producer)
    return session


def test_a_text_of_no_seen_length_is_declined_before_it_is_hashed(monkeypatch):
    """The length check stands in for the hash only where it is certain: a same-length text is still hashed."""
    from offload_mcp import session as session_module

    hashed: list[str] = []
    monkeypatch.setattr(session_module, "cg_hash", lambda text: hashed.append(text) or cg_hash(text))
    session = seen_once(CONFIG, "`cat`")
    assert Dedup(DedupSettings()).reduce(CONFIG + " ", ctx(session=session)) == Declined("no_earlier_copy")
    assert hashed == []
    same_length = CONFIG[:-1] + "!"
    assert Dedup(DedupSettings()).reduce(same_length, ctx(session=session)) == Declined("no_earlier_copy")
    assert hashed == [same_length]


def test_pointer_never_carries_a_position_and_is_stable():
    session = seen_once(CONFIG, "`git_status`")
    d = Dedup(DedupSettings())
    a = d.reduce(CONFIG, ctx(session=session))
    b = d.reduce(CONFIG, ctx(tool="x", session=session))
    assert isinstance(a, Acted) and a == b
    assert a.text == f"[repeat of earlier `git_status`; expand {marker(cg_hash(CONFIG))}]"


def test_unknown_producer_falls_back_to_unqualified_note():
    session = SessionMemory()
    pipeline = build_pipeline(ReducerSettings(pipeline=["dedup"]))
    first_ctx = ctx(tool="", arguments={}, session=session)
    pipeline.commit_session(pipeline.run(CONFIG, first_ctx), first_ctx)
    out = pipeline.run(CONFIG, ctx(session=session))
    assert out.text == f"[repeat of an earlier tool output; expand {marker(cg_hash(CONFIG))}]"


def test_exact_bytes_only_whitespace_difference_is_not_a_repeat():
    session = seen_once(CONFIG, "`cat`")
    reindented = CONFIG.replace("  port", "    port")
    assert Dedup(DedupSettings()).reduce(reindented, ctx(session=session)) == Declined("no_earlier_copy")


def test_declines_small_and_marked():
    d = Dedup(DedupSettings())
    session = seen_once("tiny", "`x`")
    assert d.reduce("tiny", ctx(session=session)) == Declined("below_min_tokens")
    marked = CONFIG + marker("0" * 16)
    session.remember(cg_hash(marked), len(marked), "`x`")
    assert d.reduce(marked, ctx(session=session)) == Declined("already_marked")


def test_marker_no_win_when_pointer_is_not_shorter():
    text = "y" * 60
    session = seen_once(text, "`" + "t" * 80 + "`")
    assert Dedup(DedupSettings(min_tokens=0)).reduce(text, ctx(session=session)) == Declined("marker_no_win")


def test_commit_session_is_what_records_history():
    pipeline = build_pipeline(ReducerSettings())
    session = SessionMemory()
    c = ctx(session=session)
    pipeline.run(CONFIG, c)
    assert session.seen == {}, "run alone must not record: a failed ledger commit leaves no dangling history"
    result = pipeline.run(CONFIG, c)
    pipeline.commit_session(result, c)
    assert cg_hash(CONFIG) in session.seen


def test_describe_call_summaries_are_short_and_deterministic():
    assert describe_call("git_status", {}) == "`git_status`"
    assert describe_call("read", {"path": "a.txt"}) == "`read a.txt`"
    assert describe_call("q", {"b": 1, "a": 2}) == describe_call("q", {"a": 2, "b": 1}) == '`q {"a":2,"b":1}`'
    assert describe_call("bash", {"command": "x" * 200}) == "`bash`"
    assert describe_call("bash", {"command": "a\nb"}) == "`bash`"
    assert describe_call("", {"a": 1}) == ""
