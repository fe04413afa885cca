"""The filters on the proxy's log handler (stderr): no secret in clear, no flood of one warning.

- `RedactingFilter` passes every line (and its traceback) through `redact_secrets`: a downstream's
  `--api-key=...`, a URL's password or `?token=...` are written as `***`, whichever module (ours, the
  SDK, psycopg's pool) wrote the line.
- `RepeatFilter` lets the first of identical WARNING-or-worse lines through and holds the repeats
  for `window_s`: the next one after the window carries how many were held, and at exit each line
  still holding repeats is written once more with its count. A server that gets 2,000 refusals in
  one call makes two lines, not 2,000. Lines below WARNING pass (they are off by default).

Installed on the handler `setup_logging` creates, so every logger's records pass them.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from .redaction import redact_secrets

REPEAT_WINDOW_S = 60.0
"""How long repeats of one warning are held before the next one is written with their count."""
MAX_TRACKED = 512
"""Distinct warnings remembered at once; the oldest is forgotten (its held count written) past it."""
_SUMMARY = "offload_mcp_repeat_summary"


class RedactingFilter(logging.Filter):
    """Every record's message and traceback with its secrets put as `***` (redaction.py)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: let the handler report it as it always has
            return True
        redacted = redact_secrets(message)
        if redacted != message or record.args:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_secrets(record.exc_text)
        return True


@dataclass
class _Seen:
    logger: str
    level: int
    message: str
    shown_at: float
    held: int = 0


class RepeatFilter(logging.Filter):
    """Identical WARNING-or-worse lines within `window_s` of the one written are held and counted."""

    def __init__(self, window_s: float = REPEAT_WINDOW_S, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.window_s = window_s
        self._clock = clock
        self._seen: OrderedDict[tuple[str, int, str], _Seen] = OrderedDict()
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or getattr(record, _SUMMARY, False):
            return True
        try:
            message = record.getMessage()
        except Exception:
            return True
        key = (record.name, record.levelno, message)
        now = self._clock()
        forgotten: _Seen | None = None
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None and now - seen.shown_at < self.window_s:
                seen.held += 1
                return False
            held = seen.held if seen is not None else 0
            self._seen[key] = _Seen(record.name, record.levelno, message, now)
            self._seen.move_to_end(key)
            if len(self._seen) > MAX_TRACKED:
                _, forgotten = self._seen.popitem(last=False)
        if held:
            record.msg, record.args = (
                f"{message} (and {held:,} identical lines held in the last {self.window_s:g}s)",
                None,
            )
        if forgotten is not None and forgotten.held:
            _write_summary(forgotten)
        return True

    def flush_held(self) -> None:
        """Write each line that still holds repeats once more, with their count (at exit)."""
        with self._lock:
            pending = [seen for seen in self._seen.values() if seen.held]
            for seen in pending:
                self._seen.pop((seen.logger, seen.level, seen.message), None)
        for seen in pending:
            _write_summary(seen)


def _write_summary(seen: _Seen) -> None:
    logging.getLogger(seen.logger).log(
        seen.level,
        "%s (repeated %s more times, not written)",
        seen.message,
        f"{seen.held:,}",
        extra={_SUMMARY: True},
    )


def install(handler: logging.Handler) -> RepeatFilter:
    """Put both filters on `handler` (redaction first, so identical secrets count as one line)."""
    handler.addFilter(RedactingFilter())
    repeats = RepeatFilter()
    handler.addFilter(repeats)
    atexit.register(repeats.flush_held)
    return repeats
