"""collapse: head/tail window by lines when that halves the output, else by characters."""

import json

from offload_mcp.reducers.base import Acted, Declined, ReduceContext, marker
from offload_mcp.reducers.collapse import CHAR_FLOOR, Collapse
from offload_mcp.reducers.settings import CollapseSettings
from offload_mcp.session import SessionMemory, cg_hash


def ctx(session=None):
    return ReduceContext(tool="t", arguments={}, session=session or SessionMemory())


def test_seed_example_line_window():
    text = "\n".join(f"log line {i:05d} " + "x" * 40 for i in range(2000))
    out = Collapse(CollapseSettings(max_tokens=1000)).reduce(text, ctx())
    assert isinstance(out, Acted)
    lines = out.text.split("\n")
    h = cg_hash(text)
    assert lines[:20] == text.split("\n")[:20] and lines[-20:] == text.split("\n")[-20:]
    offset = sum(len(line) + 1 for line in text.split("\n")[:20])
    assert (
        lines[20]
        == f"... (lines 21-1980 of 2000 omitted; expand from offset {offset}) {marker(h)} [full output: call context_guru_expand]"
    )
    assert out.stash == {h: text}


def test_one_line_json_uses_char_window_within_budget():
    text = json.dumps({"items": [{"id": i, "v": "abc"} for i in range(20000)]})
    out = Collapse(CollapseSettings(max_tokens=2000)).reduce(text, ctx())
    assert isinstance(out, Acted)
    assert " omitted; expand from offset " in out.text and len(out.text) < 2000 * 4 + 200
    head = out.text.split("\n")[0]
    assert text.startswith(head)


def test_huge_line_inside_window_routes_to_char_window():
    text = "first\n" + "y" * 300_000 + "\n" + "\n".join(f"l{i}" for i in range(100))
    out = Collapse(CollapseSettings(max_tokens=1000)).reduce(text, ctx())
    assert isinstance(out, Acted) and " omitted; expand from offset " in out.text and len(out.text) < 5000


def test_char_cut_never_splits_a_character_and_floor_holds():
    text = "é€😀" * 50_000
    out = Collapse(CollapseSettings(max_tokens=0, head_lines=0, tail_lines=0)).reduce(text, ctx())
    assert isinstance(out, Acted)
    head, _omission, tail = out.text.split("\n")
    assert len(head) + len(tail) >= CHAR_FLOOR
    assert text.startswith(head) and text.endswith(tail)
    out.text.encode("utf-8")  # no lone surrogate


def test_dense_json_is_tightened():
    text = json.dumps([[i, i + 1, i + 2] for i in range(50_000)], separators=(",", ":"))
    out = Collapse(CollapseSettings(max_tokens=1000)).reduce(text, ctx())
    assert isinstance(out, Acted)
    assert len(out.text) < 1000 * 4, "the fit loop tightened the 4-chars/token seed for dense JSON"


def test_declines():
    c = Collapse(CollapseSettings(max_tokens=100))
    assert c.reduce("small", ctx()) == Declined("below_max_tokens")
    big = "z" * 5000
    assert c.reduce(big + marker("c" * 16), ctx()) == Declined("already_marked")
    assert c.reduce(big, ctx(SessionMemory(expanded={cg_hash(big)}))) == Declined("kept_verbatim_after_expand")
    tiny = Collapse(CollapseSettings(max_tokens=10, head_lines=0, tail_lines=0))
    assert tiny.reduce("w" * 150, ctx()) == Declined("too_few_lines_and_chars")
    assert Collapse(CollapseSettings(max_tokens=50)).reduce("v" * 260, ctx()) == Declined("marker_no_win")


def test_negative_window_clamped():
    c = Collapse(CollapseSettings.model_construct(max_tokens=100, head_lines=-5, tail_lines=-5))
    out = c.reduce("q\n" * 5000, ctx())
    assert isinstance(out, Acted) and " omitted; expand from offset " in out.text
