"""Configuration: the `mcpServers` format clients already use, plus our `offload` object.

A user pastes the `mcpServers` block of Claude Desktop or Claude Code unchanged;
every setting of offload-mcp itself lives under `offload`, each field with a
default and a one-line description (the README's reference is generated from
these models).
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .catalog.settings import CatalogSettings
from .downstream.settings import DownstreamSettings, RemoteServer, ServerEntry, StdioServer
from .policy.settings import PolicySettings
from .reducers.settings import ReducerSettings
from .store.settings import LedgerSettings
from .tools.settings import RecallSettings
from .upstream.settings import ServerSettings

CONFIG_ENV_VAR = "OFFLOAD_MCP_CONFIG"


class ConfigError(Exception):
    """A configuration problem, phrased for the user: file, key, problem."""


class OffloadSettings(BaseModel):
    """Everything offload-mcp itself can be told."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["enforce", "observe"] = Field(
        default="enforce",
        description="`observe` passes every result through unchanged and records what would have happened.",
    )
    policy: PolicySettings = Field(default_factory=PolicySettings, description="Result policy and net-saving gate.")
    reducers: ReducerSettings = Field(default_factory=ReducerSettings, description="Deterministic reducers.")
    ledger: LedgerSettings = Field(
        default_factory=LedgerSettings, description="The ledger: a local SQLite file, or a shared PostgreSQL database."
    )
    recall: RecallSettings = Field(default_factory=RecallSettings, description="recall_tool_result.")
    catalog: CatalogSettings = Field(default_factory=CatalogSettings, description="tools/list assembly and deferral.")
    downstream: DownstreamSettings = Field(
        default_factory=DownstreamSettings, description="Sessions to the wrapped servers."
    )
    server: ServerSettings = Field(default_factory=ServerSettings, description="The upstream face.")


class Config(BaseModel):
    """A whole config file."""

    model_config = ConfigDict(extra="forbid")

    mcpServers: dict[str, Annotated[ServerEntry, Field(union_mode="left_to_right")]] = Field(
        default_factory=dict, description="Downstream servers, in the format Claude Desktop and Claude Code use."
    )
    offload: OffloadSettings = Field(default_factory=OffloadSettings, description="offload-mcp's own settings.")

    @model_validator(mode="before")
    @classmethod
    def _pick_entry_kind(cls, data: Any) -> Any:
        # Tag each entry up front so a bad stdio entry reports stdio's problem, not RemoteServer's.
        if isinstance(data, dict) and isinstance(data.get("mcpServers"), dict):
            servers: dict[str, Any] = {}  # a non-object entry is left for the field's own validation
            for name, entry in data["mcpServers"].items():
                if isinstance(entry, dict) and "url" not in entry and "command" not in entry:
                    raise ValueError(f"mcpServers.{name}: needs `command` (stdio server) or `url` (remote server)")
                if isinstance(entry, dict) and "url" in entry:
                    servers[name] = RemoteServer.model_validate(entry)
                elif isinstance(entry, dict):
                    servers[name] = StdioServer.model_validate(entry)
                else:
                    servers[name] = entry
            data = {**data, "mcpServers": servers}
        return data


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_env(value: str, environ: dict[str, str] | None = None, *, where: str = "") -> str:
    """Expand `${VAR}` and `${VAR:-default}`; an unset variable without default is an error."""
    env = os.environ if environ is None else environ

    def sub(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        raise ConfigError(f"{where}: environment variable ${{{name}}} is not set")

    return _VAR.sub(sub, value)


def _expand_server_env(config: Config, source: str) -> None:
    for name, entry in config.mcpServers.items():
        values = entry.env if isinstance(entry, StdioServer) else entry.headers
        key = "env" if isinstance(entry, StdioServer) else "headers"
        for k, v in list(values.items()):
            values[k] = expand_env(v, where=f"{source}: mcpServers.{name}.{key}.{k}")


def _unknown_key(key: object, known: Collection[str]) -> str:
    close = difflib.get_close_matches(str(key), sorted(known), n=1)
    return f"unknown key (did you mean `{close[0]}`?)" if close else "unknown key"


def _keys_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> Collection[str]:
    """The keys the settings object at `loc` takes (none where `loc` leaves the nested models)."""
    for part in loc:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if field is None or not (isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)):
            return ()
        model = field.annotation
    return model.model_fields.keys()


def _problem_lines(err: ValidationError, model: type[BaseModel], prefix: tuple[str, ...] = ()) -> list[str]:
    lines = []
    for problem in err.errors():
        loc = ".".join(str(p) for p in (*prefix, *problem["loc"])) or "(top level)"
        msg = problem["msg"]
        if problem["type"] == "extra_forbidden":
            msg = _unknown_key(problem["loc"][-1], _keys_at(model, problem["loc"][:-1]))
        lines.append(f"  {loc}: {msg}")
    return lines


SERVER_KEYS = frozenset(StdioServer.model_fields) | frozenset(RemoteServer.model_fields)


def _entry_problems(data: dict[str, Any]) -> list[str]:
    """Validate each mcpServers entry on its own, so a problem is reported at its full key path."""
    servers = data.get("mcpServers")
    if not isinstance(servers, dict):
        return []
    lines: list[str] = []
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            continue
        if "url" not in entry and "command" not in entry:
            # Most often `command` or `url` is there, misspelt: name the key the user has to fix.
            lines.extend(
                f"  mcpServers.{name}.{key}: {_unknown_key(key, SERVER_KEYS)}"
                for key in entry
                if key not in SERVER_KEYS
            )
            lines.append(f"  mcpServers.{name}: needs `command` (stdio server) or `url` (remote server)")
            continue
        kind = RemoteServer if "url" in entry else StdioServer
        try:
            kind.model_validate(entry)
        except ValidationError as err:
            lines.extend(_problem_lines(err, kind, ("mcpServers", str(name))))
    return lines


PLACEHOLDER = re.compile(r"\{\{\s*[A-Z][A-Z0-9_]*\s*\}\}")
"""A template's unfilled `{{NAME}}` (docs/deploy/offload.json). Upper case only: lower-case `{{...}}`
is ordinary text in a server's arguments (mustache, Jinja, Go templates)."""


def _placeholder_problems(value: Any, loc: tuple[str, ...] = ()) -> list[str]:
    """Every string value still holding a template placeholder, at its key path. Served as is, a
    placeholder became a ledger file named `{{LEDGER_URL}}` or a bearer token anyone could read."""
    if isinstance(value, str):
        found = PLACEHOLDER.search(value)
        if found is None:
            return []
        return [f"  {'.'.join(loc)}: unfilled placeholder {found.group(0)}; replace it with the real value"]
    if isinstance(value, dict):
        return [line for k, v in value.items() for line in _placeholder_problems(v, (*loc, str(k)))]
    if isinstance(value, list):
        return [line for i, v in enumerate(value) for line in _placeholder_problems(v, (*loc, str(i)))]
    return []


def _ledger_problems(config: Config) -> list[str]:
    from .store.location import url_problem

    lines = []
    for key in ("url", "path"):
        value = getattr(config.offload.ledger, key)
        problem = url_problem(value) if isinstance(value, str) else None
        if problem is not None:
            lines.append(f"  offload.ledger.{key}: {problem}")
    return lines


def parse_config(data: Any, source: str = "<config>") -> Config:
    """Validate a decoded config object; raise ConfigError naming file, key and problem."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a JSON object, got {type(data).__name__}")
    problems = [*_placeholder_problems(data), *_entry_problems(data)]
    if problems:
        raise ConfigError("\n".join([f"{source}: invalid configuration", *problems]))
    try:
        config = Config.model_validate(data)
    except ValidationError as err:
        raise ConfigError("\n".join([f"{source}: invalid configuration", *_problem_lines(err, Config)])) from None
    except ValueError as err:
        raise ConfigError(f"{source}: {err}") from None
    problems = _ledger_problems(config)
    if problems:
        raise ConfigError("\n".join([f"{source}: invalid configuration", *problems]))
    _expand_server_env(config, source)
    return config


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate a config file."""
    source = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as err:
        raise ConfigError(f"{source}: cannot read config file: {err.strerror or err}") from None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise ConfigError(f"{source}: not valid JSON: {err}") from None
    return parse_config(data, source)


LAUNCHERS = frozenset(
    {"python", "python3", "node", "npx", "uvx", "uv", "bunx", "bun", "pipx", "deno", "pnpm", "yarn", "npm"}
)
"""Programs that start the real server named by a later argument (`npx -y @scope/server-x`, `python srv.py`)."""


def inline_server_name(command: list[str]) -> str:
    """A readable server name for an inline command: the server's own name, not its launcher's.

    `mcp-server-git --repository .` -> `mcp-server-git`; `npx -y @modelcontextprotocol/server-filesystem /p`
    -> `server-filesystem`; `python tests/fixtures/fixture_server.py` -> `fixture_server`;
    `uv run --with x srv` -> `srv`. Only `[A-Za-z0-9_-]` survive.
    """
    words = list(command)
    chosen = words[0] if words else "server"
    if re.sub(r"[0-9.]+$", "", Path(chosen).name) in LAUNCHERS:
        rest = words[1:]
        skip_value = False
        for word in rest:
            if skip_value:
                skip_value = False
                continue
            if word.startswith("-"):
                # `--with x`, `-m module`: the option's value is not the server (except -m's, which is).
                if word in ("--with", "--from", "--python", "-p", "--package"):
                    skip_value = True
                continue
            if word in ("run", "exec", "dlx", "x", "tool"):
                continue
            chosen = word
            break
    if chosen.startswith("@"):  # an npm scope: @scope/package
        chosen = chosen.split("/", 1)[-1]
    chosen = chosen.split("@", 1)[0] or chosen  # package@version
    base = Path(chosen).name
    base = re.sub(r"\.(py|js|mjs|cjs|ts)$", "", base)
    return re.sub(r"[^A-Za-z0-9_-]", "_", base) or "server"


def inline_server_config(command: list[str], name: str | None = None) -> Config:
    """A config for `offload-mcp serve -- CMD ARGS...`: one stdio server named after the server it starts."""
    if not command:
        raise ConfigError("no downstream server: give --config FILE or a command after `--`")
    return Config(
        mcpServers={name or inline_server_name(command): StdioServer(command=command[0], args=list(command[1:]))}
    )
