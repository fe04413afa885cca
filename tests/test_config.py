"""Config: the mcpServers format clients use, our `offload` object, and clear errors for bad input."""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

import pytest

from offload_mcp.commands.serve import resolve_config
from offload_mcp.config import ConfigError, load_config
from offload_mcp.downstream.settings import RemoteServer, StdioServer
from support.proxy import OFFLOAD_MCP, proxy_env
from support.servers import fixture_cmd
from support.zygote import prewarmed


def _write(tmp_path: Path, data: object, name: str = "mcp.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_claude_desktop_and_code_shapes_are_accepted(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "mcpServers": {
                "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"A": "1"}, "cwd": "/tmp"},
                "typed": {"type": "stdio", "command": "x"},
                "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"X": "y"}},
                "legacy": {"url": "https://example.com/sse"},
                "alt": {"transport": "sse", "url": "https://example.com/events"},
            },
            "offload": {"mode": "observe", "downstream": {"call_timeout_s": 5}},
        },
    )
    config = load_config(path)
    assert isinstance(config.mcpServers["git"], StdioServer) and config.mcpServers["git"].env == {"A": "1"}
    kinds = {n: e.kind for n, e in config.mcpServers.items() if isinstance(e, RemoteServer)}
    assert kinds == {"remote": "streamable-http", "legacy": "sse", "alt": "sse"}
    assert config.offload.mode == "observe" and config.offload.downstream.call_timeout_s == 5


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"mcpServers": {"git": {"command": "x", "colour": "red"}}}, "mcpServers.git.colour: unknown key"),
        (
            {"mcpServers": {"git": {"command": "x", "args": "not-a-list"}}},
            "mcpServers.git.args: Input should be a valid list",
        ),
        (
            {"mcpServers": {"git": {"args": ["x"]}}},
            "mcpServers.git: needs `command` (stdio server) or `url` (remote server)",
        ),
        ({"mcpServers": {"git": {"command": ""}}}, "mcpServers.git.command"),
        (
            {"mcpServers": {}, "offload": {"downstream": {"call_timeout_s": "soon"}}},
            "offload.downstream.call_timeout_s",
        ),
        ({"mcpServers": {}, "offlaod": {}}, "offlaod: unknown key (did you mean `offload`?)"),
        # A misspelt `command` is named, not only the missing one; close matches are suggested.
        ({"mcpServers": {"x": {"comand": "srv"}}}, "mcpServers.x.comand: unknown key (did you mean `command`?)"),
        ({"mcpServers": {"x": {"comand": "srv"}}}, "mcpServers.x: needs `command` (stdio server) or `url`"),
        ({"mcpServers": {"x": {"command": "srv", "arg": []}}}, "mcpServers.x.arg: unknown key (did you mean `args`?)"),
        ({"mcpServers": {"x": {"command": "srv", "evn": {}}}}, "mcpServers.x.evn: unknown key (did you mean `env`?)"),
        ({"mcpServers": {}, "offload": {"polcy": {}}}, "offload.polcy: unknown key (did you mean `policy`?)"),
        (
            {"mcpServers": {}, "offload": {"ledger": {"url": "mysql://u@h/db"}}},
            "offload.ledger.url: ledger URL mysql://u@h/db: unsupported scheme 'mysql'",
        ),
        (
            {"mcpServers": {}, "offload": {"ledger": {"path": "sqlite:///tmp/l.db"}}},
            "offload.ledger.path: ledger URL sqlite:///tmp/l.db: unsupported scheme 'sqlite'",
        ),
        (
            {"mcpServers": {"git": {"command": "x", "args": ["--repository", "{{REPO}}"]}}},
            "mcpServers.git.args.1: unfilled placeholder {{REPO}}",
        ),
        (
            {"mcpServers": {}, "offload": {"server": {"auth_tokens": {"alice": "{{ALICE_TOKEN}}"}}}},
            "offload.server.auth_tokens.alice: unfilled placeholder {{ALICE_TOKEN}}",
        ),
        ({"mcpServers": {"r": {"url": "http://x", "type": "sse", "transport": "http"}}}, "disagree"),
        ([1, 2], "the top level must be a JSON object"),
    ],
)
def test_bad_configs_name_file_key_and_problem(tmp_path: Path, data: object, expected: str) -> None:
    path = _write(tmp_path, data)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(path) in str(err.value) and expected in str(err.value)


def test_unreadable_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "missing.json")
    bad = _write(tmp_path, '{"mcpServers": {', "bad.json")
    with pytest.raises(ConfigError, match=r"bad\.json: not valid JSON"):
        load_config(bad)


def test_env_and_header_variables_expand(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OFFLOAD_TEST_TOKEN", "t0k")
    path = _write(
        tmp_path,
        {
            "mcpServers": {
                "a": {
                    "command": "x",
                    "env": {"TOKEN": "${OFFLOAD_TEST_TOKEN}", "D": "${OFFLOAD_TEST_UNSET:-fallback}"},
                },
                "b": {"url": "http://h/mcp", "headers": {"Authorization": "Bearer ${OFFLOAD_TEST_TOKEN}"}},
            }
        },
    )
    config = load_config(path)
    assert config.mcpServers["a"].env == {"TOKEN": "t0k", "D": "fallback"}
    assert config.mcpServers["b"].headers == {"Authorization": "Bearer t0k"}
    missing = _write(tmp_path, {"mcpServers": {"a": {"command": "x", "env": {"K": "${OFFLOAD_TEST_UNSET}"}}}}, "m.json")
    with pytest.raises(
        ConfigError, match=r"mcpServers\.a\.env\.K: environment variable \$\{OFFLOAD_TEST_UNSET\} is not set"
    ):
        load_config(missing)


def _args(**kw: object) -> argparse.Namespace:
    defaults = {"config": None, "command": [], "name": None}
    return argparse.Namespace(**{**defaults, **kw})


def test_config_sources_flag_env_and_inline(tmp_path: Path) -> None:
    path = _write(tmp_path, {"mcpServers": {"fx": {"command": "x"}}})
    assert list(resolve_config(_args(config=str(path)), environ={}).mcpServers) == ["fx"]
    assert list(resolve_config(_args(), environ={"OFFLOAD_MCP_CONFIG": str(path)}).mcpServers) == ["fx"]
    inline = resolve_config(_args(command=["--", "/usr/bin/mcp-server-git", "--repository", "."]), environ={})
    entry = inline.mcpServers["mcp-server-git"]
    assert entry.command == "/usr/bin/mcp-server-git" and entry.args == ["--repository", "."]
    both = resolve_config(_args(config=str(path), command=["srv"]), environ={})
    assert list(both.mcpServers) == ["fx", "srv"]
    with pytest.raises(ConfigError, match="no downstream server"):
        resolve_config(_args(), environ={})
    with pytest.raises(ConfigError, match="already used"):
        resolve_config(_args(config=str(path), command=["x"], name="fx"), environ={})


def _serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        prewarmed([OFFLOAD_MCP, "serve", *args]),
        capture_output=True,
        text=True,
        env=proxy_env(env),
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_serve_exits_2_on_a_bad_config_naming_file_key_and_problem(tmp_path: Path) -> None:
    path = _write(tmp_path, {"mcpServers": {"git": {"command": "x", "argz": []}}})
    done = _serve("-c", str(path))
    assert done.returncode == 2
    assert f"{path}: invalid configuration" in done.stderr and "mcpServers.git.argz: unknown key" in done.stderr
    done = _serve(env={"OFFLOAD_MCP_CONFIG": str(tmp_path / "nope.json")})
    assert done.returncode == 2 and "nope.json: cannot read config file" in done.stderr
    done = _serve()
    assert done.returncode == 2 and "no downstream server" in done.stderr
    assert done.stdout == ""  # stdout is the protocol channel: nothing but protocol there, ever


def test_serve_refuses_the_unfilled_template_and_a_ledger_url_no_backend_serves(tmp_path: Path) -> None:
    """Before: the template served as is made a SQLite file named `{{LEDGER_URL}}` and accepted
    `{{ALICE_TOKEN}}` as a bearer token; a `mysql://` ledger only warned and served unshaped."""
    from support.servers import ROOT

    def serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            prewarmed([OFFLOAD_MCP, "serve", *args]),
            capture_output=True,
            text=True,
            env=proxy_env(env),
            cwd=cwd,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )

    cwd = tmp_path / "cwd"
    cwd.mkdir()
    template = serve("-c", str(ROOT / "docs" / "deploy" / "offload.json"))
    assert template.returncode == 2, template.stderr
    for key, name in (
        ("offload.server.auth_tokens.alice", "ALICE_TOKEN"),
        ("offload.server.auth_tokens.bob", "BOB_TOKEN"),
        ("offload.ledger.url", "LEDGER_URL"),
    ):
        assert f"{key}: unfilled placeholder {{{{{name}}}}}" in template.stderr
    config = _write(
        tmp_path, {"mcpServers": {"fx": {"command": "x"}}, "offload": {"ledger": {"url": "mysql://u:pw@h/db"}}}
    )
    in_config = serve("-c", str(config))
    assert in_config.returncode == 2 and "offload.ledger.url: ledger URL mysql://u:***@h/db" in in_config.stderr
    flag = serve("--ledger", "mysql://u@h/db", "--", *fixture_cmd())
    assert flag.returncode == 2 and "--ledger: ledger URL mysql://u@h/db: unsupported scheme 'mysql'" in flag.stderr
    env = serve("--", *fixture_cmd(), env={"OFFLOAD_MCP_LEDGER": "mysql://u@h/db"})
    assert env.returncode == 2 and "OFFLOAD_MCP_LEDGER: ledger URL mysql://u@h/db" in env.stderr
    # A directory is never a ledger file: it passed results through unshaped for the whole session.
    folder = serve("--ledger", str(tmp_path), "--", *fixture_cmd())
    assert (
        folder.returncode == 2 and f"ledger: {tmp_path} is a directory; a ledger file path is expected" in folder.stderr
    )
    for done in (template, in_config, flag, env, folder):
        assert "Traceback" not in done.stderr and "serving" not in done.stderr and done.stdout == ""
        assert "pw" not in done.stderr
    assert list(cwd.iterdir()) == []  # no ledger file named after a placeholder


def test_a_plain_file_path_in_ledger_url_stays_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README lists `offload.ledger.url` among the places a path is accepted."""
    from offload_mcp.store.location import ENV_VAR, resolve

    monkeypatch.delenv(ENV_VAR, raising=False)

    config = load_config(_write(tmp_path, {"offload": {"ledger": {"url": str(tmp_path / "l.db")}}}))
    assert resolve(config.offload.ledger).path == tmp_path / "l.db"


def test_mcp_json_example_at_repo_root_is_valid() -> None:
    from support.servers import ROOT

    example = ROOT / "mcp.json.example"
    if not example.exists():
        pytest.skip("mcp.json.example not written yet")
    data = json.loads(example.read_text())
    assert "mcpServers" in data


def test_inline_command_keeps_its_own_options() -> None:
    from offload_mcp.cli import build_parser

    args = build_parser().parse_args(["serve", "--ledger", "L", *fixture_cmd(), "--port", "9", "-c", "x"])
    assert args.ledger == "L" and args.config is None and args.port == 8765
    assert args.command == [*fixture_cmd(), "--port", "9", "-c", "x"]


@pytest.mark.parametrize(
    ("command", "name"),
    [
        (["mcp-server-git", "--repository", "."], "mcp-server-git"),
        (["npx", "-y", "@modelcontextprotocol/server-filesystem", "/p"], "server-filesystem"),
        (["/usr/bin/python3", "tests/fixtures/fixture_server.py"], "fixture_server"),
        (["uvx", "mcp-server-time@latest"], "mcp-server-time"),
        (["uv", "run", "--with", "x", "srv"], "srv"),
        (["python3.11", "-m", "mcp_server_git"], "mcp_server_git"),
    ],
)
def test_inline_servers_are_named_after_the_server_not_its_launcher(command: list[str], name: str) -> None:
    from offload_mcp.config import inline_server_config

    assert list(inline_server_config(command).mcpServers) == [name]


def test_serve_warns_once_when_its_model_has_no_price_and_the_gate_cannot_fire(tmp_path: Path) -> None:
    # Not refused (a model newer than the table is fair to run), but no longer silent.
    config = _write(
        tmp_path, {"mcpServers": {"fx": {"command": "sleep", "args": ["5"]}}, "offload": {"policy": {"model": "gpt-9"}}}
    )
    done = subprocess.run(
        prewarmed([OFFLOAD_MCP, "serve", "-c", str(config), "--ledger", str(tmp_path / "l.db")]),
        capture_output=True,
        text=True,
        env=proxy_env(None),
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert (
        done.stderr.count("model 'gpt-9' has no pricing row and no known family: the net-saving gate will not fire")
        == 1
    )
