"""What can go wrong when fetching weights, as exceptions whose text is the message the operator sees.

Hub and network failures arrive as huggingface_hub / httpx exceptions; `hub_error` turns the ones we know
into these, so the admin view shows a sentence that says what to change, never a traceback.
"""

from __future__ import annotations

import httpx
from huggingface_hub import errors as hf_errors


class WeightsError(Exception):
    """Base: str(error) is a complete, user-facing sentence."""


class HubUnreachable(WeightsError):
    """Connection refused, DNS failure, timeout: the Hub could not be asked at all."""


class HubOffline(HubUnreachable):
    """HF_HUB_OFFLINE is set, so huggingface_hub refuses to contact the Hub."""


class RepoNotFound(WeightsError):
    """No such repo, or a private one the token cannot see."""


class GatedRepo(WeightsError):
    """The repo exists but its terms must be accepted (and a token given) before files can be fetched."""


class RevisionNotFound(WeightsError):
    """The branch, tag or commit does not exist in the repo."""


class HubError(WeightsError):
    """The Hub answered, but not with what a download needs (HTTP error, listing without sizes, ...)."""


class UnsafeFileName(WeightsError):
    """A file name in the listing would write outside the destination or over our own bookkeeping."""


class DestinationError(WeightsError):
    """The destination folder cannot be used (not a folder, not writable, busy with another download)."""


class CorruptDownload(WeightsError):
    """A file's bytes do not match the size or hash the listing promises."""


class DownloadCancelled(WeightsError):
    """The operator cancelled; partial files stay for a resume."""


def offline_error() -> HubOffline:
    return HubOffline("HF_HUB_OFFLINE is set, so the Hub is not contacted; unset it (or set it to 0) to download")


def hub_error(err: Exception, endpoint: str, repo_id: str) -> WeightsError | None:
    """The WeightsError for a huggingface_hub / httpx failure, or None when it is not a known Hub failure."""
    if isinstance(err, hf_errors.OfflineModeIsEnabled):
        return offline_error()
    if isinstance(err, httpx.TransportError):
        return HubUnreachable(
            f"cannot reach the Hub at {endpoint} ({type(err).__name__}: {err or 'no answer'}); "
            "check the network, the proxy (HTTPS_PROXY) or HF_ENDPOINT, then try again"
        )
    if isinstance(err, hf_errors.GatedRepoError):
        return GatedRepo(
            f"{repo_id} is gated: accept its terms on the model page, then give a token (HF_TOKEN) of that account"
        )
    if isinstance(err, hf_errors.RepositoryNotFoundError):
        return RepoNotFound(f"{repo_id} was not found on {endpoint} (a private repo also needs a token)")
    if isinstance(err, hf_errors.RevisionNotFoundError):
        return RevisionNotFound(f"{repo_id} has no such revision (branch, tag or commit)")
    if isinstance(err, hf_errors.HFValidationError):
        return RepoNotFound(f"{repo_id!r} is not a valid repo id (expected owner/name)")
    if isinstance(err, hf_errors.HfHubHTTPError):
        detail = err.server_message or (str(err).strip().splitlines() or ["no details"])[0]
        return HubError(f"the Hub at {endpoint} answered HTTP {err.response.status_code} for {repo_id}: {detail}")
    return None
