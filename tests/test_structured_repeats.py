"""structured_repeats_text decides without parsing the text when it can; its decisions are the parse's.

The reference is the definition: `parse_json_text(text) == structuredContent` (or the one-value object
wrapping the text). Every case is judged both ways, on the body dump_result makes (whose serialised
structuredContent is kept and trusted) and on a plain dict (never trusted: no orjson round trip).
"""

import dataclasses
import datetime
import decimal
import enum
import json
import math
import uuid

import mcp_types as t
import orjson
import pydantic_core
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from offload_mcp.policy.describe import parse_json_text
from offload_mcp.shaping import (
    dump_result,
    recall_chars,
    sent_chars,
    structured_repeats_text,
    visible_chars,
)
from offload_mcp.shaping.body import _structured_chars

RECORDS = [{"id": i, "name": f"item-{i}", "price": i * 1.5, "tags": ["a", "é"], "none": None} for i in range(50)]
DOC = {"meta": {"count": 2, "ok": True}, "data": RECORDS, "empty": {}, "nothing": []}


def reference(text, structured):
    if isinstance(structured, dict) and len(structured) == 1 and next(iter(structured.values())) == text:
        return True
    return bool(parse_json_text(text) == structured)


def decide(text, structured):
    dumped = dump_result(t.CallToolResult(content=[t.TextContent(text=text)], structured_content=structured))
    plain = dict(dumped)
    got = structured_repeats_text(dumped)
    assert structured_repeats_text(plain) == got == reference(text, dumped["structuredContent"])
    return got


def deep_change(value):
    """DOC with one value deep inside changed, same spelling length."""
    changed = json.loads(json.dumps(value))
    changed["data"][37]["name"] = "item-38"
    return changed


CASES = [
    # spellings of the same value
    ("orjson compact (JSON.stringify)", lambda v: orjson.dumps(v).decode(), DOC, True),
    (
        "2-space indent (JSON.stringify(x, null, 2))",
        lambda v: orjson.dumps(v, option=orjson.OPT_INDENT_2).decode(),
        DOC,
        True,
    ),
    ("Python json.dumps", json.dumps, DOC, True),
    ("Python json.dumps indent=2, ensure_ascii", lambda v: json.dumps(v, indent=2), DOC, True),
    ("indent 4", lambda v: json.dumps(v, indent=4, ensure_ascii=False), DOC, True),
    ("keys in another order", lambda v: json.dumps(v, sort_keys=True), {"b": 1, "a": [2, {"d": 3, "c": 4}]}, True),
    ("blanks around", lambda v: "\n\t " + orjson.dumps(v).decode() + " \r\n", DOC, True),
    (
        "blank lines around, indented",
        lambda v: "\n" + orjson.dumps(v, option=orjson.OPT_INDENT_2).decode() + "\n",
        DOC,
        True,
    ),
    ("1.0 for 1", lambda v: '{"n": 1.0, "m": [2.0]}', {"n": 1, "m": [2]}, True),
    ("1 for 1.0", lambda v: '{"n":1,"m":[2]}', {"n": 1.0, "m": [2.0]}, True),
    ("1e2 for 100.0", lambda v: '{"n":1e2}', {"n": 100.0}, True),
    ("\\u escapes for é and a control char", lambda v: '{"s":"\\u00e9\\u001f\\/"}', {"s": "é\x1f/"}, True),
    ("duplicate key, the last wins", lambda v: '{"a":1,"a":2}', {"a": 2}, True),
    ("empty object", lambda v: "{}", {}, True),
    ("empty array", lambda v: "[]", [], True),
    ("an array of records", lambda v: json.dumps(v), RECORDS, True),
    ("NaN (dumped as null)", lambda v: '{"a":null}', {"a": math.nan}, True),
    # not the same value
    ("one value deep inside differs (compact)", lambda v: orjson.dumps(deep_change(v)).decode(), DOC, False),
    (
        "one value deep inside differs (indented)",
        lambda v: orjson.dumps(deep_change(v), option=orjson.OPT_INDENT_2).decode(),
        DOC,
        False,
    ),
    ("one value deep inside differs (json.dumps)", lambda v: json.dumps(deep_change(v)), DOC, False),
    ("true for 1", lambda v: '{"n":true}', {"n": 1}, True),  # Python: True == 1, as the parse compares
    ("a string for a number", lambda v: '{"n":"1"}', {"n": 1}, False),
    ("an extra key", lambda v: '{"a":1,"b":2}', {"a": 1}, False),
    ("an array for an object", lambda v: orjson.dumps(list(v.values())).decode(), {"a": 1, "b": 2}, False),
    ("an object for an array", lambda v: '{"0":1}', [1], False),
    ("trailing garbage", lambda v: orjson.dumps(v).decode() + "x", DOC, False),
    ("a byte-order mark before", lambda v: "\ufeff" + orjson.dumps(v).decode(), DOC, False),
    ("a no-break space before", lambda v: "\u00a0" + orjson.dumps(v).decode(), DOC, False),
    ("a lone surrogate escape", lambda v: '["\\ud800"]', ["\ud800"], False),
    ("not JSON", lambda v: "3 records: a, b, c", DOC, False),
    ("a scalar structuredContent", lambda v: "[1]", 1, False),
    ("a string structuredContent", lambda v: '["x"]', "x", False),
]


@pytest.mark.parametrize(("spell", "value", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_decision_is_the_parse_s(spell, value, expected):
    assert decide(spell(value), value) is expected


def test_wrapped_text_repeats_it():
    text = "line one\nline two\n"
    assert decide(text, {"content": text}) is True
    assert decide(text, {"content": text + " "}) is False
    assert decide(text, {"content": text, "more": 1}) is False


def test_tuple_in_a_plain_body_is_not_trusted():
    # dump_result turns a tuple into a list; a plain dict is judged by the parse alone (a list is not a tuple)
    plain = {"content": [{"type": "text", "text": '{"b":[1,2]}'}], "structuredContent": {"b": (1, 2)}}
    assert structured_repeats_text(plain) is False
    assert structured_repeats_text(dump_result(t.CallToolResult(content=[], structured_content={"b": (1, 2)}))) is False


def test_two_text_blocks_never_repeat():
    body = dump_result(
        t.CallToolResult(content=[t.TextContent(text="[1]"), t.TextContent(text="[1]")], structured_content=[1])
    )
    assert structured_repeats_text(body) is False


def test_structured_size_is_measured_once_per_body_and_anew_when_replaced():
    body = dump_result(t.CallToolResult(content=[t.TextContent(text="x")], structured_content=DOC))
    size = len(orjson.dumps(DOC))
    chars = len(orjson.dumps(DOC).decode())  # DOC holds an é: characters, for the client models, differ from bytes
    assert _structured_chars(body) == size and body._structured_chars == (body["structuredContent"], size, chars)
    assert sent_chars(body) == 1 + size and visible_chars(body) == size
    body["structuredContent"] = {"a": 1}
    assert _structured_chars(body) == 7 and sent_chars(body) == 1 + 7
    assert body == dict(body) and orjson.dumps(body) == orjson.dumps(dict(body))


def test_sizes_of_a_dumped_body_are_a_plain_dict_s():
    for result in (
        t.CallToolResult(content=[], structured_content=DOC),
        t.CallToolResult(content=[t.TextContent(text="é" * 10)], structured_content={"s": "é"}, _meta={"k": "v"}),
        t.CallToolResult(content=[t.TextContent(text="a"), t.TextContent(text="bc")]),
    ):
        dumped = dump_result(result)
        plain = orjson.loads(orjson.dumps(dumped))
        for size in (sent_chars, visible_chars, recall_chars):
            assert size(dumped) == size(plain)


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)
_spellings = st.sampled_from(
    [
        lambda v: orjson.dumps(v).decode(),
        lambda v: orjson.dumps(v, option=orjson.OPT_INDENT_2).decode(),
        lambda v: orjson.dumps(v, option=orjson.OPT_SORT_KEYS).decode(),
        json.dumps,
        lambda v: json.dumps(v, indent=2, ensure_ascii=False),
        lambda v: json.dumps(v, separators=(",", ":"), ensure_ascii=False) + "\n",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.text(max_size=4), _json, max_size=5) | st.lists(_json, max_size=5), _json, _spellings)
def test_any_spelling_of_any_value_decides_as_the_parse(structured, other, spell):
    decide(spell(structured), structured)
    decide(spell(other), structured)  # mostly a different value, sometimes an equal one


async def test_json_api_result_through_the_proxy(tmp_path):
    """The fixture's json_records over stdio: a cut text takes its repeated structuredContent with it;
    a 1 MB one is offloaded, both channels the stub, and the stored body is the server's result."""
    from support.proxy import proxy_session
    from support.servers import fixture_cmd

    async with proxy_session(["--ledger", str(tmp_path / "l.db"), "--", *fixture_cmd()]) as s:
        small = await s.call_tool("json_records", {"count": 3, "spelling": "python"})  # kept whole
        assert (
            small.structured_content == json.loads(small.content[0].text)
            and len(small.structured_content["records"]) == 3
        )
        for spelling in ("indent2", "python"):
            cut = await s.call_tool("json_records", {"count": 100, "spelling": spelling})
            assert cut.structured_content is None and len(cut.content[0].text) < 8_000
        big = await s.call_tool("json_records", {"count": 7_000})
        summary = big.structured_content["offloaded_result"]["summary"]
        # the index grows with the result (stub_index_share), the stub staying within half the client's limit
        assert summary == big.content[0].text and 10_000 < len(summary) < 51_000 and "7,000" in summary


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Tag(str):
    pass


class Counts(dict):
    pass


@dataclasses.dataclass
class Point:
    x: int
    y: tuple[int, int] = (1, 2)


def _nested(depth):
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


ODD_VALUES = [
    {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "zero": -0.0, "tiny": 5e-324, "huge": 1e308},
    {"tuple": (1, (2, 3)), "empty": ()},
    {"ints": [2**63 - 1, -(2**63), 2**64 - 1, 0, True, False, None]},
    {"big": 2**70},
    {"when": datetime.datetime(2026, 12, 1, 10, 0, tzinfo=datetime.UTC), "day": datetime.date(2026, 12, 1)},
    {"id": uuid.UUID(int=7), "money": decimal.Decimal("1.10"), "raw": b"\x00\x01", "set": {3}},
    {"enum": Colour.RED, "int_enum": Level.HIGH},
    {"point": Point(1)},
    {"model": t.TextContent(text="inner")},
    {1: "int key"},
    {Tag("sub"): Tag("class"), "counts": Counts(a=1), "items": ["é", "\u2028", "\x00"]},
    {"lone": "\ud800"},
    {"deep": _nested(300)},
    ["an", "array", {"of": [1.0, 1, 1.5]}],
    # nested, so the orjson round trip applies (a flat object is pydantic's)
    {"floats": [math.nan, math.inf, -0.0, 1.0, 2]},
    {"odd": [Colour.RED, Level.HIGH, uuid.UUID(int=7), (1, 2), True]},
    {"odd": [datetime.date(2026, 12, 1)]},
    {"odd": [decimal.Decimal("1.10")]},
    {"odd": [Tag("sub")]},
    {"odd": [{1: "int key"}]},
    {"big": [2**70]},
    {"one long string": ["x" * 10_000]},
    "a string",
    12,
    {},
]


def _reference_dump(result):
    body = result.model_dump(by_alias=True, mode="json", exclude_unset=True)
    for block, dumped in zip(result.content, body.get("content") or [], strict=True):
        dumped.setdefault("type", block.type)
    return body


def _same_dump(result):
    try:
        expected = _reference_dump(result)
    except Exception as err:  # pydantic cannot dump it: neither can dump_result
        with pytest.raises(type(err)):
            dump_result(result)
        return
    got = dump_result(result)
    assert list(got) == list(expected) and got == expected
    assert repr(dict(got)) == repr(expected)  # the same types inside: 1 stays 1, 1.0 stays 1.0, no tuple
    if got.get("structuredContent") is not None:
        try:
            raw = orjson.dumps(expected["structuredContent"])
        except orjson.JSONEncodeError:  # 2**70, a lone surrogate: the sizes raise as they did
            with pytest.raises(orjson.JSONEncodeError):
                _structured_chars(got)
        else:
            assert _structured_chars(got) == len(raw)


@pytest.mark.parametrize("value", ODD_VALUES, ids=range(len(ODD_VALUES)))
def test_dump_result_is_pydantic_s_dump(value):
    """The orjson round trip copies what pydantic would, key order and types included; anything else
    (dates, Decimal, bytes, sets, models, dataclasses, subclasses, int keys, 2**70, depth 300) is pydantic's."""
    for result in (
        t.CallToolResult(content=[t.TextContent(text="x")], structured_content=value),
        t.CallToolResult(content=[], structured_content=value, isError=True, _meta={"k": 1}),
        t.CallToolResult(content=[t.TextContent(text="x")]).model_copy(update={"structured_content": value}),
    ):
        _same_dump(result)


def test_dump_result_without_or_with_a_null_structured_content():
    _same_dump(t.CallToolResult(content=[t.TextContent(text="x")]))
    _same_dump(t.CallToolResult(content=[t.TextContent(text="x")], structured_content=None))
    _same_dump(
        t.CallToolResult(content=[t.TextContent(text="x")], structured_content=DOC).model_copy(
            update={"structured_content": None}
        )
    )
    unset = t.CallToolResult.model_construct(content=[t.TextContent(text="x")])
    unset.structured_content = DOC  # set, but not among the fields set: exclude_unset leaves it out
    object.__setattr__(unset, "__pydantic_fields_set__", {"content"})
    _same_dump(unset)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.text(max_size=4), _json, max_size=5) | st.lists(_json, max_size=5))
def test_dump_result_of_any_json_value_is_pydantic_s(value):
    _same_dump(t.CallToolResult(content=[t.TextContent(text="x")], structured_content=value))


# ---- a structuredContent parsed from JSON is read without a copy; the stub reads it instead of the text ----


def _from_wire(value, text="x"):
    """A result as the proxy gets it from a downstream server: parsed from the JSON it sent."""
    wire = orjson.dumps({"content": [{"type": "text", "text": text}], "structuredContent": value})
    return t.CallToolResult.model_validate(pydantic_core.from_json(wire), by_name=False)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.text(max_size=4), _json, max_size=5))
def test_a_structured_content_from_json_is_the_dump_without_a_copy(value):
    result = _from_wire(value)
    got = dump_result(result, structured_from_json=True)
    expected = _reference_dump(result)
    assert list(got) == list(expected) and repr(dict(got)) == repr(expected)
    assert got["structuredContent"] is result.structured_content  # read as it is
    assert sent_chars(got) == sent_chars(expected) and visible_chars(got) == visible_chars(expected)


def test_a_nan_from_json_stays_a_float_and_is_serialised_null():
    result = _from_wire({"rows": [{"v": 1.5}]})
    result.structured_content["rows"][0]["v"] = math.nan  # what the SDK's parser makes of a NaN on the wire
    got = dump_result(result, structured_from_json=True)
    assert math.isnan(got["structuredContent"]["rows"][0]["v"])
    assert orjson.dumps(got) == orjson.dumps(_reference_dump(result))  # the ledger's bytes: null either way


@pytest.mark.parametrize(
    ("spell", "spelled"),
    [
        (lambda v: orjson.dumps(v).decode(), True),
        (lambda v: "\n" + orjson.dumps(v, option=orjson.OPT_INDENT_2).decode() + "\n", True),
        (json.dumps, False),  # ", " separators: the stub parses the text
        (lambda v: json.dumps(v, indent=2), False),  # é escaped: parsed
    ],
    ids=["compact", "indent2", "python", "python-indent2"],
)
def test_the_stub_from_the_spelled_structured_content_is_the_stub_from_the_parse(tmp_path, spell, spelled):
    from offload_mcp.config import OffloadSettings
    from offload_mcp.policy.stub import build_stub
    from offload_mcp.shaping import CallInfo, StubPricer, build_shaper, text_spells_structured

    doc = {"records": [{**r, "id": 10_000 + i} for i, r in enumerate(RECORDS * 60)]}
    text = spell(doc)
    shaper = build_shaper(OffloadSettings(), tmp_path / "l.db")
    call = CallInfo("s", "list", "list", {}, structured_from_json=True)
    result = _from_wire(doc, text)
    body = dump_result(result, structured_from_json=True)
    pricer = StubPricer(shaper.settings, shaper.policy, call, result, body, gated=True)
    record = pricer.body_record()
    assert text_spells_structured(body) is spelled
    policy = shaper.settings.policy
    parsed_stub = build_stub(
        trm_id=record.trm_id,
        tool=call.tool,
        body=dict(body),
        chars=record.chars,
        chars_per_token=policy.chars_per_token,
        budget_tokens=policy.stub_tokens,
        recall_mode=shaper.settings.recall.mode,
        index_chars=shaper.policy.index_chars(record.chars),
    )
    assert pricer.stub_text(record) == parsed_stub
    assert "10000" in parsed_stub and "records" in parsed_stub


def test_whether_the_text_spells_it_is_decided_again_for_another_structured_content():
    from offload_mcp.shaping import text_spells_structured

    body = dump_result(
        t.CallToolResult(content=[t.TextContent(text=orjson.dumps(DOC).decode())], structured_content=DOC)
    )
    assert text_spells_structured(body) is True
    body["structuredContent"] = deep_change(DOC)  # the same length, one value changed
    assert text_spells_structured(body) is False
    body["content"] = [{"type": "text", "text": orjson.dumps(body["structuredContent"]).decode()}]
    assert text_spells_structured(body) is True
    body["structuredContent"] = {"big": 2**70}  # orjson cannot serialise it: the parse decides
    body["content"] = [{"type": "text", "text": '{"big":1180591620717411303424}'}]
    assert text_spells_structured(body) is False and structured_repeats_text(body) is True
