"""Where the ledger lives: a local SQLite file or a PostgreSQL URL, from the first of
`--ledger`, OFFLOAD_MCP_LEDGER, `offload.ledger.url`, `offload.ledger.path`, the XDG default.

A value with a `scheme://` is a URL and never a file name: `postgresql://` and `postgres://` pick
the PostgreSQL backend, anything else is refused with the schemes we know and where the value came
from (before, such a value quietly became a local folder named `postgresql:`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ..redaction import redact_secrets, redact_url, url_secrets
from .errors import LedgerUnavailable
from .settings import URL_PATTERN, LedgerSettings

ENV_VAR = "OFFLOAD_MCP_LEDGER"
POSTGRES_SCHEMES = ("postgresql", "postgres")


class LedgerLocationError(LedgerUnavailable):
    """A ledger location that can never work, whatever the state of any server: a configuration
    mistake the commands report with exit 2, where an outage lets `serve` pass results through."""


@dataclass(frozen=True)
class LedgerTarget:
    """A resolved ledger location: exactly one of `path` and `url` is set."""

    path: Path | None = None
    url: str | None = None

    @property
    def display(self) -> str:
        return redact(self.url) if self.url is not None else str(self.path)


def default_ledger_path() -> Path:
    import platformdirs

    return Path(platformdirs.user_state_dir("offload-mcp")) / "ledger.db"


def is_url(value: str | os.PathLike[str]) -> bool:
    return isinstance(value, str) and URL_PATTERN.match(value) is not None


def url_problem(value: str) -> str | None:
    """Why a `scheme://` value cannot name a ledger (None when it can, or is no URL at all)."""
    if not is_url(value):
        return None
    scheme = urlsplit(value).scheme.lower()
    if scheme in POSTGRES_SCHEMES:
        return None
    return f"ledger URL {redact(value)}: unsupported scheme {scheme!r}; use a file path or postgresql://user@host/db"


def resolve(settings: LedgerSettings, override: str | os.PathLike[str] | None = None) -> LedgerTarget:
    env = os.environ.get(ENV_VAR) or None
    sources = (
        ("--ledger", override),
        (ENV_VAR, env),
        ("offload.ledger.url", settings.url),
        ("offload.ledger.path", settings.path),
    )
    for source, value in sources:
        if value is None or value == "":
            continue
        if isinstance(value, str) and is_url(value):
            problem = url_problem(value)
            if problem is not None:
                raise LedgerLocationError(f"{source}: {problem}")
            return LedgerTarget(url=value)
        return LedgerTarget(path=Path(value).expanduser())
    return LedgerTarget(path=default_ledger_path())


def file_problem(path: Path, *, writable: bool) -> str | None:
    """Why `path` cannot be a ledger file, found before anything starts (None when it can).

    A directory is never one. With `writable`, the file must be writable, and so must its directory
    (SQLite keeps the -wal and -shm files there); for a new file, the nearest existing directory,
    where the missing ones would be created. Not for `serve`: a ledger it cannot write passes
    results through by design."""
    if path.is_dir():
        return f"{path} is a directory; a ledger file path is expected (e.g. {path / 'ledger.db'})"
    if not writable:
        return None
    if path.exists():
        for where in (path, path.parent):
            if not os.access(where, os.W_OK | (os.X_OK if where.is_dir() else 0)):
                return f"cannot write the ledger {path}: {where} {_why_not_writable(where)}"
        return None
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"cannot create the ledger {path}: {ancestor} is not a directory"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"cannot create the ledger {path}: {ancestor} {_why_not_writable(ancestor)}"
    return None


def local_file_problem(value: str, command: str) -> str | None:
    """Why `--ledger value` cannot be the local file a one-off `command` (replay, the demo) keeps its ledger
    in: a URL (it would become a folder named `postgresql:`), or `file_problem`'s answer; None when it can."""
    if is_url(value):
        return f"--ledger {redact(value)}: {command} keeps its ledger in a local file; pass a file path"
    problem = file_problem(Path(value).expanduser(), writable=True)
    return None if problem is None else f"--ledger: {problem}"


def _why_not_writable(where: Path) -> str:
    try:
        read_only = bool(os.statvfs(where).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # no statvfs (Windows)
        read_only = False
    return "is on a read-only file system" if read_only else "is not writable by this user"


def redact(url: str) -> str:
    """The URL without its secrets (userinfo password, `?password=`, `&token=`...): logs and errors may be shared."""
    return redact_url(url)


SHORT_SECRET_CHARS = 6
"""A password shorter than this is scrubbed only where it stands apart from word characters."""


def scrub(text: str, url: str) -> str:
    """`text` (a driver's error) with the URL's secrets (its password, in the userinfo or the query), as
    written or percent-decoded, put as `***`, and whatever else redact_secrets finds: libpq quotes the
    piece of a URL it cannot read, e.g. `invalid percent-encoded token: "p%zzw"`. A short secret is put as
    `***` only where no word character touches it (`u:pw@h`, `"pw"`): put everywhere, a one-letter one
    turned every such letter of the message into `***`."""
    for secret in url_secrets(url):
        if len(secret) >= SHORT_SECRET_CHARS:
            text = text.replace(secret, "***")
        else:
            text = re.sub(rf"(?<!\w){re.escape(secret)}(?!\w)", "***", text)
    return redact_secrets(text)
