"""A FastMCP-style (MCPServer) stdio server whose tool declares an outputSchema and returns a big
structuredContent: `big_rows(count)` -> {"rows": [{"id", "name", "payload"}...], "total": count}.
About 100 chars per row: count=30000 is ~3 MB of structuredContent (plus the same JSON as text)."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel


class Row(BaseModel):
    id: int
    name: str
    payload: str


class Rows(BaseModel):
    rows: list[Row]
    total: int


app = MCPServer("big-structured")


@app.tool()
def big_rows(count: int = 30_000) -> Rows:
    """Return `count` rows as structured content."""
    return Rows(
        rows=[Row(id=i, name=f"row-{i:05d}", payload=f"{i:05d}-" + "abcdefghij" * 7) for i in range(count)], total=count
    )


if __name__ == "__main__":
    app.run()
