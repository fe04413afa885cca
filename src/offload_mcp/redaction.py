"""The one place that hides secrets in text the proxy shows: its log, errors, the stats header, /healthz.

`redact_secrets(text)` puts `***` in place of every value that can be a secret in a URL or a command
line: a URL's password (`user:***@host`), a query or `name=value` pair whose name ends in key, token,
secret, password or credential (`?password=***`, `&token=***`, `PGPASSWORD=***`, `--api-key=***`),
such a flag's next argument (`--auth-token ***`), a JSON member of that name, and a bearer or basic
credential. The names are matched at their end so a count such as `max_tokens=` stays readable.

`ledger_for_client(text, where)` is for text that reaches a client (the model's context): the ledger
is named only as "the ledger", and a PostgreSQL URL's host, port, user and database name are hidden
wherever a driver's message quotes them.

Both are pure functions of their input (same text, same output).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

SECRET_MARK = "***"
HIDDEN_MARK = "<hidden>"
THE_LEDGER = "the ledger"

_NAME = r"[\w.-]*(?:key|token|secret|password|passwd|pwd|credentials?)"
"""A name that holds a secret: it ends in one of these words (case-insensitive)."""

_URL_PASSWORD = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s/@:?#]*):[^\s/?#]*@")
_JSON_MEMBER = re.compile(rf'(?i)("{_NAME}"\s*:\s*")(?:[^"\\]|\\.)*"')
_NAME_VALUE = re.compile(rf"""(?i)((?<![\w.-]){_NAME}\s*=\s*)("[^"]*"|'[^']*'|[^\s&#"',;)]+)""")
_FLAG_ARGUMENT = re.compile(rf"""(?i)((?<![\w.-])--?{_NAME}\s+)(?!-)("[^"]*"|'[^']*'|[^\s"']+)""")
_LIBPQ_ADDRESS = re.compile(r'((?:server at|on socket|host) )"[^"]*"(?: \([^)]*\))?')
"""libpq's words for where it tried to connect: `server at "db" (10.0.0.1)`, `on socket "/run/.s.PGSQL.5432"`."""
_CREDENTIAL = re.compile(r"(?i)\b(bearer|basic)(\s+)[\w.~+/-]{6,}=*")


def redact_secrets(text: str) -> str:
    """`text` with every secret a URL or command line can hold put as `***` (see the module's docstring)."""
    if not text:
        return text
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}:{SECRET_MARK}@", text)
    text = _JSON_MEMBER.sub(lambda m: f'{m.group(1)}{SECRET_MARK}"', text)
    text = _NAME_VALUE.sub(lambda m: m.group(1) + SECRET_MARK, text)
    text = _FLAG_ARGUMENT.sub(lambda m: m.group(1) + SECRET_MARK, text)
    return _CREDENTIAL.sub(lambda m: f"{m.group(1)}{m.group(2)}{SECRET_MARK}", text)


def redact_url(url: str) -> str:
    """A whole URL value without its secrets: read as a URL first, so a password holding a space or an
    `@` (which free text cannot delimit) goes too; then `redact_secrets` for the query."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        password = None
    if password is not None:
        user = parts.netloc.rsplit("@", 1)[0].split(":", 1)[0]
        url = urlunsplit(parts._replace(netloc=f"{user}:{SECRET_MARK}@{parts.netloc.rsplit('@', 1)[1]}"))
    return redact_secrets(url)


def url_secrets(url: str) -> list[str]:
    """The secret values a URL holds (its password, secret-named query values), as written and decoded."""
    try:
        parts = urlsplit(url)
        found = [parts.password or ""]
    except ValueError:
        return []
    found += [value for name, value in parse_qsl(parts.query) if re.fullmatch(rf"(?i){_NAME}", name)]
    return sorted({form for value in found if value for form in (value, unquote(value))}, key=len, reverse=True)


@dataclass(frozen=True)
class _Where:
    """What a PostgreSQL URL says about where the database is."""

    hosts: frozenset[str]
    ports: frozenset[str]
    names: frozenset[str]
    """The user and the database name: hidden where a message quotes them (`user "bob"`), never as
    plain words (a database named `offload` must not turn "offload-mcp" into "<hidden>-mcp")."""


def _url_identifiers(url: str) -> _Where:
    try:
        parts = urlsplit(url)
    except ValueError:
        return _Where(frozenset(), frozenset(), frozenset())
    hosts: set[str] = set()
    ports: set[str] = set()
    names: set[str] = {unquote(parts.path.lstrip("/"))}
    authority = parts.netloc.rsplit("@", 1)
    if len(authority) == 2:
        names.add(unquote(authority[0].split(":", 1)[0]))
    for host in authority[-1].split(","):
        if host.startswith("["):  # [::1]:5432
            name, _, port = host[1:].partition("]")
            port = port.lstrip(":")
        else:
            name, _, port = host.partition(":")
        hosts.add(unquote(name))
        ports.add(port)
    for name, value in parse_qsl(parts.query):
        key = name.lower()
        if key in ("host", "hostaddr", "port", "user", "dbname"):
            (hosts if key in ("host", "hostaddr") else ports if key == "port" else names).update(value.split(","))
    return _Where(*(frozenset(w for w in group if w) for group in (hosts, ports, names)))


def ledger_for_client(text: str, where: str) -> str:
    """`text` (a ledger error) as a client may see it: the ledger `where` (a file or URL) named only as
    "the ledger", a URL's secrets and its host, port, user and database name hidden."""
    shown = redact_url(where)
    placeholder = "\x00"  # keeps "the ledger" whole when the database itself is named `ledger`
    for form in (shown, where):
        text = text.replace(f"ledger {form}", placeholder).replace(form, placeholder)
    if "://" in where:
        for secret in url_secrets(where):
            text = _replace_word(text, secret, SECRET_MARK)
        found = _url_identifiers(where)
        for host in sorted(found.hosts, key=len, reverse=True):
            text = _replace_word(text, host, HIDDEN_MARK)
        for port in found.ports:
            text = re.sub(rf"(?i)(port |:){re.escape(port)}(?!\w)", rf"\g<1>{HIDDEN_MARK}", text)
        for name in found.names:
            text = re.sub(rf"([\"']){re.escape(name)}\1", rf"\g<1>{HIDDEN_MARK}\g<1>", text)
        text = _LIBPQ_ADDRESS.sub(lambda m: m.group(1) + HIDDEN_MARK, text)
    return redact_secrets(text.replace(placeholder, THE_LEDGER))


def _replace_word(text: str, word: str, mark: str) -> str:
    """`word` put as `mark` wherever no word character touches it (a one-letter user must not eat every 'u')."""
    return re.sub(rf"(?<!\w){re.escape(word)}(?!\w)", mark, text)
