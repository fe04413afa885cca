"""The order in which the suite hands its files to xdist's workers: the slowest first.

Under `--dist loadfile` each file runs whole on one worker, and a worker takes the next file in the
queue when it runs dry. xdist's default queue puts the files with the most tests first, which leaves
the slow files of few tests (a bench run, a replay of a 31K-record corpus, a 15 s stall, a cluster)
to the end, where one of them runs alone while the other workers have nothing left. Starting them
first lets the many short files fill the gaps beside them. conftest's `pytest_collection_modifyitems`
sorts by this table and pyproject's addopts passes `--no-loadscope-reorder` so xdist keeps the order.

`SECONDS` holds the seconds of every file over 35 s in a whole-suite run (4 workers on 2 cores shared
with other work: `python -m pytest -q -p no:cacheprovider --durations=0`, setup + call + teardown summed
per file). Only the order matters; refresh the table the same way when a file becomes slow or fast
(tests/test_file_order.py checks that every name is still a test file).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath
from typing import Protocol, TypeVar

SECONDS: dict[str, float] = {
    "test_claude_code_e2e.py": 278,
    "test_fidelity_gate.py": 238,
    "test_bench_quick.py": 184,
    "test_deferral_wire.py": 166,
    "test_demo.py": 138,
    "test_ledger_stalls.py": 136,
    "test_hardening_load.py": 110,
    "test_docs.py": 97,
    "test_dashboard.py": 93,
    "test_catalog_cmd.py": 92,
    "test_reliability_downstream.py": 91,
    "test_relay.py": 89,
    "test_replicas.py": 86,
    "test_ledger_migrate.py": 80,
    "test_security_http.py": 77,
    "test_replay_fidelity.py": 75,
    "test_client_channels.py": 73,
    "test_recall.py": 72,
    "test_hardening_http.py": 68,
    "test_proxy_faults.py": 66,
    "test_client_accounting.py": 66,
    "test_remote_parse_off_loop.py": 66,
    "test_replay.py": 61,
    "test_reliability_ledger.py": 57,
    "test_inflight_budget.py": 56,
    "test_recall_e2e.py": 55,
    "test_fuzz_own_tools.py": 53,
    "test_corpus_wrap.py": 53,
    "test_downstream_parse.py": 53,
    "test_ledger_postgres.py": 51,
    "test_stored_resources.py": 49,
    "test_textscan.py": 47,
    "test_proxy_http.py": 47,
    "test_data_view.py": 43,
    "test_reliability_kill.py": 42,
    "test_downstream_aside.py": 42,
    "test_fuzz_inputs.py": 42,
    "test_structured_repeats.py": 40,
    "test_ledger.py": 40,
    "test_hint_listing.py": 39,
    "test_load_http.py": 38,
    "test_startup.py": 38,
    "test_proxy_real_servers.py": 38,
    "test_init.py": 37,
    "test_early_starts.py": 36,
    "test_init_first_day.py": 36,
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
