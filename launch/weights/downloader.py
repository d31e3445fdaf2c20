"""One download in a background thread: plan, check the files already there, fetch the rest a few at a time,
verify, write the marker. Poll `progress()`; `cancel()` stops the transfers within about a second."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TypeVar

from launch.weights.errors import DestinationError, DownloadCancelled, WeightsError
from launch.weights.fetcher import FileFetcher
from launch.weights.folder import DownloadFolder
from launch.weights.hub import hub_endpoint
from launch.weights.listing import RepoFile
from launch.weights.plan import DownloadPlan, DownloadRequest, free_bytes_at, plan_download
from launch.weights.progress import DownloadProgress, DownloadState, RateMeter, eta_seconds
from launch.weights.transfer import Cancellation
from launch.weights.units import format_bytes

log = logging.getLogger(__name__)
T = TypeVar("T")


class Downloader:
    def __init__(self, request: DownloadRequest, *, free_space: Callable[[Path], int] = free_bytes_at) -> None:
        self.request = request
        self._free_space = free_space
        self._cancel = Cancellation()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._state: DownloadState = "planning"
        self._message = "not started"
        self._plan: DownloadPlan | None = None
        self._verified_bytes = 0  # files done
        self._partial: dict[str, int] = {}  # bytes on disk of files not done yet
        self._current: set[str] = set()
        self._files_done = 0
        self._received = 0
        self._meter = RateMeter()

    @property
    def plan(self) -> DownloadPlan | None:
        """The plan the run works from, once the listing has come back."""
        return self._plan

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("this download was already started; create a new Downloader to run it again")
        self._set("planning", f"asking {hub_endpoint(self.request.endpoint)} for {self.request.repo_id}")
        self._thread = threading.Thread(target=self._run, name="weights-download", daemon=True)
        self._thread.start()

    def cancel(self) -> None:
        self._cancel.cancel()

    def wait(self, timeout: float | None = None) -> DownloadProgress:
        if self._thread is not None:
            self._thread.join(timeout)
        return self.progress()

    def progress(self) -> DownloadProgress:
        with self._lock:
            now = time.monotonic()
            moving = self._state == "downloading"
            if moving:
                self._meter.add(now, self._received)
            rate = self._meter.rate(now) if moving else 0.0
            done = self._verified_bytes + sum(self._partial.values())
            total = self._plan.total_bytes if self._plan else 0
            return DownloadProgress(
                state=self._state, bytes_done=done, bytes_total=total, rate_bps=rate,
                eta_s=eta_seconds(total - done, rate) if moving else None,
                current_files=tuple(sorted(self._current)), files_done=self._files_done,
                files_total=len(self._plan.files) if self._plan else 0, message=self._message)

    def _set(self, state: DownloadState, message: str) -> None:
        with self._lock:
            self._state, self._message = state, message
            if state in ("done", "failed", "cancelled"):
                self._current.clear()

    def _run(self) -> None:
        try:
            self._execute()
        except DownloadCancelled as err:
            self._set("cancelled", str(err))
        except WeightsError as err:
            self._set("failed", str(err))
        except OSError as err:  # the disk's side: full, read-only, permissions
            self._set("failed", f"cannot write the download: {err}; the partial files are kept, fix this and "
                                "start again to resume")
        except Exception as err:  # a bug or an OS error: still a message; the traceback goes to the log
            log.exception("weights download failed")
            self._set("failed", f"unexpected error: {type(err).__name__}: {err}")

    def _execute(self) -> None:
        self._cancel.check()
        plan = plan_download(self.request, free_space=self._free_space)
        with self._lock:
            self._plan = plan
            self._verified_bytes = plan.verified_bytes
            self._files_done = sum(p.state == "verified" for p in plan.files)
            self._partial = {p.file.name: p.bytes_on_disk for p in plan.files if p.state == "partial"}
        if plan.refusal:
            raise DestinationError(plan.refusal)
        self._cancel.check()
        folder = DownloadFolder(self.request.dest_dir)
        with folder.exclusive():
            folder.prepare(plan.listing)
            fetcher = FileFetcher(folder, plan.listing, hub_endpoint(self.request.endpoint), self.request.token,
                                  self._cancel, self.request.retries)
            present = [p.file for p in plan.files if p.state == "present"]
            self._set("verifying", f"checking the hashes of {len(present)} files already in the folder")
            adopted = self._each(present, lambda f: self._adopt(fetcher, f))
            to_fetch = [p.file for p in plan.files if p.state in ("partial", "missing")]
            to_fetch += [f for f, ok in zip(present, adopted, strict=True) if not ok]
            self._set("downloading", f"downloading {len(to_fetch)} files "
                                     f"({format_bytes(sum(f.size for f in to_fetch))} at most)")
            self._each(to_fetch, lambda f: self._download(fetcher, f))
            self._set("verifying", "checking every file against the listing")
            folder.complete(plan.listing)
        self._set("done", f"complete and verified: {plan.listing.repo_id} @ {plan.listing.commit[:10]} "
                          f"in {self.request.dest_dir}")

    def _each(self, files: list[RepoFile], work: Callable[[RepoFile], T]) -> list[T]:
        """`work` on every file, `workers` at a time; the first failure stops the others and is raised."""
        if not files:
            return []
        with ThreadPoolExecutor(self.request.workers, thread_name_prefix="weights") as pool:
            futures = [pool.submit(work, f) for f in files]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            errors = [err for f in done if (err := f.exception()) is not None]
            if errors:
                self._cancel.cancel()  # stop the other transfers: their bytes stay for a resume
                pool.shutdown(wait=True, cancel_futures=True)
                raise next((e for e in errors if not isinstance(e, DownloadCancelled)), errors[0])
            return [f.result() for f in futures]

    def _adopt(self, fetcher: FileFetcher, file: RepoFile) -> bool:
        with self._lock:
            self._current.add(file.name)
        ok = fetcher.adopt(file)
        with self._lock:
            self._current.discard(file.name)
            if ok:
                self._verified_bytes += file.size
                self._files_done += 1
        return ok

    def _download(self, fetcher: FileFetcher, file: RepoFile) -> None:
        def on_bytes(on_disk: int, received: int) -> None:
            with self._lock:
                self._partial[file.name] = on_disk
                self._received += received
                if received:
                    self._meter.add(time.monotonic(), self._received)

        with self._lock:
            self._current.add(file.name)
        fetcher.download(file, on_bytes)
        with self._lock:
            self._current.discard(file.name)
            self._partial.pop(file.name, None)
            self._verified_bytes += file.size
            self._files_done += 1
