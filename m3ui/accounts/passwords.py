"""Password hashing with scrypt (hashlib, memory-hard): no new dependency.

Parameters (stored with each hash, so they can be raised later without breaking old hashes): N = 2**15,
r = 8, p = 1 -> 32 MiB of memory and ~0.1 s per check on one core; 16-byte random salt; 32-byte key.
Encoded as `scrypt$N$r$p$salt_b64$key_b64`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from functools import cache

N, R, P = 2**15, 8, 1
KEY_BYTES = 32
SALT_BYTES = 16
MAXMEM = 64 * 1024 * 1024  # above 128 * N * r (32 MiB): hashlib's default limit would refuse these parameters
MAX_PASSWORD_CHARS = 1024  # scrypt hashes any length; bounding it keeps a flood of huge passwords cheap to refuse
MIN_PASSWORD_CHARS = 8


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _derive(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, maxmem=MAXMEM, dklen=KEY_BYTES)


def password_problem(password: str) -> str | None:
    """Why a new password is refused, or None."""
    if len(password) < MIN_PASSWORD_CHARS:
        return f"a password needs at least {MIN_PASSWORD_CHARS} characters"
    if len(password) > MAX_PASSWORD_CHARS:
        return f"a password may have at most {MAX_PASSWORD_CHARS} characters"
    return None


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(SALT_BYTES)
    return f"scrypt${N}${R}${P}${_b64(salt)}${_b64(_derive(password, salt, N, R, P))}"


def verify_password(password: str, encoded: str) -> bool:
    """Constant-time check; False for a malformed hash or an over-long password (never an exception)."""
    if len(password) > MAX_PASSWORD_CHARS:
        return False
    try:
        scheme, n, r, p, salt, key = encoded.split("$")
        if scheme != "scrypt":
            return False
        derived = _derive(password, base64.b64decode(salt), int(n), int(r), int(p))
        return hmac.compare_digest(derived, base64.b64decode(key))
    except (ValueError, TypeError):
        return False


@cache
def dummy_hash() -> str:
    """Checked for a name that has no account, so that a wrong name takes as long as a wrong password."""
    return hash_password(secrets.token_urlsafe(16))
