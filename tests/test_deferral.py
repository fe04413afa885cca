"""Hot set, deferral marks and presentation modes, as pure functions over real tool definitions."""

from __future__ import annotations

import json
import time
from pathlib import Path

import mcp_types as types
import pytest

from offload_mcp.catalog import deferral
from offload_mcp.catalog.catalog import build_catalog
from offload_mcp.catalog.hotset import Candidate, HotSetMemory, decide_hot_set
from offload_mcp.catalog.presentation import present
from offload_mcp.catalog.settings import CatalogSettings
from offload_mcp.config import OffloadSettings
from offload_mcp.store.ledger import Ledger
from offload_mcp.store.settings import LedgerSettings
from offload_mcp.tools import invoke, tool_search
from offload_mcp.tools.registry import EXPAND, RECALL
from support.decision_records import decision_record

ROOT = Path(__file__).resolve().parents[1]
GITHUB_LIKE = ROOT / "bench" / "data" / "catalog" / "github_like_tools.json"

OWN = [
    types.Tool(name=RECALL, description="Recall an offloaded result.", input_schema={"type": "object"}),
    types.Tool(name=EXPAND, description="Expand a cut.", input_schema={"type": "object"}),
]
OPTIONAL = {tool_search.TOOL.name: tool_search.TOOL, invoke.TOOL.name: invoke.TOOL}


def github_tools() -> list[types.Tool]:
    return [types.Tool.model_validate(t) for t in json.loads(GITHUB_LIKE.read_text())]


def git_like() -> list[types.Tool]:
    return [
        types.Tool(
            name="git_status",
            description="Shows the working tree status",
            input_schema={"type": "object", "properties": {"repo_path": {"type": "string"}}},
        ),
        types.Tool(
            name="git_log",
            description="Shows the commit logs. Newest first.",
            input_schema={"type": "object", "properties": {"repo_path": {"type": "string"}}},
        ),
        types.Tool(
            name="marked",
            description="A tool its server marks itself.",
            input_schema={"type": "object"},
            _meta={deferral.ALWAYS_LOAD: True, "vendor/x": 1},
        ),
        types.Tool(
            name="hinted",
            description="Its server gave a hint of its own.",
            input_schema={"type": "object"},
            _meta={deferral.SEARCH_HINT: "server's own hint"},
        ),
    ]


def catalog(settings: CatalogSettings | None = None):
    return build_catalog(
        {"git": git_like(), "github": github_tools()},
        settings or CatalogSettings(),
        [t.name for t in OWN] + list(OPTIONAL),
    )


def wire(presentation) -> bytes:
    """tools/list JSON as the server's middleware would send it (model dump + spliced extras)."""
    tools = []
    for tool in presentation.tools:
        data = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
        data.update(presentation.wire_extras.get(tool.name, {}))
        tools.append(data)
    return json.dumps({"tools": tools}).encode()


class FakeHistory:
    """A call history with fixed counts (the real ledger is used in test_hot_set_learned_from_a_real_ledger)."""

    def __init__(self, counts):
        self.counts = counts
        self.reads = 0

    def call_counts(self, since=None):
        self.reads += 1
        return dict(self.counts)


def test_search_hint_is_a_short_deterministic_phrase():
    tool = types.Tool(
        name="x",
        description="Read the **complete** contents of a [file](http://x) as text. More words follow.",
        input_schema={"type": "object"},
    )
    assert deferral.search_hint(tool) == "Read the complete contents of a file as text"
    long = types.Tool(name="x", description="word " * 40, input_schema={"type": "object"})
    hint = deferral.search_hint(long)
    assert len(hint.split()) <= deferral.HINT_MAX_WORDS and len(hint) <= deferral.HINT_MAX_CHARS
    bare = types.Tool(name="listPullRequests", input_schema={"type": "object"})
    assert deferral.search_hint(bare) == "list pull requests"


def test_max_result_size_follows_the_policy_bound():
    settings = OffloadSettings()
    assert deferral.max_result_size_chars(settings) == settings.policy.client_max_result_chars == 100_000
    assert (
        deferral.max_result_size_chars(
            OffloadSettings.model_validate({"policy": {"client_max_result_chars": 2_000_000}})
        )
        == 500_000
    )
    assert (
        deferral.max_result_size_chars(OffloadSettings.model_validate({"policy": {"client_max_result_chars": 0}}))
        is None
    )
    assert deferral.max_result_size_chars(OffloadSettings.model_validate({"mode": "observe"})) is None
    assert deferral.max_result_size_chars(OffloadSettings.model_validate({"policy": {"enabled": False}})) is None
    assert deferral.max_result_size_chars(None) is None


ZOD_DRAFT_07 = "http://json-schema.org/draft-07/schema#"


def as_zod_writes(tool: types.Tool) -> types.Tool:
    """The definition as zod-based servers (server-everything, server-filesystem) write it: `$schema`, the default execution."""
    return tool.model_copy(
        update={
            "input_schema": {"$schema": ZOD_DRAFT_07, **tool.input_schema},
            "execution": types.ToolExecution(task_support="forbidden"),
        }
    )


def off_and_hint(cat, settings: CatalogSettings):
    off = present(cat.entries, OWN, settings.model_copy(update={"deferral": "off"}), session_id="s")
    hint = present(cat.entries, OWN, settings, session_id="s", offload=OffloadSettings())
    return deferral.listing_bytes(off.tools), deferral.listing_bytes(hint.tools, hint.wire_extras), hint


def test_hint_mode_marks_cold_and_hot_without_double_marking():
    # Definitions as real servers write them: hint mode pays for its marks with what they imply (catalog/compact.py).
    settings = CatalogSettings(hot_tools=["git_status"])
    cat = build_catalog({"git": [as_zod_writes(t) for t in git_like()]}, settings, [t.name for t in OWN])
    off_bytes, hint_bytes, shown = off_and_hint(cat, settings)
    assert hint_bytes <= off_bytes
    by_name = {t.name: t for t in shown.tools}
    assert len(shown.tools) == len(cat.entries) + len(OWN)
    # hot: alwaysLoad, no defer_loading
    for name in ("git_status", "marked", RECALL, EXPAND):
        assert by_name[name].meta[deferral.ALWAYS_LOAD] is True, name
        assert name not in shown.wire_extras
        assert deferral.SEARCH_HINT not in (by_name[name].meta or {})
    # the server's own alwaysLoad made it hot, and its other keys are kept
    assert shown.hot.reasons["marked"].kind == "server_always_load"
    assert by_name["marked"].meta["vendor/x"] == 1
    # cold: defer_loading on the wire + a hint; a server's own hint is kept, not replaced
    assert shown.wire_extras["git_log"] == {"defer_loading": True}
    assert by_name["git_log"].meta[deferral.SEARCH_HINT] == "Shows the commit logs"
    assert by_name["hinted"].meta[deferral.SEARCH_HINT] == "server's own hint"
    assert shown.wire_extras["hinted"] == {"defer_loading": True}
    # every downstream tool declares the result bound; own tools do not
    for entry in cat.entries:
        assert by_name[entry.name].meta[deferral.MAX_RESULT_SIZE] == 100_000
    assert deferral.MAX_RESULT_SIZE not in by_name[RECALL].meta
    # the downstream definitions themselves were not mutated
    assert cat.by_name["git_log"].tool.meta is None
    assert cat.by_name["git_log"].tool.input_schema["$schema"] == ZOD_DRAFT_07
    assert "$schema" not in by_name["git_log"].input_schema and by_name["git_log"].execution is None
    assert tool_search.TOOL.name not in by_name and invoke.TOOL.name not in by_name


def test_hint_mode_is_never_larger_than_off_and_spends_its_budget_in_order():
    """Hand-written definitions imply nothing: the marks that fit go own tools first, then by what they change."""
    settings = CatalogSettings(hot_tools=["git_status", "github/get_me"])
    off_bytes, hint_bytes, shown = off_and_hint(catalog(settings), settings)
    # Little to trim (a few `readOnlyHint: false`): spent in order until it runs out, and not left over.
    assert off_bytes - 40 < hint_bytes <= off_bytes
    cat = catalog(settings)
    by_name = {t.name: t for t in shown.tools}
    assert all(by_name[n].meta[deferral.ALWAYS_LOAD] is True for n in (RECALL, EXPAND, "git_status", "get_me"))
    assert all(by_name[n].meta[deferral.MAX_RESULT_SIZE] == 100_000 for n in ("git_status", "get_me"))
    cold = [e.name for e in cat.entries if e.name not in shown.hot]
    deferred = [name for name in cold if name in shown.wire_extras]
    assert 0 < len(deferred) < len(cold) and deferred == cold[: len(deferred)]  # in listing order
    assert not any(deferral.MAX_RESULT_SIZE in (by_name[n].meta or {}) for n in cold)  # that step came later
    # A catalog with room: the same tools with zod's `$schema` and default execution carry every mark.
    roomy = build_catalog(
        {"git": [as_zod_writes(t) for t in git_like()], "github": [as_zod_writes(t) for t in github_tools()]},
        settings,
        [t.name for t in OWN],
    )
    off_bytes, hint_bytes, shown = off_and_hint(roomy, settings)
    assert hint_bytes <= off_bytes, (hint_bytes, off_bytes)
    by_name = {t.name: t for t in shown.tools}
    assert all(by_name[n].meta[deferral.ALWAYS_LOAD] is True for n in ("git_status", "get_me", RECALL, EXPAND))
    assert all(by_name[e.name].meta[deferral.MAX_RESULT_SIZE] == 100_000 for e in roomy.entries)
    assert len(shown.wire_extras) == len(roomy.entries) - 3  # every cold tool deferred


def test_off_mode_lists_tools_exactly_as_given():
    cat = catalog()
    settings = CatalogSettings(deferral="off")
    shown = present(cat.entries, OWN, settings, optional_tools=OPTIONAL, session_id="s", offload=OffloadSettings())
    assert [t.model_dump(by_alias=True) for t in shown.tools] == [
        e.tool.model_dump(by_alias=True) for e in cat.entries
    ] + [t.model_dump(by_alias=True) for t in OWN]
    assert shown.wire_extras == {}


def test_search_mode_lists_hot_tools_plus_search_and_invoke():
    settings = CatalogSettings(deferral="search", hot_tools=["git_*"])
    cat = catalog(settings)
    shown = present(cat.entries, OWN, settings, optional_tools=OPTIONAL, session_id="s", offload=OffloadSettings())
    names = [t.name for t in shown.tools]
    assert names == ["git_status", "git_log", "marked", RECALL, EXPAND, "search_tools", "invoke_tool"]
    assert all(t.meta[deferral.ALWAYS_LOAD] is True for t in shown.tools)
    by_name = {t.name: t for t in shown.tools}
    assert by_name["invoke_tool"].meta[deferral.MAX_RESULT_SIZE] == 100_000
    assert deferral.MAX_RESULT_SIZE not in by_name["search_tools"].meta
    assert shown.wire_extras == {}
    off = present(
        cat.entries, OWN, settings.model_copy(update={"deferral": "off"}), optional_tools=OPTIONAL, session_id="s"
    )
    cut = 1 - len(wire(shown)) / len(wire(off))
    assert cut > 0.85, cut


def test_search_mode_without_its_tools_falls_back_to_hints():
    settings = CatalogSettings(deferral="search")
    shown = present(catalog(settings).entries, OWN, settings, session_id="s")
    assert len(shown.tools) > 90 and shown.wire_extras  # nothing hidden without a way to reach it


def test_presentation_bytes_are_stable_across_calls_and_sessions():
    settings = CatalogSettings(hot_tools=["git_status"])
    history = FakeHistory({("github", "list_issues"): 9, ("github", "get_issue"): 4})
    first = wire(
        present(catalog(settings).entries, OWN, settings, ledger=history, session_id="a", offload=OffloadSettings())
    )
    again = wire(
        present(catalog(settings).entries, OWN, settings, ledger=history, session_id="a", offload=OffloadSettings())
    )
    other = wire(
        present(catalog(settings).entries, OWN, settings, ledger=history, session_id="b", offload=OffloadSettings())
    )
    assert first == again == other


def test_own_tools_are_never_cold():
    settings = CatalogSettings(learn_hot_tools=False)
    for mode in ("hint", "search"):
        shown = present(
            catalog().entries,
            OWN,
            settings.model_copy(update={"deferral": mode}),
            optional_tools=OPTIONAL,
            session_id="s",
        )
        by_name = {t.name: t for t in shown.tools}
        for own in (RECALL, EXPAND):
            assert by_name[own].meta[deferral.ALWAYS_LOAD] is True
            assert own not in shown.wire_extras
            assert shown.hot.reasons[own].kind == "own"


def test_learned_hot_set_is_capped_ranked_and_thresholded():
    cands = [Candidate(name=n, server="s", downstream_name=n) for n in ("a", "b", "c", "d", "e")]
    history = FakeHistory({("s", "a"): 5, ("s", "b"): 9, ("s", "c"): 5, ("s", "d"): 2, ("other", "e"): 50})
    hot = decide_hot_set(cands, CatalogSettings(max_hot_tools=2, learn_min_calls=3), own_tools=["own"], history=history)
    assert hot.learning == "learned"
    assert sorted(hot.learned()) == [
        "a",
        "b",
    ]  # b (9), then a/c tie at 5 broken by name; d under the minimum; e is another server's
    assert "9 times" in str(hot.reasons["b"])
    assert (
        decide_hot_set(cands, CatalogSettings(learn_hot_tools=False), own_tools=[], history=history).learning
        == "learning_off"
    )
    assert decide_hot_set(cands, CatalogSettings(), own_tools=[], history=None).learning == "no_ledger"
    assert decide_hot_set(cands, CatalogSettings(), own_tools=[], history=object()).learning == "no_call_counts"

    class Broken:
        def call_counts(self, since=None):
            raise RuntimeError("disk I/O error")

    assert decide_hot_set(cands, CatalogSettings(), own_tools=[], history=Broken()).learning == "ledger_error"


def test_hot_set_is_decided_once_per_session_and_never_flaps():
    cands = [Candidate(name=n, server="s", downstream_name=n) for n in ("a", "b")]
    history = FakeHistory({("s", "a"): 5})
    memory = HotSetMemory()
    first = memory.hot_set("s1", cands, CatalogSettings(), own_tools=[], history=history)
    history.counts = {("s", "b"): 99}  # calls during the session
    same = memory.hot_set("s1", cands, CatalogSettings(), own_tools=[], history=history)
    assert first.names() == same.names() == ["a"]
    assert history.reads == 1
    fresh = memory.hot_set("s2", cands, CatalogSettings(), own_tools=[], history=history)
    assert fresh.names() == ["b"]  # a new session sees what was learned meanwhile


def test_hot_set_learned_from_a_real_ledger(tmp_path):
    ledger = Ledger.open(LedgerSettings(path=tmp_path / "ledger.db"))
    try:
        for _ in range(4):
            ledger.record_event(decision_record("old", "github", "list_issues", "keep", "small").ledger_event())
        for _ in range(3):
            ledger.record_event(decision_record("old", "git", "git_log", "keep", "small").ledger_event())
        ledger.record_event(decision_record("old", "github", "get_me", "keep", "small").ledger_event())
        settings = CatalogSettings(deferral="search")
        shown = present(
            catalog(settings).entries, OWN, settings, optional_tools=OPTIONAL, ledger=ledger, session_id="new"
        )
        assert shown.hot.learning == "learned"
        assert shown.hot.learned().keys() == {"list_issues", "git_log"}
        assert {"list_issues", "git_log"} <= {t.name for t in shown.tools}
        assert "get_me" not in {t.name for t in shown.tools}  # one call is below learn_min_calls
        # history older than the window does not count
        later = time.time() + 31 * 86_400
        aged = decide_hot_set(deferral.candidates(catalog().entries), settings, own_tools=[], history=ledger, now=later)
        assert aged.learning == "no_history"
    finally:
        ledger.close()


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="unknown deferral mode"):
        deferral.apply("lazy", [], [], decide_hot_set([], CatalogSettings(), own_tools=[]), max_result_chars=None)


def test_trims_remove_only_what_the_protocol_implies():
    from offload_mcp.catalog import compact

    draft07 = {
        "$schema": ZOD_DRAFT_07,
        "type": "object",
        "properties": {
            "repo_path": {"type": "string", "title": "Repo Path"},
            "mode": {"type": "string", "title": "How to read", "enum": ["a", "b"]},
            "edits": {"type": "array", "items": {"type": "object", "properties": {"old_text": {"title": "Old Text"}}}},
        },
        "required": ["repo_path"],
    }
    trimmed = compact.schema(draft07)
    assert trimmed == {
        "type": "object",
        "properties": {
            "repo_path": {"type": "string"},  # the title restated the name
            "mode": {"type": "string", "title": "How to read", "enum": ["a", "b"]},  # this one says more: kept
            "edits": {"type": "array", "items": {"type": "object", "properties": {"old_text": {}}}},
        },
        "required": ["repo_path"],
    }
    # Keywords draft-07 and 2020-12 read differently keep the dialect named.
    for different in (
        {"$ref": "#/definitions/x", "definitions": {"x": {"type": "string"}}},
        {"type": "array", "items": [{"type": "string"}, {"type": "number"}]},
        {"type": "object", "dependencies": {"a": ["b"]}},
    ):
        assert compact.schema({"$schema": ZOD_DRAFT_07, **different})["$schema"] == ZOD_DRAFT_07
    assert compact.schema({"$schema": "http://example.com/my-dialect", "type": "object"})["$schema"]
    annotations = types.ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    )
    tool = types.Tool(
        name="t",
        input_schema={"type": "object"},
        annotations=annotations,
        execution=types.ToolExecution(task_support="forbidden"),
    )
    kept = compact.tool(tool)
    assert kept.execution is None
    assert kept.annotations.model_dump(by_alias=True, exclude_none=True) == {
        "readOnlyHint": True,
        "openWorldHint": False,  # the spec defaults it to true, Claude Code to false: only the given value is safe
    }
    required = tool.model_copy(update={"execution": types.ToolExecution(task_support="required"), "annotations": None})
    assert compact.tool(required) is required  # nothing implied: the same object


def test_the_budget_counts_bytes_not_characters():
    """A hint copies the description's first words: non-ASCII ones cost their UTF-8 bytes."""
    settings = CatalogSettings()
    tools = [
        as_zod_writes(
            types.Tool(
                name=f"outil_{i}",
                description="Lit le contenu complet d’un fichier — en entier, déjà décodé. Ensuite rien.",
                input_schema={"type": "object", "properties": {"chemin": {"type": "string"}}},
            )
        )
        for i in range(40)
    ]
    cat = build_catalog({"fr": tools}, settings, [t.name for t in OWN])
    off, hint = (
        present(cat.entries, OWN, settings.model_copy(update={"deferral": mode}), offload=OffloadSettings())
        for mode in ("off", "hint")
    )
    encoded = {name: wire(p) for name, p in (("off", off), ("hint", hint))}
    compact_json = {
        name: json.dumps(json.loads(data), ensure_ascii=False, separators=(",", ":")).encode()
        for name, data in encoded.items()
    }
    assert len(compact_json["hint"]) <= len(compact_json["off"])
    assert deferral.listing_bytes(hint.tools, hint.wire_extras) == len(
        json.dumps(json.loads(encoded["hint"])["tools"], ensure_ascii=False, separators=(",", ":")).encode()
    )
    assert any(deferral.SEARCH_HINT in (t.meta or {}) and "’" in t.meta[deferral.SEARCH_HINT] for t in hint.tools)


def test_docstring_indentation_is_trimmed_and_every_word_kept():
    from offload_mcp.catalog import compact

    docstring = "Do a thing.\n\n    Args:\n        a: the number\n          (continued)\n    "
    assert compact.description(docstring) == "Do a thing.\n\nArgs:\n    a: the number\n      (continued)"
    assert compact.description("  Tidy already.") == "Tidy already."
    tidy = types.Tool(name="t", description="One line.", input_schema={"type": "object"})
    assert compact.tool(tidy) is tidy
