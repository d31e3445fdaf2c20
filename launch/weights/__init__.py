"""Model weights from the Hugging Face Hub: config.json first, then the whole repo, resumable and verified.

    fetch_config(repo_id, dest_dir)          config.json alone, hash-checked (sizing works before the download)
    plan_download(DownloadRequest(...))      listing, what the folder has, free space, refusal reason
    Downloader(request).start()              background download; .progress(), .cancel(), .wait()
    verify_folder(dest_dir)                  complete / incomplete (which files) / not an m3ui download

Failures are WeightsError subclasses whose text is the operator's message.
"""

from launch.weights.config_fetch import fetch_config
from launch.weights.downloader import Downloader
from launch.weights.errors import (
    CorruptDownload,
    DestinationError,
    DownloadCancelled,
    GatedRepo,
    HubError,
    HubOffline,
    HubUnreachable,
    RepoNotFound,
    RevisionNotFound,
    UnsafeFileName,
    WeightsError,
)
from launch.weights.listing import RepoFile, RepoListing, fetch_listing
from launch.weights.paths import MARKER_NAME
from launch.weights.plan import (
    DEFAULT_REPO_ID,
    DownloadPlan,
    DownloadRequest,
    PlannedFile,
    free_bytes_at,
    plan_download,
)
from launch.weights.progress import DownloadProgress, DownloadState
from launch.weights.verify import FileProblem, VerifyResult, verify_folder

__all__ = [
    "DEFAULT_REPO_ID", "MARKER_NAME", "CorruptDownload", "DestinationError", "DownloadCancelled", "DownloadPlan",
    "DownloadProgress", "DownloadRequest", "DownloadState", "Downloader", "FileProblem", "GatedRepo", "HubError",
    "HubOffline", "HubUnreachable", "PlannedFile", "RepoFile", "RepoListing", "RepoNotFound", "RevisionNotFound",
    "UnsafeFileName", "VerifyResult", "WeightsError", "fetch_config", "fetch_listing", "free_bytes_at",
    "plan_download", "verify_folder",
]
