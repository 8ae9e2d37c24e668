"""Sign and verify a .difypkg exactly as Dify's plugin daemon does, with the `cryptography` package.

The scheme (langgenius/dify-plugin-daemon @ bdb5642: `pkg/plugin_packager/signer/withkey/sign_with_key.go`,
`decoder/verifier.go`, `decoder/zip.go`, `pkg/utils/encryption/rsa.go`, `cmd/commandline/signature/generate.go`):

- keys: RSA 4096; the private key a PEM `RSA PRIVATE KEY` block (PKCS#1), the public key a PEM `RSA PUBLIC KEY` block
  (PKCS#1). The daemon reads the first PEM block only, refuses another block type and any byte after the block.
- signed bytes: for every zip entry in central-directory order, the raw sha256 of its content (names are not hashed),
  then the signing time as ASCII decimal Unix seconds; signature = RSA PKCS#1 v1.5 over SHA-256 of those bytes.
- the signer writes `.verification.dify.json` (`{"authorized_category":"…"}`) as the last entry (so it is hashed
  last) and puts `{"signature":"<base64>","time":<int>}` in the zip archive comment.
- the verifier has no special case for the verification file; it reads every entry with Go's `zip.Reader.Open`, so
  a directory entry fails ("is a directory"), a name that is not a valid io/fs path fails, and a duplicated name
  reads the FIRST entry of that name each time. An unsigned package (no comment) never verifies. The daemon tries its
  bundled official key, then each key listed in `THIRD_PARTY_SIGNATURE_VERIFICATION_PUBLIC_KEYS`; the first that
  verifies wins. The time is not checked against a clock.

Unlike Go's `dify signature sign`, re-signing a signed package here replaces its verification entry instead of
adding a second one (the Go signer's second entry is read back as the first one by the daemon).
"""

import base64
import hashlib
import io
import json
import os
import posixpath
import re
import stat
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from gcite.release.archive import LIMITS, ArchiveError, Reader, open_archive, read_package_file

VERIFICATION_FILE = ".verification.dify.json"
CATEGORIES = ("langgenius", "partner", "community")
KEY_BITS = 4096  # what `dify signature generate` makes
MIN_KEY_BITS = 1024  # Go's crypto/rsa refuses smaller keys
PRIVATE_PEM = "RSA PRIVATE KEY"
PUBLIC_PEM = "RSA PUBLIC KEY"
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
OFFICIAL_KEY_NAME = "Dify's official key"

# The daemon's bundled official key, byte for byte (`pkg/license/public_key/PUBLIC_KEY.pem`, Apache-2.0; no newline
# at the end). Marketplace packages are signed with its private half.
DIFY_OFFICIAL_PUBLIC_KEY = (
    b"-----BEGIN RSA PUBLIC KEY-----\n"
    b"MIICCgKCAgEAwUY1cndCmqclHHlCn/PVB011n0m+vmXT2M/QWbViM/2oqO2S5lXl\n"
    b"VYwZjbN+r3xjUxnzCK6YC7fCI0CXJ69RPTpfRc9meV0TPb50g01kJI6HWL+SziZs\n"
    b"i+Mmul5ji7W4ebpOUNUPuBgFFfzrOv4BSO6tWVfpiqFTdfF3o2XT3FUja2rMCSQO\n"
    b"dsGvuhX5/YYAnOH4suxGo+nWda/QC+ohM4z8yLuM6fo7QPmkjTXN+jr7+RZ6JA7g\n"
    b"6XT7TdMK8oJcqMm15E0pRmgfNNLvqSeVcVM5OgmteTpSn7ekSdCMOpai3Cnc4zOa\n"
    b"PWSViiHTDu9AIoDbSBRQbvOaQ339eXOlHnomvg6WK6hw3hYoE+ASkv5qK9BwuWqn\n"
    b"xdUQ99qJ04eNTGjqCo65P9DKzpDb5BT5cxg40Utue0MbuN6pLPwhqkvnVmExuykw\n"
    b"aLQmTwnLODOD4gc5UU1dUeSUOxQeSoL8zSqL809ZV89B31jYOSFqcKEbyhoKaen3\n"
    b"dQSUFxEIca7Juj4E4tC+V1RsU2GSaVRCKEtJ4RBnDkQvB4aRBL+zpc26aIBKb3G3\n"
    b"0a9BWRvXRy+gr/qx8fDJgOuF23j1WXEDVsNtK6vpHGQkDUmsBsE2U+Sag9l2Vnq1\n"
    b"hrqLbjz2PPOHsBkg09IlM6SNr2NaEWvVJnC/szW8EQ51QBz8XJOnEmUCAwEAAQ==\n"
    b"-----END RSA PUBLIC KEY-----"
)


class SigningError(Exception):
    """A key or package that cannot be used: the message is one line naming the file and the problem."""


@dataclass(frozen=True)
class KeyPair:
    private: Path
    public: Path


@dataclass(frozen=True)
class Verification:
    verified: bool
    key: str | None  # the name of the key that verified the package
    category: str | None  # authorized_category of the verification entry (None: no entry)
    signed_at: int | None
    reason: str  # why it did not verify ("" when it did)


# --- keys -----------------------------------------------------------------------------------------------


def key_pair_paths(stem: str | Path) -> KeyPair:
    stem = str(stem)
    return KeyPair(private=Path(f"{stem}.private.pem"), public=Path(f"{stem}.public.pem"))


def private_pem(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )


def public_pem(key: rsa.RSAPublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.PKCS1)


def generate_key_pair(stem: str | Path, bits: int = KEY_BITS) -> KeyPair:
    """Write STEM.private.pem (mode 0600) and STEM.public.pem in the daemon's formats; never overwrite a key."""
    paths = key_pair_paths(stem)
    for path in (paths.private, paths.public):
        if os.path.lexists(path):  # a dangling symlink too: O_EXCL would refuse it after the private key is written
            what = "a symlink" if path.is_symlink() else "already exists"
            raise SigningError(f"{path}: {what}; not overwriting a key or writing through a link (choose another name)")
    if not paths.private.parent.is_dir():
        raise SigningError(f"{paths.private.parent}: no such directory")
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    _write_new(paths.private, private_pem(key), 0o600)
    try:
        _write_new(paths.public, public_pem(key.public_key()), 0o644)
    except SigningError:
        paths.private.unlink()  # never leave a private key whose public half nobody has
        raise
    return paths


def private_key_mode_problem(path: str | Path) -> str | None:
    """Why the private key file at `path` must not be used as it is: readable or writable by others than its owner
    (as `ssh` refuses an "UNPROTECTED PRIVATE KEY FILE"), or None. Not an error on a file system without modes."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None  # reading it says why
    if os.name == "posix" and mode & 0o077:
        return (
            f"{path}: mode {mode:04o}, others than you can read or change it; a signing key must be private "
            f"to you: run `chmod 600 {path}` (and make a new key if others may have copied it)"
        )
    return None


def _write_new(path: Path, data: bytes, mode: int) -> None:
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except OSError as error:
        raise SigningError(f"{path}: cannot create ({error.strerror})") from None
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
    os.chmod(path, mode)  # the umask may have taken bits away from the public key


PEM_BEGIN = re.compile(rb"-----BEGIN ([^-\r\n]*)-----")


def _pem_body(data: bytes, kind: str, where: str) -> None:
    """The daemon's reading (Go `pem.Decode` + "no rest"): the first PEM block must be `kind`, nothing after it."""
    begin = PEM_BEGIN.search(data)
    if begin is None:
        raise SigningError(f"{where}: not a PEM file (expected a '-----BEGIN {kind}-----' block)")
    found = begin.group(1).decode("ascii", "replace")
    if found != kind:
        hint = {
            "PRIVATE KEY": " (PKCS#8: convert with `openssl rsa -traditional`, or make one with "
            "`python -m gcite keygen`)",
            "PUBLIC KEY": " (SPKI: convert with `openssl rsa -pubin -RSAPublicKey_out`, or make one with "
            "`python -m gcite keygen`)",
        }.get(found, "")
        raise SigningError(f"{where}: a '{found}' PEM block, the daemon reads only '{kind}' (PKCS#1){hint}")
    end = re.compile(rb"-----END " + re.escape(kind.encode()) + rb"-----[ \t]*(\r?\n)?").search(data, begin.end())
    if end is None:
        raise SigningError(f"{where}: the '{kind}' block has no END line")
    if b"Proc-Type:" in data[begin.end() : end.start()]:
        raise SigningError(f"{where}: an encrypted key; the daemon reads only unencrypted keys")
    if data[end.end() :]:
        raise SigningError(
            f"{where}: data after the '{kind}' block (the daemon refuses it: "
            f'"extra data included in the PEM block"); keep exactly one block'
        )


def load_private_key(data: bytes, where: str = "private key") -> rsa.RSAPrivateKey:
    _pem_body(data, PRIVATE_PEM, where)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as error:
        raise SigningError(f"{where}: not a readable RSA private key ({str(error).splitlines()[0]})") from None
    return _checked(key, rsa.RSAPrivateKey, where)


def load_public_key(data: bytes, where: str = "public key") -> rsa.RSAPublicKey:
    _pem_body(data, PUBLIC_PEM, where)
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as error:
        raise SigningError(f"{where}: not a readable RSA public key ({str(error).splitlines()[0]})") from None
    return _checked(key, rsa.RSAPublicKey, where)


def _checked(key, kind, where: str):
    if not isinstance(key, kind):
        raise SigningError(f"{where}: not an RSA key")
    if key.key_size < MIN_KEY_BITS:
        raise SigningError(f"{where}: a {key.key_size}-bit key; the daemon needs at least {MIN_KEY_BITS} bits")
    return key


MAX_KEY_BYTES = 64 * 1024  # a PEM RSA key of 16,384 bits is under 13 KB


def _read(path: Path) -> bytes:
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_KEY_BYTES + 1)
    except OSError as error:
        raise SigningError(f"{path}: cannot read ({error.strerror})") from None
    if len(data) > MAX_KEY_BYTES:
        raise SigningError(f"{path}: larger than {MAX_KEY_BYTES:,} bytes; not a key file")
    return data


def read_private_key(path: str | Path) -> rsa.RSAPrivateKey:
    return load_private_key(_read(Path(path)), str(path))


def read_public_key(path: str | Path) -> rsa.RSAPublicKey:
    return load_public_key(_read(Path(path)), str(path))


def official_key() -> rsa.RSAPublicKey:
    return load_public_key(DIFY_OFFICIAL_PUBLIC_KEY, OFFICIAL_KEY_NAME)


def daemon_keys(extra: list[str | Path] = ()) -> list[tuple[str, rsa.RSAPublicKey]]:
    """The keys the daemon tries, in its order: its official key, then each configured third-party key."""
    return [(OFFICIAL_KEY_NAME, official_key())] + [(str(path), read_public_key(path)) for path in extra]


# --- zip entries as the daemon reads them ---------------------------------------------------------------


def _valid_fs_path(name: str) -> bool:
    """Go's io/fs.ValidPath."""
    if name == ".":
        return True
    return bool(name) and all(part not in ("", ".", "..") for part in name.split("/"))


def _go_valid_name(name: str) -> str:
    """Go archive/zip's toValidName: how an entry is filed for Open()."""
    cleaned = posixpath.normpath(name.replace("\\", "/")) if name else "."
    cleaned = cleaned.lstrip("/") if cleaned.startswith("/") else cleaned
    while cleaned.startswith("../"):
        cleaned = cleaned[3:]
    return "" if cleaned == "." else cleaned


def _open_archive(package: bytes) -> zipfile.ZipFile:
    """The package as a zip, its entry count and size bounded (gcite.release.archive); ArchiveError otherwise."""
    return open_archive(package, LIMITS)


def _first_entries(archive: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    """What Go's zip.Reader.Open(name) finds: the first entry filed under each valid name."""
    first: dict[str, zipfile.ZipInfo] = {}
    for info in archive.infolist():
        first.setdefault(_go_valid_name(info.filename), info)
    return first


def daemon_walk(archive: zipfile.ZipFile) -> list[tuple[str, bytes]]:
    """(name, content) for every central-directory entry, read as the daemon's Walk + ReadFile read them.

    Raises SigningError where the daemon's read fails (a directory entry, a name that is not an io/fs path)."""
    first = _first_entries(archive)
    reader = Reader(archive, LIMITS)  # every read counted against the caps: a repeated entry is read (and counted)
    walked = []
    for info in archive.infolist():
        directory, base = posixpath.split(info.filename)  # Go's path.Split keeps the slash on the directory
        name = posixpath.normpath(posixpath.join(directory, base)) if info.filename else ""
        if not _valid_fs_path(name):
            raise SigningError(f"entry {info.filename!r}: not a path the daemon can open")
        entry = first.get(name)
        if entry is None:
            raise SigningError(f"entry {info.filename!r}: the daemon cannot open it as {name!r}")
        if entry.is_dir():
            raise SigningError(
                f'entry {info.filename!r}: a directory entry (the daemon cannot read it: "is a directory")'
            )
        walked.append((info.filename, reader.read(entry)))
    return walked


def signed_bytes(contents: list[bytes], signed_at: int) -> bytes:
    return b"".join(hashlib.sha256(content).digest() for content in contents) + str(signed_at).encode("ascii")


def write_package(entries: list[tuple[str, bytes]], comment: bytes = b"") -> bytes:
    """A zip as the daemon's packager writes one: the entries in the given order, deflated, no directory entries."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in entries:
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, content)
        archive.comment = comment
    return buffer.getvalue()


def _entries_to_sign(package: bytes) -> list[tuple[str, bytes]]:
    archive = _open_archive(package)
    reader = Reader(archive, LIMITS)
    entries, seen = [], set()
    for info in archive.infolist():
        if info.is_dir():
            continue  # the daemon cannot read directory entries; the files inside them are entries of their own
        name = info.filename
        if name != _go_valid_name(name) or not _valid_fs_path(name):
            raise SigningError(f"entry {name!r}: not a clean relative path; the daemon refuses to unpack it")
        if name == VERIFICATION_FILE:
            continue  # replaced below: one verification entry, written last
        if name in seen:
            raise SigningError(f"entry {name!r}: appears twice; the daemon would read the first copy both times")
        seen.add(name)
        entries.append((name, reader.read(info)))
    return entries


def sign(
    package: bytes, private_key: rsa.RSAPrivateKey, category: str = "community", signed_at: int | None = None
) -> bytes:
    """The package signed as `dify signature sign -c CATEGORY` signs it (see the module docstring)."""
    if category not in CATEGORIES:
        raise SigningError(f"category {category!r}: expected one of {', '.join(CATEGORIES)}")
    entries = _entries_to_sign(package)
    entries.append(
        (VERIFICATION_FILE, json.dumps({"authorized_category": category}, separators=(",", ":")).encode("utf-8"))
    )
    signed_at = int(time.time()) if signed_at is None else int(signed_at)
    signature = private_key.sign(
        signed_bytes([content for _, content in entries], signed_at), padding.PKCS1v15(), hashes.SHA256()
    )
    comment = json.dumps(
        {"signature": base64.b64encode(signature).decode("ascii"), "time": signed_at},
        separators=(",", ":"),
        sort_keys=True,
    ).encode("ascii")
    return write_package(entries, comment)


# --- verifying --------------------------------------------------------------------------------------------


def _comment_fields(comment: bytes) -> tuple[str, int]:
    """The signature and time as Go's json.Unmarshal into {Signature string; Time int64} reads the comment."""
    try:
        data = json.loads(comment.decode("utf-8"))
    except RecursionError:
        raise ArchiveError("the zip comment: JSON nested too deeply to read (not the signer's comment)") from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise SigningError(
            "no signature: the zip comment is not the signer's JSON (an unsigned package)"
            if not comment
            else "the zip comment is not valid JSON"
        ) from None
    if data is None:
        return "", 0
    if not isinstance(data, dict):
        raise SigningError("the zip comment is not a JSON object")
    signature, signed_at = "", 0
    for key, value in data.items():  # Go matches field names case-insensitively; the last match wins
        if key.lower() == "signature" and value is not None:
            if not isinstance(value, str):
                raise SigningError("the zip comment's signature is not a string")
            signature = value
        elif key.lower() == "time" and value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or not -(2**63) <= value < 2**63:
                raise SigningError("the zip comment's time is not an integer")
            signed_at = value
    return signature, signed_at


def verify(package: bytes, keys: list[tuple[str, rsa.RSAPublicKey]]) -> Verification:
    """Check `package` as the daemon's VerifyPluginWithPublicKeys does with `keys` (first success wins).

    A package that cannot be read at all, or only past the bounds (a broken or hostile zip), raises ArchiveError:
    that is not a verdict on its signature."""
    category = signed_at = None
    try:
        archive = _open_archive(package)
        walked = daemon_walk(archive)
        signature, signed_at = _comment_fields(archive.comment)
        verification = _first_entries(archive).get(VERIFICATION_FILE)
        if verification is not None and not verification.is_dir():
            try:
                category = json.loads(Reader(archive, LIMITS).read(verification)).get("authorized_category")
            except RecursionError:
                raise ArchiveError(f"{VERIFICATION_FILE}: JSON nested too deeply to read") from None
            except (ValueError, AttributeError):
                raise SigningError(f"{VERIFICATION_FILE} is not a JSON object") from None
        try:
            raw_signature = base64.b64decode(signature, validate=True)
        except ValueError:
            raise SigningError("the zip comment's signature is not base64") from None
    except SigningError as error:
        return Verification(False, None, category, signed_at, str(error))
    data = signed_bytes([content for _, content in walked], signed_at)
    for name, key in keys:
        try:
            key.verify(raw_signature, data, padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            continue
        return Verification(True, name, category, signed_at, "")
    tried = ", ".join(name for name, _ in keys) or "no key"
    return Verification(False, None, category, signed_at, f"the signature does not match ({tried})")


def verify_file(path: str | Path, extra_keys: list[str | Path] = ()) -> Verification:
    """The daemon's check of an uploaded package: its official key, then `extra_keys` (key files)."""
    return verify(read_package_file(path, LIMITS), daemon_keys(extra_keys))
