"""`offload-mcp init` on sample client configs: Claude Code, Claude Desktop, a malformed one."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from offload_mcp.cli import main
from offload_mcp.config import load_config
from support.processes import run_unprivileged
from support.zygote import prewarmed

CLAUDE_CODE = {
    "numStartups": 7,
    "mcpServers": {
        "git": {"type": "stdio", "command": "mcp-server-git", "args": ["--repository", "/repo"], "env": {}},
        "web": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer t"}},
        "offload": {"command": "/usr/bin/offload-mcp", "args": ["serve", "-c", "/x.json"]},
    },
    "projects": {
        "/home/u/proj": {
            "allowedTools": [],
            "mcpServers": {
                "git": {"type": "stdio", "command": "mcp-server-git", "args": ["--repository", "/repo"], "env": {}},
                "fs": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-filesystem", "/p"],
                    "alwaysAllow": ["read_file"],
                },
            },
        },
        "/home/u/other": {"mcpServers": {"fs": {"command": "npx", "args": ["other-fs"]}}},
        "/home/u/empty": {"allowedTools": []},
    },
}

DESKTOP = {
    "mcpServers": {
        "time": {"command": "mcp-server-time", "args": []},
        "off": {"command": "x", "disabled": True},
    },
    "globalShortcut": "Ctrl+Space",
}


def write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def test_claude_code_config_wraps_user_and_project_servers(tmp_path, capsys):
    client = write(tmp_path / ".claude.json", CLAUDE_CODE)
    before = client.read_bytes()
    out = tmp_path / "offload.json"

    assert main(["init", "--from", str(client), "-o", str(out)]) == 0
    printed = capsys.readouterr()

    config = load_config(out)
    # projects are read in sorted order: /home/u/other's `fs` keeps the name, /home/u/proj's is renamed
    assert sorted(config.mcpServers) == ["fs", "fs-proj", "git", "web"]
    assert config.mcpServers["fs"].args == ["other-fs"]
    # enforce from the first session, as `serve CMD`; Claude Code gets the deferral that shrinks its list
    assert config.offload.mode == "enforce"
    assert config.offload.catalog.deferral == "search"
    assert "Way back" in printed.out and '"mode": "observe"' in printed.out
    assert config.mcpServers["git"].args == ["--repository", "/repo"]
    assert config.mcpServers["web"].kind == "streamable-http"
    assert config.mcpServers["web"].headers == {"Authorization": "Bearer t"}
    # offload-mcp itself is never wrapped, the client-only key is dropped with a note
    assert "offload" not in config.mcpServers
    assert "alwaysAllow" in printed.err and "offload-mcp itself" in printed.err
    # the servers' env may hold secrets: the written config is private
    assert (out.stat().st_mode & 0o777) == 0o600
    # the client file is untouched without --write-client
    assert client.read_bytes() == before
    assert "claude mcp add --scope user offload -- " in printed.out
    assert f"serve -c {out}" in printed.out
    assert "claude mcp remove --scope local fs   # in /home/u/proj" in printed.out
    desktop_json = printed.out.split("Claude Desktop")[1].split("Or let init")[0]
    entry = json.loads(desktop_json[desktop_json.index("{") :])["mcpServers"]["offload"]
    assert entry["args"] == ["serve", "-c", str(out)]


def test_the_same_server_in_two_scopes_is_wrapped_once(tmp_path, capsys):
    client = write(tmp_path / ".claude.json", CLAUDE_CODE)
    out = tmp_path / "o.json"
    assert main(["init", "--from", str(client), "-o", str(out)]) == 0
    servers = json.loads(out.read_text())["mcpServers"]
    assert [name for name in servers if servers[name].get("command") == "mcp-server-git"] == ["git"]


def test_existing_output_is_not_overwritten_without_force(tmp_path, capsys):
    client = write(tmp_path / "c.json", DESKTOP)
    out = write(tmp_path / "o.json", "keep me")
    assert main(["init", "--from", str(client), "-o", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert out.read_text() == "keep me"
    assert main(["init", "--from", str(client), "-o", str(out), "--force"]) == 0
    assert list(load_config(out).mcpServers) == ["time"]


def test_stdout_output_and_enforce_mode(tmp_path, capsys):
    client = write(tmp_path / "c.json", DESKTOP)
    assert main(["init", "--from", str(client), "-o", "-", "--mode", "enforce"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data == {"mcpServers": {"time": {"command": "mcp-server-time", "args": []}}, "offload": {"mode": "enforce"}}


def test_write_client_backs_up_then_rewrites(tmp_path, capsys):
    client = write(tmp_path / ".claude.json", CLAUDE_CODE)
    before = client.read_bytes()
    out = tmp_path / "offload.json"
    assert main(["init", "--from", str(client), "-o", str(out), "--write-client"]) == 0
    printed = capsys.readouterr().out

    backup = tmp_path / ".claude.json.offload-mcp.bak"
    assert backup.read_bytes() == before
    assert str(backup) in printed
    data = json.loads(client.read_text())
    assert data["numStartups"] == 7 and data["projects"]["/home/u/proj"]["allowedTools"] == []
    assert set(data["mcpServers"]) == {"offload"}
    assert data["mcpServers"]["offload"]["args"] == ["serve", "-c", str(out)]
    assert data["projects"]["/home/u/proj"]["mcpServers"] == {}
    assert data["projects"]["/home/u/other"]["mcpServers"] == {}

    # a second run never clobbers the first backup
    write(client, DESKTOP)
    assert main(["init", "--from", str(client), "-o", str(out), "--force", "--write-client"]) == 0
    assert backup.read_bytes() == before
    assert json.loads((tmp_path / ".claude.json.offload-mcp.bak1").read_text()) == DESKTOP


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"mcpServers": {"git": {"command": "x",}}', "not valid JSON"),
        ("[1, 2]", "top level must be a JSON object"),
        ('{"mcpServers": ["git"]}', "`mcpServers` must be a JSON object"),
        ('{"projects": {"/p": {"mcpServers": "nope"}}}', "projects./p.mcpServers"),
        ('{"mcpServers": {}}', "no MCP servers to wrap"),
    ],
)
def test_malformed_client_config_is_a_clear_error_exit_2(tmp_path, content, message):
    client = write(tmp_path / "bad.json", content)
    out = tmp_path / "o.json"
    proc = subprocess.run(
        prewarmed(["-m", "offload_mcp.cli", "init", "--from", str(client), "-o", str(out)]),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert str(client) in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()
    assert client.read_text() == content


def test_an_output_init_cannot_write_is_a_clear_error_exit_2(tmp_path, read_only_dir):
    """Before: `OSError: [Errno 30] Read-only file system` as a traceback."""
    client = write(tmp_path / "c.json", DESKTOP)
    init = prewarmed(["-m", "offload_mcp.cli", "init", "--from", str(client)])
    read_only = run_unprivileged([*init, "-o", str(read_only_dir / "c.json")])
    assert read_only.returncode == 2, read_only.stderr
    assert f"cannot write {read_only_dir / 'c.json'}" in read_only.stderr and "-o FILE" in read_only.stderr
    directory = subprocess.run([*init, "-o", str(tmp_path), "--force"], capture_output=True, text=True, timeout=60)
    assert directory.returncode == 2 and f"-o {tmp_path}: is a directory; pass a file path" in directory.stderr
    for done in (read_only, directory):
        assert "Traceback" not in done.stderr and done.stdout == ""
    assert list(read_only_dir.iterdir()) == []


def test_unusable_entries_are_skipped_with_a_reason(tmp_path, capsys):
    client = write(tmp_path / "c.json", {"mcpServers": {"ok": {"command": "a"}, "bad": {"command": ""}, "weird": 3}})
    out = tmp_path / "o.json"
    assert main(["init", "--from", str(client), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "skipped mcpServers.bad" in err and "skipped mcpServers.weird: not a JSON object" in err
    assert list(load_config(out).mcpServers) == ["ok"]


def test_default_source_is_found_under_home(tmp_path):
    """With no --from, init reads ~/.claude.json, else Claude Desktop's file (Linux path here)."""
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    args = prewarmed(["-m", "offload_mcp.cli", "init", "-o", "-"])
    missing = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
    assert missing.returncode == 2 and "--from PATH" in missing.stderr

    write(tmp_path / "cfg" / "Claude" / "claude_desktop_config.json", DESKTOP)
    desktop = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
    assert desktop.returncode == 0, desktop.stderr
    assert list(json.loads(desktop.stdout)["mcpServers"]) == ["time"]

    write(tmp_path / ".claude.json", {"mcpServers": {"code": {"command": "c"}}})
    code = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
    assert list(json.loads(code.stdout)["mcpServers"]) == ["code"]


def test_desktop_source_prints_no_claude_code_removals(tmp_path, capsys):
    client = write(tmp_path / "claude_desktop_config.json", DESKTOP)
    assert main(["init", "--from", str(client), "-o", str(tmp_path / "o.json")]) == 0
    out = capsys.readouterr().out
    assert "claude mcp add --scope user offload" in out and "claude mcp remove" not in out
    assert '"offload"' in out.split("Claude Desktop")[1]


def test_init_never_wraps_an_entry_that_already_runs_offload_mcp(tmp_path, capsys):
    # Issue 11: an HTTP entry that is an offload-mcp (asked via initialize), and launcher spellings.
    from support.proxy import proxy_http
    from support.servers import write_config

    inner = write_config(tmp_path, {"t": {"command": "mcp-server-time"}}, name="inner.json")
    with proxy_http(["-c", str(inner), "--ledger", str(tmp_path / "inner.db")]) as url:
        client = tmp_path / "claude.json"
        client.write_text(
            json.dumps(
                {
                    "mcpServers": {
                        "proxied": {"type": "http", "url": url},
                        "uvx": {"command": "uvx", "args": ["offload-mcp==0.3", "serve", "-c", "x.json"]},
                        "module": {"command": "python3", "args": ["-m", "offload_mcp.cli", "serve"]},
                        "time": {"command": "mcp-server-time"},
                    }
                }
            )
        )
        out = tmp_path / "offload.json"
        assert main(["init", "--from", str(client), "-o", str(out)]) == 0
    config = load_config(out)
    assert set(config.mcpServers) == {"time"}
    err = capsys.readouterr().err
    assert "skipped mcpServers.proxied: it is offload-mcp itself (its serverInfo says so" in err
    assert "skipped mcpServers.uvx: it is offload-mcp itself" in err and "skipped mcpServers.module" in err


def test_a_folder_named_offload_mcp_in_an_argument_is_not_offload_mcp(tmp_path):
    """Issue 39: servers pointed into a checkout at .../offload-mcp were skipped as "offload-mcp itself".
    Only the launched program counts; an entry that runs offload-mcp is still skipped, listed first."""
    checkout = tmp_path / "src" / "offload-mcp"
    client = write(
        tmp_path / ".claude.json",
        {
            "mcpServers": {
                "filesystem": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-filesystem", str(checkout)],
                },
                "git": {"command": "mcp-server-git", "args": ["--repository", str(checkout)]},
                "venv-git": {"command": str(checkout / ".venv" / "bin" / "mcp-server-git"), "args": []},
                "uv-git": {"command": "uv", "args": ["run", "--directory", str(checkout), "mcp-server-git"]},
                "proxy": {"command": str(checkout / ".venv" / "bin" / "offload-mcp"), "args": ["serve"]},
                "uv-proxy": {"command": "uv", "args": ["run", "--directory", str(checkout), "offload-mcp", "serve"]},
                "uvx-proxy": {"command": "uvx", "args": ["--from=git+https://example.com/x/offload-mcp.git", "serve"]},
            }
        },
    )
    out = tmp_path / "o.json"
    # one stream, as a terminal shows it: the skipped servers come before anything else init says
    done = subprocess.run(
        prewarmed(["-m", "offload_mcp.cli", "init", "--from", str(client), "-o", str(out)]),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout
    assert set(load_config(out).mcpServers) == {"filesystem", "git", "venv-git", "uv-git"}
    assert done.stdout.startswith("offload-mcp init: SKIPPED 3 server(s) of "), done.stdout
    head = done.stdout.split("\n\n", 1)[0]
    for name in ("proxy", "uv-proxy", "uvx-proxy"):
        assert f"skipped mcpServers.{name}: it is offload-mcp itself (its command launches offload-mcp" in head
    assert "(3 skipped: see above)" in done.stdout and done.stdout.index("SKIPPED") < done.stdout.index("wrote ")


def test_init_and_serve_cmd_default_to_the_same_mode(tmp_path, capsys):
    """Issue 39: the starter config said observe while `serve CMD` enforced; a first session then broke."""
    from offload_mcp.config import inline_server_config

    client = write(tmp_path / "c.json", DESKTOP)
    assert main(["init", "--from", str(client), "-o", "-"]) == 0
    written = json.loads(capsys.readouterr().out)["offload"]["mode"]
    assert written == inline_server_config(["mcp-server-time"]).offload.mode == "enforce"


def test_the_deferral_follows_the_client_the_config_is_for(tmp_path, capsys):
    client = write(tmp_path / "mcp.json", DESKTOP)
    assert main(["init", "--from", str(client), "-o", "-"]) == 0
    assert "catalog" not in json.loads(capsys.readouterr().out)["offload"]  # not Claude Code's file: hint
    assert main(["init", "--from", str(client), "-o", "-", "--client", "claude-code"]) == 0
    assert json.loads(capsys.readouterr().out)["offload"]["catalog"] == {"deferral": "search"}
    out = tmp_path / "o.json"
    assert main(["init", "--from", str(client), "-o", str(out)]) == 0
    assert "tools: hint (every tool listed, for other; for Claude Code run init with --client claude-code)" in (
        capsys.readouterr().out
    )
