"""The upstream stdio wire on the event loop (upstream/stdio_pipes.py): same lines as the SDK's thread-based
reader, every byte written, fd 0/1 diverted while serving, and the SDK's transport where a descriptor
cannot be polled."""

from __future__ import annotations

import io
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Awaitable, Callable

import anyio
import pytest
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCResponse, jsonrpc_message_adapter

from offload_mcp.upstream.stdio_pipes import PipeLines, PipeMessages, PipeMessageWriter, PipeWriter, pollable

pytestmark = pytest.mark.anyio


async def _read_through_pipe(data: bytes, cuts: list[int]) -> list[str]:
    """The lines PipeLines yields for `data` written to a pipe in pieces ending at `cuts`."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    lines: list[str] = []

    async def reader() -> None:
        async for line in PipeLines(read_fd):
            lines.append(line)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            start = 0
            for end in [*sorted(cuts), len(data)]:
                if end > start:
                    os.write(write_fd, data[start:end])
                    start = end
                    await anyio.sleep(0.001)  # let the reader see this piece on its own
            os.close(write_fd)
    finally:
        os.close(read_fd)
    return lines


async def test_lines_are_the_sdk_readers_lines_however_the_bytes_arrive() -> None:
    # The SDK reads stdin through TextIOWrapper(utf-8, errors=replace): universal newlines, bad bytes
    # replaced. A \r\n or a UTF-8 sequence split across reads must come out the same.
    pieces = [b'{"a":1}', b"\n", b"\r", b"\r\n", "é€".encode(), b"\xff", b"\xe2\x82", b" ", b"x"]
    rng = random.Random(14)
    cases = [b'{"jsonrpc":"2.0"}\r\n{"b":2}\r', b"no newline at the end", b"\r", b"", "€".encode() * 3]
    cases += [b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 24))) for _ in range(40)]
    for data in cases:
        cuts = rng.sample(range(len(data) + 1), min(len(data), 5))
        expected = list(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace"))
        assert await _read_through_pipe(data, cuts) == expected, (data, cuts)


async def _drained(write: Callable[[int, int], Awaitable[None]]) -> bytes:
    """What `write(read_fd, write_fd)` wrote into a non-blocking pipe, read by a thread to the end of file."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    received = bytearray()

    def drain() -> None:
        with os.fdopen(read_fd, "rb") as pipe:
            while chunk := pipe.read(65536):
                received.extend(chunk)

    async with anyio.create_task_group() as tg:
        tg.start_soon(anyio.to_thread.run_sync, drain)
        try:
            await write(read_fd, write_fd)
        finally:
            os.close(write_fd)  # the drain thread ends at end of file, however the write ended
    return bytes(received)


async def test_a_write_larger_than_the_pipe_buffer_arrives_whole() -> None:
    text = json.dumps({"payload": "x€" * 400_000}) + "\n"  # ~1.6 MB: many times a pipe's 64 KiB

    async def write(read_fd: int, write_fd: int) -> None:
        assert await PipeWriter(write_fd).write(text) == len(text)

    assert await _drained(write) == text.encode("utf-8")


async def test_concurrent_large_answers_are_written_whole_one_after_the_other() -> None:
    # Two handlers answer at once with messages far over a pipe's buffer: each reaches the client as one
    # unbroken line (the writer writes one message at a time), parsed as the SDK's reader parses it.
    payloads = {7: "a" * 300_000, 8: "€" * 300_000}

    async def write(read_fd: int, write_fd: int) -> None:
        writer = PipeMessageWriter(write_fd, PipeMessages(read_fd))
        async with anyio.create_task_group() as senders:
            for request_id, text in payloads.items():
                answer = JSONRPCResponse(jsonrpc="2.0", id=request_id, result={"text": text})
                senders.start_soon(writer.send, SessionMessage(answer))

    lines = (await _drained(write)).decode().splitlines()
    answers = {m.id: m.result["text"] for m in (jsonrpc_message_adapter.validate_json(line) for line in lines)}
    assert answers == payloads


async def test_a_closed_client_end_breaks_the_writer_and_ends_the_reading() -> None:
    # The client closed our stdout but not our stdin: the answer cannot go anywhere, so sending says the
    # stream is broken (the SDK drops that answer) and the reader ends as at end of input: the server stops.
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    for fd in (in_read, out_write):
        os.set_blocking(fd, False)
    messages = PipeMessages(in_read)
    writer = PipeMessageWriter(out_write, messages)
    os.close(out_read)
    try:
        async with anyio.create_task_group() as tg:
            ended = anyio.Event()

            async def read_all() -> None:
                async for _ in messages:
                    pass
                ended.set()

            tg.start_soon(read_all)
            await anyio.sleep(0.01)  # the reader waits on stdin
            with pytest.raises(anyio.BrokenResourceError):
                await writer.send(SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=1, result={})))
            with anyio.fail_after(5):
                await ended.wait()
        with pytest.raises(anyio.ClosedResourceError):
            await writer.send(SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=2, result={})))
    finally:
        for fd in (in_read, in_write, out_write):
            os.close(fd)


def test_only_pipes_and_sockets_are_served_on_the_loop() -> None:
    read_fd, write_fd = os.pipe()
    left, right = socket.socketpair()
    with tempfile.TemporaryFile() as regular:
        try:
            assert pollable(read_fd) and pollable(write_fd) and pollable(left.fileno())
            assert not pollable(regular.fileno())  # epoll refuses regular files: the SDK's transport serves them
            assert not pollable(10_000)  # not open
        finally:
            os.close(read_fd)
            os.close(write_fd)
            left.close()
            right.close()


SERVE_ONE_PING = textwrap.dedent(
    """
    import logging, sys, anyio
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCResponse
    from offload_mcp.upstream.stdio_pipes import upstream_stdio

    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)

    async def main():
        async with upstream_stdio() as (read, write):
            print("stray output", flush=True)
            message = await read.receive()
            await write.send(SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=message.message.id, result={})))
            await write.aclose()  # the transport ends when its writer is closed and stdin ends
        print("restored", flush=True)

    anyio.run(main)
    """
)
PING = b'{"jsonrpc":"2.0","id":7,"method":"ping"}\n'


def test_while_serving_stdout_is_diverted_so_a_stray_print_cannot_tear_a_frame() -> None:
    # A real process with pipes on fd 0/1, as a client launches a stdio server: a print() inside the
    # served block lands on stderr, the wire carries only the answer, and both descriptors come back.
    done = subprocess.run([sys.executable, "-c", SERVE_ONE_PING], input=PING, capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().splitlines() == ['{"jsonrpc":"2.0","id":7,"result":{}}', "restored"]
    assert "stray output" in done.stderr.decode() and "SDK's thread-based transport" not in done.stderr.decode()


def test_stdin_from_a_regular_file_is_served_by_the_sdk_transport(tmp_path) -> None:
    # epoll cannot wait on a regular file: the SDK's own transport serves, the reason is named, and the
    # answer and the stdout diversion are the same.
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(PING)
    with requests.open("rb") as stdin:
        done = subprocess.run([sys.executable, "-c", SERVE_ONE_PING], stdin=stdin, capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().splitlines() == ['{"jsonrpc":"2.0","id":7,"result":{}}', "restored"]
    assert "SDK's thread-based transport serves (stdin_not_pipe_or_socket)" in done.stderr.decode()
