"""offload-mcp replay: the real corpus through the server's shaper, every record restorable."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest

from offload_mcp.analysis.replay import Record, ReplayError, _remaining_turns, call_arguments, read_records, replay
from offload_mcp.config import OffloadSettings
from offload_mcp.store import Ledger
from offload_mcp.store.settings import LedgerSettings
from support.processes import run_unprivileged
from support.proxy import OFFLOAD_MCP, proxy_env, run_offload_mcp
from support.zygote import prewarmed

CORPUS = Path("/work/shared/corpus/dev.jsonl.gz")
needs_corpus = pytest.mark.skipif(not CORPUS.exists(), reason="the shared corpus is not on this machine")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_offload_mcp("replay", *args)


@needs_corpus
def test_real_corpus_slice_restores_and_reduces():
    records = read_records(CORPUS, limit=1200)
    report = replay(records, OffloadSettings(), source=str(CORPUS))
    d = report.as_dict()
    assert d["records"] == 1200
    assert d["unrecoverable"] == 0, d["unrecoverable_examples"]
    assert d["chars_out"] < d["chars_in"] and d["reduction_pct"] > 0
    assert d["reducers"]["dedup"]["acted"] > 0 and d["reducers"]["extract"]["acted"] > 0
    assert sum(d["verdicts"].values()) == 1200
    assert d["dollars"]["claude-opus-4-6"]["saved_usd"] > 0


def _write(tmp_path: Path, rows: list[object], gz: bool = False) -> Path:
    data = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n"
    path = tmp_path / ("c.jsonl.gz" if gz else "c.jsonl")
    path.write_bytes(gzip.compress(data.encode()) if gz else data.encode())
    return path


def big_log() -> str:
    return "".join(f"2026-01-01 worker[{i % 7}] processed batch {i} in {i % 97} ms status=ok\n" for i in range(4000))


def test_cli_json_keys_offload_and_kept_ledger(tmp_path: Path):
    noisy = "\x1b[32mok\x1b[0m compiling\n" * 50
    rows = [
        {"tool": "bash", "call": "make", "output": noisy, "traj": "t1", "step": 0},
        {"tool": "bash", "call": "make", "output": noisy, "traj": "t1", "step": 1},
        {"tool": "read", "call": '{"path": "log.txt"}', "output": big_log(), "traj": "t1", "step": 2},
        {"tool": "bash", "call": "ls", "output": "a\nb\n", "traj": "t2", "step": 0},
    ]
    ledger = tmp_path / "kept.db"
    done = run_cli(str(_write(tmp_path, rows, gz=True)), "--json", "--ledger", str(ledger), "--model", "sonnet")
    assert done.returncode == 0, done.stderr
    d = json.loads(done.stdout)
    assert set(d) >= {
        "records",
        "chars_in",
        "chars_out",
        "tokens_in",
        "tokens_out",
        "reduction_pct",
        "big_outputs",
        "verdicts",
        "decisions",
        "reducers",
        "unrecoverable",
        "seconds",
        "records_per_second",
        "dollars",
        "model",
    }
    assert d["records"] == 4 and d["unrecoverable"] == 0 and d["model"] == "sonnet"
    assert d["reducers"]["dedup"]["acted"] == 1
    assert d["big_outputs"]["records"] == 1 and d["big_outputs"]["reduction_pct"] >= 95
    assert d["verdicts"]["keep"] >= 1
    kept = Ledger.open(LedgerSettings(), ledger)
    try:
        assert kept.counts()  # the ledger was kept, with the stash written
    finally:
        kept.close()
    tables = run_cli(str(_write(tmp_path, rows)))
    assert tables.returncode == 0 and "unrecoverable" in tables.stdout and "dedup" in tables.stdout


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (["{not json"], "c.jsonl:1: not valid JSON"),
        ([{"tool": "bash"}], "c.jsonl:1: `output` must be a string"),
        ([{"output": "x"}], "`tool` must be a non-empty string"),
        ([{"tool": "t", "output": "x", "step": "two"}], "`step` must be an integer"),
        ([[1, 2]], "must be a JSON object"),
    ],
)
def test_bad_input_is_a_clear_error(tmp_path: Path, rows, message):
    done = run_cli(str(_write(tmp_path, rows)))
    assert done.returncode == 2 and message in done.stderr


def test_missing_file_bad_model_and_bad_gzip(tmp_path: Path):
    assert "cannot read" in run_cli(str(tmp_path / "nope.jsonl")).stderr
    bad_model = run_cli(str(_write(tmp_path, [{"tool": "t", "output": "x"}])), "--model", "no-such-model")
    assert bad_model.returncode == 2 and "no pricing row" in bad_model.stderr
    fake = tmp_path / "fake.jsonl.gz"
    fake.write_bytes(b"\x1f\x8b" + b"garbage")
    with pytest.raises(ReplayError, match="not a readable gzip"):
        read_records(fake)


def test_a_ledger_replay_cannot_keep_is_refused_before_it_runs(tmp_path: Path, read_only_dir: Path):
    """Before: a traceback (LedgerUnavailable, exit 1), and a `postgresql:` folder for a URL."""
    corpus = str(_write(tmp_path, [{"tool": "read", "output": big_log()}]))
    read_only = run_unprivileged(
        [OFFLOAD_MCP, "replay", corpus, "--ledger", str(read_only_dir / "l.db")], env=proxy_env()
    )
    assert read_only.returncode == 2, read_only.stderr
    assert f"cannot create the ledger {read_only_dir / 'l.db'}: {read_only_dir}" in read_only.stderr
    directory = run_cli(corpus, "--ledger", str(tmp_path))
    assert (
        directory.returncode == 2 and f"{tmp_path} is a directory; a ledger file path is expected" in directory.stderr
    )
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    url = subprocess.run(
        prewarmed([OFFLOAD_MCP, "replay", corpus, "--ledger", "postgresql://u:pw@127.0.0.1:1/db"]),
        capture_output=True,
        text=True,
        env=proxy_env(),
        cwd=cwd,
        timeout=120,
    )
    assert url.returncode == 2 and "replay keeps its ledger in a local file" in url.stderr and "pw" not in url.stderr
    assert list(cwd.iterdir()) == []
    for done in (read_only, directory, url):
        assert "Traceback" not in done.stderr and done.stdout == ""


def test_remaining_turns_come_from_each_trajectory():
    recs = [
        Record(1, "t", "", "x", "a", 0),
        Record(2, "t", "", "x", "a", 5),
        Record(3, "t", "", "x", "b", 2),
        Record(4, "t", "", "x", "c", None),
    ]
    # the later steps + the request that read the output (economics.requests_carrying); no step: the prior
    assert _remaining_turns(recs, horizon=7) == [6, 1, 1, 7]


def test_call_arguments():
    assert call_arguments('{"path": "a"}') == {"path": "a"}
    assert call_arguments("git status") == {"command": "git status"}
    assert call_arguments("{broken") == {"command": "{broken"}
    assert call_arguments("") == {}
