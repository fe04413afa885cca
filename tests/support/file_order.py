"""The order in which the suite hands its files to xdist's workers: the slowest first.

Under `--dist loadfile` each file runs whole on one worker, and a worker takes the next file in the
queue when it runs dry. xdist's default queue puts the files with the most tests first, which leaves
the slow files of few tests (a bench run, a replay of a 31K-record corpus, a 15 s stall, a cluster)
to the end, where one of them runs alone while the other workers have nothing left. Starting them
first lets the many short files fill the gaps beside them. conftest's `pytest_collection_modifyitems`
sorts by this table and pyproject's addopts passes `--no-loadscope-reorder` so xdist keeps the order.

`SECONDS` holds each slow file's seconds in a whole-suite run on 2 shared cores (pytest
`--durations=0`, setup + call + teardown summed per file). Only the order matters, so refresh it when a
file becomes slow or fast (tests/test_file_order.py checks that every name is still a test file).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath
from typing import Protocol, TypeVar

SECONDS: dict[str, float] = {
    "test_bench_quick.py": 130,
    "test_fidelity_gate.py": 76,
    "test_docs.py": 77,
    "test_catalog_cmd.py": 60,
    "test_ledger_stalls.py": 63,
    "test_claude_code_e2e.py": 60,
    "test_replicas.py": 50,
    "test_dashboard.py": 40,
}


class HasNodeId(Protocol):
    @property
    def nodeid(self) -> str: ...


Item = TypeVar("Item", bound=HasNodeId)


def file_of(nodeid: str) -> str:
    """The test file's name of a node id (`tests/test_x.py::test_y[a]` -> `test_x.py`)."""
    return PurePath(nodeid.split("::", 1)[0]).name


def slowest_files_first(items: Sequence[Item]) -> list[Item]:
    """`items` with the files of `SECONDS` first, slowest first; the rest after them in their own order.

    A stable sort: the tests of one file keep their order, and files not in the table keep theirs.
    """
    return sorted(items, key=lambda item: -SECONDS.get(file_of(item.nodeid), 0.0))
