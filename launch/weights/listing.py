"""A repo's file listing at one commit: names, sizes and the hash each file must have.

Taken from `HfApi.model_info(files_metadata=True)` (one call: `/api/models/{repo}/revision/{rev}?blobs=true`).
Every name is checked with `safe_repo_path` before the listing exists, so nothing downstream sees a hostile one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from huggingface_hub import HfApi

from launch.weights.errors import HubError
from launch.weights.hub import ensure_online, hub_endpoint, translated
from launch.weights.paths import safe_repo_path

_LISTING_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class RepoFile:
    """One file of the repo. LFS files are checked by sha256, regular ones by their git blob sha1."""

    name: str
    size: int
    sha256: str | None
    git_oid: str

    @property
    def digest(self) -> str:
        """The expected hash as 'algorithm:hex', the key for verification records and partial files."""
        return f"sha256:{self.sha256}" if self.sha256 else f"git-sha1:{self.git_oid}"

    def new_hasher(self) -> Any:
        """A hashlib object that, fed the file's bytes, yields the hex of `digest`."""
        if self.sha256:
            return hashlib.sha256()
        hasher = hashlib.sha1(usedforsecurity=False)
        hasher.update(b"blob %d\0" % self.size)  # git hashes a header before the content
        return hasher


@dataclass(frozen=True)
class RepoListing:
    repo_id: str
    revision: str
    commit: str
    files: tuple[RepoFile, ...]

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    def file(self, name: str) -> RepoFile | None:
        return next((f for f in self.files if f.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return {"repo_id": self.repo_id, "revision": self.revision, "commit": self.commit,
                "files": [{"name": f.name, "size": f.size, "sha256": f.sha256, "git_oid": f.git_oid}
                          for f in self.files]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RepoListing:
        """Read back `to_json`; names are re-checked since the file on disk could have been edited."""
        files = tuple(_repo_file(f["name"], f["size"], f.get("sha256"), f["git_oid"]) for f in data["files"])
        return cls(str(data["repo_id"]), str(data["revision"]), str(data["commit"]), files)


def _repo_file(name: str, size: Any, sha256: str | None, git_oid: Any) -> RepoFile:
    safe_repo_path(name)
    if not isinstance(size, int) or size < 0 or not git_oid:
        raise HubError(f"the listing gives no size or hash for {name!r}; cannot verify a download of it")
    return RepoFile(name, size, sha256, str(git_oid))


def fetch_listing(repo_id: str, revision: str = "main", endpoint: str | None = None,
                  token: str | None = None) -> RepoListing:
    """The listing of `repo_id` at `revision`, pinned to the commit the Hub resolved it to."""
    ensure_online()
    url = hub_endpoint(endpoint)
    try:
        info = HfApi(endpoint=url, token=token).model_info(
            repo_id, revision=revision, files_metadata=True, timeout=_LISTING_TIMEOUT_S)
    except Exception as err:
        raise translated(err, url, repo_id) from None
    if not info.sha or info.siblings is None:
        raise HubError(f"{url} gave no commit or file list for {repo_id}; is HF_ENDPOINT a Hugging Face Hub?")
    files = tuple(_repo_file(s.rfilename, s.lfs.size if s.lfs else s.size, s.lfs.sha256 if s.lfs else None, s.blob_id)
                  for s in info.siblings)
    return RepoListing(repo_id, revision, info.sha, files)
