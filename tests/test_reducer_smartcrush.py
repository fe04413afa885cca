"""smartcrush: long JSON arrays keep first, last and error items verbatim."""

import json

from offload_mcp.reducers.base import Acted, Declined, ReduceContext, marker
from offload_mcp.reducers.settings import SmartcrushSettings
from offload_mcp.reducers.smartcrush import Smartcrush
from offload_mcp.session import SessionMemory, cg_hash

SEED = SmartcrushSettings(min_chars=0)
"""The seed's behaviour (no size floor), which these cases exercise."""


def ctx():
    return ReduceContext(tool="list", arguments={}, session=SessionMemory())


def items(n):
    return [{"id": i, "name": f"item {i}", "status": "ok"} for i in range(n)]


def test_seed_example_200_items():
    text = json.dumps(items(200))
    out = Smartcrush(SEED).reduce(text, ctx())
    assert isinstance(out, Acted)
    h = cg_hash(text)
    kept = [json.dumps(items(200)[i]) for i in (0, 1, 2, 198, 199)]
    assert (
        out.text
        == "["
        + ", ".join(kept)
        + "]\n"
        + f"[5 of 200 items shown (0-2, 198-199); items 3-197 omitted; full array: call context_guru_expand {marker(h)}]"
    )
    assert out.stash == {h: text}
    assert json.loads(out.text.split("\n")[0]) == [items(200)[i] for i in (0, 1, 2, 198, 199)]


def test_error_items_kept_verbatim_and_pretty_printing_preserved():
    data = items(50)
    data[20]["status"] = "failed: timeout"
    data[30]["error"] = {"code": 500}
    data[31]["error"] = None  # a null error field is no signal
    text = json.dumps(data, indent=2)
    out = Smartcrush(SEED).reduce(text, ctx())
    assert isinstance(out, Acted)
    array_part, note = out.text.rsplit("\n", 1)
    parsed = json.loads(array_part)
    assert [d["id"] for d in parsed] == [0, 1, 2, 20, 30, 48, 49]
    assert json.dumps(data[20], indent=2).replace("\n", "\n  ") in out.text, "items byte-verbatim"
    assert note.startswith("[7 of 50 items shown (0-2, 20, 30, 48-49)")


def test_envelope_object_with_array():
    text = json.dumps({"total": 100, "results": items(100)})
    out = Smartcrush(SEED).reduce(text, ctx())
    assert isinstance(out, Acted)
    obj = json.loads(out.text.rsplit("\n", 1)[0])
    assert obj["total"] == 100 and len(obj["results"]) == 5


def test_declines():
    s = Smartcrush(SEED)
    assert Smartcrush(SmartcrushSettings()).reduce(json.dumps(items(200)), ctx()) == Declined("below_min_chars")
    assert s.reduce("plain text", ctx()) == Declined("not_json_array")
    assert s.reduce("[1, 2, oops]", ctx()) == Declined("not_json_array")
    assert s.reduce("[1, 2] trailing", ctx()) == Declined("not_json_array")
    assert s.reduce(json.dumps(items(5)), ctx()) == Declined("too_few_items")
    assert s.reduce(json.dumps([{"error": "x"}] * 30), ctx()) == Declined("nothing_to_drop")
    assert s.reduce(json.dumps(items(30)) + marker("b" * 16), ctx()) == Declined("already_marked")
    assert s.reduce(json.dumps(list(range(25))), ctx()) == Declined("marker_no_win")
    deep = '{"a":' * 10_000 + "1" + "}" * 10_000
    assert s.reduce(deep, ctx()) == Declined("too_deeply_nested")
    assert s.reduce("[" * 10_000 + "]" * 10_000, ctx()) == Declined("too_deeply_nested")
