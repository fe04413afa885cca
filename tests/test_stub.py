"""Stubs: deterministic bytes, within budget, useful on their own; outputSchema stand-ins."""

import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from offload_mcp.policy.describe import describe_json, describe_text
from offload_mcp.policy.stub import STUB_SCHEMA, admit_stub, build_stub, stub_object

GIT_LOG = "".join(
    f"commit {i:040x}\nAuthor: Dev <d@example.com>\nDate:   Fri Nov 17 08:32:20 2023 +0000\n\n    Change {i}\n\n"
    for i in range(3000)
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
        (
            orjson.dumps(ITEMS).decode(),
            "JSON object with 3 keys {items: array[3000] of object{id, name, price}; total: int; next: null}",
        ),
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
    other = subprocess.run(
        [sys.executable, "-c", script],
        input=orjson.dumps(body),
        capture_output=True,
        check=True,
        env={"PYTHONHASHSEED": "123", "PATH": ""},
    ).stdout.decode()
    assert other == first


def test_describe_helpers():
    assert describe_json([]) == "array[0]"
    assert describe_json([1, "a"]) == "array[2] of int|str"
    assert describe_text("").startswith("0 lines")


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
        (
            {
                "type": "object",
                "properties": {"items": {"type": "array", "minItems": 100}},
                "required": ["items"],
                "additionalProperties": False,
            },
            ITEMS | {},
        ),
        (
            {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"Entity": {"type": "object", "required": ["name"]}},
                "properties": {
                    "entities": {"type": "array", "items": {"$ref": "#/$defs/Entity"}},
                    "first": {"$ref": "#/properties/entities/items"},
                },
                "required": ["entities"],
            },
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


# ------------------------------------------------------------------ identifier index

COMMITS = [
    {
        "sha": f"{i:040x}",
        "node_id": f"C_kwDO{i:020x}",
        "commit": {"message": f"change {i}"},
        "author": {"login": f"dev{i % 7}"},
        "committer": {"login": "web-flow"},
        "html_url": f"https://github.com/acme/repo/commit/{i:040x}",
    }
    for i in range(300)
]


def test_index_json_array_lists_identifier_fields_in_order_within_budget():
    text = orjson.dumps(COMMITS).decode()
    out = stub(body_of(text), index_chars=20_000)
    assert "index of 300 items at $, one line each: sha; all shown" in out
    assert (
        "node_id" not in out.split("\nindex of", 1)[1].split("\n", 1)[0]
    )  # GraphQL ids and constant fields are left out
    assert "web-flow" not in out
    assert "html_url of every item starts https://github.com/acme/repo/commit/" in out
    # 7 logins over 300 commits: said once, as value counts
    assert "\n  author.login (value counts): dev0 43, dev1 43, dev2 43, dev3 43, dev4 43, dev5 43, dev6 42\n" in out
    assert f"\n  {0:040x}\n" in out and f"\n  {299:040x}\n" in out
    # When not every item fits even by its first field alone, the first ones are listed by that field
    # (more items covered than with every field), then the call that pages the rest.
    out = stub(body_of(text), index_chars=4000)
    assert "index of 300 items at $, one line each: sha; first" in out
    index = "index of" + out.split("\nindex of", 1)[1].split("\nhead:", 1)[0]
    assert len(index) <= 4000
    shown = sum(1 for line in index.splitlines() if len(line) == 42 and line.startswith("  "))
    assert 80 < shown < 300 and f"  {shown - 1:040x}\n" in index and f"{shown:040x}" not in index
    assert f"first {shown} shown" in out
    assert (
        f'{300 - shown} more items not shown: recall_tool_result(mem_id="trm_0123456789abcdef", json_path="$[{shown}:].sha") for their sha, '
        f'json_path="$[{shown}:{shown + 20}]" for whole items'
    ) in out


def test_index_is_deterministic_and_off_by_default():
    body = body_of(orjson.dumps(ITEMS).decode())
    assert stub(body, index_chars=5000) == stub(body, index_chars=5000)
    assert "index of" not in stub(body)
    out = stub(body, index_chars=5000)
    # The ids count up from 0, so they are stated once and the name says which row is which; 3,000 rows
    # do not fit 5,000 chars, and names alone would list less than half: the first rows with their price
    assert "index of 3,000 items at $.items, one line each: name, price; first" in out
    assert "\n  id of item k is 0 + k (it counts up in item order)\n  item 0 | 0.0\n  item 1 | 1.5\n" in out
    assert 'json_path="$.items[' in out and ':].name") for their name' in out


def test_index_all_shown_when_it_fits():
    items = [{"id": f"ORD-{i:05d}", "total": i} for i in range(20)]
    out = stub(body_of(orjson.dumps(items).decode()), index_chars=5000)
    assert "index of 20 items at $, one line each: id; all shown" in out
    assert all(f"ORD-{i:05d}" in out for i in range(20))


def test_index_python_repr_rows():
    rows = repr([{"id": i, "order_no": f"ORD-2025-{i:05d}", "status": "paid"} for i in range(500)])
    out = stub(body_of(rows), index_chars=15_000)
    assert "one line each: order_no; all shown" in out and "id of item k is 0 + k" in out
    assert all(f"\n  ORD-2025-{i:05d}\n" in out for i in range(500))
    shuffled = repr([{"id": i, "order_no": f"ORD-2025-{i:05d}", "status": "paid"} for i in range(500, 0, -1)])
    assert "one line each: id, order_no; all shown" in stub(body_of(shuffled), index_chars=15_000)
    out = stub(body_of(rows), index_chars=3000)
    assert "one line each: order_no; first" in out
    assert (
        'more items not shown: recall_tool_result(mem_id="trm_0123456789abcdef", json_path="$[' in out
    )  # recall's json_path reads a Python literal as the document it is (data_view)


def test_index_git_log_text():
    out = stub(body_of(GIT_LOG), index_chars=3000)
    # bare shas would list 60 of 3,000: the first commits with their dates and subjects instead
    assert "index of 3,000 commits, one line each: sha date subject (first 48 chars); first" in out
    assert f"\n  {0:040x} 2023-11-17 Change 0\n  {1:040x} 2023-11-17 Change 1\n" in out
    assert "more not shown, from line" in out and 'lines="' in out


def git_log_of(count: int) -> str:
    return "".join(
        f"commit {i:040x}\nAuthor: Barbara Liskov <b@example.com>\nDate:   Fri Nov 17 08:32:20 2023 +0000\n\n"
        f"    Refactor the pricing reconciliation job for warehouse {i}\n\n"
        for i in range(count)
    )


@pytest.mark.parametrize(
    ("commits", "level"),
    [
        (40, "sha date subject (author); all shown"),
        (60, "sha subject (first 32 chars); all shown"),
        (90, "sha subject (first 16 chars); all shown"),
        (130, "sha; all shown"),
        (200, "sha; first"),
    ],
)
def test_index_lists_every_record_at_the_richest_level_that_fits(commits, level):
    # Which commit an agent will pass on is not known: every sha listed beats subjects for the first few.
    out = stub(body_of(git_log_of(commits)), index_chars=6000)
    index = "index of" + out.split("\nindex of", 1)[1].split("\nhead:", 1)[0]
    assert len(index) <= 6000
    assert f"index of {commits} commits, one line each: {level}" in index
    listed = [i for i in range(commits) if f"  {i:040x}" in index]
    if "all shown" in level:
        assert len(listed) == commits
        if "(author)" not in level:  # the room left goes to the first commits in full
            assert f"{level}, the first " in index and f"\n  {0:040x} 2023-11-17 Refactor the pricing" in index
    else:
        assert listed == list(range(len(listed))) and len(listed) > 120
        assert f'lines="{6 * len(listed) + 1}-' in index  # pages from the first commit not listed
    if "(author)" in level:
        assert (
            f"{39:040x} 2023-11-17 Refactor the pricing reconciliation job for warehouse 39 (Barbara Liskov)" in index
        )


def test_index_error_lines_by_identifier_when_the_lines_do_not_fit():
    log = "".join(
        f"2026-01-05T09:{i // 60 % 60:02d}:{i % 60:02d}Z {'ERROR' if i % 10 == 0 else 'INFO'} [stock] "
        f"req=r-{i:012x} sync failed for SKU-{1000 + i} at WH-{i % 90 + 10} in {i % 900} ms\n"
        for i in range(1500)
    )
    out = stub(body_of(log), index_chars=6000)
    # every ERROR line by its identifiers; the room left goes to the first ones in full
    head = "index of the 150 ERROR lines of 1,500 log lines, one line each: its identifiers; all shown, the first "
    assert head in out
    richer = int(out.split(head, 1)[1].split(" ", 1)[0])
    assert 5 < richer < 150 and f"as the line\n  2026-01-05T09:00:00Z ERROR [stock] req=r-{0:012x} sync" in out
    assert f"\n  r-{10 * richer:012x} SKU-{1000 + 10 * richer} WH-{(10 * richer) % 90 + 10}\n" in out  # no timestamp
    assert all(f"r-{i:012x}" in out for i in range(0, 1500, 10))
    few = log.splitlines(keepends=True)[:200]
    out = stub(body_of("".join(few)), index_chars=6000)
    assert "index of the 20 ERROR lines of 200 log lines, one line each: the line; all shown" in out
    assert f"2026-01-05T09:00:10Z ERROR [stock] req=r-{10:012x} sync failed for SKU-1010 at WH-20 in 10 ms" in out


def test_index_of_structured_text_and_bound():
    log = "".join(
        f"2026-01-05T09:00:{i % 60:02d}Z {'ERROR' if i % 10 == 0 else 'INFO'} req=r-{i:08x} done\n" for i in range(5000)
    )
    body = body_of(log, structured={"content": log})
    out = stub(body, index_chars=2000)
    assert "index of the 500 ERROR lines of 5,000 log lines, one line each: its identifiers; first" in out
    assert "\n  r-0000000a\n" in out and "r-0000000b" not in out
    assert len(out) <= 2000 + 250 * 4 + 1


ARIA = "- table [ref=e1]:\n" + "".join(
    f'  - row "ORD-{i:05d} paid {i}.00 EUR" [ref=e{i + 2}]:\n    - cell "x" [ref=f{i}]\n' for i in range(400)
)
PLAYWRIGHT = (Path(__file__).parent / "fixtures" / "playwright_orders_snapshot.txt").read_text(encoding="utf-8")
"""A real `browser_snapshot` of @playwright/mcp 0.0.83 (Debian's Chromium 156, headless) on a local back-office
page: a search form, 150 order rows each with a link, a Refund and an `Edit ORD-...` button, and pagination."""
PAGE = "# Docs\n" + "".join(
    f"See [page {i}](https://docs.example.com/p/{i}) and https://docs.example.com/p/{i % 5}.\n" for i in range(300)
)


@pytest.mark.parametrize(
    "text",
    [orjson.dumps(COMMITS).decode(), GIT_LOG, ARIA, PLAYWRIGHT, CSV, PAGE, LISTING, SOURCE],
    ids=["json", "git", "aria", "playwright", "csv", "links", "listing", "source"],
)
def test_index_same_bytes_across_processes_and_within_budget(text):
    body = body_of(text)
    first = stub(body, index_chars=3000)
    assert "\nindex of " in first
    index = "index of" + first.split("\nindex of", 1)[1].split("\nhead:", 1)[0]
    assert len(index) <= 3000
    assert "shown" in index.split("\n", 1)[0]  # says what is shown ...
    assert (
        "more" in index.splitlines()[-1] and "recall_tool_result(mem_id=" in index.splitlines()[-1]
    )  # ... and how to get the rest
    script = (
        "import sys, orjson; from offload_mcp.policy.stub import build_stub;"
        "body = orjson.loads(sys.stdin.buffer.read());"
        f"sys.stdout.write(build_stub(trm_id='trm_0123456789abcdef', tool='git_log', body=body, chars={len(text)}, index_chars=3000))"
    )
    other = subprocess.run(
        [sys.executable, "-c", script],
        input=orjson.dumps(body),
        capture_output=True,
        check=True,
        env={"PYTHONHASHSEED": "7", "PATH": ""},
    ).stdout.decode()
    assert other == first


def test_index_aria_refs_and_links():
    out = stub(body_of(ARIA), index_chars=3000)
    assert "index of the page snapshot: its 400 row elements (ref name), one line each: names" in out
    assert "e2 ORD-00000 paid 0.00 EUR" in out
    out = stub(body_of(PAGE), index_chars=3000)
    assert "index of the 300 distinct URLs in the text" in out
    assert out.count("https://docs.example.com/p/1\n") == 1  # each URL once


def test_a_real_page_snapshot_lists_its_controls_page_and_links():
    out = stub(body_of(PLAYWRIGHT), index_chars=6000)
    assert "shape: 1,397 lines; looks like a web page snapshot (accessibility tree)\n" in out
    assert "\npage: http://127.0.0.1:8765/orders.html (Orders · Acme Back Office)\n" in out
    assert (
        "index of the page snapshot: its controls, 9 kinds (ref role name; a repeated kind: how many, named alike "
        "or the same), then its 151 table rows (cells, then the refs in each row), and its 4 links outside them "
        "(ref name), one line each: each row's identifying cell, then the refs; all shown, the first 20 as cells "
        "in full, then the role and ref of each link and control\n"
    ) in out
    for control in (
        "e12 searchbox Search orders",
        "e14 combobox Status",
        "e16 checkbox Only this month",  # `[checked]` before its ref
        "e17 textbox Customer email",
        "e18 button Search",
        "e33 button Refund (x150: e33, e41, e49, e57, …)",
        "e34 button Edit ORD-2025-00638 (x150 alike: e34, e42, e50, e58, …)",
        "e1228 button Previous page",
        "e1229 button Next page",
    ):
        assert f"\n  {control}\n" in out, control
    links = re.findall(r'- link "([^"]+)" \[ref=(e\d+)\]', PLAYWRIGHT)
    assert len(links) == 154
    assert all(f"\n  {ref} {name}\n" in out for name, ref in links[:4])  # the navigation's links, by ref
    for order, link in links[4:]:  # every order id, by its ref
        assert f"\n  {order} {link} " in out or f"\n  {order} | " in out and f"(link {link}, " in out, order
    for budget in (300, 700, 1500, 3000, 6000):
        index = new_index_of(PLAYWRIGHT, budget)
        assert len(index) <= budget and (index or budget < 400), budget  # 300: not even the head fits


def test_a_page_snapshot_table_lists_each_row_by_its_cells_and_the_refs_of_its_buttons():
    """Playwright writes a table row without a name (`- row [ref=e27]:`): which row it is (the order id) is
    in its cells and what an agent clicks in it (Refund) a few lines down. Each row's line holds both."""
    rows = re.findall(
        r'- row \[ref=e\d+\]:\n.*?- link "(ORD-[\d-]+)" \[ref=(e\d+)\].*?- button "Refund" \[ref=(e\d+)\]',
        PLAYWRIGHT,
        flags=re.S,
    )
    assert len(rows) == 150
    out = new_index_of(PLAYWRIGHT, 6000) + "\n"
    for order, link, refund in rows:
        assert re.search(rf"\n  {order}( \|[^\n]*\(link {link}, button {refund}, | {link} {refund} )", out), order
    # A frame's refs (`f2e5`), a YAML-quoted cell, text beside a button; the identifying cell is the one word
    # with a digit (the SKU), not the display name that holds one.
    table = "- table [ref=f2e1]:\n" + "".join(
        f"  - row [ref=f2e{10 * i}]:\n"
        f'    - cell "Bolt M{i}" [ref=f2e{10 * i + 1}]\n'
        f'    - cell "SKU-{1000 + i}" [ref=f2e{10 * i + 2}]\n'
        f"    - 'cell \"Due: 2026-01-{i % 28 + 1:02d}\" [ref=f2e{10 * i + 3}]'\n"
        f"    - cell [ref=f2e{10 * i + 4}]:\n"
        f"      - text: in stock\n"
        f'      - button "Add" [ref=f2e{10 * i + 5}]\n'
        for i in range(1, 120)
    )
    out = new_index_of(table, 3000) + "\n"
    assert "then its 119 table rows (cells, then the refs in each row)" in out
    assert "\n  Bolt M1 | SKU-1001 | Due: 2026-01-02 | in stock (button f2e15)\n" in out
    assert "\n  SKU-1042 f2e425\n" in out and "\n  SKU-1119 f2e1195\n" in out


def test_page_snapshot_controls_alone_are_indexed_and_capped_beside_records():
    form = "".join(f'- textbox "Field {chr(65 + i % 26)}{chr(65 + i // 26)}" [ref=e{i}]\n' for i in range(60))
    form += '- checkbox [disabled] [ref=s1e90]\n- button "Say \\"hi\\"" [ref=s1e91]\n'
    out = new_index_of(form, 6000)
    assert out.startswith("index of the page snapshot: its controls, 62 kinds (ref role name;")
    out += "\n"
    assert "\n  e0 textbox Field AA\n" in out and "\n  e59 textbox Field HC\n" in out  # no records: every control
    assert "\n  s1e90 checkbox\n" in out and '\n  s1e91 button Say \\"hi\\"\n' in out
    rows = "".join(f'- row "ORD-{i:05d} paid" [ref=e{100 + i}]\n' for i in range(30))
    out = new_index_of(form + rows, 6000) + "\n"
    assert "its controls, first 40 of 62 kinds (" in out and "then its 30 row elements (ref name)" in out
    assert "\n  e39 textbox Field NB\n" in out and "Field OB" not in out
    assert all(f"\n  e{100 + i} ORD-{i:05d} paid\n" in out for i in range(30))
    assert new_index_of("- generic [ref=e1]:\n  - text: hello\n" * 40, 6000) == ""  # nothing to act on or read


def test_shaper_stub_carries_index_within_client_limit():
    from offload_mcp.policy.settings import PolicySettings

    assert PolicySettings().stub_index_chars == 6000
    assert PolicySettings(stub_index_chars=0).stub_index_chars == 0


def test_index_never_exceeds_its_budget_at_any_level():
    for commits in range(1, 160, 3):
        for budget in (1500, 3000):
            index = new_index_of(git_log_of(commits), budget)
            assert len(index) <= budget, (commits, budget)
            if "all shown" in index.split("\n", 1)[0]:
                assert index.count("\n  ") == commits  # one line per commit, none dropped


def new_index_of(text: str, budget: int) -> str:
    from offload_mcp.policy.index import text_index

    return text_index(text, budget, "trm_0123456789abcdef")


def test_error_words_are_found_beside_letters_the_rest_of_the_log_lacks():
    """index/lines.py lines_holding skips a word only when the text lacks one of its letters: each word is still
    found in a log that otherwise has none of its capitals (the skip is a shortcut, not a filter)."""
    from offload_mcp.policy.index.lines import lines_holding
    from offload_mcp.policy.index.text_records import _ERROR_WORDS

    quiet = "".join(f"2026-11-29T16:00:{i % 60:02d}Z info request ok id={i:06d}\n" for i in range(300))
    assert lines_holding(quiet, _ERROR_WORDS) == []
    for word in _ERROR_WORDS:
        noisy = quiet + f"2026-11-29T16:01:00Z {word} in handler id=999999\n" + quiet
        assert lines_holding(noisy, _ERROR_WORDS) == [len(quiet)]


def _colour_pytest_log(tests: int, failing: set[int]) -> str:
    green, red, bold, reset = "\x1b[32m", "\x1b[31m", "\x1b[1m", "\x1b[0m"
    lines = [f"{bold}============================= test session starts =============================={reset}"]
    for i in range(tests):
        status = f"{red}FAILED{reset}" if i in failing else f"{green}PASSED{reset}"
        lines.append(f"tests/test_shop.py::test_order_{i} {status} {green}[{(i + 1) * 100 // tests:3d}%]{reset}")
    lines.append(f"{red}=========================== short test summary info ============================{reset}")
    lines += [f"{red}FAILED{reset} tests/test_shop.py::test_order_{i} - AssertionError" for i in sorted(failing)]
    passed = tests - len(failing)
    lines.append(f"{red}============ {len(failing)} failed, {passed} passed in 41.87s ============{reset}")
    return "\n".join(lines) + "\n"


def test_a_colour_test_log_is_indexed_by_its_failures_and_tally_without_escapes():
    # The demo's run_tests stub said "looks like prose / plain text", indexed nothing and showed ESC bytes
    # in its head: `\x1b[32mPASSED` holds no word PASSED, so the failed test sat behind the stub.
    log = _colour_pytest_log(600, {400})
    out = stub(body_of(log), index_chars=6000)
    assert "\x1b" not in out
    assert "shape: 604 lines; looks like a test log" in out
    assert "index of the 3 failure and result lines of 604 test log lines, one line each: the line; all shown" in out
    assert "\n  tests/test_shop.py::test_order_400 FAILED [ 66%]\n" in out
    assert "\n  FAILED tests/test_shop.py::test_order_400 - AssertionError\n" in out
    assert "\n  ============ 1 failed, 599 passed in 41.87s ============\n" in out
    assert "head:\n  ============================= test session starts ==" in out
    assert out == stub(body_of(log), index_chars=6000)  # same bytes


def test_a_test_log_index_pages_from_lines_of_the_stored_body():
    # Escapes are removed for reading, never line breaks: "from line N" must be line N of what was stored.
    failing = set(range(0, 3000, 7))
    log = _colour_pytest_log(3000, failing)
    out = stub(body_of(log), index_chars=2000)
    assert "\x1b" not in out
    more = re.search(r"  ([\d,]+) more not shown, from line ([\d,]+): recall_tool_result\(", out)
    assert more, out
    index = out.split("\nhead:", 1)[0]
    shown = [ln[2:] for ln in index.splitlines() if ln.startswith("  tests/test_shop.py::")]
    assert shown and int(more.group(1).replace(",", "")) == 2 * len(failing) + 1 - len(shown)
    first_hidden = int(more.group(2).replace(",", ""))
    stored_line = log.split("\n")[first_hidden - 1]
    assert "FAILED" in stored_line and f"test_order_{sorted(failing)[len(shown)]} " in stored_line


@pytest.mark.parametrize(
    "log,lines",
    [
        (  # unittest
            "test_a (t.T.test_a) ... ok\n" * 40
            + "test_b (t.T.test_b) ... FAIL\n\n"
            + "=" * 70
            + "\nFAIL: test_b (t.T.test_b)\n"
            + "-" * 70
            + "\nAssertionError: 1 != 2\n\nRan 41 tests in 0.019s\n\nFAILED (failures=1)\n",
            ["FAIL: test_b (t.T.test_b)", "Ran 41 tests in 0.019s", "FAILED (failures=1)"],
        ),
        (  # go test
            "=== RUN   TestOrder\n--- PASS: TestOrder (0.00s)\n" * 30
            + "=== RUN   TestRefund\n    refund_test.go:31: got 3, want 4\n--- FAIL: TestRefund (0.00s)\n"
            + "FAIL\nFAIL\tgithub.com/shop/billing\t0.012s\n",
            ["--- FAIL: TestRefund (0.00s)", "FAIL\tgithub.com/shop/billing\t0.012s"],
        ),
        (  # cargo
            "running 31 tests\n"
            + "".join(f"test orders::t{i} ... ok\n" for i in range(30))
            + "test refunds::partial ... FAILED\n\nfailures:\n    refunds::partial\n\n"
            + "test result: FAILED. 30 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n",
            ["test refunds::partial ... FAILED", "test result: FAILED. 30 passed; 1 failed"],
        ),
        (  # jest
            "PASS src/orders.test.js\n" * 20
            + "FAIL src/refunds.test.js\n  ● refunds › partial\n    expect(received).toBe(expected)\n"
            + "  ✕ partial (3 ms)\n\nTests:       1 failed, 60 passed, 61 total\nTime:        1.2 s\n",
            ["FAIL src/refunds.test.js", "✕ partial (3 ms)", "Tests:       1 failed, 60 passed, 61 total"],
        ),
    ],
)
def test_other_runners_failures_and_tallies_are_indexed(log, lines):
    out = stub(body_of(log), index_chars=6000)
    assert "looks like a test log" in out
    index = out.split("; all shown\n", 1)[1].split("\nhead:", 1)[0]
    for line in lines:
        assert line.strip() in index, (line, out)


def test_a_passing_run_is_indexed_by_its_tally_and_a_non_test_text_is_not():
    assert "index of the 1 failure and result lines of 3,001 test log lines" in stub(body_of(PYTEST), index_chars=6000)
    assert "==== 3000 passed in 12.3s ====" in stub(body_of(PYTEST), index_chars=6000)
    for text in (CSV, LISTING, SOURCE, "FAILED to connect\n" * 10 + "plain words\n" * 500):
        assert "failure and result lines" not in stub(body_of(text), index_chars=6000)


@pytest.mark.parametrize(
    "hostile",
    [
        "a::" * 2_000 + " FAIL",  # a first word of many `::`: the failure pattern backtracked cubically (250 s)
        "= " + "1 passed " * 30_000,  # a long last line: the tally pattern's two open spans, quadratic
        "FAIL x " * 200_000,  # many failure words on one line: a backward scan per hit, quadratic
    ],
)
def test_a_hostile_line_in_a_test_log_costs_what_its_length_does(hostile):
    import time

    log = "tests/test_shop.py::test_order PASSED\n" * 50 + hostile + "\n"
    started = time.perf_counter()
    out = stub(body_of(log), index_chars=6000)
    assert time.perf_counter() - started < 2.0  # linear: ~5 ms here; each of these took seconds to minutes
    assert "looks like a test log" in out


def test_a_crlf_unittest_log_is_a_test_log_as_its_lf_twin_is():
    log = "test_a (t.T.test_a) ... ok\n" * 40 + "FAIL: test_b (t.T)\n\nRan 41 tests in 0.01s\n\nFAILED (failures=1)\n"
    for text in (log, log.replace("\n", "\r\n")):
        out = stub(body_of(text), index_chars=6000)
        assert "looks like a test log" in out and "  FAIL: test_b (t.T)\n" in out and "  Ran 41 tests in 0.01s\n" in out


PYTHON_MODULE = (
    '"""A module."""\n\nimport os\n\n\nclass Ledger:\n    """Stores bodies."""\n\n'
    + "".join(f"    def method_{i}(self, key: str) -> int:\n        return {i}\n\n" for i in range(40))
    + "\nasync def open_ledger(path):\n    return Ledger()\n"
)
TS_MODULE = (
    "import { x } from './x';\n\n"
    "export interface Options {\n  size: number;\n}\n\n"
    "export async function fetchRows(opts: Options) {\n  return [];\n}\n\n"
    "export const parseRow = (line: string) => line.split(',');\n\n"
    "export default class RowStore {\n  private rows: string[] = [];\n}\n"
    "type RowId = string;\n" + "".join(f"const helper{i} = async (a) => a + {i};\n" for i in range(3))
)
GO_AND_RUST = (
    'package ledger\n\nimport "fmt"\n\ntype Store struct {\n\tpath string\n}\n\n'
    "func (s *Store) Put(key string) error {\n\treturn nil\n}\n\nfunc Open(path string) *Store {\n\treturn nil\n}\n"
    "pub(crate) async fn run(cfg: &Config) -> Result<()> {\n    Ok(())\n}\n\nimpl Display for Store {\n}\n"
)


@pytest.mark.parametrize(
    "source,expected",
    [
        (
            PYTHON_MODULE,
            ["6: class Ledger:", "9:     def method_0(self, key: str) -> int:", "130: async def open_ledger(path):"],
        ),
        (
            TS_MODULE,
            [
                "3: export interface Options {",
                "7: export async function fetchRows(opts: Options) {",
                "11: export const parseRow = (line: string) => line.split(',');",
                "13: export default class RowStore {",
                "16: type RowId = string;",
                "17: const helper0 = async (a) => a + 0;",
            ],
        ),
        (
            GO_AND_RUST,
            [
                "5: type Store struct {",
                "9: func (s *Store) Put(key string) error {",
                "13: func Open(path string) *Store {",
                "16: pub(crate) async fn run(cfg: &Config) -> Result<()> {",
                "20: impl Display for Store {",
            ],
        ),
    ],
    ids=["python", "typescript", "go-rust"],
)
def test_source_code_is_indexed_by_its_definitions_at_their_line_numbers(source, expected):
    """A source file read through a server (filesystem, GitHub) gets its table of contents: each definition
    at the line number recall's `lines=` takes, nesting as the code's own indentation."""
    index = new_index_of(source, 6000)
    assert index.startswith("index of ") and "definitions in" in index.split("\n", 1)[0], index
    entries = [line[2:] for line in index.splitlines()[1:]]
    for entry in expected:
        assert entry in entries, (entry, entries)
    lines = source.split("\n")
    for entry in entries:
        number, _, shown = entry.partition(": ")
        assert lines[int(number) - 1].strip().startswith(shown.strip().rstrip("…")), entry


def test_a_large_source_file_lists_every_definition_by_name_when_the_lines_do_not_fit():
    index = new_index_of(SOURCE, 6000)  # 3,000 one-line functions
    head, *entries = index.splitlines()
    assert "index of 3,000 definitions in 9,000 lines of source" in head
    assert entries[0] == "  1 f0" and entries[1] == "  4 f1"  # the most compact level: line and name
    assert "more not shown, from line" in entries[-1] and "recall_tool_result(" in entries[-1]
    assert len(index) <= 6000
    from offload_mcp.policy.textscan import DEFINITIONS_MAX_CHARS

    bundle = SOURCE * (DEFINITIONS_MAX_CHARS // len(SOURCE) + 1)  # generated or bundled code: no outline
    assert len(bundle) > DEFINITIONS_MAX_CHARS and "definitions in" not in new_index_of(bundle, 6000)


@pytest.mark.parametrize(
    "text",
    [
        "".join(f"The function of part {i} is described here, and its class too.\n" for i in range(300)),
        "".join(f"2026-11-29T16:00:{i % 60:02d}Z INFO def handler {i} ok\n" for i in range(500)),
        "def a():\n    pass\n\nclass B:\n    pass\n" + "x = 1\n" * 50,  # code, but two definitions
    ],
    ids=["prose", "log", "few-definitions"],
)
def test_text_that_is_not_source_or_defines_little_gets_no_outline(text):
    assert "definitions in" not in new_index_of(text, 6000)


@pytest.mark.parametrize(
    "hostile",
    [
        " " * 240_000 + "x",  # the indent gave its blanks back one by one: 44 ms before it was possessive
        "export " * 34_000,
        "const x = " + "(" * 240_000,
        "func (" + "a" * 240_000,
    ],
    ids=["blanks", "modifiers", "parens", "receiver"],
)
def test_a_hostile_line_in_source_code_costs_what_its_length_does(hostile):
    import time

    source = "def a():\n    pass\n\ndef b():\n    pass\n\ndef c():\n    pass\n" + hostile + "\n"
    started = time.perf_counter()
    index = new_index_of(source, 6000)
    assert time.perf_counter() - started < 2.0  # linear: ~4-6 ms here
    assert index.startswith("index of 3 definitions in")


def test_a_module_whose_first_lines_are_a_docstring_is_source_code_by_its_definitions():
    """The first 200 lines alone called ~40% of real Python modules prose (a long docstring, a licence) or
    markdown (`# ` comments); counted by their definitions they are source code and get the outline. A
    README whose examples sit in ``` fences stays what its lines say."""
    docstring = '"""' + "This module explains itself at length before any code.\n" * 300 + '"""\n\n'
    module = docstring + "".join(f"def step_{i:02d}(x):\n    return x + {i}\n\n" for i in range(60))
    out = stub(body_of(module), index_chars=6000)
    assert "looks like source code" in out and "index of 60 definitions in" in out
    assert "303: def step_00(x):" in out
    readme = "".join(f"```python\ndef example_{i}():\n    pass\n```\n\n" + "Some words.\n" * 6 for i in range(40))
    assert "source code" not in stub(body_of(readme), index_chars=6000)


def _git_diff(files: int) -> str:
    parts = []
    for f in range(files):
        path = f"src/pkg/module_{f:03d}.py"
        hunk = "".join(f"-old line {i}\n+new line {i}\n+added {i}\n context\n" for i in range(f % 5 + 1))
        parts.append(
            f"diff --git a/{path} b/{path}\nindex 1234567..89abcde 100644\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -1,{f % 5 + 1} +1,{f % 5 + 1} @@\n{hunk}"
        )
    return "".join(parts)


def test_a_diff_is_indexed_by_its_files_at_their_header_lines_with_their_counts():
    """git_diff of 40 commits (200K chars) was shown as `3,945 lines; looks like a diff / patch` over the first
    file's header: now its files, where each one's diff starts, and what it adds and removes (git's numstat)."""
    diff = _git_diff(120)
    index = new_index_of(diff, 6000)
    head, *entries = index.splitlines()
    assert head.startswith("index of the 120 files of the diff") and "all shown" in head
    lines = diff.split("\n")
    for f, entry in enumerate(entries):
        number, _, rest = entry.strip().partition(": ")
        path = f"src/pkg/module_{f:03d}.py"
        assert lines[int(number) - 1] == f"diff --git a/{path} b/{path}"
        assert rest == f"{path} (+{2 * (f % 5 + 1)} -{f % 5 + 1})", entry
    unified = "".join(
        f"--- a/f{i}.txt\t2026-01-01\n+++ b/f{i}.txt\t2026-01-02\n@@ -1 +1 @@\n-a\n+b\n+c\n" for i in range(50)
    )
    assert "\n  2: f0.txt (+2 -1)\n  8: f1.txt (+2 -1)\n" in new_index_of(unified, 6000)
    tricky = (  # an added line that starts "++ " and a removed one that starts "-- " are content, not headers
        "diff --git a/t.md b/t.md\n--- a/t.md\n+++ b/t.md\n@@ -1,2 +1,2 @@\n--- rule\n-x\n+++ title\n+y\n"
        + _git_diff(3)
    )
    assert "\n  1: t.md (+2 -2)\n" in new_index_of(tricky, 6000)
    many = new_index_of(_git_diff(3000), 6000)  # past the budget: line and path, then the call for the rest
    assert "\n  1 src/pkg/module_000.py\n" in many and "more not shown, from line" in many.splitlines()[-1]


def test_a_diff_of_long_hunks_is_a_diff_though_few_of_its_first_lines_are_headers():
    """mcp-server-git's git_diff of 7 files whose first is a 400-row CSV append: 4 header lines among the 200
    sampled, so the share rule called it prose and its stub had no index. Its lines are diff lines all the same."""
    rows = "".join(f"+ORD-2026-{i:05d},SKU-{i % 97},{i % 9},WH-{i % 40},picked\n" for i in range(400))
    diff = (
        "Diff with 72069ab07c7891536069a5f21cb198313af865cc:\n"
        "diff --git a/data/orders.csv b/data/orders.csv\nindex 150aab2..2f8eb8c 100644\n"
        "--- a/data/orders.csv\n+++ b/data/orders.csv\n@@ -263,3 +263,403 @@ ORD-2026-53474,SKU-9087\n"
        + rows
        + _git_diff(6)
    )
    assert describe_text(diff).endswith("; looks like a diff / patch")
    index = new_index_of(diff, 6000)
    assert index.startswith("index of the 7 files of the diff") and "\n  2: data/orders.csv (+400 -0)\n" in index
    prose = "# Notes\n\n```diff\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n```\n" + "Words about the change.\n" * 300
    assert "diff" not in describe_text(prose)  # a diff quoted in a document does not make it one


def test_one_commit_with_its_diff_is_indexed_by_its_files_and_a_log_of_several_by_its_commits():
    """`git show`: the head shows the one commit, so the index lists the files it changes (a 65K git_show
    said `index of 1 commit`). `git log -p` of several commits keeps the commit index."""
    commit = "commit {sha}\nAuthor: Dev <d@example.com>\nDate:   Fri Nov 17 08:32:20 2023 +0000\n\n    Change\n\n"
    show = commit.format(sha="a" * 40) + _git_diff(40)
    out = stub(body_of(show), index_chars=6000)
    assert "looks like git log (1 commit)" in out and "index of the 40 files of the diff" in out
    assert "\n  7: src/pkg/module_000.py (+2 -1)\n" in out
    log = commit.format(sha="a" * 40) + _git_diff(20) + commit.format(sha="b" * 40) + _git_diff(20)
    out = stub(body_of(log), index_chars=6000)
    assert "looks like git log (2 commits)" in out and "index of 2 commits" in out


def _markdown_doc(sections: int, links: int = 0) -> str:
    """A document as fetch servers and doc readers return it: headings over prose, fenced examples whose
    `# comments` are no headings, a setext title, front matter, and `links` URLs spread through it."""
    out = ["---\ntitle: Guide\nsection: api\n---\n", "Widget Guide\n============\n\nIntro words.\n\n"]
    for s in range(sections):
        out.append(f"## Class: `widget.Part{s}`\n\nWhat part {s} does, at length. " * 1 + "More words.\n" * 8 + "\n")
        out.append(f"### `part{s}.open(path[, options])`\n\n```sh\n# install part {s}\nnpm i part{s}\n```\n\n")
        if links and s % max(1, sections // links) == 0:
            out.append(f"See https://example.com/docs/part{s}/reference for more.\n\n")
    return "".join(out)


def test_a_document_is_indexed_by_its_headings_at_their_line_numbers():
    """A fetched page or read document gets its table of contents: every heading at the line number
    recall's `lines=` takes, `#` lines inside fences left out, an underlined title in, front matter out."""
    doc = _markdown_doc(30)
    index = new_index_of(doc, 6000)
    head, *entries = index.splitlines()
    assert head.startswith("index of the 61 headings in "), head
    lines = doc.split("\n")
    assert entries[0] == "  5: # Widget Guide" and lines[4] == "Widget Guide" and lines[5].startswith("===")
    for entry in entries:
        number, _, shown = entry.strip().partition(": ")
        hashes, _, title = shown.partition(" ")
        line = lines[int(number) - 1]
        assert line == f"{hashes} {title}" or (hashes == "#" and line == title), entry
    assert not any("install" in e for e in entries) and not any("title: Guide" in e for e in entries)
    assert "  10: ## Class: `widget.Part0`" in entries and "  21: ### `part0.open(path[, options])`" in entries


def test_a_long_document_shows_its_upper_levels_when_every_heading_does_not_fit():
    doc = _markdown_doc(400)  # 801 headings: the levels that fit, then a section is one lines= call away
    index = new_index_of(doc, 6000)
    head, *entries = index.splitlines()
    # one title over 400 sections: not the title alone, but the first sections and the call that pages on
    assert "headings of levels 1-2 of 801" in head and "(read a section with lines=)" in head, head
    assert len(index) <= 6000 and not any("###" in e for e in entries)
    assert "  10 Class: widget.Part0" in entries  # line and name: the most records in the budget
    assert "more not shown, from line" in entries[-1] and 'lines="' in entries[-1]
    flat = "".join(f"# Part {i}\n\nWords about part {i}.\n\n" for i in range(400))
    tiny = new_index_of(flat, 700)  # not even the top level fits: its first ones and the call that pages on
    assert tiny.startswith("index of the 400 headings in 1,600 lines") and len(tiny) <= 700
    assert "\n  1 Part 0\n" in tiny and "more not shown, from line" in tiny.splitlines()[-1]


def test_an_api_reference_lists_every_heading_by_name_when_titles_do_not_fit():
    """Node's stream.md has 151 headings, 72 of them `##### `readable.forEach(fn[, options])``-deep: at line and
    title only levels 1-4 fit, so an agent looking up `readable.forEach` had to recall first (doc reads: 3 of 40
    names behind a stub). By line and name (marks, arguments and backticks left out) all of them fit."""
    doc = "# Stream\n\n" + "".join(
        f"## Class: `stream.Part{s}`\n\nWords.\n\n"
        + "".join(f"##### `part{s}.method{m}(chunk[, encoding][, callback])`\n\nWhat it does.\n\n" for m in range(6))
        for s in range(25)
    )
    index = new_index_of(doc, 6000)
    head, *entries = index.splitlines()
    assert head.startswith("index of the 176 headings in "), head
    assert "one line each, at its line number: name (the heading without its marks, arguments and markup)" in head
    assert len(index) <= 6000 and all(f"part{s}.method{m}" in index for s in range(25) for m in range(6))
    lines = doc.split("\n")
    for entry in entries:
        number = int(entry.strip().split(" ", 1)[0].rstrip(":"))
        assert lines[number - 1].startswith("#"), entry  # each at its heading's line
    assert "  3: ## Class: `stream.Part0`" in entries  # the spare room: the first ones in full


@pytest.mark.parametrize(
    ("title", "name"),
    [
        ("`stream.pipeline(source[, ...transforms], destination[, options])`", "stream.pipeline"),
        ("Class: `stream.Readable`", "Class: stream.Readable"),
        ("`new Foo([a[, b]])`", "new Foo"),
        ("`fn(a(b), c)`", "fn"),
        ("[Overview](https://code.claude.com/docs/en/overview.md)", "Overview"),  # a docs map's headings
        ("Install (optional)", "Install (optional)"),  # no name before it: no argument list
        ("Step 1 [beta]", "Step 1 [beta]"),
        ("[]()", "[]()"),  # nothing would be left: the title
    ],
)
def test_a_heading_is_named_without_its_arguments_links_and_backticks(title, name):
    from offload_mcp.policy.index.document import _name_of

    assert _name_of(title) == name


def test_a_document_with_links_lists_both_its_outline_and_its_urls():
    """The outline says where to read, the URLs are what an agent fetches next: they share the budget."""
    doc = _markdown_doc(60, links=40)
    index = new_index_of(doc, 6000)
    assert len(index) <= 6000
    outline, _, urls = index.partition("\nindex of the ")
    assert outline.startswith("index of the ") and "headings" in outline.split("\n", 1)[0]
    assert urls.startswith("40 distinct URLs") or urls.startswith("60 distinct URLs"), urls[:80]
    assert "https://example.com/docs/part0/reference" in urls
    out = stub(body_of(doc), index_chars=6000)  # the stub carries both, and the same bytes each time
    assert "Class: widget.Part0" in out and "https://example.com/docs/part0/reference" in out
    assert out == stub(body_of(doc), index_chars=6000)
    # URLs over their share take the outline's leftover, and the outline leaves one: every heading by name,
    # none enriched, so all 60 URLs fit beside all 121 headings (enriched, the outline left room for 47).
    doc = _markdown_doc(60, links=60)
    heads = [line for line in new_index_of(doc, 6000).splitlines() if line.startswith("index of")]
    assert heads[0].startswith("index of the 121 headings") and heads[0].endswith("markup); all shown"), heads
    assert heads[1] == "index of the 60 distinct URLs in the text, one line each; all shown", heads


MDBOOK_PAGE = (Path(__file__).parent / "fixtures" / "mdbook_advanced_traits.html").read_text(encoding="utf-8")
"""A real HTML page as a fetch or file-reading tool returns it: The Rust Programming Language's "Advanced Traits"
chapter (mdBook, from rustup's offline docs; MIT/Apache-2.0), 61K chars in 943 lines."""


def test_an_html_page_is_indexed_by_its_headings_and_its_links_targets():
    """Its stub listed 4 absolute URLs (an SVG namespace, a font licence) and the `<head>`: now its sections,
    each at its line, and where its links lead (relative ones as written, in-page `#` anchors left out)."""
    out = stub(body_of(MDBOOK_PAGE), index_chars=6000)
    assert "shape: 943 lines; looks like HTML/XML\n" in out
    assert "index of the 8 headings in 943 lines, one line each, at its line number: heading; all shown\n" in out
    for line, heading in (
        (184, "## Advanced Traits"),
        (192, "### Defining Traits with Associated Types"),
        (390, "### Disambiguating Between Identically Named Methods"),
        (833, "### Implementing External Traits with the Newtype Pattern"),
    ):
        assert f"\n  {line}: {heading}\n" in out, heading
        assert heading.split(" ", 1)[1] in MDBOOK_PAGE.splitlines()[line - 1]  # at the heading's own line
    assert "index of the 9 distinct link targets in the page, one line each; all shown\n" in out
    for target in ("print.html", "ch10-02-traits.html#implementing-a-trait-on-a-type", "ch20-03-advanced-types.html"):
        assert f"\n  {target}\n" in out, target
    assert "#listing-20-13" not in out and "http://www.w3.org/2000/svg" not in out
    assert out == stub(body_of(MDBOOK_PAGE), index_chars=6000)
    for budget in (300, 700, 1500, 3000):
        assert len(new_index_of(MDBOOK_PAGE, budget)) <= budget, budget


def test_html_headings_are_read_without_tags_entities_and_permalinks():
    page = (
        "<!DOCTYPE html>\n<html><body>\n"
        + "".join(
            f'<H2 id="s{i}">Part&nbsp;{i} &amp; <code>Vec&lt;T&gt;</code> in C#<a class="headerlink" href="#s{i}">¶</a></H2>\n'
            f"<p>Text {i}, see <a href=\"/docs/part{i}.html\">part {i}</a> and <a href='https://example.com/{i}?a=1&amp;b=2'>it</a>.</p>\n"
            for i in range(30)
        )
        + "<h3>\n  Split\n  title\n</h3>\n<h4></h4>\n</body></html>\n"
    )
    index = new_index_of(page, 6000)
    assert "index of the 31 headings in 68 lines" in index, index
    assert "\n  3: ## Part 0 & Vec<T> in C#\n" in index and "\n  63: ### Split title\n" in index
    assert "\n  /docs/part29.html\n" in index and "\n  https://example.com/7?a=1&b=2\n" in index
    assert "¶" not in index and "#s1" not in index


def test_an_html_page_of_code_samples_is_a_page_not_source_code():
    """Rust By Example's pages are mostly `<pre>` code: 80 of 300 sampled rustup doc pages were called source
    code, their stubs listing the samples' `fn main` lines. An HTML page is its sections and links."""
    page = "<!DOCTYPE HTML>\n<html>\n<body>\n" + "".join(
        f'<h2 id="p{i}">Part {i}</h2>\n<p>See <a href="../part{i}.html">part {i}</a>.</p>\n<pre><code>'
        + "".join(f"fn step_{i}_{k}() {{\n    let x = {k};\n}}\n" for k in range(6))
        + "</code></pre>\n"
        for i in range(40)
    )
    out = stub(body_of(page), index_chars=6000)
    assert "looks like HTML/XML" in out and "index of the 40 headings" in out and "definitions" not in out
    assert "\n  ../part39.html\n" in out


@pytest.mark.parametrize(
    "page",
    [
        "<!DOCTYPE html>\n<html><body><h1>Only</h1><h2>two</h2>" + "<p>words</p>\n" * 2000 + "</body></html>",
        "<!DOCTYPE html>\n" + "<h1>unclosed " * 100_000,  # hostile: over 20,000 `<h` marks, not read one by one
        "<!DOCTYPE html>\n" + "<h2 " + "x" * 1_000_000,  # a stray heading tag: a bounded read
        "<!DOCTYPE html>\n" + '<a href="#top">top</a>\n' * 5000,  # in-page anchors only
    ],
    ids=["two-headings", "many-unclosed", "stray-tag", "anchors-only"],
)
def test_an_html_page_without_three_headings_or_links_gets_neither(page):
    index = new_index_of(page, 6000)
    assert "headings" not in index and "link targets" not in index


@pytest.mark.parametrize(
    "text",
    [
        # a script whose `# comments` sit over the code they explain
        "".join(f"# Step {i}: build part {i}\n# then check it\nmake part{i}\ncheck part{i}\n\n" for i in range(200)),
        # C with indented preprocessor directives
        "".join(f"#  define PART_{i} {i}\n#  ifdef USE_{i}\nint part_{i}(void);\n#  endif\n" for i in range(200)),
        # prose with two headings only
        "# Title\n\n" + "Words and more words.\n" * 500 + "\n## End\n\nBye.\n",
    ],
    ids=["script-comments", "c-preprocessor", "two-headings"],
)
def test_comments_and_directives_are_no_outline(text):
    assert "headings" not in new_index_of(text, 6000)


def test_markdown_whose_code_is_in_fences_is_a_document_not_source_code():
    """Node's API docs open with examples: the code share of their first lines called 13 of 155 sampled
    .md files source code, so their stubs listed the examples' definitions. Code that sits in fences
    only is a document's; a module with a fenced example in its docstring stays source code."""
    doc = "# Streams\n\n" + "".join(
        f"## `stream.part{i}()`\n\nExplains part {i}.\n\n```js\nconst part{i} = () => {{\n  return {i};\n}}\nfunction use{i}() {{\n}}\n```\n\n"
        for i in range(80)
    )
    out = stub(body_of(doc), index_chars=6000)
    assert "looks like source code" not in out and "headings" in out and "## `stream.part40()`" in out
    module = (
        'import os\nimport sys\nfrom typing import Any\n\n\nclass Config:\n    """Config.\n\n    ```python\n    c = Config()\n    ```\n    """\n\n'
        + "".join(f"    def method_{i}(self) -> int:\n        return {i}\n\n" for i in range(60))
    )
    assert "looks like source code" in stub(body_of(module), index_chars=6000)


def test_a_1mb_log_without_heading_marks_costs_the_document_finder_nothing_it_reads():
    """The 1 MB path: a log with no `#`, `=` or `-` is told by three memchr passes, not by str.find's ~0.7 ms/MB."""
    from offload_mcp.policy.index.document import _headings
    from offload_mcp.policy.textscan import TextScan

    log = "".join(f"line {i}: " + "x" * 60 + "\n" for i in range(15_000))
    assert _headings(TextScan(log)) is None
    assert _headings(TextScan(log.replace("x" * 60, "#" * 60))) is None  # `#` but never at a line start


def test_prose_is_searched_for_headings_only_when_its_first_lines_hold_one(monkeypatch):
    """A 1 MB log of `key=value` lines is prose to describe, and with `=` and `-` on every line the marks'
    searches read all of it: 1.0 of the 4.2 ms such an offload took (bench/peers/payload_server.py). Prose
    is searched when one of its first 200 lines is a heading or an underline; markdown whatever its first
    lines hold. Of 4,795 sampled files of 8K-400K chars, one lost its outline (a wheel's METADATA)."""
    from offload_mcp.policy.describe import text_kind
    from offload_mcp.policy.index import document
    from offload_mcp.policy.textscan import TextScan

    searched: list[tuple[str, ...]] = []
    positions = document._positions

    def spy(text, marks, start, room):
        searched.append(marks)
        return positions(text, marks, start, room)

    monkeypatch.setattr(document, "_positions", spy)
    log = "".join(
        f"{i:08d} INFO worker-{i % 7} processed batch {i % 1000:03d} in {i % 97} ms status=ok\n" for i in range(15_000)
    )
    assert text_kind(TextScan(log)) == "prose / plain text"
    assert document._headings(TextScan(log)) is None and searched == []
    sections = "".join(f"Part {i}\n=======\n\nWords about part {i}.\n\n" for i in range(10))
    late = "Words and more words.\n" * 300 + sections
    assert document._headings(TextScan(late)) is None and searched == []
    early = document._headings(TextScan("Guide\n=====\n\n" + late))
    assert early is not None and [h[2] for h in early] == ["Guide"] + [f"Part {i}" for i in range(10)]
    listed = "- an item of the list\n" * 300 + "".join(f"## Part {i}\n\nWords.\n\n" for i in range(10))
    assert text_kind(TextScan(listed)) == "markdown text"
    assert [h[2] for h in document._headings(TextScan(listed)) or []] == [f"Part {i}" for i in range(10)]


def _graphql_issues(count: int) -> dict:
    nodes = [
        {
            "id": f"I_kwDOA{i * 7919 % 10**8:08d}",
            "number": 5000 - i,
            "title": f"Crash {i} on load",
            "author": {"login": f"u{i % 9}"},
        }
        for i in range(count)
    ]
    return {
        "data": {"repository": {"issues": {"totalCount": count, "pageInfo": {"hasNextPage": False}, "nodes": nodes}}}
    }


def test_records_nested_in_an_envelope_are_indexed_at_their_path_and_page_by_it():
    """A GraphQL answer keeps its records under data.repository.issues.nodes: the stub said only
    `{data: object{repository}}`, so every issue number and id sat behind it. The index now finds the
    array down the envelope, and the call it gives for the rest reads back through recall's JSONPath."""
    import anyio

    from offload_mcp.tools.jsonpath_worker import evaluate

    doc = _graphql_issues(600)
    out = stub(body_of(orjson.dumps(doc).decode()), index_chars=6000)
    assert "index of 600 items at $.data.repository.issues.nodes, one line each: id" in out
    assert "\n  I_kwDOA00000000 | 5000" in out or "\n  I_kwDOA00000000\n" in out
    shown = int(re.search(r"; first (\d+) shown", out).group(1))
    page = re.search(r'json_path="(\$\.data\.repository\.issues\.nodes\[\d+:\]\.id)"', out).group(1)
    assert page == f"$.data.repository.issues.nodes[{shown}:].id"
    count, answer = anyio.run(lambda: evaluate(page, orjson.dumps(doc), time_limit_s=30))
    assert count == 600 - shown, answer[:200]
    first = answer.splitlines()[0]
    assert (
        first
        == f'$.data.repository.issues.nodes[{shown}].id = "{doc["data"]["repository"]["issues"]["nodes"][shown]["id"]}"'
    )
    # GraphQL's edges keep each record under `node` beside a cursor: the record's own ids are indexed.
    edges = {
        "data": {
            "search": {
                "edges": [
                    {"cursor": f"Y3Vy{i:08d}", "node": node}
                    for i, node in enumerate(doc["data"]["repository"]["issues"]["nodes"])
                ]
            }
        }
    }
    out = stub(body_of(orjson.dumps(edges).decode()), index_chars=6000)
    index = out.split("\nindex of", 1)[1].split("\nhead:", 1)[0]
    assert index.startswith(" 600 items at $.data.search.edges, one line each: node.id") and "Y3Vy" not in index
    assert (
        f"\n  {doc['data']['repository']['issues']['nodes'][7]['id']}" in out
        and 'json_path="$.data.search.edges[' in out
    )
    # A top-level array keeps the index, even beside a longer nested one; a map of many objects is no envelope.
    beside = {"items": [{"id": i} for i in range(3)], "meta": {"tags": [{"id": i} for i in range(50)]}}
    assert "index of 3 items at $.items" in stub(body_of(orjson.dumps(beside).decode()), index_chars=6000)
    wide = {f"k{i}": {"rows": [{"id": j} for j in range(3)]} for i in range(3000)}
    assert "index of" not in stub(body_of(orjson.dumps(wide).decode()), index_chars=6000)
    wide["items"] = [{"id": i} for i in range(5)]  # the top level is read whole, as before
    assert "index of 5 items at $.items" in stub(body_of(orjson.dumps(wide).decode()), index_chars=6000)


def test_a_markdown_table_is_indexed_by_its_first_column_without_its_delimiter_row():
    """SQL and spreadsheet servers often answer with a markdown table: it was described as a table but not
    indexed, so the order number an agent picked from its middle sat behind the stub."""
    rows = [f"| ORD-2025-{i:05d} | Customer {i % 97} | {i * 3.17:.2f} |" for i in range(300)]
    table = "\n".join(["| order_no | customer | total |", "| :--- | :---: | ---: |", *rows]) + "\n"
    index = new_index_of(table, 6000)
    head, *entries = index.splitlines()
    assert head.startswith("index of 300 rows, one line each: first column (order_no)"), head
    assert entries[0] == "  ORD-2025-00000" and "  ORD-2025-00150" in entries and not any("-" * 3 in e for e in entries)
    small = new_index_of(table, 1500)  # the rest is paged from the line the first one not shown sits on
    shown = [e for e in small.splitlines()[1:-1]]
    line = int(re.search(r"from line (\d+):", small).group(1))
    assert table.split("\n")[line - 1] == rows[len(shown)]


KUBECTL = "NAME                          READY   STATUS    RESTARTS      AGE\n" + "".join(
    f"web-{i * 7919 % 10**10:010x}-{i:05d}   1/1     Running   {i % 3} ({i}d ago)   {i % 90}d\n" for i in range(900)
)
PANDAS = "                  Open        High      Volume\nDate                                          \n" + "".join(
    f"2022-{1 + i // 28 % 12:02d}-{1 + i % 28:02d}  {100 + i:10.6f}  {101 + i:10.6f}  {10**7 + i}\n" for i in range(400)
)
PIP_LIST = (
    "Package            Version     Editable project location\n------------------ ----------- -------------------\n"
    + "".join(f"package-{i:04d}     {i}.0.{i % 7}\n" for i in range(300))
    + "offload-mcp        0.1.0       /work/main\n"
)
DOCKER_PS = "CONTAINER ID   IMAGE          COMMAND                  STATUS         PORTS     NAMES\n" + "".join(
    f'{i * 104729 % 16**12:012x}   nginx:1.{i}    "/docker-entrypoint.…"   Up {i} hours   {"80/tcp" if i % 2 else "      "}    web_{i}\n'
    for i in range(200)
)


@pytest.mark.parametrize(
    ("table", "first", "rows", "label"),
    [
        (KUBECTL, "web-0000000000-00000", 900, "NAME"),
        (PANDAS, "2022-01-01", 400, "Date"),  # the DataFrame's index, named on the line under the header
        (PIP_LIST, "package-0000", 301, "Package"),  # under a `----  ---` rule, beside an empty column
        (DOCKER_PS, "000000000000", 200, "CONTAINER ID"),  # an empty PORTS column on every other row
        ("\n".join("    " + ln for ln in KUBECTL.splitlines()), "web-0000000000-00000", 900, "NAME"),  # indented
        ("\n".join(PANDAS.splitlines()[:1] + PANDAS.splitlines()[2:]), "2022-01-01", 400, "unnamed"),  # no index name
    ],
    ids=["kubectl", "pandas", "pip-list", "docker-ps", "indented", "unnamed-index"],
)
def test_a_table_of_aligned_columns_is_described_and_indexed_by_its_first_column(table, first, rows, label):
    """`kubectl get`, `docker ps`, `pip list` and a DataFrame's `to_string()` align their columns with spaces: such
    a result was "prose / plain text" with a head and no index, so a pod name or date past its first lines sat
    behind the stub. Every row is counted and listed (none for the header, a rule or an index name line)."""
    out = stub(body_of(table), index_chars=60_000)
    assert "; looks like a table of aligned columns (" in out
    index = "index of" + out.split("\nindex of", 1)[1].split("\nhead:", 1)[0]
    head, *entries = index.splitlines()
    assert head == f"index of {rows:,} rows, one line each: first column ({label}); all shown"
    assert len(entries) == rows and entries[0] == f"  {first}"
    firsts = [line.strip().split("  ", 1)[0] for line in table.splitlines() if line.strip()]
    assert [e.strip() for e in entries] == firsts[-rows:]
    small = new_index_of(table, 1500)  # paged from the line of the first row not shown
    line = int(re.search(r"from line (\d+):", small).group(1))
    shown = small.count("\n  ") - 1
    assert table.split("\n")[line - 1].strip().split("  ", 1)[0] == firsts[-rows:][shown]


@pytest.mark.parametrize(
    "text",
    [
        "".join(f"src/pkg/mod_{i}.py:    def handler_{i}(self, request):\n" for i in range(200)),  # grep
        "".join(f"2026-11-29T16:00:{i % 60:02d}Z  INFO   request {i}  ok\n" for i in range(200)),  # a log
        "AUTHORS.rst  LICENSE  setup.py\n" + "CHANGES.md  docs/  src/\n" * 200,  # ls in columns
        "The result.  It holds rows.\n" + "Some prose here.  Two spaces after a stop.  Like typewriters.\n" * 200,
        "NAME  SIZE 2024\n" + "a  1\n" * 200,  # a header cell with a digit
    ],
    ids=["grep", "log", "ls", "prose", "digit-header"],
)
def test_text_with_double_spaces_is_no_aligned_table(text):
    assert "aligned columns" not in describe_text(text)
    assert not new_index_of(text, 6000).startswith("index of 200 rows")


@pytest.mark.parametrize(
    "hostile",
    ["# a\n\n" * 800_000, "Title\n===\n\n" * 400_000, "## h\n\n```\n# c\n```\n\n" * 200_000, "`" * 4_000_000],
    ids=["headings", "underlines", "fences", "backticks"],
)
def test_a_hostile_document_costs_what_its_length_does(hostile):
    """4 MB of `# a` lines took 2.4 s to list 800,000 "headings": past 20,000 candidate lines, no outline."""
    import time

    started = time.perf_counter()
    index = new_index_of(hostile, 6000)
    assert time.perf_counter() - started < 2.0  # ~0.01 s here
    assert "headings" not in index


def test_a_json_file_read_with_its_text_as_structured_content_is_indexed_by_its_records():
    """server-filesystem answers read_text_file with structuredContent {content: "<the text>"}: the index
    read that object, found no records, and a JSON file's rows had no index at all. structuredContent's
    JSON text is read decoded (data_view), by the index as by recall's json_path: its paths go inside it."""
    rows = [{"order_no": f"ORD-2025-{i:05d}", "total": i * 1.5} for i in range(2000)]
    text = orjson.dumps(rows).decode()
    out = stub(body_of(text, structured={"content": text}), index_chars=4000)
    assert "index of 2,000 items at $.content, one line each: order_no, total" in out
    assert "\n  ORD-2025-00000 | 0.0\n" in out
    assert 'json_path="$.content[' in out.split("\nhead:", 1)[0]


def test_an_envelope_key_jsonpath_cannot_spell_plainly_is_not_walked():
    """The index spells the path it shows by the JSONPath worker's own rule (jsonpath_keys): a key
    jsonpath-ng's lexer refuses unquoted (`données`) or reads as a word (`null`) is not walked, so no
    path shown fails to read back."""
    from jsonpath_ng.ext import parse

    rows = [{"id": f"ROW-{i:05d}"} for i in range(50)]
    for key in ("données", "null"):
        doc = {"data": {key: rows}}
        assert "index of" not in stub(body_of(orjson.dumps(doc).decode()), index_chars=6000)
    out = stub(body_of(orjson.dumps({"data": {"rows_1": rows}}).decode()), index_chars=6000)
    assert "index of 50 items at $.data.rows_1" in out
    assert len(parse("$.data.rows_1[3:].id").find({"data": {"rows_1": rows}})) == 47
