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
    assert current == render_reference(), (
        "docs/configuration.md drifted from the models: run `python -m offload_mcp.docs`"
    )


def test_reference_names_every_leaf_setting():
    text = render_reference()
    for key in (
        "offload.mode",
        "offload.policy.horizon",
        "offload.policy.recall_probability",
        "offload.ledger.path",
        "offload.server.log_bodies",
        "offload.reducers.linecap.max_line_chars",
        "offload.policy.pricing.<name>.input",
    ):
        assert f"`{key}`" in text


def test_check_mode_detects_drift(tmp_path):
    stale = tmp_path / "configuration.md"
    stale.write_text(render_reference().replace("offload.policy.horizon", "offload.policy.horizon_turns"))
    cmd = [sys.executable, "-m", "offload_mcp.docs", "--check", "-o", str(stale)]
    drifted = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert drifted.returncode == 1 and "python -m offload_mcp.docs" in drifted.stderr
    stale.write_text(render_reference())
    assert subprocess.run(cmd, capture_output=True, text=True, timeout=60).returncode == 0


# ---------------------------------------------------------------- README and mcp.json.example

import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import shlex  # noqa: E402

import pytest  # noqa: E402

from offload_mcp.cli import build_parser  # noqa: E402
from offload_mcp.config import PLACEHOLDER, ConfigError, parse_config  # noqa: E402

README = ROOT / "README.md"


def fenced_blocks(text: str, *langs: str) -> list[str]:
    return [m.group(2) for m in re.finditer(r"```(\w*)\n(.*?)```", text, re.S) if m.group(1) in langs]


def shell_commands(text: str) -> list[str]:
    commands = []
    for block in fenced_blocks(text, "sh", "bash"):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                commands.append(line)
    return commands


def test_mcp_json_example_is_a_valid_config(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "token-for-the-test")
    data = json.loads((ROOT / "mcp.json.example").read_text())
    config = parse_config(data, source="mcp.json.example")
    assert config.mcpServers and config.offload.mode == "observe"


def test_readme_test_command_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    ci_pytest = [line for line in ci if "pytest" in line and not line.startswith("#")]
    assert ci_pytest == ["python -m pytest -q -p no:cacheprovider"]
    commands = shell_commands(README.read_text())
    assert any(c.endswith("&& " + ci_pytest[0]) or c == ci_pytest[0] for c in commands)


def test_readme_demo_command_installs_and_runs_the_demo():
    commands = shell_commands(README.read_text())
    assert "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && offload-mcp demo" in commands


def _fill(placeholder: re.Match[str]) -> str:
    name = placeholder.group(0).strip("{} ")
    return "postgresql://offload@db.internal/offload" if name == "LEDGER_URL" else f"filled-{name.lower()}"


def test_readme_json_blocks_parse_and_the_desktop_entry_is_a_config():
    blocks = fenced_blocks(README.read_text(), "json")
    assert blocks
    for block in blocks:
        data = json.loads(block)
        if PLACEHOLDER.search(block):  # the deployment template: refused as it stands, a config once filled
            with pytest.raises(ConfigError, match="unfilled placeholder"):
                parse_config(data, source="README json block")
            data = json.loads(PLACEHOLDER.sub(_fill, block))
        parse_config(data, source="README json block")


def test_every_offload_mcp_command_in_the_readme_parses():
    """Each `offload-mcp ...` line (also inside `claude mcp add` / Inspector lines) uses options that exist."""
    parser = build_parser()
    seen = 0
    for command in shell_commands(README.read_text()):
        words = shlex.split(command, comments=True)
        for i, word in enumerate(words):
            if Path(word).name == "offload-mcp" and i + 1 < len(words):
                tail = words[i + 1 :]
                if "&&" in tail:
                    tail = tail[: tail.index("&&")]
                try:
                    parser.parse_args(tail)
                except SystemExit as exc:  # argparse's way of saying "bad usage"
                    pytest.fail(f"README command does not parse ({exc.code}): {command}")
                seen += 1
                break
    assert seen >= 8


def test_readme_init_and_stats_examples_run_on_a_fresh_home(tmp_path):
    """The cheap README examples, run for real: `offload-mcp init` and `offload-mcp stats` on an empty home."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".claude.json").write_text(
        json.dumps({"mcpServers": {"git": {"command": "mcp-server-git", "args": ["--repository", "."]}}})
    )
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".state"),
    }
    env.pop("OFFLOAD_MCP_CONFIG", None)
    exe = [sys.executable, "-m", "offload_mcp.cli"]
    readme = shell_commands(README.read_text())
    assert "offload-mcp init" in readme and "offload-mcp stats --since 7d" in readme

    init = subprocess.run([*exe, "init"], capture_output=True, text=True, env=env, timeout=60)
    assert init.returncode == 0, init.stderr
    written = home / ".config" / "offload-mcp" / "config.json"
    assert json.loads(written.read_text())["mcpServers"]["git"]["command"] == "mcp-server-git"
    assert "claude mcp add --scope user offload -- " in init.stdout and f"serve -c {written}" in init.stdout
    assert "claude mcp remove --scope user git" in init.stdout

    stats = subprocess.run([*exe, "stats", "--since", "7d"], capture_output=True, text=True, env=env, timeout=60)
    assert stats.returncode == 2 and "no ledger at" in stats.stderr and "offload-mcp serve" in stats.stderr


@pytest.mark.parametrize("command", ["serve", "demo", "stats", "init", "replay", "catalog", "toolset_config"])
def test_every_command_has_help_with_examples(command):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    names = {name.replace("-", "_"): p for name, p in sub.choices.items()}
    if command not in names:
        pytest.skip(f"`{command}` is not built yet")
    text = names[command].format_help()
    assert "example" in text.lower() or "offload-mcp " + command.replace("_", "-") in text, text
