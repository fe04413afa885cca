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
import shutil  # noqa: E402
import time  # noqa: E402

import pytest  # noqa: E402

from offload_mcp.cli import build_parser  # noqa: E402

CLAUDE = ROOT / "node_modules" / ".bin" / "claude"
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
    # the mode a first session gets from init and from `serve CMD`: large results arrive as stubs
    assert config.mcpServers and config.offload.mode == "enforce"


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


@pytest.mark.parametrize("page", ["README.md", "docs/clients.md", "docs/deployment.md"])
def test_json_blocks_parse_as_configs(page):
    blocks = fenced_blocks((ROOT / page).read_text(), "json")
    assert blocks
    for block in blocks:
        data = json.loads(block)
        if PLACEHOLDER.search(block):  # the deployment template: refused as it stands, a config once filled
            with pytest.raises(ConfigError, match="unfilled placeholder"):
                parse_config(data, source="README json block")
            data = json.loads(PLACEHOLDER.sub(_fill, block))
        parse_config(data, source="README json block")


DOCS = sorted((ROOT / "docs").glob("*.md"))


def test_every_offload_mcp_command_in_the_readme_and_docs_parses():
    """Each `offload-mcp ...` line (also inside `claude mcp add` / Inspector lines) uses options that exist."""
    parser = build_parser()
    seen = 0
    for command in [c for page in (README, *DOCS) for c in shell_commands(page.read_text())]:
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

    # Claude Code's step 2, as init printed it, by the real CLI; then Claude Code's own health check
    if not CLAUDE.exists():
        pytest.skip("@anthropic-ai/claude-code is not installed (npm install)")
    printed = [line.strip() for line in init.stdout.splitlines() if line.strip().startswith("claude mcp ")]
    readme_claude = [c for c in readme if c.startswith("claude mcp ")]
    assert [c.split(" -- ")[0] for c in printed] == [c.split(" -- ")[0] for c in readme_claude]
    env = {**env, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for line in printed:
        done = subprocess.run(
            [str(CLAUDE), *shlex.split(line)[1:]], capture_output=True, text=True, env=env, timeout=60
        )
        assert done.returncode == 0, done.stdout + done.stderr
    servers = json.loads((home / ".claude.json").read_text())["mcpServers"]
    assert list(servers) == ["offload"] and servers["offload"]["args"] == ["serve", "-c", str(written)]
    listed = subprocess.run(
        [str(CLAUDE), "mcp", "list"], capture_output=True, text=True, env=env, timeout=120, cwd=str(home)
    )
    assert re.search(r"^offload: .* Connected$", listed.stdout, re.M), listed.stdout + listed.stderr


def test_readme_other_clients_lines_run(tmp_path):
    """The README's one-liners for other clients: Claude Desktop's init, the Inspector, HTTP."""
    text = README.read_text()
    home = tmp_path / "home"
    desktop_file = home / ".config" / "Claude" / "claude_desktop_config.json"
    desktop_file.parent.mkdir(parents=True)
    desktop_file.write_text(json.dumps({"mcpServers": {"time": {"command": "mcp-server-time"}}}))
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    env.pop("OFFLOAD_MCP_CONFIG", None)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    assert "`offload-mcp init --from claude-desktop`" in text
    desktop = subprocess.run(
        [sys.executable, "-m", "offload_mcp.cli", "init", "--from", "claude-desktop"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert desktop.returncode == 0, desktop.stderr
    entry = desktop.stdout.split("Claude Desktop")[1]
    assert '"offload"' in entry and str(home / ".config" / "offload-mcp" / "config.json") in entry

    inspector = re.search(r"`(npx @modelcontextprotocol/inspector --cli [^`]+)`", text)
    assert inspector, "the README's Inspector line"
    if (ROOT / "node_modules" / ".bin" / "mcp-inspector").exists():
        words = shlex.split(inspector.group(1))
        words[words.index("serve") + 1 : words.index("serve") + 1] = ["--ledger", str(tmp_path / "l.db")]
        # The Inspector gives a server 15 s to answer initialize; on a loaded machine the proxy and git take longer.
        words[words.index("--cli") + 1 : words.index("--cli") + 1] = ["--connect-timeout", "120000"]
        done = subprocess.run(words, capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        names = [t["name"] for t in json.loads(done.stdout)["tools"]]
        assert "git_log" in names and "recall_tool_result" in names

    http = re.search(r"`(offload-mcp serve -c config.json --transport streamable-http --port 8765)`", text)
    assert http, "the README's HTTP line"
    (tmp_path / "config.json").write_text(json.dumps({"mcpServers": {"time": {"command": "mcp-server-time"}}}))
    from support.cluster import free_port

    port = free_port()
    words = shlex.split(http.group(1).replace("8765", str(port)))
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / words[0]), *words[1:], "--ledger", str(tmp_path / "h.db")],
        cwd=str(tmp_path),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        import urllib.request

        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as answer:
                    assert json.loads(answer.read())["status"] in ("ok", "degraded")
                    break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "the README's HTTP line did not serve"
                time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(15)


@pytest.mark.parametrize("tool", ["pipx", "uv"])
def test_readme_tool_install_from_a_checkout_works(tmp_path, tool):
    """`pipx install .` / `uv tool install .` from the checkout: a working `offload-mcp` on the tool's bin dir."""
    command = {"pipx": "pipx install .", "uv": "uv tool install ."}[tool]
    assert command in shell_commands(README.read_text())
    exe = shutil.which(tool) or str(Path(sys.executable).parent / tool)
    if not Path(exe).exists():
        pytest.skip(f"{tool} is not installed (the test extra installs it)")
    bin_dir = tmp_path / "bin"
    env = {
        **os.environ,
        "PIPX_HOME": str(tmp_path / "pipx"),
        "PIPX_BIN_DIR": str(bin_dir),
        "UV_TOOL_DIR": str(tmp_path / "uv-tools"),
        "UV_TOOL_BIN_DIR": str(bin_dir),
    }
    leftovers = [ROOT / "build", ROOT / "dist", ROOT / "src" / "offload_mcp.egg-info"]
    before = [p for p in leftovers if p.exists()]
    done = subprocess.run(
        [exe, *shlex.split(command)[1:]], capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=600
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    version = subprocess.run([str(bin_dir / "offload-mcp"), "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("offload-mcp "), version.stdout + version.stderr
    assert [p for p in leftovers if p.exists()] == before  # installing leaves no build output in the checkout


README_COMMANDS_RUN_BY = {
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && offload-mcp demo": "tests/test_demo.py"
    " runs the demo; .ci/run the install",
    "pipx install .": "test_readme_tool_install_from_a_checkout_works",
    "uv tool install .": "test_readme_tool_install_from_a_checkout_works",
    'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test]" && npm install && python -m pytest'
    " -q -p no:cacheprovider": ".ci/run (test_readme_test_command_is_what_ci_runs)",
    "offload-mcp init": "test_readme_init_and_stats_examples_run_on_a_fresh_home",
    "claude mcp add --scope user offload -- /home/you/.venv/bin/offload-mcp serve -c"
    " /home/you/.config/offload-mcp/config.json": "test_readme_init_and_stats_examples_run_on_a_fresh_home",
    "claude mcp remove --scope user git": "test_readme_init_and_stats_examples_run_on_a_fresh_home",
    "offload-mcp stats --since 7d": "test_readme_init_and_stats_examples_run_on_a_fresh_home",
}


def test_every_readme_command_is_run_by_a_test():
    assert sorted(shell_commands(README.read_text())) == sorted(README_COMMANDS_RUN_BY)


def test_readme_is_one_screen_and_states_the_node_version():
    text = README.read_text()
    assert len(text.splitlines()) <= 170
    assert "Node.js >= 22" in text
    assert "### What's new" in text  # where each change's lines go


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("page", ["README.md", *[f"docs/{p.name}" for p in DOCS]])
def test_every_relative_link_resolves(page):
    path = ROOT / page
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        assert linked.exists(), f"{page}: link to {target} points at nothing"
        if anchor and linked.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", linked.read_text(), flags=re.S), re.M)
            assert anchor in {_slug(h) for h in headings}, f"{page}: no heading for #{anchor} in {file_part or page}"


@pytest.mark.parametrize("command", ["serve", "demo", "stats", "init", "replay", "catalog", "toolset_config"])
def test_every_command_has_help_with_examples(command):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    names = {name.replace("-", "_"): p for name, p in sub.choices.items()}
    if command not in names:
        pytest.skip(f"`{command}` is not built yet")
    text = names[command].format_help()
    assert "example" in text.lower() or "offload-mcp " + command.replace("_", "-") in text, text
