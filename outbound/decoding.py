"""A response body's Content-Encoding decoded with a bound: never more bytes out than the call keeps."""

from __future__ import annotations

import zlib


class BoundedDecoder:
    """Decode a Content-Encoding, producing at most the bytes asked for (a 17 MiB gzip bomb costs `room`).

    A decoder that inflates each chunk whole would let a small body cost any memory. gzip and
    deflate (what we ask for: no brotli or zstd decoder is installed) are decoded here with
    zlib's max_length; any other coding is kept as received, still bounded.
    """

    def __init__(self, content_encoding: str) -> None:
        coding = content_encoding.strip().lower()
        self._zlib: zlib._Decompress | None = None
        if coding in {"gzip", "x-gzip"}:
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif coding == "deflate":
            self._zlib = zlib.decompressobj()
        self._raw_deflate_tried = False

    def decode(self, data: bytes, room: int) -> bytes:
        if self._zlib is None:
            return data[:room]
        try:
            # Input beyond `room` output stays in unconsumed_tail and is dropped: we stop reading here.
            return self._zlib.decompress(data, room)
        except zlib.error:
            if self._raw_deflate_tried:
                raise
            # Some servers send raw deflate without the zlib header, as common clients tolerate.
            self._raw_deflate_tried = True
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            return self._zlib.decompress(data, room)
