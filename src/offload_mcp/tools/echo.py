"""What an answer or an error repeats of a caller's own input.

The caller has its input already, so a long one comes back as its start and its length: a tool name
or an argument key of 1 MB came back whole in a 1 MB error, and a recall answer must stay under the
inline size it declares to Claude Code.
"""

from __future__ import annotations

ECHO_CHARS = 80
"""Most characters of a caller's own input an answer or error repeats back."""


def echoed(text: str) -> str:
    """`text` itself, or past ECHO_CHARS its first ones, then `…` and its length."""
    return text if len(text) <= ECHO_CHARS else f"{text[:ECHO_CHARS]}… ({len(text):,} chars)"
