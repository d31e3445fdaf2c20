"""Who is calling the gateway: the person an API key belongs to (`Authorization: Bearer KEY` or Anthropic's
`x-api-key: KEY`), or the one key of `--gateway-key-file` on an app without accounts. Both checks take the same
time whatever the key is (ApiKeyStore.check, hmac.compare_digest)."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from m3ui.accounts.keys import ApiKeyStore

FILE_KEY_ID = "key-file"


@dataclass(frozen=True)
class Caller:
    user: str | None  # None: the --gateway-key-file key (nobody's quota)
    key_id: str


def presented_key(headers: dict[bytes, bytes]) -> str:
    """The key a request carries ("" when none)."""
    auth = headers.get(b"authorization", b"").decode("latin-1").strip()
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    return headers.get(b"x-api-key", b"").decode("latin-1").strip()


class Callers:
    def __init__(self, keys: ApiKeyStore | None, file_key: str | None) -> None:
        self.keys = keys
        self._file_key_hash = hashlib.sha256(file_key.encode()).digest() if file_key else None

    @property
    def gateway_on(self) -> bool:
        """On with a key file, or once accounts exist (keys belong to people)."""
        return self._file_key_hash is not None or (self.keys is not None and self.keys.accounts.count() > 0)

    def identify(self, key: str) -> Caller | None:
        if self._file_key_hash is not None and hmac.compare_digest(
                self._file_key_hash, hashlib.sha256(key.encode()).digest()):
            return Caller(None, FILE_KEY_ID)
        found = self.keys.check(key) if self.keys is not None and key else None
        return Caller(found.user, found.id) if found is not None else None
