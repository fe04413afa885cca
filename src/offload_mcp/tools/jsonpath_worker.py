"""Evaluate one JSONPath query in a process of its own, so that it can be stopped and its memory returned.

How it works: `evaluate(path, doc_json, ...)` (async, in the proxy) starts
`python -m offload_mcp.tools.jsonpath_worker`, writes the path and the
document to its stdin and reads one JSON answer from its stdout. The worker
caps its own address space (RLIMIT_AS) before reading anything, stops
collecting past `max_matches` and stops rendering past `max_chars`, so each
bound ends it with a clear error rather than a swollen proxy. The proxy runs
at most `CONCURRENCY` workers at once and the time limit covers the wait for
a slot as well as the evaluation: when it passes, the worker is killed and
the OS frees everything it took. Nothing of the query's working set ever lives
in the proxy process.

Why not a thread: a Python thread cannot be stopped, only abandoned, and what
it allocates stays in the proxy: a few concurrent `$..*` queries multiplied
its RSS and delayed unrelated calls by seconds (docs/design.md, "Reading
large answers").
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
import orjson

from ..text.jsonpath_keys import key_segment

CONCURRENCY = 2
"""Workers at once: evaluation is CPU-bound, more than the cores only queues inside the kernel."""
MEMORY_BYTES = 768 * 1024 * 1024
MAX_MATCHES = 100_000
MAX_CHARS = 16_000_000

NARROW_DESCENDANTS = "narrow it (avoid `..` on large documents)"
"""The advice where a descendant walk (`..`) is the likely cost: a time-out, or the memory cap."""

_slots: anyio.CapacityLimiter | None = None


class JsonPathFailed(Exception):
    """The query could not be answered within its bounds; the message says which and what to do."""


def _limiter() -> anyio.CapacityLimiter:
    global _slots
    if _slots is None:
        _slots = anyio.CapacityLimiter(CONCURRENCY)
    return _slots


async def evaluate(path: str, doc_json: bytes, *, time_limit_s: float) -> tuple[int, str]:
    """(number of matches, the rendered answer) for `path` over the JSON document `doc_json`."""
    try:
        with anyio.fail_after(time_limit_s):
            async with _limiter():
                code, raw = await _run_worker(path.encode() + b"\n" + doc_json)
    except TimeoutError:
        raise JsonPathFailed(f"took longer than {time_limit_s:g}s and was stopped; {_narrowing(path)}") from None
    try:
        answer = orjson.loads(raw)
    except orjson.JSONDecodeError:
        # No answer: the worker died (its memory cap, most likely); the proxy itself lost nothing.
        raise JsonPathFailed(
            f"stopped without an answer (evaluator exit code {code}, usually its {MEMORY_BYTES // 2**20} MiB memory cap); "
            + NARROW_DESCENDANTS
        ) from None
    if "error" in answer:
        raise JsonPathFailed(str(answer["error"]))
    return int(answer["count"]), str(answer["text"])


def _narrowing(path: str) -> str:
    """What to change in `path` when it ran out of time: the regex filter or the `..` it holds, else neither."""
    if "=~" in path:
        # A backtracking regex is the usual cause of a runaway filter, whatever else the path holds.
        advice = "its regex filter (=~) is the likely cause: avoid nested or alternated repeats such as (a+)+ or (a|a)*, or find the text with query"
        return advice + ("; and avoid `..` on large documents" if ".." in path else "")
    if ".." in path:
        return NARROW_DESCENDANTS
    # On an overloaded machine even a plain path of a MB-sized document can run out of the time limit;
    # nothing in such a path is the cause.
    return "this path has no `..` or regex filter, so the document is large or the machine busy: try again, or ask for less (a slice like [0:50])"


async def _run_worker(stdin: bytes) -> tuple[int | None, bytes]:
    process = await anyio.open_process(
        [
            sys.executable,
            "-m",
            "offload_mcp.tools.jsonpath_worker",
            str(MEMORY_BYTES),
            str(MAX_MATCHES),
            str(MAX_CHARS),
        ],
        stdin=-1,
        stdout=-1,
        stderr=-3,  # PIPE, PIPE, DEVNULL
    )
    chunks: list[bytes] = []
    try:
        async with anyio.create_task_group() as tg:

            async def feed() -> None:
                assert process.stdin is not None
                try:
                    await process.stdin.send(stdin)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass  # it died early (memory cap); its exit says so
                finally:
                    await process.stdin.aclose()

            tg.start_soon(feed)
            assert process.stdout is not None
            async for chunk in process.stdout:
                chunks.append(chunk)
        await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            with anyio.CancelScope(shield=True):
                await process.wait()
    return process.returncode, b"".join(chunks)


# ---- the worker side ----------------------------------------------------------


def match_path(full_path: Any) -> str:
    """Where a match sits, as JSONPath that reads back to it alone: `$.items[3].name`, `$.items[3]['a b']`.

    jsonpath-ng's own `str(full_path)` reads `items.[3].name`, a spelling of its own that other JSONPath
    readers refuse; a model copies the path it is shown into its next call, or into a script. A key that
    is not a plain name (spaces, dots, digits first, a keyword of the parser) is quoted, with `\\` and
    `'` escaped."""
    from jsonpath_ng import Child, Fields, Index, Root, This

    segments: list[str] = []

    def walk(node: Any) -> bool:
        if isinstance(node, Child):
            return walk(node.left) and walk(node.right)
        if isinstance(node, Fields) and len(node.fields) == 1:
            segments.append(key_segment(node.fields[0]))
            return True
        if isinstance(node, Index) and len(node.indices) == 1:
            segments.append(f"[{node.indices[0]}]")
            return True
        return isinstance(node, (Root, This))

    return "$" + "".join(segments) if walk(full_path) else str(full_path)


def _answer(path: str, doc: Any, max_matches: int, max_chars: int) -> dict[str, Any]:
    """One match: its value as indented JSON. Several: one line each, `PATH = VALUE` with the value as
    compact JSON, in document order. 3,000 ids from `$.records[*].id` took 59 chars each as a JSON array of
    indented {"path", "value"} objects, and take 25 as lines: a page of recall shows 2.3 times as many."""
    from jsonpath_ng.ext import parse

    matches: list[tuple[Any, Any]] = []
    for found in parse(path).find(doc):
        matches.append((found.full_path, found.value))
        if len(matches) > max_matches:
            return {
                "error": f"matched more than {max_matches:,} values; narrow it (a slice like [0:50], or a more specific path)"
            }
    if not matches:
        return {"count": 0, "text": ""}
    if len(matches) == 1:
        text = orjson.dumps(matches[0][1], option=orjson.OPT_INDENT_2).decode()
    else:
        lines, size = [], 0
        for where, value in matches:
            line = f"{match_path(where)} = {orjson.dumps(value).decode()}"
            size += len(line) + 1
            if size > max_chars:
                return {"error": f"the answer would exceed {max_chars:,} chars ({len(matches):,} matches); narrow it"}
            lines.append(line)
        text = "\n".join(lines)
    if len(text) > max_chars:
        return {"error": f"the answer would exceed {max_chars:,} chars; narrow it"}
    return {"count": len(matches), "text": text}


def main(argv: list[str]) -> None:
    import resource

    memory, max_matches, max_chars = (int(a) for a in argv[:3])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    os.nice(10)  # the proxy's event loop (every other client) comes first on a busy machine
    data = sys.stdin.buffer.read()
    path, _, doc_json = data.partition(b"\n")
    try:
        answer = _answer(path.decode(), orjson.loads(doc_json), max_matches, max_chars)
    except MemoryError:
        answer = {"error": f"needed more than {memory // 2**20:,} MiB; {NARROW_DESCENDANTS}"}
    except RecursionError:
        answer = {"error": "the document is nested too deeply for this path; narrow it"}
    except Exception as err:
        answer = {"error": f"could not be evaluated: {err}"}
    sys.stdout.buffer.write(orjson.dumps(answer))


if __name__ == "__main__":
    main(sys.argv[1:])
