"""Hostile and broken packages for `gcite verify` and `retrofit --package` (gcite.release.archive): each is one
error line, exit 2, within a bounded amount of memory; never a traceback or a MemoryError."""

import io
import json
import struct
import subprocess
import sys
import tracemalloc
import zipfile
import zlib

import pytest

from gcite.cli.common import CliError
from gcite.cli.retrofit import package_identifier
from gcite.release import archive, signing
from gcite.release.archive import ArchiveError, Limits
from gcite.release.package import identifier_of_package
from tests.support import ROOT

MANIFEST = b"author: langgenius\nname: gcite\nversion: 0.1.0\ntype: plugin\n"


def plain_zip(entries, method=zipfile.ZIP_STORED, comment=b"") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=method) as out:
        for name, content in entries:
            out.writestr(name, content)
        out.comment = comment
    return buffer.getvalue()


def central(data: bytes) -> int:
    return data.index(b"PK\x01\x02")


def patched(data: bytes, local: int, central_at: int, fmt: str, value: int) -> bytes:
    """`data` with the same field changed in the first local header (offset `local`) and central record."""
    out = bytearray(data)
    struct.pack_into(fmt, out, local, value)
    struct.pack_into(fmt, out, central(data) + central_at, value)
    return bytes(out)


def bad_crc() -> bytes:
    data = bytearray(plain_zip([("manifest.yaml", MANIFEST)]))
    data[30 + len("manifest.yaml")] ^= 0xFF  # the first stored byte of the entry
    return bytes(data)


def truncated_entry() -> bytes:
    data = plain_zip([("manifest.yaml", MANIFEST * 50)], zipfile.ZIP_DEFLATED)
    info = zipfile.ZipFile(io.BytesIO(data)).infolist()[0]
    return patched(data, 18, 20, "<I", info.compress_size // 2)  # the deflate stream ends early


def encrypted_entry() -> bytes:
    return patched(plain_zip([("manifest.yaml", MANIFEST)]), 6, 8, "<H", 1)  # flag bit 0: encrypted


def unknown_method() -> bytes:
    return patched(plain_zip([("manifest.yaml", MANIFEST)]), 8, 10, "<H", 99)


def cut_file() -> bytes:
    data = plain_zip([("manifest.yaml", MANIFEST * 20)])
    return data[: len(data) // 2]


def deflated_zeros(size: int) -> tuple[bytes, int]:
    """A raw deflate stream of `size` zero bytes (whole MiB) and their CRC-32. One MiB is compressed and fully flushed
    (which resets the compressor: the next MiB would compress to the same bytes), then repeated, and a final empty
    block ends the stream: 3 ms for a GiB, not 2.5 s of compressing it."""
    block = bytes(1 << 20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    one = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    end = zlib.compressobj(9, zlib.DEFLATED, -15).flush()
    return one * (size // len(block)) + end, zlib.crc32(bytes(0)) if size == 0 else _zeros_crc(size)


def _zeros_crc(size: int) -> int:
    crc, block = 0, bytes(1 << 20)
    for _ in range(size // len(block)):
        crc = zlib.crc32(block, crc)
    return crc


def raw_zip(name: bytes, compressed: bytes, size: int, crc: int, repeat: int = 1, comment: bytes = b"") -> bytes:
    """One deflated local entry, listed `repeat` times in the central directory (all pointing at offset 0)."""
    local = struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, 8, 0, 0x21, crc, len(compressed), size, len(name), 0)
    record = (
        struct.pack(
            "<4s6H3I5H2I",
            b"PK\x01\x02",
            20,
            20,
            0,
            8,
            0,
            0x21,
            crc,
            len(compressed),
            size,
            len(name),
            0,
            0,
            0,
            0,
            0o644 << 16,
            0,
        )
        + name
    )
    body = local + name + compressed
    directory = record * repeat
    end = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, repeat, repeat, len(directory), len(body), len(comment))
    return body + directory + end + comment


GIB = 1 << 30


@pytest.fixture(scope="module")
def gib_entry():
    return deflated_zeros(GIB)


def not_a_bzip2_stream() -> bytes:
    """A stored entry relabelled bzip2: its data is not a bzip2 stream, and bz2 raises OSError (found by make fuzz,
    tests/fuzz_corpus/archive_reader/crash-5c44e637…, where it was LZMA)."""
    return patched(plain_zip([("manifest.yaml", MANIFEST)]), 8, 10, "<H", zipfile.ZIP_BZIP2)


BROKEN = {
    "bad CRC": (bad_crc, "bad CRC"),
    "truncated entry": (truncated_entry, "manifest.yaml"),
    "encrypted entry": (encrypted_entry, "encrypted"),
    "unknown compression method": (unknown_method, "compression method"),
    "not a bzip2 stream": (not_a_bzip2_stream, "manifest.yaml': Invalid data stream"),
    "truncated file": (cut_file, "not a"),
    "not a zip": (lambda: b"PK\x03\x04 but not really", "not a"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_archive_is_one_archive_error(case, tmp_path):
    make, expected = BROKEN[case]
    path = tmp_path / "broken.difypkg"
    path.write_bytes(make())
    with pytest.raises(ArchiveError, match=expected):
        identifier_of_package(path)
    with pytest.raises(ArchiveError):
        signing.verify_file(path)
    with pytest.raises(CliError, match=r"^--package .*: not a readable plugin package"):
        package_identifier(path)


def test_a_gib_entry_is_refused_while_it_decompresses(gib_entry, tmp_path):
    compressed, crc = gib_entry
    path = tmp_path / "bomb.difypkg"
    path.write_bytes(raw_zip(b"manifest.yaml", compressed, GIB, crc))
    tracemalloc.start()
    try:
        with pytest.raises(ArchiveError, match="larger than 52,428,800 bytes decompressed"):
            identifier_of_package(path)
        with pytest.raises(ArchiveError, match="larger than 52,428,800 bytes decompressed"):
            signing.verify_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 160 * 2**20, f"peak {peak:,} bytes"  # one entry's cap and its join, never the GiB


def test_a_repeated_central_directory_is_bounded_by_the_total():
    content = b"x" * (1 << 20)
    compressed = zlib.compress(content, 9)[2:-4]
    data = raw_zip(b"a.py", compressed, len(content), zlib.crc32(content), repeat=60)
    with pytest.raises(ArchiveError, match="together pass 52,428,800 bytes"):
        signing.verify(data, [])
    many = raw_zip(b"a.py", compressed, len(content), zlib.crc32(content), repeat=archive.MAX_ENTRIES + 1)
    with pytest.raises(ArchiveError, match="lists 5,001 entries"):
        signing.verify(many, [])


def test_small_limits_apply_per_entry_and_in_total():
    data = plain_zip([("a", b"1" * 100), ("b", b"2" * 100)])
    assert archive.read_entries(data, Limits(entry=100, total=200)) == {"a": b"1" * 100, "b": b"2" * 100}
    with pytest.raises(ArchiveError, match="'a': larger than 99 bytes"):
        archive.read_entries(data, Limits(entry=99))
    with pytest.raises(ArchiveError, match="'b': the entries together pass 199"):
        archive.read_entries(data, Limits(total=199))
    with pytest.raises(ArchiveError, match="lists 2 entries"):
        archive.read_entries(data, Limits(entries=1))


def test_a_deeply_nested_comment_is_one_error():
    data = plain_zip([("manifest.yaml", MANIFEST)], comment=b"[" * 60000)
    with pytest.raises(ArchiveError, match="nested too deeply"):
        signing.verify(data, [])
    nested = plain_zip(
        [("manifest.yaml", MANIFEST), (signing.VERIFICATION_FILE, b"[" * 200000)],
        comment=json.dumps({"signature": "", "time": 1}).encode(),
    )
    with pytest.raises(ArchiveError, match="nested too deeply"):
        signing.verify(nested, [])


def test_a_package_past_the_file_limit_is_not_read_whole(tmp_path):
    path = tmp_path / "huge.difypkg"
    with open(path, "wb") as file:
        file.truncate(archive.MAX_PACKAGE_BYTES + 10)
    with pytest.raises(ArchiveError, match="larger than 52,428,800 bytes"):
        signing.verify_file(path)


def test_a_huge_key_file_is_one_error(tmp_path):
    key = tmp_path / "k.public.pem"
    key.write_bytes(b"-----BEGIN RSA PUBLIC KEY-----\n" + b"A" * (1 << 20))
    with pytest.raises(signing.SigningError, match="not a key file"):
        signing.read_public_key(key)


@pytest.mark.parametrize(
    "case", ["bad CRC", "encrypted entry", "unknown compression method", "truncated entry", "not a bzip2 stream"]
)
def test_verify_prints_one_line_and_exits_2(case, tmp_path):
    path = tmp_path / "broken.difypkg"
    path.write_bytes(BROKEN[case][0]())
    done = subprocess.run(
        [sys.executable, "-m", "gcite", "verify", str(path)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"error: {path}: ") and not done.stdout
