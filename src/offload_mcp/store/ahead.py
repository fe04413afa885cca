"""Worker threads for ledger work that need not hold up the shaper: compressing a body it will commit.

How it works: zstd releases the GIL, so a body's compression runs here while the shaper's own thread
hashes it (sha256 also releases the GIL, which is when this thread gets in) and then builds the stub
(shape, identifier index: pure Python). The commit takes the result. A worker started while the
caller holds the GIL in pure Python would wait for it (the 5 ms switch interval), so work is handed
over only right before a GIL-free call on the caller's side. Nothing here decides or writes anything.
Inert below `MIN_BYTES`, where the hand-over costs about what the work does.

Measured (CPU time of the shaper's thread per 1 MB shape, min of 30, interleaved with it off): the
fixture's 1 MB text 2.45 -> 2.09 ms, bench_offload's 1 MB log with its structuredContent copy (2 MB
body) 7.7 -> 5.1 ms. That is wall time saved wherever a core is free; on a machine with none it is
about even.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

MIN_BYTES = 128 * 1024
"""Bodies smaller than this are hashed and compressed in line (a thread hand-off costs ~0.1 ms)."""

_P = ParamSpec("_P")
_T = TypeVar("_T")
_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def submit(fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> Future[_T]:
    """`fn(*args, **kwargs)` on a worker thread (a small pool shared by every ledger)."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 2), thread_name_prefix="offload-ahead")
    return _pool.submit(fn, *args, **kwargs)
