"""`offload-mcp init`: write a starter config that wraps the servers a client already has.

Reads Claude Code's `~/.claude.json` (user-scope `mcpServers` and every
`projects.*.mcpServers`), Claude Desktop's `claude_desktop_config.json`, or a
file given with `--from`, and writes an offload-mcp config holding those
servers. It prints the one client entry to use instead. The client's own file
is edited only with `--write-client`, and then a backup is written first.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..config import ConfigError, parse_config

EXAMPLES = """\
examples:
  offload-mcp init                          # read ~/.claude.json (or Claude Desktop's config)
  offload-mcp init --from claude-desktop    # read Claude Desktop's claude_desktop_config.json
  offload-mcp init --from ./mcp.json -o offload.json
  offload-mcp init -o -                     # print the config instead of writing it
  offload-mcp init --write-client           # also point the client at offload-mcp (backup first)

The starter config runs in enforce mode, like `offload-mcp serve CMD`: from the
first session a result too large for the client (Claude Code files one over
50,000 chars behind a preview, refuses one over 400,000) arrives as a stub with an index, its full body in the ledger.
The one-line way back is "offload": {"mode": "observe"} in the written config
(or `--mode observe` here): results then pass through unchanged while the
ledger records what offload-mcp would have saved (`offload-mcp stats`).
"""

CLIENTS = ("claude-code", "claude-desktop", "other")

DEFERRAL_FOR_CLIENT: dict[str, str | None] = {"claude-code": "search", "claude-desktop": None, "other": None}
"""The `catalog.deferral` init writes per client (None: the default, `hint`).

Claude Code: `search`. Its own tool search already defers MCP tools, so hint mode's marks buy it
nothing, while every proxied tools/list also carries the proxy's own tools and each `outputSchema`
widened to accept a stub: through the proxy in `hint` mode mcp-server-git + server-filesystem list
26,418 bytes against 19,071 direct. In `search` mode the list is the hot tools plus search_tools and
invoke_tool (4,308 bytes there): smaller than the servers' own lists once they hold more than the
search tools' own ~4.3 KB, and every listed tool is marked alwaysLoad so Claude Code's search does not
hide the search tool. (Below that size no mode lists fewer bytes than direct: the proxy's own tools.)
Other clients keep `hint`: it lists every tool, so a client's own per-tool switches keep working."""

STDIO_KEYS = ("type", "command", "args", "env", "cwd")
REMOTE_KEYS = ("url", "type", "transport", "headers")
SERVER_NAME = "offload"


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "init",
        help="write a starter config wrapping the MCP servers your client already uses",
        description=__doc__.split("\n\n")[0].split(": ", 1)[1],
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--from",
        dest="source",
        metavar="PATH|claude-code|claude-desktop",
        help="client config to read (default: ~/.claude.json if present, else Claude Desktop's)",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="where to write the config (`-` for stdout; default: %(default_hint)s)".replace(
            "%(default_hint)s", "the user config dir's offload-mcp/config.json"
        ),
    )
    parser.add_argument(
        "--mode",
        choices=("observe", "enforce"),
        default="enforce",
        help="offload.mode of the starter config (default: enforce, as `serve CMD`; observe only records)",
    )
    parser.add_argument(
        "--client",
        choices=CLIENTS,
        help="the client the config is for, which picks its tool-list deferral"
        " (default: claude-code when reading ~/.claude.json, claude-desktop for its file, else other)",
    )
    parser.add_argument("--force", action="store_true", help="overwrite an existing output file")
    parser.add_argument(
        "--write-client",
        action="store_true",
        help="replace the wrapped servers in the client's file by one `offload` entry (writes a backup first)",
    )
    parser.set_defaults(func=run)


# ---------------------------------------------------------------- client files


def claude_code_path() -> Path:
    return Path.home() / ".claude.json"


def claude_desktop_path() -> Path:
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if sys.platform.startswith("win"):
        base = os.environ.get("APPDATA") or str(Path.home() / "AppData" / "Roaming")
        return Path(base) / "Claude" / "claude_desktop_config.json"
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "Claude" / "claude_desktop_config.json"


def default_output_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_config_dir("offload-mcp")) / "config.json"


def resolve_source(source: str | None) -> Path:
    if source == "claude-code":
        return claude_code_path()
    if source == "claude-desktop":
        return claude_desktop_path()
    if source:
        return Path(source).expanduser()
    for candidate in (claude_code_path(), claude_desktop_path()):
        if candidate.is_file():
            return candidate
    raise ConfigError(
        f"no client config found (looked for {claude_code_path()} and {claude_desktop_path()}); "
        "pass one with --from PATH"
    )


@dataclass
class Found:
    """The servers read from one client file, and where each came from."""

    path: Path
    data: dict[str, Any]
    servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    origin: dict[str, list[tuple[str, ...]]] = field(default_factory=dict)
    """our name -> key paths (the `mcpServers` object, then the name inside it) it was read from."""
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """One line per server left out, with why; printed first and loudly."""


PACKAGE = "offload-mcp"

_PYTHON = re.compile(r"^(?:python(?:\d+(?:\.\d+)*)?|py|pypy\d*)$", re.IGNORECASE)
_LAUNCHERS = frozenset({"uvx", "uv", "pipx"})
_LAUNCHER_VERBS = frozenset({"run", "tool", "exec"})
"""`uv tool run X`, `uv run X`, `pipx run X`: words between the launcher and what it launches."""
_PACKAGE_OPTIONS = frozenset({"--from", "--spec"})
"""Launcher options whose value is the package that runs (`uvx --from offload-mcp serve`)."""
_VALUE_OPTIONS = frozenset(
    {
        "--with",
        "--with-editable",
        "--with-requirements",
        "--python",
        "-p",
        "--directory",
        "--project",
        "--index",
        "--index-url",
        "--default-index",
        "--extra-index-url",
        "-i",
        "--env-file",
        "--config-file",
        "--cache-dir",
        "--pip-args",
        "--find-links",
        "-f",
    }
)
"""Launcher options that take a value: a value is never the launched program (it may be any path)."""


def _base(word: str) -> str:
    name = re.split(r"[/\\]", word.rstrip("/\\"))[-1].lower()
    return name[: -len(".exe")] if name.endswith(".exe") else name


def _names_offload(spec: str) -> bool:
    """A package spec or program that is offload-mcp: `offload-mcp`, `offload_mcp==0.3`, `offload-mcp@latest`,
    `offload-mcp[pg]`, a path or URL ending in the package (`git+https://.../offload-mcp.git`)."""
    name = re.split(r"[=<>~!@\[;\s]", _base(spec.split("#", 1)[0]))[0]
    name = name[: -len(".git")] if name.endswith(".git") else name
    return name.replace("_", "-") == PACKAGE


def _launches_offload(words: list[str]) -> bool:
    """Whether a command line starts offload-mcp, judged by the launched program alone.

    Only the launcher word counts: the command itself, what `python -m` runs, what uvx/uv/pipx
    run (or take `--from`). An argument handed to the program is never looked at, so a server
    pointed at a folder named offload-mcp (`mcp-server-git --repository ~/src/offload-mcp`) is
    just that server."""
    if not words:
        return False
    command, rest = words[0], words[1:]
    if _names_offload(command):
        return True
    if _PYTHON.match(_base(command)):
        for i, word in enumerate(rest):
            if word == "-m":
                module = rest[i + 1] if i + 1 < len(rest) else ""
                return module.split(".")[0] == "offload_mcp"
            if word.startswith("-m") and len(word) > 2:
                return word[2:].split(".")[0] == "offload_mcp"
            if not word.startswith("-"):
                return False  # a script runs, not a module
        return False
    if _base(command) in _LAUNCHERS:
        i = 0
        while i < len(rest):
            word = rest[i]
            option, _, value = word.partition("=")
            if option in _PACKAGE_OPTIONS:
                spec = value if value else (rest[i + 1] if i + 1 < len(rest) else "")
                if _names_offload(spec):
                    return True
                i += 1 if value else 2
                continue
            if option in _VALUE_OPTIONS:
                i += 1 if value else 2
                continue
            if word.startswith("-") or word in _LAUNCHER_VERBS:
                i += 1
                continue
            return _launches_offload(rest[i:])
    return False


PROBE_SECONDS = 3.0
"""How long init asks a remote entry who it is (one MCP initialize) before wrapping it anyway."""


def _is_offload_entry(entry: dict[str, Any]) -> bool:
    """A stdio entry that launches offload-mcp (directly, via uvx/uv/pipx/python -m, any version pin)."""
    args = entry.get("args", [])
    words = [str(entry.get("command", ""))] + [str(a) for a in (args if isinstance(args, list) else [])]
    if _launches_offload(words):
        return True
    env = entry.get("env")
    return isinstance(env, dict) and "OFFLOAD_MCP_CONFIG" in env


def _worth_asking(url: Any) -> bool:
    """Ask only where an offload-mcp is likely: this machine, or a host named for it. init does not
    contact third-party services (a remote entry often carries credentials)."""
    from urllib.parse import urlsplit

    try:
        host = (urlsplit(str(url)).hostname or "").lower()
    except ValueError:
        return False
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.") or "offload" in host


def remote_server_name(entry: dict[str, Any], seconds: float = PROBE_SECONDS) -> str | None:
    """The serverInfo name a remote (HTTP/SSE) entry answers initialize with; None when it cannot be asked.

    A URL says nothing about what serves it, so init asks: an offload-mcp behind HTTP must not be
    wrapped by another (the inner stub ids would not resolve through the outer recall)."""
    import anyio

    from ..downstream.settings import RemoteServer

    try:
        remote = parse_config({"mcpServers": {"probe": entry}}, source="probe").mcpServers["probe"]
    except ConfigError:
        return None
    if not isinstance(remote, RemoteServer):
        return None

    async def ask() -> str | None:
        from contextlib import AsyncExitStack

        from mcp.client.session import ClientSession

        from ..downstream.settings import DownstreamSettings
        from ..downstream.wrapped_server import _remote_transport

        with anyio.move_on_after(seconds):
            async with AsyncExitStack() as stack:
                # the default bound: only the initialize answer is read
                bound = DownstreamSettings().max_result_bytes
                read, write = await stack.enter_async_context(_remote_transport(remote, bound, "probe"))
                session = await stack.enter_async_context(ClientSession(read, write))
                result = await session.initialize()
                return str(result.server_info.name)
        return None

    try:
        return anyio.run(ask)
    except BaseException as err:  # unreachable, refused, not MCP: cannot tell, so it is wrapped
        if isinstance(err, KeyboardInterrupt):
            raise
        return None


def _clean_entry(name: str, entry: Any, where: str, notes: list[str], skipped: list[str]) -> dict[str, Any] | None:
    if not isinstance(entry, dict):
        skipped.append(f"skipped {where}.{name}: not a JSON object")
        return None
    if entry.get("disabled") is True:
        skipped.append(f"skipped {where}.{name}: disabled in the client")
        return None
    if _is_offload_entry(entry):
        skipped.append(
            f"skipped {where}.{name}: it is offload-mcp itself (its command launches offload-mcp; one proxy must not wrap another)"
        )
        return None
    if "url" in entry and _worth_asking(entry["url"]) and remote_server_name(entry) == "offload-mcp":
        skipped.append(
            f"skipped {where}.{name}: it is offload-mcp itself (its serverInfo says so; one proxy must not wrap another)"
        )
        return None
    keys = REMOTE_KEYS if "url" in entry else STDIO_KEYS
    kept = {k: entry[k] for k in keys if k in entry and entry[k] is not None}
    if kept.get("type") == "stdio" and "url" in entry:
        kept.pop("type")
    dropped = sorted(set(entry) - set(kept) - {"disabled"})
    if dropped:
        notes.append(f"{where}.{name}: dropped keys offload-mcp does not use: {', '.join(dropped)}")
    try:
        parse_config({"mcpServers": {name: kept}}, source=where)
    except ConfigError as err:
        skipped.append(f"skipped {where}.{name}: {err}")
        return None
    return kept


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name) or "server"


def read_client_config(path: Path) -> Found:
    """Collect the servers of a client file; a malformed file raises ConfigError."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file; pass the client's config with --from PATH") from None
    except OSError as err:
        raise ConfigError(f"{path}: cannot read: {err.strerror or err}") from None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise ConfigError(f"{path}: not valid JSON ({err}); fix the file or pass another with --from PATH") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a JSON object, got {type(data).__name__}")

    found = Found(path=path, data=data)
    blocks: list[tuple[tuple[str, ...], Any]] = []
    if "mcpServers" in data:
        blocks.append((("mcpServers",), data["mcpServers"]))
    projects = data.get("projects")
    if projects is not None and not isinstance(projects, dict):
        raise ConfigError(f"{path}: `projects` must be a JSON object, got {type(projects).__name__}")
    for project, settings in sorted((projects or {}).items()):
        if isinstance(settings, dict) and "mcpServers" in settings:
            blocks.append((("projects", project, "mcpServers"), settings["mcpServers"]))

    for keys, block in blocks:
        where = ".".join(keys)
        if not isinstance(block, dict):
            raise ConfigError(f"{path}: `{where}` must be a JSON object of servers, got {type(block).__name__}")
        for name, entry in block.items():
            kept = _clean_entry(name, entry, where, found.notes, found.skipped)
            if kept is None:
                continue
            ours = _safe_name(name)
            if ours in found.servers and found.servers[ours] == kept:
                found.origin[ours].append((*keys, name))  # the same server listed twice: wrap it once
                continue
            if ours in found.servers:
                suffix = _safe_name(Path(keys[1]).name if len(keys) == 3 else "user")
                candidate, n = f"{ours}-{suffix}", 2
                while candidate in found.servers:
                    candidate, n = f"{ours}-{suffix}-{n}", n + 1
                found.notes.append(f"{where}.{name}: another server has this name; wrapped as `{candidate}`")
                ours = candidate
            found.servers[ours] = kept
            found.origin[ours] = [(*keys, name)]
    return found


# ---------------------------------------------------------------- writing


def _write_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def backup_path(path: Path) -> Path:
    candidate = path.with_name(path.name + ".offload-mcp.bak")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.offload-mcp.bak{n}")
        n += 1
    return candidate


def offload_command() -> str:
    """The absolute program clients should start (Claude Desktop does not use the shell's PATH)."""
    found = shutil.which("offload-mcp")
    if found:
        return str(Path(found).resolve())
    argv0 = Path(sys.argv[0])
    if argv0.name == "offload-mcp" and argv0.exists():
        return str(argv0.resolve())
    return "offload-mcp"


def client_entry(config_path: Path) -> dict[str, Any]:
    return {"command": offload_command(), "args": ["serve", "-c", str(config_path)]}


def rewrite_client(found: Found, config_path: Path) -> tuple[dict[str, Any], list[str]]:
    """The client's data with the wrapped servers replaced by one `offload` entry."""
    data = orjson.loads(orjson.dumps(found.data))
    removed: list[str] = []
    for paths in found.origin.values():
        for keys in paths:
            block = data
            for key in keys[:-1]:
                block = block[key]
            if keys[-1] in block:
                del block[keys[-1]]
                removed.append(".".join(keys))
    servers = data.setdefault("mcpServers", {})
    servers[SERVER_NAME] = client_entry(config_path)
    return data, removed


def is_claude_code_file(found: Found) -> bool:
    return found.path.name == ".claude.json" or isinstance(found.data.get("projects"), dict)


def report_skipped(found: Found) -> None:
    """The servers init leaves out, before anything else it prints: a server silently missing from the
    wrapped set is the one mistake a user would not notice until a tool is gone."""
    if not found.skipped:
        return
    print(
        f"offload-mcp init: SKIPPED {len(found.skipped)} server(s) of {found.path}; they are NOT wrapped:",
        file=sys.stderr,
    )
    for line in found.skipped:
        print(f"  - {line}", file=sys.stderr)
    print(file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    source = resolve_source(args.source)
    found = read_client_config(source)
    report_skipped(found)
    for note in found.notes:
        print(f"note: {note}", file=sys.stderr)
    sys.stderr.flush()
    if not found.servers:
        raise ConfigError(f"{source}: no MCP servers to wrap (looked in mcpServers and projects.*.mcpServers)")

    client = args.client or (
        "claude-code"
        if is_claude_code_file(found)
        else "claude-desktop"
        if source.name == claude_desktop_path().name
        else "other"
    )
    offload: dict[str, Any] = {"mode": args.mode}
    deferral = DEFERRAL_FOR_CLIENT[client]
    if deferral is not None:
        offload["catalog"] = {"deferral": deferral}
    config = {"mcpServers": found.servers, "offload": offload}
    parse_config(orjson.loads(orjson.dumps(config)), source="starter config")  # never write a config serve rejects
    body = orjson.dumps(config, option=orjson.OPT_INDENT_2) + b"\n"

    if args.output == "-":
        sys.stdout.buffer.write(body)
        sys.stdout.flush()
        print(f"\nwrapped {len(found.servers)} server(s) from {source}", file=sys.stderr)
        return 0

    output = Path(args.output).expanduser() if args.output else default_output_path()
    output = output.resolve()
    if output.is_dir():
        raise ConfigError(f"-o {output}: is a directory; pass a file path (e.g. {output / 'config.json'})")
    if output.exists() and not args.force:
        raise ConfigError(f"{output} already exists; pass --force to overwrite it or -o FILE to write elsewhere")
    try:
        # The servers' env may hold secrets: keep the file private, like the client's own.
        _write_atomic(output, body, mode=0o600)
    except OSError as err:
        raise ConfigError(
            f"cannot write {output}: {err.strerror or err}; pass another file with -o FILE (or -o - to print it)"
        ) from None

    names = ", ".join(sorted(found.servers))
    skipped = f" ({len(found.skipped)} skipped: see above)" if found.skipped else ""
    print(f"wrote {output}: {len(found.servers)} server(s) from {source}: {names}{skipped}")
    _print_settings(args.mode, deferral, client, output)
    if args.write_client:
        _update_client(found, source, output)
    else:
        _print_manual_steps(found, source, output)
    return 0


def _print_settings(mode: str, deferral: str | None, client: str, output: Path) -> None:
    """The mode and the tool-list style the starter config chose, each with the way to change it."""
    if mode == "observe":
        print(
            "mode: observe (results pass through unchanged; `offload-mcp stats` shows what it would save;"
            ' set "offload": {"mode": "enforce"} to use it)'
        )
    else:
        print(
            "mode: enforce (results too large for the client arrive as a stub; every byte stays recallable)."
            f' Way back: set "offload": {{"mode": "observe"}} in {output}'
        )
    if deferral == "search":
        print(
            "tools: search (for Claude Code: the hot tools plus search_tools/invoke_tool, a smaller tool list"
            ' than the servers\' own; "catalog": {"deferral": "hint"} lists every tool)'
        )
    else:
        print(f"tools: hint (every tool listed, for {client}; for Claude Code run init with --client claude-code)")


def _update_client(found: Found, source: Path, output: Path) -> None:
    """--write-client: the client's file points at offload-mcp instead of the wrapped servers, after a backup."""
    new_data, removed = rewrite_client(found, output)
    backup = backup_path(source)
    try:
        shutil.copy2(source, backup)
        _write_atomic(
            source, orjson.dumps(new_data, option=orjson.OPT_INDENT_2) + b"\n", mode=source.stat().st_mode & 0o777
        )
    except OSError as err:
        raise ConfigError(
            f"wrote {output}, but cannot update {source}: {err.strerror or err}; "
            "point the client at offload-mcp by hand (run init without --write-client for the steps)"
        ) from None
    print(f"backed up {source} to {backup}")
    print(f"updated {source}: removed {', '.join(removed)}; added mcpServers.{SERVER_NAME}")
    print(f"to undo: cp {shlex.quote(str(backup))} {shlex.quote(str(source))}")


def _print_manual_steps(found: Found, source: Path, output: Path) -> None:
    """Without --write-client: the commands and the entry that put offload-mcp in front, per client."""
    entry = client_entry(output)
    print("\nThe client file was not changed. To use offload-mcp instead of those servers:")
    print("\n  Claude Code:")
    print(f"    claude mcp add --scope user {SERVER_NAME} -- {shlex.join([entry['command'], *entry['args']])}")
    # `claude mcp remove` only makes sense for servers Claude Code itself holds.
    from_claude_code = is_claude_code_file(found)
    for keys in sorted(k for paths in found.origin.values() for k in paths) if from_claude_code else []:
        scope = "user" if keys[0] == "mcpServers" else "local"
        where = f"   # in {keys[1]}" if keys[0] == "projects" else ""
        print(f"    claude mcp remove --scope {scope} {shlex.quote(keys[-1])}{where}")
    print("\n  Claude Desktop (claude_desktop_config.json; replace the wrapped servers with):")
    desktop = orjson.dumps({"mcpServers": {SERVER_NAME: entry}}, option=orjson.OPT_INDENT_2).decode()
    print("\n".join("    " + line for line in desktop.splitlines()))
    print(
        f"\n  Or let init do it (with a backup): offload-mcp init --from {shlex.quote(str(source))} -o {shlex.quote(str(output))} --force --write-client"
    )
