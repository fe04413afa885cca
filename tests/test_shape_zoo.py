"""bench/shape_zoo.py: seeded, every class drawn, every session's later call names values from its result."""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import shape_zoo  # noqa: E402
from offload_mcp.analysis.fidelity import fact_tokens  # noqa: E402
from offload_mcp.analysis.replay import read_records  # noqa: E402

SESSIONS = 400
MAX_CHARS = 20_000


@functools.cache
def _sessions(seed: int = 7, n: int = SESSIONS) -> list[tuple[shape_zoo.Variant, list[dict]]]:
    return [shape_zoo.session(seed, i, max_chars=MAX_CHARS) for i in range(n)]


def test_a_seed_writes_the_same_bytes_and_another_seed_does_not(tmp_path: Path) -> None:
    paths = [tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz", tmp_path / "c.jsonl.gz"]
    for path, seed in zip(paths, (7, 7, 8), strict=True):
        shape_zoo.write(path, shape_zoo.generate(seed, 40, max_chars=MAX_CHARS))
    assert paths[0].read_bytes() == paths[1].read_bytes()
    assert paths[0].read_bytes() != paths[2].read_bytes()
    records = read_records(paths[0])  # replay's own reader takes the file as it is
    assert len(records) == 80
    assert {r.traj for r in records} == {f"zoo-7-{i:06d}" for i in range(40)}


def test_every_class_is_drawn_independently() -> None:
    drawn = _sessions()
    for name, values in (
        ("layout", shape_zoo.LAYOUTS),
        ("wrap", shape_zoo.WRAPS),
        ("envelope", shape_zoo.ENVELOPES),
        ("channel", shape_zoo.CHANNELS),
        ("keys", (*shape_zoo.KEYS, "date", "sha")),
        ("columns", ("all", "few")),
        ("anomalies", ("none", "1-3")),
        ("anomaly_kind", ("none", "revert", *shape_zoo.ANOMALY_KINDS)),
    ):
        seen = Counter(v.label(name) for v, _ in drawn)
        assert set(seen) == set(values), (name, seen)
    # independent: python_repr rows come in every wrap, not in one spelling only
    assert {v.wrap for v, _ in drawn if v.layout == "python_repr"} == set(shape_zoo.WRAPS)
    assert {shape_zoo._size_bucket(v.rows_drawn) for v, _ in drawn} == {"10-99", "100-999", "1K-9.9K", "10K-50K"}
    assert all(v.rows == min(v.rows_drawn, v.rows) for v, _ in drawn)  # cut to the size cap, never padded


def test_every_later_call_names_values_read_out_of_the_result() -> None:
    for variant, (first, second) in _sessions():
        raw = first["output"] + (orjson.dumps(first["structured"]).decode() if "structured" in first else "")
        needed = [t for t in fact_tokens(second["call"]) if t in raw]
        assert needed, (variant, second["call"])
        assert second["traj"] == first["traj"] and second["step"] == first["step"] + 1
        assert len(first["output"]) <= MAX_CHARS * 1.5 or variant.rows == shape_zoo.MIN_ROWS


def test_the_encodings_decode_to_the_rows() -> None:
    checked = Counter()
    for variant, (first, _second) in _sessions():
        if variant.envelope != "none" or variant.channel != "text" or variant.layout not in ("json", "python_repr"):
            continue
        text = first["output"]
        for _ in range({"none": 0, "json_string": 1, "double_encoded": 2}.get(variant.wrap, 0)):
            text = json.loads(text)
        if variant.wrap in ("text_field", "result_field"):
            outer = json.loads(text)
            text = outer["text"] if variant.wrap == "text_field" else outer["result"]
        rows = json.loads(text) if variant.layout == "json" else ast.literal_eval(text)
        assert isinstance(rows, list) and len(rows) == variant.rows
        if variant.anomaly_kind == "error_field":
            assert sum("error" in r for r in rows) == variant.anomalies
        if variant.anomaly_kind == "failing_status":
            assert sum(r.get("status") in shape_zoo.FAILING.values() for r in rows) == variant.anomalies
        checked[variant.wrap] += 1
    assert len(checked) >= 4, checked


def test_report_prints_needed_facts_per_class_beside_the_client_alone(tmp_path: Path) -> None:
    out = tmp_path / "zoo.jsonl"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "shape_zoo.py"), "--sessions", "30", "--max-chars", "20000"]
        + ["--out", str(out), "--report", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["records"] == 60 and report["unrecoverable"] == 0
    assert report["overall"]["needed"] == report["needed"] > 0
    assert 0 <= report["overall"]["visible_pct"] <= 100
    assert set(report["by_class"]) == set(shape_zoo.CLASSES)
    layout_needed = sum(row["needed"] for row in report["by_class"]["layout"].values())
    assert layout_needed == report["needed"]
    assert "client_alone_visible_pct" in report["overall"]
    again = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "shape_zoo.py"), "--in", str(out), "--report", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert json.loads(again.stdout)["by_class"] == report["by_class"]
