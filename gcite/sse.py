"""Server-Sent Events read off the wire: the lines of an SSE byte stream.

Shared by the stream client (`gcite.client`, reading an endpoint's or Dify's answer) and the local runner's
OpenAI-compatible model (`gcite.local.llm`, reading a model's deltas); it lives here, in the library, so the client
imports nothing of `gcite.local`.
"""

from collections.abc import Iterable, Iterator

MAX_SSE_LINE = 16 * 1024 * 1024  # bytes: a longer line is an error, not unbounded memory


def sse_lines(chunks: Iterable[bytes], sender: str = "the server") -> Iterator[str]:
    """Lines of an SSE byte stream, split on b"\\n" only and decoded as UTF-8 one whole line at a time (so a
    character split across network chunks is decoded intact). A line longer than MAX_SSE_LINE, or one that is not
    UTF-8, is a RuntimeError naming `sender`."""
    pending: list[bytes] = []
    size = 0
    for chunk in chunks:
        parts = chunk.split(b"\n")
        if len(parts) > 1:
            yield _decode_line(b"".join([*pending, parts[0]]), sender)
            yield from (_decode_line(part, sender) for part in parts[1:-1])
            pending, size = [], 0
        pending.append(parts[-1])
        size += len(parts[-1])
        if size > MAX_SSE_LINE:
            raise RuntimeError(f"{sender} sent an SSE line longer than {MAX_SSE_LINE} bytes")
    if size:
        yield _decode_line(b"".join(pending), sender)


def _decode_line(line: bytes, sender: str) -> str:
    try:
        return line.removesuffix(b"\r").decode("utf-8")
    except UnicodeDecodeError as error:
        raise RuntimeError(f"{sender} sent an SSE line that is not UTF-8: {error}") from None
