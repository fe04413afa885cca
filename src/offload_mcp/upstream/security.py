"""Who may talk to the proxy and read its ledger.

How it works:

- `guard(app, ...)` wraps the whole HTTP app (MCP endpoint and the plain
  routes beside it: /expand, /metrics, /healthz) in one ASGI middleware. It
  checks Host and Origin on every request (DNS-rebinding protection: a web
  page that re-points its own domain at 127.0.0.1 must not read /expand), and
  with a token, requires `Authorization: Bearer <token>` (scheme in any case)
  on everything except /healthz, and marks each request authorized or not.
- /healthz tells an unauthorized caller only the overall status; a token
  holder gets per-server details with argument values redacted and no stderr
  (`public_server_status`). The SDK's own Host/Origin check covers only the MCP endpoint;
  this one covers the routes the SDK does not know about.
- `secure_ledger_files(path)` runs at start: the ledger file (and its -wal,
  -shm) should be 0600 and its directory 0700. Where the user owns them and
  they are wider, it narrows them and logs a warning; where it cannot, it
  warns and carries on. The directory is narrowed only when offload-mcp
  created it (the ledger marks a directory it creates; the default state
  directory is ours), never a project folder or a shared mount point (mode
  1777) that happens to hold a `--ledger` file.

When it is inert: stdio has no network face, so only the ledger check applies.
"""

from __future__ import annotations

import hmac
import logging
import os
import shlex
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..redaction import redact_secrets
from .identity import DEFAULT_PRINCIPAL, STATE_KEY

logger = logging.getLogger(__name__)

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
OPEN_PATHS = ("/healthz",)
"""Paths served without a token (liveness probes); Host/Origin are still checked."""
AUTHORIZED_KEY = "offload_mcp.authorized"
_SCHEME = b"bearer"


def _bearer_matches(header: bytes, token: bytes) -> bool:
    """`Authorization: Bearer <token>`; the scheme is case-insensitive (RFC 7235 section 2.1)."""
    scheme, _, given = header.strip().partition(b" ")
    return scheme.lower() == _SCHEME and hmac.compare_digest(given.strip(), token)


def is_authorized(scope: Scope) -> bool:
    """Whether the Guard saw the bearer token on this request (always true when none is configured)."""
    return bool((scope.get("state") or {}).get(AUTHORIZED_KEY, False))


# ---- what /healthz may show ------------------------------------------------

REDACTED = "<redacted>"
"""An argument value /healthz hides whatever it is (secrets found in free text are `***`: redaction.py)."""


def redact_command(command: str) -> str:
    """A downstream command line with every argument value replaced: the program and flag names stay."""
    try:
        words = shlex.split(command)
    except ValueError:
        return REDACTED
    if not words:
        return ""
    if len(words) == 2 and "://" in words[1]:  # a remote server: `http URL`, `sse URL`
        return f"{words[0]} {redact_text(words[1])}"
    shown = [words[0]]
    for word in words[1:]:
        if word.startswith("-") and "=" in word:
            shown.append(word.split("=", 1)[0] + "=" + REDACTED)
        elif word.startswith("-") and len(word) < 64:
            shown.append(word)
        else:
            shown.append(REDACTED)
    return shlex.join(shown)


def redact_text(text: str) -> str:
    """Free text (an error line) with its secrets hidden: the proxy's one redaction function."""
    return redact_secrets(text)


def public_server_status(status: dict[str, object]) -> dict[str, object]:
    """One downstream server's /healthz entry for a token holder: argument values redacted, no stderr."""
    command = str(status.get("command") or "")
    shown = dict(status)
    shown["command"] = redact_command(command)
    failure = status.get("failure")
    if isinstance(failure, str) and failure:
        # The first line only: stderr tails stay in the proxy's own log (stderr), which may hold anything.
        # The failure text quotes the command as the downstream logged it: already through redact_secrets.
        first = failure.splitlines()[0]
        for spelled in (command, redact_secrets(command)):
            first = first.replace(spelled, shown["command"] if isinstance(shown["command"], str) else "")
        for word in _words(command)[1:]:
            if len(word) >= 4:
                first = first.replace(word, REDACTED)
        shown["failure"] = redact_text(first) + " (details in the proxy's log)"
    return shown


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def is_loopback(host: str) -> bool:
    return host in LOOPBACK_HOSTS or host.startswith("127.")


def allowed_hosts(bind_host: str, extra: Iterable[str] = ()) -> list[str]:
    """Host header values accepted: loopback names on any port, the bound address, and `extra`."""
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]", *extra]
    if not is_loopback(bind_host) and bind_host not in ("0.0.0.0", "::", ""):
        shown = f"[{bind_host}]" if ":" in bind_host else bind_host
        hosts += [shown, f"{shown}:*"]
    return hosts


def allowed_origins(extra: Iterable[str] = ()) -> list[str]:
    return [
        "http://127.0.0.1:*",
        "http://localhost:*",
        "http://[::1]:*",
        "http://127.0.0.1",
        "http://localhost",
        *extra,
    ]


def _matches(value: str, patterns: Iterable[str]) -> bool:
    for pattern in patterns:
        if value == pattern:
            return True
        if pattern.endswith(":*"):
            base = pattern[:-2]
            if value.startswith(base + ":") and value[len(base) + 1 :].isdigit():
                return True
    return False


class Guard:
    """ASGI middleware: Host/Origin allow-lists on every request, then the bearer token."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        hosts: list[str],
        origins: list[str],
        token: str | None = None,
        tokens: Mapping[str, str] | None = None,
    ) -> None:
        self.app = app
        self.hosts = hosts
        self.origins = origins
        table = dict(tokens or {})
        if token:
            table.setdefault(token, DEFAULT_PRINCIPAL)
        # token -> principal; empty: no authentication.
        self.expected = {t.encode(): principal for t, principal in table.items()}

    def _principal(self, header: bytes) -> str | None:
        """The principal whose token was sent; every entry is compared (constant time per token)."""
        found = None
        for token, principal in self.expected.items():
            if _bearer_matches(header, token):
                found = principal
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers") or []}
        host = headers.get(b"host", b"").decode("latin-1")
        origin = headers.get(b"origin", b"").decode("latin-1")
        problem: tuple[int, str] | None = None
        if not host or not _matches(host, self.hosts):
            problem = (421, "Invalid Host header")
        elif origin and not _matches(origin, self.origins):
            problem = (403, "Invalid Origin header")
        else:
            principal = self._principal(headers.get(b"authorization", b"")) if self.expected else None
            authorized = not self.expected or principal is not None
            state = scope.setdefault("state", {})
            # Open paths answer anyone, but say more only to a caller holding a token (see `is_authorized`).
            state[AUTHORIZED_KEY] = authorized
            if principal is not None:
                # Who is calling, for principal-scoped ledger access (upstream/identity.py reads it back).
                state[STATE_KEY] = principal
            if not authorized and scope.get("path") not in OPEN_PATHS:
                problem = (
                    401,
                    "Unauthorized: send Authorization: Bearer <token> (offload.server.auth_token / auth_tokens)",
                )
        if problem is not None:
            status, text = problem
            logger.warning("refused %s %s: %s", scope.get("method"), scope.get("path"), text)
            extra = {"WWW-Authenticate": "Bearer"} if status == 401 else None
            await PlainTextResponse(text + "\n", status_code=status, headers=extra)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def guard(
    app: ASGIApp,
    *,
    bind_host: str,
    token: str | None = None,
    tokens: Mapping[str, str] | None = None,
    extra_hosts: Iterable[str] = (),
    extra_origins: Iterable[str] = (),
) -> Guard:
    return Guard(
        app,
        hosts=allowed_hosts(bind_host, extra_hosts),
        origins=allowed_origins(extra_origins),
        token=token,
        tokens=tokens,
    )


# ---- the ledger on disk ----------------------------------------------------

LEDGER_FILE_MODE = 0o600
LEDGER_DIR_MODE = 0o700


def secure_ledger_files(path: str | os.PathLike[str]) -> list[str]:
    """Narrow the ledger's file and directory modes where we own them; return one line per finding."""
    target = Path(path)
    findings: list[str] = []
    candidates = [(Path(f"{target}{suffix}"), LEDGER_FILE_MODE) for suffix in ("", "-wal", "-shm", "-journal")]
    if _created_by_us(target):
        # Only a directory offload-mcp created is ours to narrow: not a project folder, not a shared
        # mount point (mode 1777) that happens to hold nothing but the ledger.
        candidates.insert(0, (target.parent, LEDGER_DIR_MODE))
    for item, wanted in candidates:
        try:
            info = item.stat()
        except FileNotFoundError:
            continue
        except OSError as err:
            findings.append(f"cannot check {item}: {err.strerror or err}")
            continue
        mode = stat.S_IMODE(info.st_mode)
        if mode & ~wanted == 0:
            continue
        what = "directory" if item == target.parent else "file"
        if info.st_uid != os.getuid():
            findings.append(
                f"ledger {what} {item} is mode {mode:o} (others may read it) and owned by another user: not changed"
            )
            continue
        try:
            os.chmod(item, mode & wanted)
        except OSError as err:
            findings.append(f"ledger {what} {item} is mode {mode:o} and could not be narrowed: {err.strerror or err}")
            continue
        findings.append(f"ledger {what} {item} was mode {mode:o}; narrowed to {mode & wanted:o}")
    for line in findings:
        logger.warning("%s", line)
    return findings


def _created_by_us(target: Path) -> bool:
    """The ledger marks a directory it creates; the default state directory is ours by definition."""
    from ..store import created_by_offload_mcp, default_ledger_path

    try:
        if target.parent.resolve() == default_ledger_path().parent.resolve():
            return True
    except OSError:
        return False
    return created_by_offload_mcp(target.parent)
