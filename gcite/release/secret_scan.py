"""The secret scan of a package's files: credential files by name and shape (a `.netrc`, a docker config with
`auths`, private keys), self-identifying secret shapes (PEM blocks, API key prefixes, JWTs), and secret-looking
values given to secret-named keys (the dify-marketplace-toolkit's `secrets` validator, with detect-secrets' entropy
floors). The Marketplace's checks (marketplace.py) report what it finds as their `secrets` rule."""

import json
import math
import re
from collections import Counter
from pathlib import PurePosixPath

MAX_SCANNED = 1024 * 1024  # the secret scanner reads text files up to 1 MiB
BINARY_SUFFIXES = {
    ".7z",
    ".avif",
    ".bmp",
    ".bz2",
    ".dylib",
    ".eot",
    ".exe",
    ".gif",
    ".gz",
    ".ico",
    ".jpeg",
    ".jpg",
    ".mov",
    ".mp3",
    ".mp4",
    ".otf",
    ".pdf",
    ".png",
    ".rar",
    ".so",
    ".tar",
    ".tgz",
    ".ttf",
    ".webm",
    ".webp",
    ".woff",
    ".woff2",
    ".xz",
    ".zip",
}
# toolkit/checks/secrets.py (self-identifying shapes are errors outright) plus any PEM block
SECRET_SHAPES = (
    ("a PEM private key block", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
    ("a PEM block", re.compile(r"-----BEGIN (?![A-Z ]*PRIVATE KEY)[A-Z0-9 ]+-----")),
    ("an OpenAI-style API key (sk-…)", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}\b")),
    ("a GitHub token", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{20,}\b")),
    ("a Slack token", re.compile(r"\bxox[baprs]-[A-Za-z0-9-]{10,}\b")),
    ("an AWS access key id", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    ("a JWT-shaped token (eyJ….….…)", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b")),
)
# credential files by name (lower-cased) and by shape: whatever else the scan finds in them, they are errors
CREDENTIAL_NAMES = {
    ".netrc": "a .netrc (host logins and passwords)",
    "_netrc": "a .netrc (host logins and passwords)",
    ".git-credentials": "git's stored credentials",
    ".pgpass": "a PostgreSQL password file",
    ".pypirc": "a PyPI upload configuration",
    ".npmrc": "an npm configuration (may hold a token)",
    ".dockercfg": "a docker registry credentials file",
    ".htpasswd": "an htpasswd file",
    "id_rsa": "an SSH private key",
    "id_dsa": "an SSH private key",
    "id_ecdsa": "an SSH private key",
    "id_ed25519": "an SSH private key",
    "credentials": "a cloud credentials file",
}
CREDENTIAL_SUFFIXES = {
    ".pem": "a PEM key or certificate file",
    ".key": "a key file",
    ".p12": "a PKCS#12 key store",
    ".pfx": "a PKCS#12 key store",
    ".ppk": "a PuTTY private key",
    ".jks": "a Java key store",
    ".keystore": "a key store",
}
# (PEM private key blocks are found line by line below, with their line number)
PRIVATE_KEY_SHAPE = re.compile(rb"-----BEGIN PGP PRIVATE KEY BLOCK-----|PuTTY-User-Key-File-\d")
NETRC_SHAPE = re.compile(rb"(?m)^\s*(?:machine\s+\S+|default)\b[^\n]*?(?:\n\s*)?\b(?:login|password)\s+\S+")
DOCKER_SECRETS = {"auth", "password", "identitytoken", "registrytoken"}
ASSIGNMENT = re.compile(r"""(?ix)
    (?P<key>[A-Z0-9_.-]*(?:api[_-]?key|access[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret|password
        |private[_-]?key|secret|token)[A-Z0-9_.-]*)
    \s*[:=]\s*
    (?P<value>"[^"]*"|'[^']*'|[^"',\s#}]+)""")
SECRET_KEYWORDS = (
    "api_key",
    "apikey",
    "access_key",
    "access_token",
    "auth_token",
    "client_secret",
    "password",
    "private_key",
    "secret",
    "token",
)
PLACEHOLDERS = {
    "",
    "changeme",
    "dummy",
    "example",
    "fake",
    "none",
    "null",
    "placeholder",
    "test",
    "todo",
    "xxx",
    "xxxx",
    "your-api-key",
    "your_api_key",
    "your-key",
    "your-secret",
    "your-token",
}
NOT_SECRETS = {"true", "false", "yes", "no", "on", "off"}
CODE_SUFFIXES = {
    ".c",
    ".cc",
    ".cpp",
    ".cs",
    ".go",
    ".h",
    ".hpp",
    ".java",
    ".js",
    ".jsx",
    ".kt",
    ".m",
    ".mjs",
    ".mm",
    ".php",
    ".py",
    ".pyi",
    ".rb",
    ".rs",
    ".scala",
    ".swift",
    ".ts",
    ".tsx",
}
HEX_VALUE = re.compile(r"^[0-9a-fA-F]+$")
TOKEN_VALUE = re.compile(r"^[A-Za-z0-9+/=_.-]+$")


def _mask(value: str) -> str:
    value = value.strip().strip("\"'")
    return "***" if len(value) <= 8 else f"{value[:4]}...{value[-4:]}"


def _placeholder(value: str) -> bool:
    value = value.lower()
    return (
        value in PLACEHOLDERS
        or (value.startswith("<") and value.endswith(">"))
        or value.startswith("${")
        or ("your" in value and any(w in value for w in ("key", "secret", "token", "password")))
        or set(value) <= {"x", "*", "-", "_"}
    )


def _entropy(value: str) -> float:
    return -sum(n / len(value) * math.log2(n / len(value)) for n in Counter(value).values()) if value else 0.0


def _secret_shaped(value: str) -> bool:
    """The toolkit's generic tier: a literal with the alphabet and entropy of key material (detect-secrets' floors)."""
    if len(value) < 12 or value.startswith(("http://", "https://", "./", "../", "/")):
        return False
    if HEX_VALUE.match(value):
        return _entropy(value) >= 3.0
    return bool(TOKEN_VALUE.match(value)) and _entropy(value) >= 4.5


def credential_file(name: str, content: bytes) -> str | None:
    """What credential file `name` is, by its name or its shape (a .netrc, a docker config with `auths`, a private
    key), or None. Such a file is an error wherever it is, whatever its size, text or not."""
    base = PurePosixPath(name).name
    lowered = base.lower()
    if lowered in CREDENTIAL_NAMES:
        return CREDENTIAL_NAMES[lowered]
    if PurePosixPath(lowered).suffix in CREDENTIAL_SUFFIXES:
        return CREDENTIAL_SUFFIXES[PurePosixPath(lowered).suffix]
    head = content[:MAX_SCANNED]
    if PRIVATE_KEY_SHAPE.search(head):
        return "a private key"
    if NETRC_SHAPE.search(head):
        return "a .netrc-shaped file (machine … login … password …)"
    if b'"auths"' in head and lowered.endswith(".json"):
        try:
            data = json.loads(head.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            data = None
        auths = data.get("auths") if isinstance(data, dict) else None
        if isinstance(auths, dict) and any(isinstance(v, dict) and (v.keys() & DOCKER_SECRETS) for v in auths.values()):
            return "a docker config.json holding registry credentials (auths)"
    return None


def scan(entries: dict[str, bytes]) -> list[tuple[str, bool]]:
    """(message, is an error) for each credential file, secret-shaped text and value worth a review in `entries`."""
    found = []
    for name, content in entries.items():
        what = credential_file(name, content)
        if what is not None:
            found.append((f"{name}: {what}: a credential file, never shipped", True))
            continue
        suffix = PurePosixPath(name).suffix.lower()
        if len(content) > MAX_SCANNED or suffix in BINARY_SUFFIXES or b"\0" in content[:4096]:
            continue
        for number, line in enumerate(content.decode("utf-8", "ignore").splitlines(), start=1):
            shaped = False
            for what, pattern in SECRET_SHAPES:
                match = pattern.search(line)
                if match:
                    shaped = True
                    found.append((f"{name}:{number}: {what}: {_mask(match.group(0))}", True))
            if shaped:
                continue
            for match in ASSIGNMENT.finditer(line):
                key, value = match.group("key"), match.group("value")
                if not any(word in key.lower() for word in SECRET_KEYWORDS):
                    continue
                quoted = len(value) >= 2 and value[0] in "\"'" and value[-1] == value[0]
                cleaned = value.strip().strip("\"'")
                if (
                    not cleaned
                    or _placeholder(cleaned)
                    or re.fullmatch(r"-?\d+(?:\.\d+)?", cleaned)
                    or cleaned.lower() in NOT_SECRETS
                    or (suffix in CODE_SUFFIXES and not quoted)
                ):
                    continue  # in code, an unquoted right-hand side is an expression reading a credential
                if _secret_shaped(cleaned):
                    found.append((f"{name}:{number}: a secret-looking value given to {key!r}: {_mask(cleaned)}", True))
                else:
                    found.append((f"{name}:{number}: review the value given to {key!r}", False))
    return found
