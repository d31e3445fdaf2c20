"""The Hub's HTTP side, through huggingface_hub's own session, URL scheme, headers and error mapping.

Files are streamed from the same `/{repo}/resolve/{commit}/{name}` URLs `hf_hub_download` uses, with a
`Range` header to resume: huggingface_hub 1.33 keeps no partial file between calls (it downloads to a
per-process temporary name and deletes it on failure), so resuming a killed download is ours to do.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field

import httpx
from huggingface_hub import constants, hf_hub_url
from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

from launch.weights.errors import WeightsError, hub_error, offline_error

# A stalled transfer gives up after 30 s without a byte; the retries then resume it.
_TIMEOUT = httpx.Timeout(connect=10.0, read=30.0, write=10.0, pool=10.0)


def hub_endpoint(endpoint: str | None) -> str:
    """The explicit endpoint, else HF_ENDPOINT as set now, else huggingface_hub's default."""
    return (endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def ensure_online() -> None:
    """Raise HubOffline when huggingface_hub would refuse every request anyway."""
    if constants.is_offline_mode():
        raise offline_error()


def request_headers(token: str | None) -> dict[str, str]:
    """User agent and token as huggingface_hub sends them; identity encoding so sizes and ranges are raw bytes."""
    headers = build_hf_headers(token=token)
    headers["Accept-Encoding"] = "identity"
    return headers


def file_url(endpoint: str, repo_id: str, commit: str, name: str) -> str:
    return hf_hub_url(repo_id, name, revision=commit, endpoint=endpoint)


@contextmanager
def open_file_stream(url: str, headers: dict[str, str], offset: int) -> Iterator[httpx.Response]:
    """GET `url` from byte `offset` on, streaming; HTTP errors raise huggingface_hub's typed exceptions."""
    if offset:
        headers = {**headers, "Range": f"bytes={offset}-"}
    with get_session().stream("GET", url, headers=headers, timeout=_TIMEOUT) as response:
        if response.status_code >= 400:
            response.read()  # so the error carries the server's message
            hf_raise_for_status(response)
        yield response


def translated(err: Exception, endpoint: str, repo_id: str) -> Exception:
    """`err` as a WeightsError when it is a known Hub failure, else unchanged."""
    known: WeightsError | None = hub_error(err, endpoint, repo_id)
    return known if known is not None else err


@dataclass(frozen=True)
class FileSource:
    """Where a listing's files come from: the endpoint, the repo at its pinned commit, and request headers."""

    endpoint: str
    repo_id: str
    commit: str
    headers: dict[str, str] = field(repr=False)  # may carry the token

    def open(self, name: str, offset: int) -> AbstractContextManager[httpx.Response]:
        return open_file_stream(file_url(self.endpoint, self.repo_id, self.commit, name), self.headers, offset)

    def error(self, err: Exception) -> Exception:
        return translated(err, self.endpoint, self.repo_id)
