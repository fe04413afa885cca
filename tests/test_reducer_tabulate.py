"""tabulate: JSON re-encoded compactly, same-keyed object arrays as columns+rows, every value still visible."""

import json

from offload_mcp.reducers.base import Acted, Declined, ReduceContext, marker
from offload_mcp.reducers.settings import TabulateSettings
from offload_mcp.reducers.tabulate import Tabulate
from offload_mcp.session import SessionMemory, cg_hash


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


def test_a_json_body_in_a_json_string_or_after_prose_is_tabulated_where_it_sits():
    """Issue 38: rows a server sends inside a JSON string literal (a SQL result in its prose envelope) or
    under a line of prose were left as they were (`not_json_document`): escaped quotes on every key. Now the
    body is re-encoded where it sits, the prose kept, and the note says it was decoded from its string."""
    rows = [{"id": 1000 + i, "sku": f"SKU-{i:05d}", "price": f"{i}.25", "ok": i % 3 == 0} for i in range(80)]
    envelope = "Rows of the query:\n<data-7f3a>\n" + json.dumps(rows) + "\n</data-7f3a>\nUse them with care."
    for text, decoded in (
        (json.dumps(envelope), True),
        (envelope, False),
        ("Found 80 rows:\n" + json.dumps(rows, indent=2), False),
    ):
        out = run(text)
        assert isinstance(out, Acted) and out.stash == {cg_hash(text): text}
        assert ("decoded from its JSON string" in out.text) is decoded
        body = next(line for line in out.text.split("\n") if line.startswith('{"columns"'))
        table = json.loads(body)
        assert [dict(zip(table["columns"], row, strict=True)) for row in table["rows"]] == rows
        assert len(out.text) < len(text) * 0.75
    assert "Rows of the query:\n<data-7f3a>\n" in run(json.dumps(envelope)).text
    outer_prose = "Result: " + json.dumps(envelope)  # prose outside the string and inside it: not rewritten
    assert run(outer_prose) == Declined("not_json_document")


def test_json_text_in_a_field_is_tabulated_as_the_document_it_holds():
    """Issue 38: `{"type": "text", "text": "<rows as JSON text>"}` was re-encoded as it stood, a string with a
    backslash before every quote; its rows are now a table, the note naming the decoded field."""
    rows = [{"part_num": str(3001 + i), "name": f"Brick {i % 4 + 1} x 2", "qty": i} for i in range(60)]
    text = json.dumps({"type": "text", "text": json.dumps(rows)})
    out = run(text)
    assert isinstance(out, Acted) and out.stash == {cg_hash(text): text}
    body, note = out.text.split("\n")
    table = json.loads(body)["text"]
    assert [dict(zip(table["columns"], row, strict=True)) for row in table["rows"]] == rows
    assert note.startswith("[the JSON text of $.text decoded, 1 object list as columns+rows")
    spelled = json.dumps({"type": "text", "text": json.dumps(rows).replace('"qty": 1}', '"qty": 1.50}')})
    assert run(spelled) == Declined("number_spelling")  # inside the decoded text too
    enveloped = json.dumps({"type": "text", "text": "Found 60 parts:\n" + json.dumps(rows)})
    kept = run(enveloped)  # the field's line of prose would be lost in the decoded document: not decoded
    assert isinstance(kept, Declined) or "Found 60 parts:" in kept.text
