"""Which fields and rows a stub's index shows (issue 38, classes 5-7): identifiers before display names,
few-valued fields as value counts, rows that stand out listed whole; tables read by row as projections of
their key and figures; long git logs as sha, date and subject, with a paging call that reads on.

Generated records of varied shapes (key spellings, nesting, row counts from 10 to 50,000, a few anomalous
rows), built by rules that know nothing of the index's choices."""

import random
import re
import subprocess
import sys
from pathlib import Path

import anyio
import orjson
import pytest

from offload_mcp.policy.stub import build_stub
from offload_mcp.tools.jsonpath_worker import evaluate

TRM = "trm_0123456789abcdef"
BUDGET = 6000


def stub_of(text: str, budget: int = BUDGET) -> str:
    body = {"content": [{"type": "text", "text": text}]}
    return build_stub(trm_id=TRM, tool="t", body=body, chars=len(text), index_chars=budget)


def index_of(out: str) -> str:
    assert "\nindex of" in out, out[:600]
    return "index of" + out.split("\nindex of", 1)[1].split("\nhead:", 1)[0]


# ------------------------------------------------------------------ class 5: which fields, counts, standouts


def _key_value(spelling: str, rng: random.Random, i: int) -> str | int:
    """An identifier as servers spell it under that key: uuids, hex, skus, slugs, part numbers, numeric ids."""
    if spelling in ("uuid", "user.id"):
        return f"{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-4{rng.getrandbits(12):03x}-a{rng.getrandbits(12):03x}-{rng.getrandbits(48):012x}"
    if spelling == "_id":
        return f"{rng.getrandbits(96):024x}"
    if spelling == "sku":
        return f"SKU-{rng.randint(10, 99)}-{i:05d}"
    if spelling in ("slug", "handle"):
        return f"{rng.choice(['red', 'blue', 'tall'])}-{rng.choice(['brick', 'plate', 'tile'])}-{i}"
    if spelling == "part_num":
        return f"{3000 + i}{rng.choice(['', 'a', 'b', 'pr0001'])}"
    return 100_000 + i * 7 + rng.randint(0, 6)  # id, orderId: numeric, not counting up by one


def _records(spelling: str, rows: int, seed: int) -> tuple[list[dict], list[int]]:
    rng = random.Random(seed)
    bad = sorted(rng.sample(range(rows), 2))
    items = []
    for i in range(rows):
        key = _key_value(spelling, rng, i)
        item: dict = {"user": {"id": key, "name": f"User {i}"}} if spelling == "user.id" else {spelling: key}
        item["name"] = (
            f"{rng.choice(['Brick', 'Plate', 'Tile'])} {rng.randint(1, 8)} x {rng.randint(1, 8)} {rng.choice(['Red', 'Blue', 'Light Bluish Gray'])}"
        )
        item["status"] = "ok"
        item["qty"] = rng.randint(1, 500)
        items.append(item)
    for k in bad:
        items[k]["status"] = "failed"
        items[k]["error"] = f"upstream timeout after {rng.randint(10, 60)}s"
    return items, bad


def _key_of(item: dict, spelling: str) -> str:
    return str(item["user"]["id"] if spelling == "user.id" else item[spelling])


@pytest.mark.parametrize(
    ("spelling", "rows"),
    [
        ("id", 10),
        ("_id", 40),
        ("uuid", 2000),
        ("sku", 300),
        ("slug", 2000),
        ("part_num", 5000),
        ("orderId", 2000),
        ("handle", 700),  # no id-like name: recognised by its values, unique and slug-shaped
        ("user.id", 1200),
        ("uuid", 50_000),
    ],
)
def test_identifiers_come_first_few_values_are_counted_and_error_rows_are_listed_whole(spelling, rows):
    """A list of 2,000 items with 2 error items was indexed by 530 names and showed no sign of the errors:
    the key field now leads each row, the status is counted, and the error rows are in view, whole."""
    items, bad = _records(spelling, rows, seed=rows)
    text = orjson.dumps(items).decode()
    out = stub_of(text)
    index = index_of(out)
    assert len(index) <= BUDGET
    head = index.split("\n", 1)[0]
    assert re.search(rf"one line each: {re.escape(spelling)}\b", head), head  # the key first, never the name
    assert "\n  status (value counts): ok " in index and f"ok {rows - 2:,}, failed 2" in index
    for k in bad:  # the error rows: their key and their error in view, whatever their position
        key = _key_of(items[k], spelling)
        assert any(key in ln and items[k]["error"] in ln for ln in index.splitlines()) or rows < 20, key
    if rows >= 20:
        assert "items that stand out (error set; status failed), whole:" in index
    assert stub_of(text) == out  # byte-stable


def test_a_value_outside_the_rest_of_a_few_valued_field_marks_its_rows_without_an_error_field():
    rng = random.Random(7)
    items = [
        {"ticket": f"T-{i:05d}", "state": rng.choice(["open", "closed"]), "title": f"Issue about {i}"}
        for i in range(3000)
    ]
    items[2222]["state"] = "blocked"
    out = index_of(stub_of(orjson.dumps(items).decode()))
    assert "state (value counts): " in out and "blocked 1" in out
    assert '\n  item 2222: {"ticket":"T-02222","state":"blocked"' in out


# ------------------------------------------------------------------ class 6: tables read by row


def _prices(rows: int) -> list[dict]:
    rng = random.Random(rows)
    out, price = [], 100.0
    for i in range(rows):
        price = round(price * (1 + rng.uniform(-0.02, 0.02)), 2)
        day = f"{2000 + i // 336}-{i // 28 % 12 + 1:02d}-{i % 28 + 1:02d}"
        out.append(
            {
                "date": day,
                "open": price,
                "high": round(price * 1.01, 2),
                "close": price,
                "volume": rng.randint(10**5, 10**7),
            }
        )
    return out


def _orders(rows: int) -> list[dict]:
    rng = random.Random(rows + 1)
    return [
        {
            "orderNumber": f"WC-{50_000 + i}",
            "created_at": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T10:00:00Z",
            "customer": f"{rng.choice(['Ada', 'Alan', 'Grace'])} {rng.choice(['Lovelace', 'Turing', 'Hopper'])}",
            "total": round(rng.uniform(5, 900), 2),
            "status": rng.choice(["completed", "processing"]),
        }
        for i in range(rows)
    ]


def _shop_orders(rows: int) -> dict:
    """A shop API's orders: numeric ids not in step, order numbers and totals sent as text, under a key."""
    rng = random.Random(rows + 3)
    return {
        "orders": [
            {
                "id": 7000 + 3 * i + rng.randint(0, 2),
                "number": str(5000 + i),
                "date_created": f"2025-03-{rng.randint(1, 28):02d}T09:30:00",
                "total": f"{rng.uniform(3, 400):.2f}",
                "currency": "EUR",
                "status": rng.choice(["completed", "processing", "on-hold"]),
            }
            for i in range(rows)
        ]
    }


def _videos(rows: int) -> dict:
    rng = random.Random(rows + 2)
    return {
        "kind": "youtube#searchListResponse",
        "items": [
            {
                "videoId": "".join(
                    rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") for _ in range(11)
                ),
                "title": f"Episode {i}: {rng.choice(['cooking', 'travel', 'tools'])} with friends",
                "publishedAt": f"2024-{i % 12 + 1:02d}-{i % 28 + 1:02d}T12:00:00Z",
                "viewCount": rng.randint(100, 10**6),
            }
            for i in range(rows)
        ],
    }


def _rows_of(doc):
    return next(iter(v for v in doc.values() if isinstance(v, list))) if isinstance(doc, dict) else doc


@pytest.mark.parametrize(
    ("make", "key", "figure", "rows"),
    [
        (_prices, "date", "close", 60),
        (_prices, "date", "close", 1000),
        (_orders, "orderNumber", "total", 40),
        (_orders, "orderNumber", "total", 20_000),
        (_shop_orders, "id", "total", 50),
        (_shop_orders, "id", "total", 900),
        (_videos, "videoId", "publishedAt", 80),
        (_videos, "videoId", "publishedAt", 3000),
    ],
    ids=["prices-60", "prices-1000", "orders-40", "orders-20000", "shop-50", "shop-900", "videos-80", "videos-3000"],
)
def test_a_table_read_by_row_is_a_projection_of_its_key_and_figures(make, key, figure, rows):
    """Daily prices by date, orders with dates and totals, videos with dates: each row's key with its
    figures on one line, every row when they fit; else as many whole projected rows as fit, and a
    json_path that really returns the next rows."""
    doc = make(rows)
    records = _rows_of(doc)
    text = orjson.dumps(doc).decode()
    index = index_of(stub_of(text))
    assert len(index) <= BUDGET
    head = index.split("\n", 1)[0]
    assert f"one line each: {key}" in head and figure in head.split(";", 1)[0], head
    lines = {ln.split(" | ", 1)[0].strip(): ln for ln in index.splitlines() if " | " in ln}
    listed = [r for r in records if str(r[key]) in lines]
    for r in listed:  # the key and the figure on one line
        assert str(r[figure]) in lines[str(r[key])]
    if "all shown" in head:
        assert len(listed) == rows
        return
    shown = int(re.search(r"; first ([\d,]+) shown", head).group(1).replace(",", ""))
    assert listed == records[:shown] and shown >= 40
    path = re.search(r'json_path="(\$[^"]*\[\d+:\d+\])" for whole items', index).group(1)
    count, answer = anyio.run(lambda: evaluate(path, orjson.dumps(doc), time_limit_s=30))
    assert count == 20
    first = answer.splitlines()[0]
    assert f"[{shown}] = " in first and orjson.dumps(records[shown][key]).decode() in first


def _daily_map(days: int) -> dict:
    """Daily prices keyed by date under a key no plain JSONPath name spells, figures sent as text."""
    rng = random.Random(days)
    series, price = {}, 100.0
    for i in range(days):
        price *= 1 + rng.uniform(-0.02, 0.02)
        day = f"{2020 + i // 336}-{i // 28 % 12 + 1:02d}-{i % 28 + 1:02d}"
        series[day] = {
            "1. open": f"{price:.4f}",
            "4. close": f"{price * 1.001:.4f}",
            "5. volume": str(rng.randint(10**6, 10**8)),
        }
    return {"Meta Data": {"2. Symbol": "IBM"}, "Time Series (Daily)": series}


def _two_id_rows(rows: int, seed: int, figure: bool) -> list[dict]:
    """Parts keyed by a sku and by a part number that is no function of it (3613px69 beside BRK-3613)."""
    rng = random.Random(seed)
    out = []
    for i in range(rows):
        row = {
            "sku": f"BRK-{3001 + i}",
            "part_num": f"{3001 + i}{rng.choice(('px', 'b', 'c', 'pr'))}{rng.randrange(100)}",
        }
        row["name"] = f"Brick {rng.randint(1, 4)} x {rng.randint(1, 8)}"
        if figure:
            row["stock"] = rng.randint(0, 5000)
        out.append(row)
    return out


@pytest.mark.parametrize("figure", [True, False])
@pytest.mark.parametrize("rows", [400, 500])
def test_rows_keyed_by_two_identifiers_show_both_when_that_shows_more_identifiers(rows, figure):
    """Every sku fits the budget, every sku with its part number does not. The agent may pass on either: the
    rows that fit with both identifiers are more identifiers shown than every sku alone (a table's and a
    listing's alike), so both are shown for as many rows as fit, and the rest are paged."""
    data = _two_id_rows(rows, rows, figure)
    index = index_of(stub_of(orjson.dumps(data).decode()))
    head = index.split("\n", 1)[0]
    assert head.startswith(f"index of {rows:,} items at $, one line each: sku, part_num"), head
    shown = [row for row in data if f"{row['sku']} | {row['part_num']}" in index]
    assert len(shown) * 2 > rows, (len(shown), head)
    assert "more items not shown" in index


def test_rows_keyed_by_two_identifiers_keep_every_row_when_both_cost_more_rows_than_they_add():
    """When the second identifier is long (a uuid beside a short id), the rows that fit with both are fewer than
    half: every row's first identifier is shown, as before."""
    rng = random.Random(3)
    data = [{"id": f"J{i}", "job_uuid": f"{rng.getrandbits(128):032x}", "name": f"job {i} run"} for i in range(800)]
    index = index_of(stub_of(orjson.dumps(data).decode()))
    first_cells = {line.strip().split(" | ")[0] for line in index.split("\n")[1:]}
    assert "; all shown" in index.split("\n", 1)[0] and first_cells >= {row["id"] for row in data}


@pytest.mark.parametrize("days", [30, 1000])
def test_a_map_of_records_is_indexed_by_its_keys_with_their_figures_and_pages_by_key(days):
    """Records keyed by date (or SKU) in an object, not an array, got no index at all."""
    doc = _daily_map(days)
    series = doc["Time Series (Daily)"]
    index = index_of(stub_of(orjson.dumps(doc).decode()))
    assert len(index) <= BUDGET
    head = index.split("\n", 1)[0]
    assert f"index of {days:,} entries at $['Time Series (Daily)'], one line each: (key), 1. open, 4. close" in head
    listed = [ln.strip() for ln in index.splitlines()[1:] if " | " in ln]
    days_listed = [ln.split(" | ", 1)[0] for ln in listed]
    assert days_listed == list(series)[: len(listed)] and len(listed) >= 30 if days > 30 else len(listed) == 30
    first = next(iter(series))
    assert listed[0].startswith(f"{first} | {series[first]['1. open']} | {series[first]['4. close']}")
    if days == 30:
        assert "all shown" in head
        return
    path = re.search(r'json_path="([^"]+)"\) for the next one', index).group(1)
    nxt = list(series)[len(listed)]
    assert path == f"$['Time Series (Daily)']['{nxt}']"
    count, answer = anyio.run(lambda: evaluate(path, orjson.dumps(doc), time_limit_s=30))
    assert count == 1 and orjson.loads(answer) == series[nxt]


def test_a_map_of_products_keyed_by_sku_lists_every_key():
    products = {
        f"SKU-{i:05d}": {"title": f"Brick {i}", "price": round(1 + i * 0.37, 2), "stock": i % 40} for i in range(120)
    }
    index = index_of(stub_of(orjson.dumps(products).decode()))
    assert "index of 120 entries at $, one line each: (key), price, stock" in index
    assert all(f"\n  SKU-{i:05d} | {products[f'SKU-{i:05d}']['price']}" in index for i in range(120))


@pytest.mark.parametrize("rows", [60, 2000, 30_000])
def test_a_figure_far_outside_the_rest_marks_its_row_and_a_usual_table_has_none(rows):
    doc = _orders(rows)
    assert "stand out" not in index_of(stub_of(orjson.dumps(doc).decode()))
    prices = _prices(rows)
    assert "stand out" not in index_of(stub_of(orjson.dumps(prices).decode()))  # a drifting series is no outlier
    k = rows * 2 // 3
    doc[k]["total"] = 250_000.0
    index = index_of(stub_of(orjson.dumps(doc).decode()))
    assert "\n  1 item that stands out (total far outside the rest), whole:" in index
    assert f'\n  item {k}: {{"orderNumber":"{doc[k]["orderNumber"]}"' in index and "250000.0" in index


# ------------------------------------------------------------------ class 7: long git logs


def _git_log(commits: int, style: str, seed: int) -> str:
    rng = random.Random(seed)
    verbs = ["Fix", "Add", "Refactor", "Document", "Speed up"]
    things = ["stock sync", "price rounding in the quarterly report", "webhook retries", "SKU lookup"]
    out = []
    for i in range(commits):
        sha = f"{rng.getrandbits(160):040x}"
        subject = f"{rng.choice(verbs)} {rng.choice(things)} (#{1000 - i})"
        if style == "mcp-server-git":
            out.append(
                f"Commit: {sha}\nAuthor: Dev {i % 9}\nDate: 2026-{i % 12 + 1:02d}-{i % 28 + 1:02d} 10:00:00+00:00\nMessage: {subject}\n\n"
            )
        else:
            out.append(
                f"commit {sha}\nAuthor: Dev {i % 9} <dev{i % 9}@example.com>\n"
                f"Date:   Fri Nov {i % 28 + 1} 08:32:20 2023 +0000\n\n    {subject}\n\n    Body line.\n\n"
            )
    return ("Commit history:\n" if style == "mcp-server-git" else "") + "".join(out)


REPO = Path(__file__).resolve().parents[1]


def _repo_log() -> str:
    """This repository's own history up to a fixed commit: 545 real commits."""
    return subprocess.run(
        ["git", "log", "-n", "545", "948b2eccb3a9793527b84bbd1eab9f6e66fb3004"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    ).stdout


@pytest.mark.parametrize(
    ("style", "commits"),
    [("git", 545), ("mcp-server-git", 545), ("git", 3000), ("mcp-server-git", 1200), ("repo", 545)],
)
def test_a_long_git_log_lists_fewer_commits_by_sha_date_and_subject_and_pages_the_rest(style, commits):
    """545 commits listed 134 bare shas: which commit is which was not said. When bare shas would list
    less than half of the log, the first commits come with their date and subject, and the lines= call
    reads on from the first commit not listed."""
    text = _repo_log() if style == "repo" else _git_log(commits, style, seed=commits)
    index = index_of(stub_of(text))
    assert len(index) <= BUDGET
    assert f"index of {commits:,} commits, one line each: sha date subject (first 48 chars); first " in index
    entries = [ln[2:] for ln in index.splitlines()[1:-1]]
    shas = re.findall(r"^(?:commit|Commit:) ([0-9a-f]{40})", text, re.M)
    assert len(entries) >= 40 and [e[:40] for e in entries] == shas[: len(entries)]
    for entry in entries:  # sha, a date, a subject
        assert re.fullmatch(r"[0-9a-f]{40} \d{4}-\d{2}-\d{2} \S.*", entry), entry
    subjects = re.findall(r"^(?:Message: |    )(\S.*)$", text, re.M)
    assert subjects[0][:40] in entries[0]
    first, last = map(int, re.search(r'lines="(\d+)-(\d+)"', index.splitlines()[-1]).groups())
    lines = text.split("\n")
    assert re.match(rf"(?:commit|Commit:) {shas[len(entries)]}", lines[first - 1])
    assert last > first


def test_a_git_log_whose_bare_shas_cover_most_commits_keeps_them():
    """A log of 200 commits: bare shas list 134 of them, more than half: coverage wins."""
    index = index_of(stub_of(_git_log(200, "mcp-server-git", seed=3)))
    assert "index of 200 commits, one line each: sha; first 1" in index


def _mixed_labels(rows: int) -> list[dict]:
    """Records whose few-valued fields are strings and lists of labels, in an order set by hashing nothing."""
    rng = random.Random(rows)
    items = [
        {
            "key": f"K-{i:05d}",
            "state": rng.choice(["open", "closed", "merged"]),
            "labels": rng.sample(["bug", "ui", "docs", "perf"], 2),
            "size": rng.randint(1, 90),
        }
        for i in range(rows)
    ]
    items[rows // 3]["error"] = "flaky"
    items[rows // 2]["size"] = 10**6
    return items


@pytest.mark.parametrize(
    "doc",
    [_records("sku", 2000, seed=5)[0], _mixed_labels(3000), _daily_map(400), _shop_orders(700)],
    ids=["errors", "labels", "map", "shop"],
)
def test_the_index_is_the_same_bytes_in_another_process_with_another_hash_seed(doc):
    text = orjson.dumps(doc).decode()
    first = stub_of(text)
    assert "\nindex of" in first
    script = (
        "import sys; from offload_mcp.policy.stub import build_stub; text = sys.stdin.read();"
        "body = {'content': [{'type': 'text', 'text': text}]};"
        f"sys.stdout.write(build_stub(trm_id='{TRM}', tool='t', body=body, chars=len(text), index_chars={BUDGET}))"
    )
    for seed in ("1", "2"):
        other = subprocess.run(
            [sys.executable, "-c", script],
            input=text,
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        ).stdout
        assert other == first


def test_labels_are_counted_one_by_one_and_a_number_far_outside_marks_its_row_in_any_records():
    items = _mixed_labels(3000)
    index = index_of(stub_of(orjson.dumps(items).decode()))
    assert "\n  labels (value counts): ui 1,540, bug 1,534, perf 1,471, docs 1,455\n" in index
    assert "\n  2 items that stand out (error set; size far outside the rest), whole:\n" in index
    assert '\n  item 1500: {"key":"K-01500",' in index and '"size":1000000}' in index


def test_label_objects_are_counted_by_their_names():
    """GitHub's labels are objects (`{"id", "name": "bug", "color"}`): counted by name, as a list of strings is."""
    rng = random.Random(4)
    issues = [
        {
            "id": 9_000_000 + 13 * i,
            "number": 5000 - i,
            "title": f"Stock drifts in WH-{i}",
            "labels": [{"id": 7, "name": name, "color": "d73a4a"} for name in rng.sample(["bug", "p1", "sync"], 1)],
            "user": {"login": f"dev{i % 4}", "id": i % 4},
            "body": "x " * 40,
            "milestone": None,
            "comments": rng.randint(0, 9),
            "reactions": {"total_count": 0},
        }
        for i in range(400)
    ]
    index = index_of(stub_of(orjson.dumps(issues).decode()))
    assert re.search(r"\n  labels \(value counts\): (bug|p1|sync) \d+, (bug|p1|sync) \d+, (bug|p1|sync) \d+\n", index)
    # two identifiers (id, number): both for the rows that fit, more identifiers than every id alone
    assert "one line each: id, number; first " in index.split("\n", 1)[0]


def test_odd_values_never_break_the_index():
    """Python-repr rows hold what JSON cannot (integers past 64 bits, tuples) and fields hold lists: the
    index still reads them, and a row that stands out is still listed whole."""
    rows = [
        {"id": f"R-{i:04d}", "tags": [["a"]], "when": "2024-01-01", "n": 2**70 + i, "status": "ok"} for i in range(50)
    ]
    rows[7]["status"] = "failed"
    out = stub_of(repr(rows))
    index = index_of(out)
    assert "1 item that stands out (status failed), whole:" in index
    assert '\n  item 7: {"id":"R-0007"' in index and str(2**70 + 7) in index


def test_a_key_named_so_one_level_down_comes_before_a_top_level_one_known_by_its_values():
    """A video search keeps each video's id under `id.videoId` beside a unique `etag`: the video id leads."""
    rng = random.Random(11)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
    items = [
        {
            "kind": "youtube#searchResult",
            "etag": "".join(rng.choice(alphabet) for _ in range(27)),
            "id": {"kind": "youtube#video", "videoId": "".join(rng.choice(alphabet) for _ in range(11))},
            "snippet": {"publishedAt": f"2024-05-{i % 28 + 1:02d}T10:00:00Z", "title": f"Clip {i} of the trip"},
        }
        for i in range(300)
    ]
    index = index_of(stub_of(orjson.dumps({"items": items}).decode()))
    assert "one line each: id.videoId" in index.split("\n", 1)[0]
    assert all(it["id"]["videoId"] in index for it in items[:100])


@pytest.mark.parametrize(("rows", "header"), [(40, True), (1500, True), (600, False)])
def test_a_sheet_of_rows_shows_its_first_column_with_its_figures(rows, header):
    """A sheet's values (lists of cells) were indexed by their first column alone: dates without prices."""
    prices = _prices(rows)
    values = [[p["date"], f"{p['open']:.2f}", p["close"], "note"] for p in prices]
    doc = {"range": "A1:D", "values": ([["date", "open", "close", "memo"]] if header else []) + values}
    index = index_of(stub_of(orjson.dumps(doc).decode()))
    assert len(index) <= BUDGET
    head = index.split("\n", 1)[0]
    names = "open, close" if header else "column 2, column 3"
    assert f"one line each: first column, {names}" in head, head
    listed = [ln.strip() for ln in index.splitlines()[1:] if ln.count(" | ") == 2]
    expected = ["date | open | close"] * header + [f"{d} | {o} | {c}" for d, o, c, _ in values]
    assert listed == expected[: len(listed)]  # the header row too: it is the sheet's row 0
    if "all shown" in head:
        assert len(listed) == rows + header
        return
    shown = int(re.search(r"; first ([\d,]+) shown", head).group(1).replace(",", ""))
    path = re.search(r'json_path="(\$\.values\[\d+:\d+\])" for whole items', index).group(1)
    count, answer = anyio.run(lambda: evaluate(path, orjson.dumps(doc), time_limit_s=30))
    assert count == 20 and orjson.dumps(doc["values"][shown]).decode() in answer.splitlines()[0]
