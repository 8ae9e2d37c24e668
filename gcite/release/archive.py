"""Reading a .difypkg that someone else made (`gcite verify`, `retrofit --package`), bounded on every axis.

A package is a zip, and a hostile zip costs what its central directory claims: a 1 GiB entry that deflates from a
megabyte, one local entry listed a thousand times by a repeated central directory, an entry whose header lies about
its size. Nothing here trusts a size a header states: every entry is read through `zipfile`'s streaming reader in
blocks, and the count of bytes actually produced is checked against the caps while it decompresses, so no read ever
holds more than one entry's cap plus a block. Every way a zip can be broken (bad CRC, truncated data, an encrypted
entry, a compression method Python does not read, a header that does not parse) is one `ArchiveError` whose
message names the entry; never a traceback, never a `MemoryError`.

The caps are the plugin daemon's own package limit (50 MiB, `MAX_PLUGIN_PACKAGE_SIZE`) for the file, for one
entry and for the sum of all entries, and the Marketplace's 5,000 files for the entry count (docs/security.md).
"""

import io
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

MAX_PACKAGE_BYTES = 50 * 1024 * 1024  # the file itself (the daemon refuses a larger upload)
MAX_ENTRY_BYTES = 50 * 1024 * 1024  # one entry, decompressed
MAX_TOTAL_BYTES = 50 * 1024 * 1024  # all entries together, decompressed
MAX_ENTRIES = 5000  # central-directory entries (the Marketplace's file limit)
BLOCK = 64 * 1024

# what zipfile and zlib raise on a broken archive or entry (RuntimeError: encrypted; NotImplementedError: an
# unknown compression method; EOFError: truncated; struct.error and ValueError: headers that do not parse;
# OSError: a bzip2 or LZMA entry whose data is not a valid stream, "Invalid data stream", found by `make fuzz`)
BROKEN = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    RuntimeError,
    NotImplementedError,
    EOFError,
    zlib.error,
    struct.error,
    ValueError,
    OverflowError,
    KeyError,
    IndexError,
    UnicodeDecodeError,
    OSError,
)


class ArchiveError(Exception):
    """A package that cannot be read within the bounds: one line naming the entry and the problem."""


@dataclass(frozen=True)
class Limits:
    package: int = MAX_PACKAGE_BYTES
    entry: int = MAX_ENTRY_BYTES
    total: int = MAX_TOTAL_BYTES
    entries: int = MAX_ENTRIES


LIMITS = Limits()


def read_package_file(path: str | Path, limits: Limits = LIMITS) -> bytes:
    """The bytes of the package file at `path`, refused past `limits.package` (read at most one byte more)."""
    try:
        with open(path, "rb") as file:
            data = file.read(limits.package + 1)
    except OSError as error:
        raise ArchiveError(f"{path}: cannot read ({error.strerror or error})") from None
    if len(data) > limits.package:
        raise ArchiveError(f"{path}: larger than {limits.package:,} bytes (the daemon's package limit)")
    return data


def open_archive(data: bytes, limits: Limits = LIMITS) -> zipfile.ZipFile:
    """A ZipFile over `data` whose central directory has at most `limits.entries` entries."""
    if len(data) > limits.package:
        raise ArchiveError(f"the package is larger than {limits.package:,} bytes (the daemon's package limit)")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise ArchiveError("not a .difypkg (not a zip archive)") from None
    except BROKEN as error:
        raise ArchiveError(f"not a readable zip archive ({_why(error)})") from None
    if len(archive.infolist()) > limits.entries:
        raise ArchiveError(
            f"the package lists {len(archive.infolist()):,} entries; at most {limits.entries:,} are read"
        )
    return archive


class Reader:
    """Reads entries of one archive, counting every decompressed byte against the per-entry and total caps."""

    def __init__(self, archive: zipfile.ZipFile, limits: Limits = LIMITS):
        self.archive, self.limits, self.total = archive, limits, 0

    def read(self, info: zipfile.ZipInfo) -> bytes:
        name = info.filename
        chunks, size = [], 0
        try:
            with self.archive.open(info) as stream:
                while True:
                    block = stream.read(BLOCK)
                    if not block:
                        break
                    size += len(block)
                    self.total += len(block)
                    if size > self.limits.entry:
                        raise ArchiveError(
                            f"entry {name!r}: larger than {self.limits.entry:,} bytes decompressed; not read further"
                        )
                    if self.total > self.limits.total:
                        raise ArchiveError(
                            f"entry {name!r}: the entries together pass {self.limits.total:,} "
                            f"bytes decompressed; not read further"
                        )
                    chunks.append(block)
        except ArchiveError:
            raise
        except BROKEN as error:
            raise ArchiveError(f"entry {name!r}: {_why(error)}") from None
        return b"".join(chunks)


def _why(error: BaseException) -> str:
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    if isinstance(error, RuntimeError) and "encrypt" in text.lower():
        return "an encrypted entry (packages are never encrypted)"
    if isinstance(error, NotImplementedError):
        return f"a compression method this reader does not know ({text})"
    if isinstance(error, EOFError):
        return "truncated"
    if "CRC" in text:
        return "bad CRC (the data is damaged)"
    return text[:200]


def read_entries(data: bytes, limits: Limits = LIMITS, skip_dirs: bool = True) -> dict[str, bytes]:
    """{name: content} of every entry (the first of a repeated name), each read within the bounds."""
    archive = open_archive(data, limits)
    reader, entries = Reader(archive, limits), {}
    for info in archive.infolist():
        if (skip_dirs and info.is_dir()) or info.filename in entries:
            continue
        entries[info.filename] = reader.read(info)
    return entries
