"""The seam between forwarding and economics: shape one downstream result.

The server (upstream/dispatch.py) shapes each downstream tool result once, on arrival:
`ResultShaper.shape_without_blocking` on its event loop for a small result whose decision needs no
ledger write, else `ResultShaper.shape_with_report` in a worker thread (SQLite is synchronous). Order:

1. reducers (reducers/pipeline.py) on each text block; image, audio and
   resource blocks pass untouched;
2. the result policy (policy/) on the reduced size: one decision, one reason.
   The reducers that window an output (Reducer.yields_to_offload: collapse,
   smartcrush) are the last resort for an oversized output nothing more
   specific handled; at this seam offload is the more specific handler, so
   the policy first judges the output reduced without them, and an offload
   decision there wins: the model gets a stub with a structural index and
   sliced recall instead of a head/tail window whose expand would return the
   whole body at once; so does a keep under the large pre-filter (that
   reduction is small enough to show every row);
3. one ledger transaction: the ORIGINAL body when offloaded (never the
   reduced text), the reducer stash when markers are shown, and the decision
   event;
4. only after that commit: the stub or the reduced text goes to the client,
   and the pipeline's session memory (dedup history) is updated.

When the ledger cannot be written (or does not answer within its deadline) the
original result goes back unmodified and a warning names the cause: never a stub
or marker without its body. A result larger than the client accepts
(`client_max_result_chars`) is cut to it instead (`cut_unstored`), with a note in
the text and in `_meta` that the rest was not stored and the call can be repeated:
sent whole, the client would reject it and it would be lost.
`mode: observe` computes everything, records what would have happened, and
returns the result unchanged. Results of the proxy's own tools are never
reduced or offloaded.

Modules: body.py (a result's dump and its sizes), report.py (the call and the decision's draft),
pricer.py (the stub the gate prices), unstored.py (a result the ledger could not take),
shaper.py (ResultShaper: decide -> apply -> commit).
"""

from .body import (
    ResultBody,
    channel_sizes,
    dump_result,
    is_multimodal,
    recall_chars,
    sent_chars,
    structured_repeats_text,
    text_spells_structured,
    visible_chars,
)
from .pricer import StubPricer
from .report import CallInfo, ShapeReport
from .shaper import INLINE_MAX_CHARS, KEPT_ON_PURPOSE, ResultShaper, build_shaper
from .unstored import UNSTORED_META_KEY, cut_unstored

__all__ = [
    "INLINE_MAX_CHARS",
    "KEPT_ON_PURPOSE",
    "UNSTORED_META_KEY",
    "CallInfo",
    "ResultBody",
    "ResultShaper",
    "ShapeReport",
    "StubPricer",
    "build_shaper",
    "channel_sizes",
    "cut_unstored",
    "dump_result",
    "is_multimodal",
    "recall_chars",
    "sent_chars",
    "structured_repeats_text",
    "text_spells_structured",
    "visible_chars",
]
