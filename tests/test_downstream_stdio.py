"""The downstream stdio transport without tasks in the call path (downstream/stdio.py): requests written in the
sending task, whole even when cancelled half way; answers larger than the pipe and the read chunk arrive whole."""

from __future__ import annotations

import os
import sys

import anyio
import anyio.to_thread
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload_mcp.config import Config
from offload_mcp.downstream.pool import DownstreamPool
from offload_mcp.downstream.spawn import PipeOut
from offload_mcp.downstream.stdio import _LineSplitter
from support.servers import fixture_entry

pytestmark = pytest.mark.anyio


def _read_exactly(fd: int, size: int) -> bytes:
    got = bytearray()
    while len(got) < size:
        chunk = os.read(fd, size - len(got))
        if not chunk:
            break
        got += chunk
    return bytes(got)


@pytest.mark.skipif(sys.platform == "win32", reason="our own pipes are POSIX only")
async def test_a_write_cancelled_half_way_is_finished_before_the_next_frame() -> None:
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    out = PipeOut(write_fd)
    first = b'{"a":"' + b"x" * 300_000 + b'"}\n'  # far over the 64 KiB pipe: blocks with nobody reading
    second = b'{"b":1}\n'
    try:
        with anyio.move_on_after(0.2) as scope:
            await out.write(first)
        assert scope.cancelled_caught
        received: list[bytes] = []
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:

                async def drain() -> None:
                    size = len(first) + len(second)
                    received.append(
                        await anyio.to_thread.run_sync(_read_exactly, read_fd, size, abandon_on_cancel=True)
                    )

                tg.start_soon(drain)
                await out.write(second)
        assert received == [first + second]  # the torn frame was completed first, nothing interleaved
    finally:
        os.close(read_fd)
        os.close(write_fd)


async def test_answers_larger_than_the_pipe_and_the_read_chunk_arrive_whole_between_small_ones() -> None:
    config = Config.model_validate({"mcpServers": {"fx": fixture_entry()}})
    async with DownstreamPool(config.mcpServers, config.offload.downstream) as pool:
        server = pool.servers["fx"]
        for size in (3_000_000, 10, 700_000):
            big = await server.call_tool("make_text", {"size": size})
            assert not big.is_error and len(big.content[0].text) == size  # type: ignore[union-attr]
            small = await server.call_tool("echo", {"text": "after"})
            assert small.content[0].text == "after"  # type: ignore[union-attr]
        async with anyio.create_task_group() as tg:  # concurrent callers share the stdin writer and the reader
            sizes = [200_000, 5, 1_500_000, 64 * 1024, 64 * 1024 + 1]
            results: dict[int, int] = {}

            async def call(size: int) -> None:
                result = await server.call_tool("make_text", {"size": size})
                results[size] = len(result.content[0].text)  # type: ignore[union-attr]

            for size in sizes:
                tg.start_soon(call, size)
        assert results == {size: size for size in sizes}


@given(
    lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=8),
    cuts=st.lists(st.integers(min_value=1, max_value=50), max_size=12),
    limit=st.integers(min_value=1, max_value=45),
)
@settings(max_examples=300, deadline=None)
def test_lines_are_the_same_however_the_reads_cut_the_stream(lines: list[bytes], cuts: list[int], limit: int) -> None:
    """A line read whole in one chunk keeps its line break (no copy to slice it off); one split across
    reads does not: either way the same message, the same size without the break, the same limit."""
    stream = b"".join(line + b"\n" for line in lines)
    chunks, at = [], 0
    for cut in cuts:
        if at < len(stream):
            chunks.append(stream[at : at + cut])
            at += cut
    chunks.append(stream[at:])
    splitter = _LineSplitter(limit)
    got = [line for chunk in chunks if chunk for line in splitter.feed(chunk)]
    expected = [line for line in lines if line.strip() or len(line) > limit]  # a blank line over the limit is over it
    assert [line.size for line in got] == [len(line) for line in expected]
    for line, original in zip(got, expected, strict=True):
        if len(original) > limit:
            assert line.data is None and (original + b"\n").startswith(line.head)
        else:
            assert line.data is not None and line.data.rstrip(b"\n") == original
    whole = _LineSplitter(limit).feed(stream)  # the stream in one read: each line but the last is sliced
    assert [line.size for line in whole] == [len(line) for line in expected]
