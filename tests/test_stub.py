"""Stubs: deterministic bytes, within budget, useful on their own; outputSchema stand-ins."""

import subprocess
import sys

import orjson
import pytest

from offload_mcp.policy.describe import describe_json, describe_text
from offload_mcp.policy.stub import STUB_SCHEMA, admit_stub, build_stub, stub_object

GIT_LOG = "".join(
    f"commit {i:040x}\nAuthor: Dev <d@example.com>\nDate:   Fri Nov 17 08:32:20 2023 +0000\n\n    Change {i}\n\n" for i in range(3000)
)
ITEMS = {"items": [{"id": i, "name": f"item {i}", "price": i * 1.5} for i in range(3000)], "total": 3000, "next": None}
CSV = "id,name,price\n" + "".join(f"{i},item {i},{i * 1.5}\n" for i in range(5000))
PYTEST = "".join(f"tests/test_x.py::test_{i} PASSED\n" for i in range(3000)) + "==== 3000 passed in 12.3s ====\n"
LISTING = "".join(f"[FILE] src/pkg/module_{i}.py\n" for i in range(3000))
SOURCE = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(3000))


def body_of(*texts, structured=None):
    body = {"content": [{"type": "text", "text": t} for t in texts]}
    if structured is not None:
        body["structuredContent"] = structured
    return body


def stub(body, **kw):
    chars = sum(len(b["text"]) for b in body["content"]) or len(orjson.dumps(body.get("structuredContent")))
    return build_stub(trm_id="trm_0123456789abcdef", tool="git_log", body=body, chars=chars, **kw)


@pytest.mark.parametrize(
    "text,looks_like",
    [
        (GIT_LOG, "git log (3,000 commits)"),
        (CSV, "CSV table (3 columns; first row: id, name, price)"),
        (PYTEST, "a test log"),
        (LISTING, "a file listing"),
        (SOURCE, "source code"),
        (orjson.dumps(ITEMS).decode(), "JSON object with 3 keys {items: array[3000] of object{id, name, price}; total: int; next: null}"),
    ],
)
def test_structural_index_says_what_it_is(text, looks_like):
    s = stub(body_of(text))
    assert looks_like in s
    assert f"{len(text):,} chars (~{round(len(text) / 4):,} tokens)" in s
    assert "trm_0123456789abcdef" in s and "git_log" in s
    assert 'recall_tool_result(mem_id="trm_0123456789abcdef"' in s


@pytest.mark.parametrize("text", [GIT_LOG, CSV, PYTEST, LISTING, SOURCE, "x" * 1_000_000, ("y" * 5000 + "\n") * 100])
def test_stub_fits_its_token_budget(text):
    for budget in (250, 100, 40):
        s = stub(body_of(text, text, text, text), budget_tokens=budget)
        assert len(s) <= max(budget * 4, 240)
        assert "trm_0123456789abcdef" in s and "recall_tool_result" in s


def test_head_preview_and_line_count():
    s = stub(body_of(GIT_LOG))
    assert "head:\n  commit 0000000000000000000000000000000000000000" in s
    assert f"{GIT_LOG.count(chr(10)):,} lines" in s


def test_json_path_hint_only_when_there_is_json():
    assert "json_path" not in stub(body_of(GIT_LOG))
    assert "json_path" in stub(body_of(orjson.dumps(ITEMS).decode()))
    assert "json_path" not in stub(body_of(orjson.dumps(ITEMS).decode()), recall_mode="window")
    assert "query=" not in stub(body_of(orjson.dumps(ITEMS).decode()), recall_mode="structural")


def test_structured_only_result_is_indexed():
    s = stub(body_of(structured=ITEMS))
    assert "structuredContent: object with 3 keys" in s


def test_same_input_same_bytes_in_process_and_across_processes():
    body = body_of(GIT_LOG, CSV)
    first = stub(body)
    assert stub(orjson.loads(orjson.dumps(body))) == first
    script = (
        "import sys, orjson; from offload_mcp.policy.stub import build_stub;"
        "body = orjson.loads(sys.stdin.buffer.read());"
        f"sys.stdout.write(build_stub(trm_id='trm_0123456789abcdef', tool='git_log', body=body, chars={sum(len(t) for t in (GIT_LOG, CSV))}))"
    )
    other = subprocess.run([sys.executable, "-c", script], input=orjson.dumps(body), capture_output=True, check=True, env={"PYTHONHASHSEED": "123", "PATH": ""}).stdout.decode()
    assert other == first


def test_describe_helpers():
    assert describe_json([]) == "array[0]"
    assert describe_json([1, "a"]) == "array[2] of int|str"
    assert describe_text("") .startswith("0 lines")


SCHEMA_CONTENT = {"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]}
ID = "trm_0123456789abcdef"


def _valid(value, schema) -> bool:
    from jsonschema.validators import validator_for

    cls = validator_for(schema)
    cls.check_schema(schema)
    return next(iter(cls(schema).iter_errors(value)), None) is None


def test_stub_object_carries_the_id_and_the_whole_stub_text():
    text = stub(body_of(GIT_LOG))
    obj = stub_object(ID, text)
    assert obj == {"offloaded_result": {"mem_id": ID, "summary": text}}
    assert _valid(obj, STUB_SCHEMA)


@pytest.mark.parametrize(
    "schema,original",
    [
        (SCHEMA_CONTENT, {"content": "z" * 500}),
        ({"type": "object", "properties": {"items": {"type": "array", "minItems": 100}}, "required": ["items"], "additionalProperties": False}, ITEMS | {}),
        (
            {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "$defs": {"Entity": {"type": "object", "required": ["name"]}},
             "properties": {"entities": {"type": "array", "items": {"$ref": "#/$defs/Entity"}}, "first": {"$ref": "#/properties/entities/items"}},
             "required": ["entities"]},
            {"entities": [{"name": "a"}], "first": {"name": "a"}},
        ),
    ],
)
def test_advertised_schema_admits_the_original_and_the_stub_and_nothing_else(schema, original):
    if "minItems" in str(schema):
        original = {"items": [{"id": i} for i in range(100)]}
    widened = admit_stub(schema)
    assert widened["type"] == "object"
    assert _valid(original, widened) and _valid(original, schema)
    assert _valid(stub_object(ID, "x"), widened)
    assert not _valid(stub_object(ID, "x"), schema)
    assert not _valid({"something": "else", "items": 3, "entities": 3, "content": 3}, widened)
    assert admit_stub(schema) == widened  # deterministic
    assert admit_stub(None) is None


def test_no_stub_hides_what_it_dropped():
    text = stub(body_of(orjson.dumps(ITEMS).decode()))
    assert "stored, not shown here" in text
    assert 'json_path="$.items[0:20]"' in text  # the cheapest structural call names a real key
