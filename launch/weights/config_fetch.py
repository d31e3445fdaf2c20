"""config.json alone, first: the summary and the sizing work from it before the weights move."""

from __future__ import annotations

from pathlib import Path

from launch.weights.errors import HubError
from launch.weights.fetcher import FileFetcher
from launch.weights.folder import DownloadFolder
from launch.weights.hub import hub_endpoint
from launch.weights.listing import fetch_listing
from launch.weights.paths import resolve_destination
from launch.weights.plan import DEFAULT_RETRIES, plan_files
from launch.weights.transfer import Cancellation

CONFIG_NAME = "config.json"


def fetch_config(repo_id: str, dest_dir: str | Path, endpoint: str | None = None, token: str | None = None,
                 revision: str = "main") -> Path:
    """`dest_dir/config.json` of `repo_id`, hash-checked against the listing; kept as-is when already verified.

    The folder becomes an (incomplete) m3ui download, so the full download later skips this file.
    Raises WeightsError (HubUnreachable, RepoNotFound, GatedRepo, ...) with the operator's message.
    """
    dest = resolve_destination(dest_dir)
    listing = fetch_listing(repo_id, revision, endpoint, token)
    config = listing.file(CONFIG_NAME)
    if config is None:
        raise HubError(f"{repo_id} has no {CONFIG_NAME}; is it a model repo?")
    folder = DownloadFolder(dest)
    planned = next(p for p in plan_files(folder, listing) if p.file is config)
    if planned.state == "verified":
        return folder.target(config)
    with folder.exclusive():
        folder.prepare(listing)
        fetcher = FileFetcher(folder, listing, hub_endpoint(endpoint), token, Cancellation(), DEFAULT_RETRIES)
        if planned.state != "present" or not fetcher.adopt(config):
            fetcher.download(config, lambda _on_disk, _received: None)
    return folder.target(config)
