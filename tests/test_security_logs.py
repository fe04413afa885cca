"""What the proxy writes to disk and to its log: a private ledger, and logs without bodies or
argument values (unless offload.server.log_bodies asks for them)."""

from __future__ import annotations

import re
import stat
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

from support.proxy import stdio_params, text_of
from support.servers import fixture_cmd

SECRET_ARG = "ARG-7f3a91-never-log-me"
SECRET_BODY = "BODY-c0ffee-never-log-me"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def _session_calls(args: list[str], log: Path) -> None:
    with log.open("w") as errlog:
        async with stdio_client(stdio_params(args, None), errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                assert text_of(await s.call_tool("echo", {"text": SECRET_ARG})) == SECRET_ARG
                body = "\n".join(f"{i:05d} {SECRET_BODY} {i * 7919 % 100003}" for i in range(3000))
                shaped = text_of(await s.call_tool("echo", {"text": body}))
                found = re.search(r"trm_[0-9a-f]{16}", shaped)
                marker = re.search(r"<<cg:[0-9a-f]{16}>>", shaped)
                if found:
                    await s.call_tool("recall_tool_result", {"mem_id": found.group(0), "query": SECRET_BODY[:12]})
                if marker:
                    await s.call_tool("context_guru_expand", {"marker": marker.group(0)})
                await s.call_tool("fail", {"message": SECRET_ARG})


async def test_debug_logs_carry_no_bodies_or_argument_values(tmp_path: Path) -> None:
    log = tmp_path / "proxy.log"
    await _session_calls(["--log-level", "debug", "--ledger", str(tmp_path / "l.db"), "--", *fixture_cmd()], log)
    text = log.read_text()
    assert "offload-mcp" in text or "offload_mcp" in text, "the log was captured"
    assert SECRET_ARG not in text
    assert SECRET_BODY not in text and SECRET_BODY[:12] not in text


async def test_a_new_ledger_is_private_and_a_wide_one_is_narrowed(tmp_path: Path) -> None:
    fresh_dir = tmp_path / "state" / "offload-mcp"
    fresh = fresh_dir / "ledger.db"
    await _session_calls(["--ledger", str(fresh), "--", *fixture_cmd()], tmp_path / "a.log")
    assert mode(fresh) == 0o600 and mode(fresh_dir) == 0o700
    for suffix in ("-wal", "-shm"):
        side = Path(f"{fresh}{suffix}")
        if side.exists():
            assert mode(side) & 0o077 == 0

    # A ledger someone left world-readable, alone in a world-readable directory: narrowed, with a warning.
    fresh.chmod(0o644)
    fresh_dir.chmod(0o755)
    log = tmp_path / "b.log"
    await _session_calls(["--ledger", str(fresh), "--", *fixture_cmd()], log)
    assert mode(fresh) == 0o600 and mode(fresh_dir) == 0o700
    warned = log.read_text()
    assert f"ledger file {fresh} was mode 644; narrowed to 600" in warned
    assert f"ledger directory {fresh_dir} was mode 755; narrowed to 700" in warned


async def test_a_project_folder_holding_the_ledger_is_left_alone(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir(mode=0o755)
    project.chmod(0o755)
    (project / "README.md").write_text("a project file\n")
    ledger = project / "offload.db"
    await _session_calls(["--ledger", str(ledger), "--", *fixture_cmd()], tmp_path / "c.log")
    assert mode(ledger) == 0o600
    assert mode(project) == 0o755  # not ours to narrow


def test_log_bodies_is_a_documented_debug_switch() -> None:
    from offload_mcp.upstream.settings import ServerSettings

    assert ServerSettings().log_bodies is False
    assert "debug" in (ServerSettings.model_fields["log_bodies"].description or "")


async def test_a_shared_mount_point_holding_only_the_ledger_is_left_alone(tmp_path: Path) -> None:
    """Issue 13 #10: a mode-1777 directory (a mount point, /tmp-like) that holds nothing but the
    ledger was narrowed to 0700 at start, locking everybody else out of it. Not ours: left alone."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    ledger = shared / "ledger.db"
    log = tmp_path / "d.log"
    await _session_calls(["--ledger", str(ledger), "--", *fixture_cmd()], log)
    ledger.chmod(0o644)  # and even with a wide ledger file in it on the next start
    await _session_calls(["--ledger", str(ledger), "--", *fixture_cmd()], log)
    assert mode(shared) == 0o1777
    assert mode(ledger) == 0o600  # the file is ours: narrowed
    assert "ledger directory" not in log.read_text()
