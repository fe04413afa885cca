"""How bodies and stash entries are compressed at rest (the same bytes in every backend).

zstd, not zlib: several times faster both ways and smaller on log text, and the commit sits between
the downstream answer and the client's stub. Rows written before the `codec` column existed are
zlib; they stay readable.

Level 1, not 3: the compression runs on the path to a large result's stub, and level 1 is faster for
a few percent more bytes at rest. Any level's frames decompress alike, so rows written at level 3
stay readable. Measurements: docs/design.md, "Hashing and compression".
"""

from __future__ import annotations

import threading
import zlib

import zstandard

CODEC = "zstd"
LEGACY_CODEC = "zlib"
_ZSTD_LEVEL = 1
_codecs = threading.local()


def compress(data: bytes) -> bytes:
    compressor: zstandard.ZstdCompressor | None = getattr(_codecs, "compressor", None)
    if compressor is None:  # zstandard objects are not thread-safe: one per thread
        compressor = _codecs.compressor = zstandard.ZstdCompressor(level=_ZSTD_LEVEL)
    return compressor.compress(data)


class Undecompressable(ValueError):
    """Stored bytes that are not a frame of their codec (a damaged row): one error for either codec."""


def decompress(data: bytes, codec: str) -> bytes:
    try:
        if codec == LEGACY_CODEC:
            return zlib.decompress(data)
        decompressor: zstandard.ZstdDecompressor | None = getattr(_codecs, "decompressor", None)
        if decompressor is None:
            decompressor = _codecs.decompressor = zstandard.ZstdDecompressor()
        return decompressor.decompress(data)
    except (zlib.error, zstandard.ZstdError, TypeError) as err:  # TypeError: a damaged row's body is not a blob
        raise Undecompressable(str(err)) from None
