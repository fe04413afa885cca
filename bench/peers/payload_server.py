"""The downstream server every proxy peer is benchmarked in front of.

An mcp-SDK stdio server with three tools, so that the direct path and every
proxy see byte-identical downstream results:

- `record(index)`: the `output` of record `index` of the JSONL(.gz) file given
  with `--records` (a corpus in the format of shared/corpus), as one text block.
- `text(size, seed=0)`: exactly `size` characters of deterministic, log-like
  text (numbered lines), for latency at a given result size. A different
  `seed` changes the first line, so repeated calls are not byte-identical
  (a proxy that deduplicates repeats must still do the full work each time).
- `file(name)`: the text of `<--files DIR>/<name>` (large real outputs made by
  bench/data/large/make_large.py).

Run: `python bench/peers/payload_server.py [--records FILE] [--files DIR]`.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server


def make_text(size: int) -> str:
    """Deterministic numbered lines cut to exactly `size` characters."""
    if size <= 0:
        return ""
    parts: list[str] = []
    total = 0
    i = 0
    while total < size:
        line = f"{i:08d} INFO worker-{i % 7} processed batch {i * 37 % 1000:03d} in {i % 97} ms status=ok\n"
        parts.append(line)
        total += len(line)
        i += 1
    return "".join(parts)[:size]


def load_records(path: str | None) -> list[str]:
    if not path:
        return []
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line)["output"] for line in fh if line.strip()]


def _schema(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required}


TOOLS = [
    types.Tool(
        name="record",
        description="Return the output of corpus record `index` as one text block.",
        input_schema=_schema({"index": {"type": "integer"}}, ["index"]),
    ),
    types.Tool(
        name="text",
        description="Return exactly `size` characters of numbered log lines; `seed` varies the first line.",
        input_schema=_schema({"size": {"type": "integer"}, "seed": {"type": "integer"}}, ["size"]),
    ),
    types.Tool(
        name="file",
        description="Return the text of a large real output file by `name`.",
        input_schema=_schema({"name": {"type": "string"}}, ["name"]),
    ),
]


def build_server(records: list[str], files_dir: Path | None) -> Server:
    text_cache: dict[int, str] = {}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        if params.name == "record":
            body = records[int(args["index"])]
        elif params.name == "text":
            size = int(args["size"])
            if size not in text_cache:
                text_cache[size] = make_text(size)
            body = text_cache[size]
            seed = int(args.get("seed", 0))
            if seed:
                head = f"call {seed}\n"
                body = (head + body[len(head) :])[:size]
        elif params.name == "file" and files_dir is not None:
            target = (files_dir / str(args["name"])).resolve()
            if files_dir.resolve() not in target.parents:
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text="name outside the files folder")], is_error=True
                )
            body = target.read_text(encoding="utf-8")
        else:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"unknown tool {params.name}")], is_error=True
            )
        return types.CallToolResult(content=[types.TextContent(type="text", text=body)])

    return Server("bench-payload", on_list_tools=list_tools, on_call_tool=call_tool)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records")
    parser.add_argument("--files")
    args = parser.parse_args()
    server = build_server(load_records(args.records), Path(args.files) if args.files else None)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
