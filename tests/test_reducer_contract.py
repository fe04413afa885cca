"""The reducers' contract: each reducer says how it relates to offload, to dedup and to the floor the
shaper decides by (Reducer in reducers/base.py); the pipeline only composes what they declare, and
nothing outside reducers/ models a concrete reducer."""

from __future__ import annotations

import ast
from pathlib import Path

import mcp_types as t

from offload_mcp.config import OffloadSettings
from offload_mcp.reducers.base import Acted, FloorTerms, ReduceContext, marker
from offload_mcp.reducers.dedup import Dedup
from offload_mcp.reducers.pipeline import Pipeline, build_pipeline
from offload_mcp.reducers.settings import DedupSettings, ReducerSettings
from offload_mcp.session import SessionMemory, cg_hash
from offload_mcp.shaping import CallInfo, ResultBody, StubPricer, build_shaper, dump_result
from offload_mcp.shaping.shaper import ResultShaper

PACKAGE = Path(__import__("offload_mcp").__file__).parent
ALL = ["dedup", "extract", "smartcrush", "tabulate", "collapse", "linecap"]


def ctx(session: SessionMemory | None = None) -> ReduceContext:
    return ReduceContext(tool="t", arguments={}, session=session or SessionMemory())


class Plain:
    """A reducer of its own that declares nothing beyond the protocol's `name` and `reduce`."""

    name = "plain"

    def reduce(self, text: str, ctx: ReduceContext) -> Acted:
        half = text[: len(text) // 2]
        return Acted(f"{half}\n{marker(cg_hash(text))}", {cg_hash(text): text})


class Windowing(Plain):
    name = "windowing"
    yields_to_offload = True


class Showing(Plain):
    name = "showing"
    shows_every_value = True


class Bounded(Plain):
    """Promises what it is built with: lines cut to `cap`, lines starting with `whole` never cut."""

    name = "bounded"

    def __init__(self, cap: int = 0, whole: str | None = None) -> None:
        self.cap, self.whole = cap, whole

    def floor(self, text: str, ctx: ReduceContext, terms: FloorTerms) -> FloorTerms | None:
        keeps = None if self.whole is None else (lambda line: line.startswith(self.whole))
        return FloorTerms(cap=self.cap, keeps_whole=keeps) if self.cap else terms


def test_the_windowing_reducers_declare_that_they_yield_to_offload():
    full = build_pipeline(ReducerSettings(pipeline=ALL))
    before = full.without_offload_yielders()
    assert before is not None and before.names == ["dedup", "extract", "tabulate", "linecap"]
    assert build_pipeline(ReducerSettings(pipeline=["dedup", "linecap"])).without_offload_yielders() is None
    shaper = ResultShaper(OffloadSettings.model_validate({"reducers": {"pipeline": ["collapse", "linecap"]}}))
    assert shaper.pipeline_before_collapse is not None and shaper.pipeline_before_collapse.names == ["linecap"]


def test_a_reducer_of_its_own_yields_to_offload_by_declaring_it():
    pipeline = Pipeline([Plain(), Windowing(), Showing()])
    before = pipeline.without_offload_yielders()
    assert before is not None and before.names == ["plain", "showing"]
    assert Pipeline([Plain()]).without_offload_yielders() is None


def test_a_reducer_gives_a_floor_only_by_declaring_one():
    text = "alpha\nbeta\nalpha\n" + "x" * 50
    assert Pipeline([Plain()]).floor_chars(text, ctx(), 10_000) is None
    # every distinct line once: 5 + 4 + 50 chars and the breaks between them
    assert Pipeline([Bounded()]).floor_chars(text, ctx(), 10_000) == 5 + 4 + 50 + 2
    assert Pipeline([Bounded(cap=10)]).floor_chars(text, ctx(), 10_000) == 5 + 4 + 10 + 2
    assert Pipeline([Bounded(cap=10, whole="x")]).floor_chars(text, ctx(), 10_000) == 5 + 4 + 50 + 2
    assert Pipeline([Bounded(cap=10), Plain()]).floor_chars(text, ctx(), 10_000) is None


def test_the_builtin_reducers_floor_is_theirs():
    """Dedup gives none for a repeat, linecap its cap, tabulate none for a JSON document; collapse none."""
    lines = "\n".join(f"line {i} " + "y" * 300 for i in range(50))
    linecap = build_pipeline(ReducerSettings(pipeline=["dedup", "linecap"], linecap={"max_line_chars": 100}))
    assert linecap.floor_chars(lines, ctx(), 1 << 20) == sum(min(len(line), 100) for line in lines.split("\n")) + 49
    seen = SessionMemory()
    seen.remember(cg_hash(lines), len(lines), "`t`")
    assert linecap.floor_chars(lines, ctx(seen), 1 << 20) is None
    tabulate = build_pipeline(ReducerSettings(pipeline=["tabulate"]))
    assert tabulate.floor_chars('[{"a": 1}, {"a": 2}]', ctx(), 1 << 20) is None
    assert tabulate.floor_chars(lines, ctx(), 1 << 20) == len(lines)
    assert build_pipeline(ReducerSettings(pipeline=["collapse"])).floor_chars(lines, ctx(), 1 << 20) is None


def test_dedup_remembers_an_output_seen_through_a_reducer_that_declares_it_shows_every_value():
    text = "\n".join(f"row {i}: value {i * 7}" for i in range(200))
    for reducer, remembered in ((Showing(), True), (Plain(), False)):
        dedup = Dedup(DedupSettings())
        pipeline = Pipeline([dedup, reducer], dedup)
        memory = SessionMemory()
        run = pipeline.run(text, ctx(memory))
        assert run.acted
        pipeline.commit_session(run, ctx(memory))
        assert (cg_hash(text) in memory.seen) is remembered, reducer.name


def test_the_stub_pricer_builds_the_stub_once_and_only_for_a_gated_result(tmp_path):
    text = "\n".join(f"entry {i} " + "z" * 80 for i in range(1_000))
    result = t.CallToolResult(content=[t.TextContent(text=text)])
    shaper = build_shaper(OffloadSettings(), tmp_path / "l.db")
    call = CallInfo("s", "list", "list", {})
    body = dump_result(result)
    pricer = StubPricer(shaper.settings, shaper.policy, call, result, body, gated=True)
    large = shaper.settings.policy.large_threshold_chars
    assert pricer.visible_chars(large - 1) is None
    first = pricer.built()
    assert pricer.visible_chars(large) == len(first[1]) and pricer.built() is first
    assert first[1] == pricer.stub_text(pricer.body_record())
    assert StubPricer(shaper.settings, shaper.policy, call, result, body, gated=False).visible_chars(large) is None


def _modules_outside(folder: str) -> list[Path]:
    return [path for path in PACKAGE.rglob("*.py") if folder not in path.relative_to(PACKAGE).parts]


def test_no_module_outside_reducers_models_a_concrete_reducer():
    """No isinstance on a concrete reducer, and no reducer named in shaping/ (a declared property instead)."""
    concrete = {"Dedup", "Extract", "Linecap", "Tabulate", "Collapse", "Smartcrush"}
    found = []
    for path in _modules_outside("reducers"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and len(node.args) == 2:
                names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                found += [f"{path.name}: isinstance on {name}" for name in names & concrete]
    for path in (PACKAGE / "shaping").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in set(ALL):
                found.append(f"{path.name}:{node.lineno} names the reducer {node.value!r}")
    assert found == []


def test_only_a_result_body_writes_its_measured_sizes():
    slots = set(ResultBody.__slots__)
    writers = []
    for path in PACKAGE.rglob("*.py"):
        if path == PACKAGE / "shaping" / "body.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr in slots:
                    writers.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert writers == []


def test_the_shaping_docstring_names_the_methods_the_server_calls():
    import re

    import offload_mcp.shaping as shaping

    named = set(re.findall(r"ResultShaper\.(\w+)", shaping.__doc__ or ""))
    called = set(re.findall(r"self\.shaper\.(\w+)", (PACKAGE / "upstream" / "dispatch.py").read_text()))
    assert named and named <= called, (named, called)


def test_no_function_in_shaping_or_reducers_is_over_80_lines():
    long = []
    for folder in ("shaping", "reducers"):
        for path in (PACKAGE / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    if lines > 80:
                        long.append(f"{folder}/{path.name}: {node.name} ({lines} lines)")
    assert long == []
