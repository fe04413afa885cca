"""The suite hands xdist its slowest files first, and xdist keeps that order (support/file_order.py)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from support.file_order import SECONDS, file_of, slowest_files_first

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


@dataclass(frozen=True)
class Node:
    nodeid: str


def test_the_table_names_only_test_files_that_exist() -> None:
    assert SECONDS
    assert [name for name in SECONDS if not (TESTS / name).is_file()] == []


def test_the_slowest_files_come_first_and_the_rest_keep_their_order() -> None:
    slow, slower = min(SECONDS, key=SECONDS.__getitem__), max(SECONDS, key=SECONDS.__getitem__)
    items = [
        Node("tests/test_a.py::test_one"),
        Node(f"tests/{slow}::test_first"),
        Node("tests/test_b.py::test_two[x]"),
        Node(f"tests/{slower}::test_only"),
        Node(f"tests/{slow}::test_second[a::b]"),
        Node("tests/test_a.py::test_three"),
    ]
    assert [node.nodeid for node in slowest_files_first(items)] == [
        f"tests/{slower}::test_only",
        f"tests/{slow}::test_first",
        f"tests/{slow}::test_second[a::b]",
        "tests/test_a.py::test_one",
        "tests/test_b.py::test_two[x]",
        "tests/test_a.py::test_three",
    ]
    assert file_of("tests/test_x.py::Test::test_y[p/q::r]") == "test_x.py"


def test_pytest_collects_in_that_order_and_xdist_is_told_to_keep_it() -> None:
    fast, slow = "tests/test_layout.py", "tests/test_replicas.py"  # alphabetical order puts the slow one last
    assert file_of(fast) not in SECONDS and file_of(slow) in SECONDS
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-n", "0", fast, slow],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    files = [file_of(line) for line in done.stdout.splitlines() if "::" in line]
    assert files[0] == file_of(slow) and set(files) == {file_of(fast), file_of(slow)}, files
    assert files.index(file_of(fast)) > len(files) - 1 - files[::-1].index(file_of(slow))  # one block each

    pytest_options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    addopts = shlex.split(pytest_options["addopts"])
    assert "--no-loadscope-reorder" in addopts and addopts[addopts.index("--dist") + 1] == "loadfile"


def test_the_bench_models_both_orders_on_the_measured_seconds(tmp_path: Path) -> None:
    """bench/suite_order.py: a slow file of one test ends the run in xdist's order, and starts it in ours."""
    slowest = max(SECONDS, key=SECONDS.__getitem__)
    durations = tmp_path / "run.txt"
    durations.write_text(
        "============ slowest durations ============\n"
        f"10.00s call     tests/{slowest}::test_one\n"
        "2.00s call     tests/test_many.py::test_a\n"
        "2.00s call     tests/test_many.py::test_b[x y]\n"
        "1.50s call     tests/test_many.py::test_c\n"
        "0.50s setup    tests/test_many.py::test_c\n"
        "4.00s call     tests/test_few.py::test_a\n"
    )
    collected = tmp_path / "collected.txt"
    many = "\n".join(f"tests/test_many.py::test_{n}" for n in "abc")
    collected.write_text(f"tests/test_few.py::test_a\ntests/test_few.py::test_b\n{many}\ntests/{slowest}::test_one\n")
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "suite_order.py"), str(durations), str(collected), "--workers", "2"]
        + ["--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    # xdist: many (6 s) and few (4 s) first, the 10 s file after few: 14 s. Ours: it first, few then many: 10 s.
    assert json.loads(done.stdout) == {
        "workers": 2,
        "files": 3,
        "busy_s": 20.0,
        "even_split_s": 10.0,
        "xdist_default_s": 14.0,
        "slowest_first_s": 10.0,
        "slowest_first_over_default": 0.714,
    }
    empty = tmp_path / "empty.txt"
    empty.write_text("no durations here\n")
    refused = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "suite_order.py"), str(empty), str(collected)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and "no --durations lines" in refused.stderr
