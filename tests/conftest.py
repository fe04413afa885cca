"""Fixtures only; the helpers tests import live in tests/support/ (a package, see its __init__).

- `_isolated_state_dir` (autouse): every proxy's default ledger stays out of the user's state directory.
- `_prewarmed_python` (autouse): this process's zygote, which starts the tests' Python servers (support/zygote.py).
- `read_only_dir`: a directory commands run with `support.processes.run_unprivileged` cannot create files in.
- `postgres` (session) / `pg_url`: a real PostgreSQL (support/pg.py) and a fresh schema on it.

One hook: the slowest files run first (support/file_order.py says why).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support import zygote
from support.file_order import slowest_files_first
from support.processes import run_unprivileged


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Hand xdist the slowest files first, so that none of them is left to run alone at the end."""
    items[:] = slowest_files_first(items)


@pytest.fixture(scope="session", autouse=True)
def _isolated_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Keep every proxy's default ledger out of the user's state directory."""
    old = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("xdg-state"))
    yield
    if old is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = old


@pytest.fixture(scope="session", autouse=True)
def _prewarmed_python() -> Iterator[None]:
    """Start the Python servers the tests name already past the SDK's import (support/zygote.py says why)."""
    zygote.start()
    yield
    zygote.stop()


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Path:
    """A directory in which commands run with `run_unprivileged` cannot create files (mode 0555)."""
    tmp_path.chmod(0o755)  # the unprivileged process reads its inputs from here
    directory = tmp_path / "read-only"
    directory.mkdir()
    directory.chmod(0o555)
    if run_unprivileged(["touch", str(directory / "probe")]).returncode == 0:
        pytest.skip("file modes do not bind here, even in a user namespace")
    return directory


# ---- a real PostgreSQL (support/pg.py) ---------------------------------------------------------


@pytest.fixture(scope="session")
def postgres() -> Iterator[Any]:
    """One throwaway PostgreSQL server for the session (initdb + pg_ctl as a non-root user)."""
    from support.pg import find_bin_dir, start_server

    if find_bin_dir() is None:
        pytest.skip(
            "PostgreSQL binaries (initdb, pg_ctl) not installed: `apt-get install -y postgresql` (.ci/run does)"
        )
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip('psycopg not installed: pip install -e ".[test]" (it includes the postgres extra)')
    server = start_server()
    yield server
    server.destroy()


@pytest.fixture
def pg_url(postgres: Any) -> str:
    """A URL to the session's PostgreSQL whose tables live in a schema of their own (empty)."""
    return str(postgres.url(postgres.new_schema()))
