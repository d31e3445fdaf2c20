"""Model weights from the admin panel: config.json first (so the summary and sizing work before anything big
moves), then one background download at a time with progress, resume, a disk-space check and cancel."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from launch.weights import (
    Downloader,
    DownloadPlan,
    DownloadProgress,
    DownloadRequest,
    WeightsError,
    fetch_config,
    plan_download,
    verify_folder,
)
from m3ui.admin.console import Outcome


@dataclass(frozen=True)
class WeightsForm:
    """What the weights section's fields hold."""

    repo_id: str
    dest_dir: str
    revision: str = "main"
    endpoint: str = ""  # empty: HF_ENDPOINT, else huggingface.co
    token: str = ""

    def request(self) -> DownloadRequest:
        if not self.repo_id.strip() or "/" not in self.repo_id:
            raise ValueError("enter the model's repo id, e.g. MiniMaxAI/MiniMax-M3-MXFP8")
        if not self.dest_dir.strip():
            raise ValueError("choose the folder to download into")
        return DownloadRequest(self.repo_id.strip(), Path(self.dest_dir.strip()).expanduser(),
                               revision=self.revision.strip() or "main", endpoint=self.endpoint.strip() or None,
                               token=self.token.strip() or None)


class WeightsDesk:
    """The app's one weights download (shared by every admin session)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._downloader: Downloader | None = None

    def fetch_config(self, form: WeightsForm) -> tuple[Outcome, Path | None]:
        """config.json alone; the path of the folder to point the model path at, when it came."""
        try:
            request = form.request()
            path = fetch_config(request.repo_id, request.dest_dir, request.endpoint, request.token, request.revision)
        except (ValueError, OSError, WeightsError) as exc:
            return Outcome("error", f"config.json not fetched: {exc}"), None
        return Outcome("ok", f"config.json of {request.repo_id} is in {path.parent}: the model summary and "
                             "sizing now use it. Download the weights before starting the real engine."), path.parent

    def plan(self, form: WeightsForm) -> tuple[Outcome, DownloadPlan | None]:
        try:
            plan = plan_download(form.request())
        except (ValueError, OSError, WeightsError) as exc:
            return Outcome("error", f"Cannot plan the download: {exc}"), None
        if plan.refusal:
            return Outcome("error", f"The download would be refused: {plan.refusal}"), plan
        return Outcome("ok", plan.summary()), plan

    def start(self, form: WeightsForm) -> Outcome:
        try:
            request = form.request()
        except ValueError as exc:
            return Outcome("error", str(exc))
        with self._lock:
            if self._downloader is not None and not self._downloader.progress().finished:
                return Outcome("error", "A download is already running: cancel it first.")
            self._downloader = Downloader(request)
            self._downloader.start()
        return Outcome("ok", f"Downloading {request.repo_id} into {request.dest_dir}: files already there are "
                             "checked and kept, interrupted ones resume.")

    def cancel(self) -> Outcome:
        with self._lock:
            downloader = self._downloader
        if downloader is None or downloader.progress().finished:
            return Outcome("info", "No download is running.")
        downloader.cancel()
        return Outcome("ok", "Cancelling: the bytes on disk stay, so Download resumes where it stopped.")

    def progress(self) -> DownloadProgress | None:
        with self._lock:
            downloader = self._downloader
        return downloader.progress() if downloader is not None else None

    @staticmethod
    def verify(dest_dir: str) -> Outcome:
        if not dest_dir.strip():
            return Outcome("error", "Choose the folder to check.")
        result = verify_folder(Path(dest_dir.strip()).expanduser())
        return Outcome("ok" if result.complete else "warning", result.message.capitalize())
