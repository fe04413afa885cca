"""`offload-mcp demo` runs end to end from the installed package and leaves nothing behind."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from conftest import OFFLOAD_MCP, proxy_env


def test_demo_runs_and_cleans_up(tmp_path: Path) -> None:
    before = set(Path(tempfile.gettempdir()).glob("offload-mcp-demo-*"))
    done = subprocess.run([OFFLOAD_MCP, "demo"], capture_output=True, text=True, env=proxy_env(), timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "tools/list: 5 tools: status, build_log, list_issues, recall_tool_result, context_guru_expand" in out
    assert "all systems nominal" in out and "--> build_log:" in out and "--> list_issues:" in out
    assert set(Path(tempfile.gettempdir()).glob("offload-mcp-demo-*")) == before
    assert list(tmp_path.iterdir()) == []
