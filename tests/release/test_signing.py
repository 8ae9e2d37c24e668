"""Signing and verifying a .difypkg as Dify's plugin daemon does, checked on the daemon's own test files."""

import base64
import io
import json
import stat
import zipfile

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from gcite.release import signing
from gcite.release.archive import ArchiveError
from gcite.release.signing import VERIFICATION_FILE, SigningError
from tests.support import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "dify-signing"  # copied from the daemon's repository (see README.md there)
MARKETPLACE = FIXTURES / "langgenius-agent_0.0.14.difypkg"  # signed with Dify's official key
UNSIGNED = FIXTURES / "dummy_plugin.difypkg"
TEST_KEYS = [FIXTURES / "test_key_pair_1.public.pem", FIXTURES / "test_key_pair_2.public.pem"]


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """Two key pairs made by our keygen: ours and another one."""
    folder = tmp_path_factory.mktemp("keys")
    return {name: signing.generate_key_pair(folder / name) for name in ("ours", "other")}


@pytest.fixture(scope="module")
def signed(keys):
    return signing.sign(UNSIGNED.read_bytes(), signing.read_private_key(keys["ours"].private), "community")


def entries(package: bytes) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        return [(info.filename, archive.read(info)) for info in archive.infolist()]


def comment(package: bytes) -> bytes:
    return zipfile.ZipFile(io.BytesIO(package)).comment


def rewritten(package: bytes, new_entries: list[tuple[str, bytes]]) -> bytes:
    """The same signature comment over other entries."""
    return signing.write_package(new_entries, comment(package))


def with_key(keys, name):
    return [(name, signing.read_public_key(keys[name].public))]


# --- the daemon's own files -----------------------------------------------------------------------------


def test_the_official_key_is_the_daemons_file_byte_for_byte():
    assert signing.DIFY_OFFICIAL_PUBLIC_KEY == (FIXTURES / "PUBLIC_KEY.pem").read_bytes()


def test_the_marketplace_package_verifies_with_the_official_key_only():
    result = signing.verify_file(MARKETPLACE)
    assert result.verified and result.key == signing.OFFICIAL_KEY_NAME and result.signed_at == 1744632035
    assert result.category is None  # signed before the verification entry existed
    for path in TEST_KEYS:
        alone = signing.verify(MARKETPLACE.read_bytes(), [(str(path), signing.read_public_key(path))])
        assert not alone.verified and "does not match" in alone.reason
    assert signing.verify_file(MARKETPLACE, TEST_KEYS).key == signing.OFFICIAL_KEY_NAME  # first success wins


def test_the_unsigned_package_does_not_verify():
    result = signing.verify_file(UNSIGNED, TEST_KEYS)
    assert not result.verified and result.key is None and "unsigned" in result.reason


# --- keygen -----------------------------------------------------------------------------------------------


def test_keygen_writes_the_daemons_formats(keys):
    pair = keys["ours"]
    private, public = pair.private.read_bytes(), pair.public.read_bytes()
    assert pair.private.name == "ours.private.pem" and pair.public.name == "ours.public.pem"
    assert stat.S_IMODE(pair.private.stat().st_mode) == 0o600
    assert stat.S_IMODE(pair.public.stat().st_mode) == 0o644
    assert private.startswith(b"-----BEGIN RSA PRIVATE KEY-----\n") and private.endswith(
        b"-----END RSA PRIVATE KEY-----\n"
    )
    assert public.startswith(b"-----BEGIN RSA PUBLIC KEY-----\n") and public.endswith(b"-----END RSA PUBLIC KEY-----\n")
    assert private.count(b"-----BEGIN") == 1 and public.count(b"-----BEGIN") == 1
    key = serialization.load_pem_private_key(private, password=None)
    assert isinstance(key, rsa.RSAPrivateKey) and key.key_size == 4096
    assert signing.read_public_key(pair.public).public_numbers() == key.public_key().public_numbers()


def test_keygen_never_overwrites_a_key(keys):
    before = keys["ours"].private.read_bytes()
    with pytest.raises(SigningError, match="already exists"):
        signing.generate_key_pair(keys["ours"].private.parent / "ours")
    assert keys["ours"].private.read_bytes() == before


# --- signing ---------------------------------------------------------------------------------------------


def test_our_signed_package_verifies_with_our_key_and_not_another(keys, signed):
    ours = signing.verify(signed, signing.daemon_keys([keys["ours"].public]))
    assert ours.verified and ours.key == str(keys["ours"].public) and ours.category == "community"
    assert not signing.verify(signed, signing.daemon_keys([keys["other"].public])).verified
    assert not signing.verify(signed, signing.daemon_keys()).verified


def test_the_signed_layout_is_the_daemons(signed):
    original = entries(UNSIGNED.read_bytes())
    names = [name for name, _ in entries(signed)]
    assert entries(signed)[:-1] == original  # every file, same order, same bytes
    assert names[-1] == VERIFICATION_FILE and names.count(VERIFICATION_FILE) == 1
    assert dict(entries(signed))[VERIFICATION_FILE] == b'{"authorized_category":"community"}'
    assert not any(name.endswith("/") for name in names)
    note = comment(signed)
    fields = json.loads(note)
    assert list(fields) == ["signature", "time"] and isinstance(fields["time"], int)
    assert note == json.dumps(fields, separators=(",", ":")).encode()  # Go's compact json.Marshal
    assert len(base64.b64decode(fields["signature"], validate=True)) == 512  # RSA 4096


def test_one_changed_byte_in_one_entry_fails(keys, signed):
    changed = [
        (name, content.replace(b"import", b"Import", 1) if name == "main.py" else content)
        for name, content in entries(signed)
    ]
    assert changed != entries(signed)
    assert not signing.verify(rewritten(signed, changed), with_key(keys, "ours")).verified
    assert signing.verify(rewritten(signed, entries(signed)), with_key(keys, "ours")).verified  # the control


def test_reordered_entries_fail_but_renamed_ones_do_not(keys, signed):
    original = entries(signed)
    swapped = [original[1], original[0]] + original[2:]
    assert original[0][1] != original[1][1]
    assert not signing.verify(rewritten(signed, swapped), with_key(keys, "ours")).verified
    # the daemon hashes contents, not names: a renamed entry keeps the signature valid
    renamed = [("elsewhere.py" if name == "main.py" else name, content) for name, content in original]
    assert signing.verify(rewritten(signed, renamed), with_key(keys, "ours")).verified


def test_a_directory_entry_makes_the_package_unverifiable(keys, signed):
    buffer = io.BytesIO(signed)
    with zipfile.ZipFile(buffer, "a") as archive:
        archive.writestr(zipfile.ZipInfo("tools/"), b"")
    result = signing.verify(buffer.getvalue(), with_key(keys, "ours"))
    assert not result.verified and "directory" in result.reason
    # our signer drops the directory entry and signs the files
    resigned = signing.sign(buffer.getvalue(), signing.read_private_key(keys["ours"].private))
    assert signing.verify(resigned, with_key(keys, "ours")).verified
    assert "tools/" not in [name for name, _ in entries(resigned)]


def test_re_signing_replaces_the_verification_entry(keys, signed):
    again = signing.sign(signed, signing.read_private_key(keys["other"].private), "partner")
    names = [name for name, _ in entries(again)]
    assert names.count(VERIFICATION_FILE) == 1 and names[-1] == VERIFICATION_FILE
    result = signing.verify(again, with_key(keys, "ours") + with_key(keys, "other"))
    assert result.verified and result.key == "other" and result.category == "partner"
    assert not signing.verify(again, with_key(keys, "ours")).verified


def go_re_signed(package: bytes, key: rsa.RSAPrivateKey, category: str) -> bytes:
    """What Go's `dify signature sign` makes of a signed package: it copies the old verification entry and appends
    a second one, hashing the new bytes for it."""
    old = [(name, content) for name, content in entries(package)]
    new = json.dumps({"authorized_category": category}, separators=(",", ":")).encode()
    data = signing.signed_bytes([content for _, content in old] + [new], 1800000000)
    note = json.dumps(
        {
            "signature": base64.b64encode(key.sign(data, padding.PKCS1v15(), hashes.SHA256())).decode(),
            "time": 1800000000,
        },
        separators=(",", ":"),
    ).encode()
    return signing.write_package(old + [(VERIFICATION_FILE, new)], note)


@pytest.mark.filterwarnings("ignore:Duplicate name")
def test_a_second_verification_entry_is_read_as_the_daemon_reads_it(keys, signed):
    key = signing.read_private_key(keys["ours"].private)
    # the daemon opens a duplicated name as its first entry: the same category still verifies (and reports the
    # first entry's category), another category does not
    same = signing.verify(go_re_signed(signed, key, "community"), with_key(keys, "ours"))
    assert same.verified and same.category == "community"
    assert not signing.verify(go_re_signed(signed, key, "partner"), with_key(keys, "ours")).verified


def test_an_unknown_category_is_refused(keys):
    with pytest.raises(SigningError, match="category 'official'"):
        signing.sign(UNSIGNED.read_bytes(), signing.read_private_key(keys["ours"].private), "official")


def test_a_tampered_comment_does_not_verify(keys, signed):
    fields = json.loads(comment(signed))
    later = signing.write_package(entries(signed), json.dumps({**fields, "time": fields["time"] + 1}).encode())
    assert not signing.verify(later, with_key(keys, "ours")).verified
    garbled = signing.write_package(entries(signed), json.dumps({**fields, "signature": "@@"}).encode())
    assert "not base64" in signing.verify(garbled, with_key(keys, "ours")).reason
    with pytest.raises(ArchiveError, match="not a zip"):  # unreadable: no verdict on a signature, one error line
        signing.verify(b"PK but not really", with_key(keys, "ours"))


# --- key files in the wrong format -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def wrong_formats(keys, tmp_path_factory):
    folder = tmp_path_factory.mktemp("wrong")
    key = signing.read_private_key(keys["ours"].private)
    files = {
        "pkcs8_private": key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
        "spki_public": key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
        "two_blocks": keys["ours"].private.read_bytes() + keys["other"].private.read_bytes(),
        "trailing_text": keys["ours"].private.read_bytes() + b"# my key\n",
        "der": key.private_bytes(
            serialization.Encoding.DER, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        ),
        "public_as_private": keys["ours"].public.read_bytes(),
        "encrypted": key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.BestAvailableEncryption(b"secret"),
        ),
    }
    paths = {}
    for name, data in files.items():
        paths[name] = folder / f"{name}.pem"
        paths[name].write_bytes(data)
    return paths


@pytest.mark.parametrize(
    "name, reader, expected",
    [
        ("pkcs8_private", "read_private_key", "'PRIVATE KEY' PEM block, the daemon reads only 'RSA PRIVATE KEY'"),
        ("spki_public", "read_public_key", "'PUBLIC KEY' PEM block, the daemon reads only 'RSA PUBLIC KEY'"),
        ("two_blocks", "read_private_key", "data after the 'RSA PRIVATE KEY' block"),
        ("trailing_text", "read_private_key", "data after the 'RSA PRIVATE KEY' block"),
        ("der", "read_private_key", "not a PEM file"),
        ("public_as_private", "read_private_key", "'RSA PUBLIC KEY' PEM block"),
        ("encrypted", "read_private_key", "encrypted"),
    ],
)
def test_a_key_in_the_wrong_format_is_a_one_line_error(wrong_formats, name, reader, expected):
    with pytest.raises(SigningError) as error:
        getattr(signing, reader)(wrong_formats[name])
    message = str(error.value)
    assert expected in message and "\n" not in message and message.startswith(str(wrong_formats[name]))


def test_a_missing_key_file_is_a_one_line_error(tmp_path):
    with pytest.raises(SigningError, match=r"nothing\.public\.pem: cannot read \(No such file"):
        signing.verify_file(UNSIGNED, [tmp_path / "nothing.public.pem"])


def test_keygen_leaves_no_private_key_behind_a_dangling_public_link(tmp_path):
    (tmp_path / "k.public.pem").symlink_to(tmp_path / "elsewhere" / "nothing.pem")
    with pytest.raises(SigningError, match="k.public.pem: a symlink"):
        signing.generate_key_pair(tmp_path / "k", bits=1024)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.public.pem"]  # no orphaned private key
    assert not (tmp_path / "elsewhere").exists()


def test_keygen_removes_the_private_key_when_the_public_one_cannot_be_written(tmp_path, monkeypatch):
    real = signing._write_new

    def failing(path, data, mode):
        if path.name.endswith(".public.pem"):
            raise SigningError(f"{path}: cannot create (Permission denied)")
        real(path, data, mode)

    monkeypatch.setattr(signing, "_write_new", failing)
    with pytest.raises(SigningError, match="Permission denied"):
        signing.generate_key_pair(tmp_path / "k", bits=1024)
    assert list(tmp_path.iterdir()) == []
