"""tabulate: JSON re-encoded compactly, same-keyed object arrays as columns+rows, every value still visible."""

import json

from offload_mcp.reducers.base import Acted, Declined, ReduceContext, SessionMemory, cg_hash, marker
from offload_mcp.reducers.settings import TabulateSettings
from offload_mcp.reducers.tabulate import Tabulate


def run(text):
    return Tabulate(TabulateSettings()).reduce(text, ReduceContext(tool="t", arguments={}, session=SessionMemory()))


def test_uniform_arrays_become_tables_and_every_value_stays_visible():
    hourly = [{"time": 1753113600 + 3600 * i, "temperature": 26.5 + i, "code": f"W{i:03d}"} for i in range(24)]
    doc = {"location": {"name": "Beijing", "timezone": "Asia/Shanghai"}, "hourly": hourly}
    text = json.dumps(doc, indent=2)
    out = run(text)
    assert isinstance(out, Acted) and out.stash == {cg_hash(text): text}
    body, note = out.text.split("\n")
    table = json.loads(body)["hourly"]
    assert table["columns"] == ["time", "temperature", "code"]
    assert [dict(zip(table["columns"], row, strict=True)) for row in table["rows"]] == hourly
    assert (
        note
        == f"[1 object list as columns+rows, compact, all values kept; as sent: context_guru_expand {marker(cg_hash(text))}]"
    )
    for item in hourly:
        for value in item.values():
            assert json.dumps(value) in out.text
    assert len(out.text) < len(text) / 2


def test_declines_with_named_reasons():
    assert run("x" * 500) == Declined("not_json_document")
    assert run("{" + "x" * 500) == Declined("not_json_document")
    assert run("short") == Declined("below_min_size")
    spelled = json.dumps({"values": [{"v": 1}] * 60}).replace('"v": 1}', '"v": 1.50}')
    assert run(spelled) == Declined("number_spelling")  # `1.50` would read `1.5`
    escaped = json.dumps({"name": "caf\u00e9", "values": [{"v": 1}] * 60})  # ensure_ascii: the literal-by-literal check
    assert isinstance(run(escaped), Acted) and "café" in run(escaped).text
    assert run(escaped.replace('"v": 1}', '"v": 1e0}')) == Declined("number_spelling")
    compact = json.dumps({"a": ["x" * 600]}, separators=(",", ":"))
    assert run(compact) == Declined("marker_no_win")
