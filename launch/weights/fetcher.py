"""Single files of a listing into the folder: adopt one already there when its hash matches, else download it."""

from __future__ import annotations

from launch.weights.errors import WeightsError
from launch.weights.folder import DownloadFolder
from launch.weights.hub import FileSource, request_headers
from launch.weights.listing import RepoFile, RepoListing
from launch.weights.transfer import BytesCallback, Cancellation, download_file, hashes_match


class FileFetcher:
    def __init__(self, folder: DownloadFolder, listing: RepoListing, endpoint: str, token: str | None,
                 cancel: Cancellation, retries: int) -> None:
        self.folder, self.cancel, self.retries = folder, cancel, retries
        self.source = FileSource(endpoint, listing.repo_id, listing.commit, request_headers(token))

    def adopt(self, file: RepoFile) -> bool:
        """True (and recorded as verified) when the file already at its place has the listing's hash."""
        if not hashes_match(file, self.folder.target(file), self.cancel):
            return False
        self.folder.record(file)
        return True

    def download(self, file: RepoFile, on_bytes: BytesCallback) -> None:
        """Fetch (or resume) the file, check its hash, move it to its place and record it."""
        part = self.folder.part_path(file)
        try:
            download_file(file, part, self.source, self.cancel, on_bytes, self.retries)
        except WeightsError:
            raise
        except Exception as err:
            raise self.source.error(err) from None
        self.folder.install(file, part)
