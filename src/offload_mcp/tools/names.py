"""Names of the proxy's own retrieval tools, which every layer refers to.

The shaper keeps their results as they are (DESIGN: "hot" at this seam: what
the model just asked for is never reduced or offloaded again), the catalog
always lists them, and tools/ implements them. They live here, below all three,
so that none of them imports another for a constant.
"""

from __future__ import annotations

RECALL = "recall_tool_result"
EXPAND = "context_guru_expand"
ALWAYS_LISTED = (RECALL, EXPAND)
"""Own tools listed in every catalog mode; their results are never shaped."""
SEARCH = "search_tools"
INVOKE = "invoke_tool"
"""Own tools of the catalog's search mode: listed only when the presentation asks for them."""
