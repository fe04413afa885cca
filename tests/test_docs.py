"""The generated configuration reference matches the models; README and mcp.json.example stay true."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from offload_mcp.docs import REFERENCE_PATH, missing_descriptions, render_reference

ROOT = Path(__file__).resolve().parents[1]


def test_every_setting_has_a_description():
    assert missing_descriptions() == []


def test_configuration_reference_matches_the_models():
    current = (ROOT / REFERENCE_PATH).read_text(encoding="utf-8")
    assert current == render_reference(), "docs/configuration.md drifted from the models: run `python -m offload_mcp.docs`"


def test_reference_names_every_leaf_setting():
    text = render_reference()
    for key in ("offload.mode", "offload.policy.horizon", "offload.policy.recall_probability", "offload.ledger.path",
                "offload.server.log_bodies", "offload.reducers.linecap.max_line_chars", "offload.policy.pricing.<name>.input"):
        assert f"`{key}`" in text


def test_check_mode_detects_drift(tmp_path):
    stale = tmp_path / "configuration.md"
    stale.write_text(render_reference().replace("offload.policy.horizon", "offload.policy.horizon_turns"))
    cmd = [sys.executable, "-m", "offload_mcp.docs", "--check", "-o", str(stale)]
    drifted = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert drifted.returncode == 1 and "python -m offload_mcp.docs" in drifted.stderr
    stale.write_text(render_reference())
    assert subprocess.run(cmd, capture_output=True, text=True, timeout=60).returncode == 0
