"""Data is recognised wherever it sits (issue 38, classes 1-4 and 8), through the real shaper, ledger and recall.

Each shape is generated with varied key spellings and thousands of rows (seeded: the same bytes every
run), and the needed value is drawn at random from the rows: what an agent passes to its next call.
"""

import random
import re
import uuid

import mcp_types as t
import orjson
import pytest
from hypothesis import given
from hypothesis import settings as settings_
from hypothesis import strategies as st

from offload_mcp.config import OffloadSettings
from offload_mcp.reducers.linecap import Linecap
from offload_mcp.reducers.settings import LinecapSettings
from offload_mcp.session import SessionMemory
from offload_mcp.shaping import CallInfo, build_shaper
from offload_mcp.text.data_view import data_in_line, decode_fields, find_data
from offload_mcp.tools import recall
from offload_mcp.tools.registry import ToolEnv
from support.rows import WORDS, rows, supabase

# (id key, how its values look): the spellings real servers use for the field that keys a row


@pytest.fixture
def shaper(tmp_path):
    return build_shaper(OffloadSettings(), tmp_path / "ledger.db")


def shape(shaper, text, structured=None):
    result = t.CallToolResult(content=[t.TextContent(text=text)], structured_content=structured)
    out, rep = shaper.shape_with_report(CallInfo("srv", "tool", "tool", {}), result)
    return out, rep


async def recall_call(shaper, **args):
    env = ToolEnv(settings=OffloadSettings(), ledger=shaper.ledger, session_id="s1", session=SessionMemory())
    res = await recall.handle(args, env)
    return res.is_error, res.content[0].text


def visible(out) -> str:
    """What Claude Code shows its model: structuredContent when there is one, else the text."""
    if out.structured_content is not None:
        return orjson.dumps(out.structured_content).decode()
    return "\n".join(block.text for block in out.content)


def json_path_of(stub: str) -> str:
    """The JSONPath example of the stub's last line (the call that brings a detail back)."""
    m = re.search(r'json_path="([^"]+)"', stub.rsplit("\n", 1)[-1])
    assert m, stub
    return m.group(1)


# ------------------------------------------------------------------ class 1: data on one line, small result


@pytest.mark.parametrize("seed", range(6))
def test_a_small_sql_result_in_a_prose_envelope_on_one_line_is_never_cut(shaper, seed):
    """A 2-4K result that is one JSON string literal (prose envelope, JSON rows inside) reaches the model
    whole: linecap cut it at 500 chars, hiding every row after the first few."""
    key, data = rows(seed, 12 + seed * 3)
    text = supabase(orjson.dumps(data).decode(), seed)
    assert "\n" not in text and len(text) > 1500
    out, rep = shape(shaper, text)
    seen = visible(out)
    assert rep.verdict != "offload"
    for row in data:
        assert orjson.dumps(row[key]).decode().strip('"') in seen, (key, row[key])


def test_a_line_that_is_data_wherever_it_sits_is_never_cut():
    """Linecap keeps a long line whole when it is data: JSON or a Python literal after a label, a JSON string
    of JSON, records flattened onto one line (`key: value` fields), a CSV table's rows."""
    r = random.Random(38)
    lines = []
    for seed in range(4):
        key, data = rows(seed, 30)
        lines.append("Result: " + orjson.dumps(data).decode())
        lines.append("rows = " + repr(data))
        lines.append("payload " + orjson.dumps(orjson.dumps(data).decode()).decode())
    flattened = "Simulations found: 39nn" + "".join(
        f"Simulation ID: SIM/{39000 + i}/1nModel Completion Time: 2025-05-{r.randrange(1, 29):02d}T00:16Zn  "
        f"Impacts: Location: Mars, Arrival: 2025-05-{r.randrange(1, 29):02d}T12:00Zn----nn"
        for i in range(8)
    )
    lines.append(flattened)
    prose = "word " * 200
    text = "\n".join(["start", "two", "three", prose, *lines, "end", "end two", "end three"])
    out = Linecap(LinecapSettings()).reduce(text, _ctx())
    assert out.text.splitlines()[3].endswith("chars]")  # prose is still capped
    kept = out.text.split("\n")
    for line in lines:
        assert line in kept, line[:80]
    for sep in (",", "\t"):
        header = sep.join(f"col_{c}" for c in range(80))
        table = [header] + [sep.join(str(r.randrange(10**6)) for _ in range(80)) for _ in range(40)]
        table.insert(20, "repeated row " * 60)
        table.insert(30, "repeated row " * 60)  # a text with a cut and a fold: linecap acts on it
        out = Linecap(LinecapSettings()).reduce("\n".join(table), _ctx())
        kept = out.text.split("\n")
        assert all(row in kept for row in table if sep in row)


def _ctx():
    from offload_mcp.reducers.base import ReduceContext

    return ReduceContext(tool="t", arguments={}, session=SessionMemory())


# ------------------------------------------------------------------ class 2: JSON inside JSON


@pytest.mark.parametrize("layers", [1, 2])
async def test_json_text_inside_a_field_or_a_string_is_described_indexed_and_read_by_path(shaper, layers):
    """`{"type": "text", "text": "<60K of JSON>"}` and a JSON string of a JSON string of rows: the stub
    describes and indexes the rows inside, and its json_path reads a row's value."""
    key, data = rows(40 + layers, 2500)
    inner = orjson.dumps(data).decode()
    for _ in range(layers - 1):
        inner = orjson.dumps(inner).decode()
    for text in (orjson.dumps({"type": "text", "text": inner}).decode(), orjson.dumps(inner).decode()):
        out, rep = shape(shaper, text)
        assert rep.verdict == "offload"
        stub = out.content[0].text
        assert f"array[2,500] of object{{{key}, name, status" in stub.replace("2500", "2,500"), stub
        assert "index of 2,500 items" in stub and orjson.dumps(data[0][key]).decode().strip('"') in stub
        pick = random.Random(layers).randrange(len(data))
        base = "$.text" if text.startswith("{") else "$"
        err, answer = await recall_call(shaper, mem_id=rep.trm_id, json_path=f"{base}[{pick}]{_seg(key)}")
        assert not err and "read decoded" in answer, answer
        assert answer.split("\n", 1)[1] == orjson.dumps(data[pick][key]).decode()
        err, page = await recall_call(shaper, mem_id=rep.trm_id, offset=0)
        data_part = page.split("\n", 1)[1]
        assert data_part and text.startswith(data_part)  # the stored bytes are the bytes sent


def _seg(key: str) -> str:
    return f".{key}" if re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", key) else f"['{key}']"


# ------------------------------------------------------------------ class 3: Python-repr rows


async def test_python_repr_rows_are_records_with_their_id_column(shaper):
    """`str()` of rows (postgres-mcp, sqlite servers): described as a Python literal of records, indexed by
    their id field, and json_path reads a row."""
    key, data = rows(4, 3000)  # part_num
    text = repr(data)
    out, rep = shape(shaper, text)
    stub = out.content[0].text
    assert "Python literal array[3000] of object{part_num, name" in stub, stub
    assert "index of 3,000 items at $" in stub and "part_num" in stub.split("head:")[0]
    pick = random.Random(3).randrange(len(data))
    err, answer = await recall_call(shaper, mem_id=rep.trm_id, json_path=f"$[{pick}].part_num")
    assert not err and "read decoded: Python literal" in answer
    assert answer.split("\n", 1)[1] == orjson.dumps(data[pick]["part_num"]).decode()


def driver_rows(seed: int, count: int) -> str:
    """`str()` of rows as psycopg / SQLAlchemy print them: values made by Decimal, datetime, UUID constructors."""
    r = random.Random(seed)
    out = []
    for i in range(count):
        out.append(
            f"{{'order_no': 'ORD-2026-{i:06d}', 'total': Decimal('{r.randrange(100, 10**6) / 100:.2f}'), "
            f"'created_at': datetime.datetime(2026, {r.randrange(1, 13)}, {r.randrange(1, 29)}, {r.randrange(24)}, 5), "
            f"'due': datetime.date(2026, 3, {r.randrange(1, 29)}), 'ref': UUID('{uuid.UUID(int=r.getrandbits(128))}'), "
            f"'host': IPv4Address('10.0.{i % 256}.{r.randrange(256)}'), "
            f"'seen': datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)}}"
        )
    return "[" + ", ".join(out) + "]"


async def test_python_repr_rows_with_driver_values_are_records(shaper):
    """psycopg rows hold `Decimal('2737.42')`, `datetime.datetime(...)`, `UUID('...')`: literal_eval refuses
    those calls and an 87K-char result was read as prose, its order numbers behind the stub. The allowed
    constructors are read as their str(); the rows are records indexed by their id, json_path reads one."""
    text = driver_rows(11, 1500)
    view = find_data(text)
    assert view is not None and view.syntax == "Python literal" and len(view.value) == 1500
    first = view.value[0]
    assert first["total"].count(".") == 1 and first["due"].startswith("2026-03-")
    assert first["seen"] == "2026-01-02 03:04:05+00:00" and uuid.UUID(first["ref"])
    out, rep = shape(shaper, text)
    stub = out.content[0].text
    assert "Python literal array[1500] of object{order_no, total, created_at" in stub, stub
    assert "index of 1,500 items at $" in stub and "ORD-2026-000000" in stub.split("head:")[0]
    err, answer = await recall_call(shaper, mem_id=rep.trm_id, json_path="$[700].order_no")
    assert not err and answer.split("\n", 1)[1] == '"ORD-2026-000700"'


@pytest.mark.parametrize(
    "text",
    [
        "[{'a': __import__('os').system('true')}]",
        "[{'a': open('/etc/passwd')}]",
        "[{'a': Decimal('2.5').__class__}]",
        "[{'a': datetime.datetime.now()}]",
        "[{'a': Decimal(*['1'])}]",
        "[{'a': datetime.timedelta(days=10**9)}]",
        "[{'a': UUID('not a uuid')}]",
        "[{'a': (lambda: 1)()}]",
    ],
)
def test_only_value_constructors_with_literal_arguments_are_read(text):
    """Anything else a Python text calls (or a constructor that refuses its arguments) is no data: nothing runs."""
    assert find_data(text) is None


def key_value_listing(seed: int, count: int, style: str) -> tuple[str, list[dict[str, str]]]:
    """Rows printed for a reader: mcp-alchemy's `N. row` blocks, a YAML-ish `- key: value` list, blocks between
    `---` lines, or blocks one after another with no separator at all."""
    r = random.Random(seed)
    data = [
        {
            "id": str(10 + i * 3),
            "job_id": str(uuid.UUID(int=r.getrandbits(128))),
            "pipeline": r.choice(["deploy", "build", "test"]),
            "status": "failed" if i in (count // 3, count // 2) else "success",
        }
        for i in range(count)
    ]
    blocks = []
    for n, row in enumerate(data, 1):
        fields = [f"{k}: {v}" for k, v in row.items()]
        if style == "numbered":
            blocks.append("\n".join([f"{n}. row", *fields]) + "\n")
        elif style == "yaml":
            blocks.append("\n".join(["- " + fields[0], *("  " + f for f in fields[1:])]))
        elif style == "dashes":
            blocks.append("\n".join(fields) + "\n---")
        else:
            blocks.append("\n".join(fields))
    return "\n".join(blocks), data


@pytest.mark.parametrize("style", ["numbered", "yaml", "dashes", "back_to_back"])
async def test_key_value_blocks_are_records_indexed_by_their_ids(shaper, style):
    """A SQL result printed as `key: value` blocks (69K chars of jobs) was prose to describe and had no index:
    the failed job's id sat behind the stub. Read as records, it is a table: ids first, value counts, rows
    that stand out, and json_path reads a row."""
    text, data = key_value_listing(5, 1500, style)
    view = find_data(text)
    assert view is not None and view.syntax == "key: value blocks" and view.value == data
    out, rep = shape(shaper, text, structured={"result": text})
    stub = out.content[0].text
    assert "key: value blocks array[1500] of object{id, job_id, pipeline, status}" in stub, stub
    index = stub.split("head:")[0]
    assert "index of 1,500 items at $.result" in index and "status (value counts): success 1,498, failed 2" in index
    failed = [row for row in data if row["status"] == "failed"]
    assert all(row["job_id"] in index for row in failed), index
    err, answer = await recall_call(shaper, mem_id=rep.trm_id, json_path="$.result[700].job_id")
    assert not err and answer.split("\n", 1)[1] == orjson.dumps(data[700]["job_id"]).decode()


@pytest.mark.parametrize(
    "text",
    [
        "\n".join(f"INFO: request {i} served\nINFO: cache hit" for i in range(50)),  # a log: a key repeats
        "host: db\nport: 5432\nuser: app\nname: prod\nsslmode: require\ntimeout: 30",  # one block: a config
        "\n\n".join(f"Note: item {i} was moved" for i in range(40)),  # one labelled line a paragraph
        "\n".join(f"Commit: {i:040x}\nAuthor: Ada\nDate: 2026-01-0{i % 9 + 1}\nMessage: fix {i}\n" for i in range(30)),
        "\n".join(f"{random.Random(i).choice(WORDS)}: step {i} took {i % 7} s, see below." for i in range(40)),
    ],
)
def test_lines_of_key_value_that_are_no_table_stay_text(text):
    """A log's `INFO:` lines, one config block, labelled paragraphs, a git log (indexed as a log) and prose
    with colons are not records."""
    view = find_data(text)
    assert view is None or view.syntax != "key: value blocks"


# ------------------------------------------------------------------ class 4: prose, then a JSON body


async def test_a_header_line_then_pretty_printed_json_is_json(shaper):
    key, data = rows(5, 1500)  # orderId
    text = f"Found {len(data)} orders (page 1 of 1):\n" + orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()
    out, rep = shape(shaper, text)
    stub = out.content[0].text
    assert "JSON array[1500] of object{orderId, name" in stub and "between lines of prose" in stub, stub
    assert "index of 1,500 items at $, one line each: " in stub  # which fields: issue 38 part B
    err, answer = await recall_call(shaper, mem_id=rep.trm_id, json_path=json_path_of(stub))
    assert not err and "matched nothing" not in answer and data[0]["orderId"] in answer


# ------------------------------------------------------------------ class 8: json_path over a text that is JSON


async def test_json_path_reads_inside_structured_contents_json_text(shaper):
    """server-filesystem's read_text_file of a JSON file: structuredContent `{content: "<the text>"}`.
    The stub's json_path reads values inside the file (it read the whole text back, escaped)."""
    key, data = rows(6, 2000)  # slug
    text = orjson.dumps({"items": data, "count": len(data)}, option=orjson.OPT_INDENT_2).decode()
    out, rep = shape(shaper, text, structured={"content": text})
    stub = out.content[0].text
    example = json_path_of(stub)
    assert example.startswith("$.content.items"), example
    err, answer = await recall_call(shaper, mem_id=rep.trm_id, json_path=example)
    assert not err and "read decoded: the JSON text of $.content" in answer
    assert data[0]["slug"] in answer and "\\n" not in answer.split("\n", 1)[1]
    pick = random.Random(8).randrange(len(data))
    err, answer = await recall_call(shaper, mem_id=rep.trm_id, json_path=f"$.content.items[{pick}].slug")
    assert answer.split("\n", 1)[1] == orjson.dumps(data[pick]["slug"]).decode()


# ------------------------------------------------------------------ bounds and stability


@pytest.mark.parametrize(
    "text",
    ["[" * 100_000, "(" * 100_000, "[{'a': " * 5000, '"' + "[" * 50_000 + '"', "Rows:\n" + "{" * 100_000, "just prose"],
)
def test_deep_or_broken_input_is_no_data_and_no_crash(text):
    assert find_data(text) is None
    assert not data_in_line(text, 10)


def test_the_same_text_gives_the_same_stub_bytes(tmp_path):
    key, data = rows(7, 1200)
    text = supabase(orjson.dumps(data).decode(), 7)
    stubs = []
    for n in range(2):
        shaper = build_shaper(OffloadSettings(), tmp_path / f"l{n}.db")
        out, _ = shape(shaper, text + " " * 120_000)
        stubs.append(out.content[0].text)
    assert stubs[0] == stubs[1] and "inside a JSON string literal between lines of prose" in stubs[0]


def test_decode_fields_leaves_the_original_untouched():
    inner = orjson.dumps([{"id": 1}, {"id": 2}]).decode()
    doc = {"a": {"b": inner}, "rows": [{"payload": inner}] * 20}
    decoded, paths = decode_fields(doc)
    assert paths == ("$.a.b",) and decoded["a"]["b"] == [{"id": 1}, {"id": 2}]
    assert doc["a"]["b"] == inner and decoded["rows"] is doc["rows"]  # rows of a long array are not each tried


# ------------------------------------------------------------------ every wrapping, generated


_WRAPPINGS = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 10_000),
        "count": st.integers(2, 300),
        "python": st.booleans(),
        "indent": st.booleans(),
        "layers": st.integers(0, 3),
        "envelope": st.sampled_from(["", "header", "tags", "label"]),
        "field": st.booleans(),
    }
)


def _wrap(case: dict) -> tuple[list[dict], str]:
    _, data = rows(case["seed"], case["count"])
    if case["python"]:
        body = repr(data)
    else:
        body = orjson.dumps(data, option=orjson.OPT_INDENT_2 if case["indent"] else 0).decode()
    tag = f"untrusted-data-{case['seed']:08x}"
    body = {
        "": body,
        "header": f"Found {len(data)} rows (page 1):\n{body}",
        "tags": f"Below is the result of the query.\n\n<{tag}>\n{body}\n</{tag}>\n\nUse it with care.",
        "label": f"Result: {body}",
    }[case["envelope"]]
    if case["field"] and not case["python"]:
        body = orjson.dumps({"type": "text", "text": body}).decode()
    for _ in range(case["layers"]):
        body = orjson.dumps(body).decode()
    return data, body


@given(_WRAPPINGS)
@settings_(max_examples=150, deadline=None)
def test_every_wrapping_of_rows_reads_back_as_the_rows(case):
    """Python literal or JSON, compact or indented, under a header, tags or a label, in a field, inside up to
    3 JSON strings: find_data reads the rows, linecap keeps them whole, and the same text gives the same view."""
    data, text = _wrap(case)
    view = find_data(text)
    assert view is not None, text[:200]
    value = view.value["text"] if case["field"] and not case["python"] else view.value
    assert value == data
    assert find_data(text) == view
    out = Linecap(LinecapSettings()).reduce("head\n" * 3 + text + "\ntail" * 3, _ctx())
    assert text in getattr(out, "text", text)


async def test_the_json_path_example_inside_decoded_text_goes_down_to_where_the_document_branches(shaper):
    """A GraphQL answer read as a file (`{content: "{\\"data\\": {\\"repository\\": ...}}"}`): the example read
    `$.content.data`, the whole document again; it now reads a slice of the records."""
    key, data = rows(9, 900)
    text = orjson.dumps({"data": {"repository": {"issues": {"nodes": data}}}}).decode()
    out, rep = shape(shaper, text, structured={"content": text})
    example = json_path_of(out.content[0].text)
    assert example == "$.content.data.repository.issues.nodes[0:20]"
    err, answer = await recall_call(shaper, mem_id=rep.trm_id, json_path=example)
    assert not err and "20 matches" in answer and orjson.dumps(data[19][key]).decode().strip('"') in answer
