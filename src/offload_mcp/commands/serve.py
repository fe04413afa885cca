"""`offload-mcp serve`: run the proxy in front of the configured servers.

    offload-mcp serve --config mcp.json
    OFFLOAD_MCP_CONFIG=mcp.json offload-mcp serve
    offload-mcp serve -- mcp-server-git --repository .
    offload-mcp serve mcp-server-git --repository .      (same: the first word starts the command)

Everything from the first positional word on belongs to the inline downstream
command, options included, because some clients (the MCP Inspector's CLI)
drop `--` and would otherwise hand the server's options to us.
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import TYPE_CHECKING, Any

from ..config import CONFIG_ENV_VAR, Config, ConfigError, inline_server_config, load_config

if TYPE_CHECKING:
    from ..downstream.spawn import EarlyStarts

logger = logging.getLogger(__name__)


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "serve",
        help="Run the proxy in front of your MCP servers.",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-c",
        "--config",
        metavar="FILE",
        help=f"JSON config with `mcpServers` (and `offload`); default ${CONFIG_ENV_VAR}.",
    )
    parser.add_argument(
        "--transport",
        choices=["stdio", "sse", "streamable-http"],
        default="stdio",
        help="Upstream transport (default stdio).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="Address for the HTTP transports (default 127.0.0.1).")
    parser.add_argument(
        "--port", type=int, default=8765, help="Port for the HTTP transports (default 8765; 0 picks a free one)."
    )
    parser.add_argument(
        "--log-level", default="warning", choices=["debug", "info", "warning", "error"], help="Log level (stderr)."
    )
    parser.add_argument(
        "--ledger",
        metavar="PATH",
        help="Ledger file or postgresql:// URL (overrides OFFLOAD_MCP_LEDGER and offload.ledger).",
    )
    parser.add_argument(
        "--deferral",
        choices=["hint", "search", "off"],
        help="How cold tools are offered (overrides offload.catalog.deferral).",
    )
    parser.add_argument(
        "--auth-token",
        metavar="TOKEN",
        help="Bearer token the HTTP transports require (overrides offload.server.auth_token; prefer the OFFLOAD_MCP_AUTH_TOKEN variable: arguments are visible to other local users). Required with a non-loopback --host.",
    )
    parser.add_argument(
        "--stateless",
        action="store_true",
        help="Streamable HTTP without protocol sessions (overrides offload.server.stateless): for replicas behind a load balancer without stickiness.",
    )
    parser.add_argument("--name", help="Server name for the inline command (default: the program's name).")
    parser.add_argument(
        "--observe",
        action="store_true",
        help="Observe mode (overrides offload.mode): pass every result through unchanged and record what would have been saved; read it with `offload-mcp stats`.",
    )
    parser.add_argument(
        "command", nargs=argparse.REMAINDER, metavar="[--] CMD ARGS", help="An inline downstream stdio server."
    )
    parser.set_defaults(func=run)


def resolve_config(args: argparse.Namespace, environ: dict[str, str] | None = None) -> Config:
    env = os.environ if environ is None else environ
    command = list(args.command or [])
    if command and command[0] == "--":
        command = command[1:]
    path = args.config or env.get(CONFIG_ENV_VAR) or None
    if path is None and not command:
        raise ConfigError(
            f"no downstream server: give --config FILE, set {CONFIG_ENV_VAR}, or put a command after `--`"
        )
    config = load_config(path) if path else Config()
    if command:
        inline = inline_server_config(command, args.name)
        for name, entry in inline.mcpServers.items():
            if name in config.mcpServers:
                raise ConfigError(f"inline server name {name!r} is already used in {path}; pick another with --name")
            config.mcpServers[name] = entry
    if not config.mcpServers:
        raise ConfigError(f"{path}: mcpServers: no servers configured")
    if getattr(args, "deferral", None):
        config.offload.catalog.deferral = args.deferral
    if getattr(args, "observe", False):
        config.offload.mode = "observe"
    if getattr(args, "stateless", False):
        config.offload.server.stateless = True
    if config.offload.server.stateless and config.offload.ledger.scope == "session":
        raise ConfigError(
            f"{path or 'config'}: offload.server.stateless has no protocol sessions, so offload.ledger.scope `session` "
            "could never match a caller; use `principal` (one bearer token per caller) or `global`"
        )
    return config


FIRST_DECLARATION_WAIT_S = 2.0
"""At most this long a stdio server's first session waits for the client's declaration (its initialize or
discover; Relay.first_declaration).
The client sends it first, so the wait is the time serving takes to begin after the pool starts (~0.1 s idle)."""


def run(args: argparse.Namespace) -> int:
    import anyio

    config = resolve_config(args)
    _check_ledger_location(config, args.ledger)
    _warn_unpriced_model(config)
    if getattr(args, "auth_token", None):
        config.offload.server.auth_token = args.auth_token
    if args.transport != "stdio":
        from ..upstream.transports import auth_token

        auth_token(config.offload, args.host)  # refuse a bad bind before starting any server
    return anyio.run(_serve, config, args)


def _check_ledger_location(config: Config, override: str | None) -> None:
    """A ledger URL no backend serves, or a directory where a file is meant, is a mistake to fix now.
    Only an outage (a database that does not answer, a file that cannot be written) lets serving
    start with results passing through."""
    from ..store.location import LedgerLocationError, file_problem, resolve

    try:
        target = resolve(config.offload.ledger, override)
    except LedgerLocationError as err:
        raise ConfigError(str(err)) from None
    problem = file_problem(target.path, writable=False) if target.path is not None else None
    if problem is not None:
        raise ConfigError(f"ledger: {problem}")


def _warn_unpriced_model(config: Config) -> None:
    """A model without its own row is priced by its family, or, of no known family, not at all: then the
    gate cannot prove a saving and never fires (only the client bound offloads). Not refused: a model
    newer than the table is a fair thing to run. `price_for` says which, once, at start-up."""
    from ..policy.pricing import price_for

    policy = config.offload.policy
    if policy.enabled:
        price_for(policy.model, policy.pricing)


async def _serve(config: Config, args: argparse.Namespace) -> int:
    from ..downstream.spawn import EarlyStarts

    # The stdio servers start before the SDK's import below, so they import theirs meanwhile (spawn.py).
    async with EarlyStarts(config.mcpServers) as early:
        return await _serve_started(config, args, early)


async def _serve_started(config: Config, args: argparse.Namespace, early: EarlyStarts) -> int:
    import anyio

    from ..catalog.catalog import CatalogCollision
    from ..downstream.pool import DownstreamPool
    from ..upstream.proxy import ProxyState, build_server
    from ..upstream.transports import Stopper, serve

    problem: str | None = None
    # background: initialize is answered at once whatever the downstream servers do.
    # A stdio client declares its capabilities first thing: servers wait briefly to declare them in their first
    # session. Not with prefix `never`, where start-up waits for the servers before reading the client.
    waits_for_client = args.transport == "stdio" and config.offload.catalog.prefix != "never"
    pool = DownstreamPool(
        config.mcpServers,
        config.offload.downstream,
        background=True,
        early=early,
        declaration_wait_s=FIRST_DECLARATION_WAIT_S if waits_for_client else 0.0,
    )
    async with pool:
        if config.offload.catalog.prefix == "never":
            # Refusing a collision needs every server's tools: the one case where start-up waits (bounded).
            await pool.wait_settled(config.offload.downstream.first_list_wait_s)
        try:
            state = ProxyState(config, pool, ledger_path=args.ledger)
        except CatalogCollision as err:
            problem = f"{args.config or 'config'}: offload.catalog.prefix: {err}"
        else:
            if state.ledger is not None and state.ledger.path is not None:  # a local file, not a database server
                from ..upstream.security import secure_ledger_files

                secure_ledger_files(state.ledger.path)
            server = build_server(state)
            _freeze_startup_heap()
            try:
                async with anyio.create_task_group() as group:
                    stopper = Stopper(group.cancel_scope)
                    group.start_soon(_stop_on_terminate, stopper)
                    await serve(state, server, args.transport, args.host, args.port, args.log_level, stopper)
                    group.cancel_scope.cancel()
            finally:
                _print_exit_summary(state)
                if state.ledger is not None:
                    state.ledger.close()  # writes queued statistics events
    if problem is not None:
        # Raised after the pool closed, so it is not wrapped in the pool's task-group error.
        raise ConfigError(problem)
    return 0


def _freeze_startup_heap() -> None:
    """Move every object alive at start-up (modules, the SDK's and pydantic's schemas, the catalog so
    far) out of the cyclic collector's sight for the life of the process (gc.freeze).

    Why: a large JSON answer makes many new containers that live through its call, so full collections
    run often, and each walked the whole start-up heap too with the event loop stopped.

    Frozen without a collection first: the console script paused the collector for start-up
    (offload_mcp/__main__.py), so a collection here would walk the whole start-up heap to free the
    little it left as garbage while the client waits for its initialize answer; that little is kept
    for good instead. Objects that become garbage later are freed as ever (reference counting); only
    a cycle among the frozen ones would stay. The collector is then turned on. Measurements:
    docs/design.md, "Startup"."""
    import gc

    gc.freeze()
    gc.enable()
    logger.debug(
        "froze %s start-up objects out of the cyclic collector after %d full collections",
        f"{gc.get_freeze_count():,}",
        gc.get_stats()[-1]["collections"],
    )


async def _stop_on_terminate(stopper: Any) -> None:
    """SIGTERM / SIGHUP (how clients stop a stdio server, and service managers any server) end
    serving cleanly: downstream servers are shut down, the exit summary is printed and queued
    ledger events are written."""
    import signal

    import anyio

    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as signals:
        async for signum in signals:
            logger.info("stopping on %s", signal.Signals(signum).name)
            stopper.stop()
            return


def _print_exit_summary(state: Any) -> None:
    """On exit, a few lines on stderr naming the levers that fired in this process's sessions (silent if none did)."""
    import sys

    from ..analysis.stats import exit_summary

    text = exit_summary(state.ledger, sorted(state.sessions_seen), state.settings.policy)
    if text:
        print(text, file=sys.stderr, flush=True)
