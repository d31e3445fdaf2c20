"""One file from the Hub into its partial file: resumed with Range, hashed as it streams, stoppable at once."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx
from huggingface_hub.errors import HfHubHTTPError

from launch.weights.errors import CorruptDownload, DownloadCancelled, HubError, HubUnreachable
from launch.weights.hub import FileSource
from launch.weights.listing import RepoFile

_HASH_BLOCK = 8 << 20
_TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_MAX_BACKOFF_S = 30.0

# on_bytes(bytes of the file now on disk, bytes just received from the network)
BytesCallback = Callable[[int, int], None]


class Cancellation:
    """The cancel flag of one download. Setting it also shuts down the sockets of open transfers, so a read
    blocked on a stalled connection returns at once instead of after the read timeout."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._open: set[httpx.Response] = set()

    @property
    def is_set(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        self._event.set()
        with self._lock:
            responses = list(self._open)
        for response in responses:
            _shut_down(response)

    def check(self) -> None:
        if self._event.is_set():
            raise DownloadCancelled("download cancelled; the partial files are kept, start again to resume")

    def sleep(self, seconds: float) -> None:
        """Wait before a retry, waking at once on cancel."""
        self._event.wait(seconds)
        self.check()

    @contextmanager
    def watching(self, response: httpx.Response) -> Iterator[None]:
        with self._lock:
            self._open.add(response)
        try:
            if self._event.is_set():  # cancelled between opening the response and registering it
                _shut_down(response)
            yield
        finally:
            with self._lock:
                self._open.discard(response)


def _shut_down(response: httpx.Response) -> None:
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if isinstance(sock, socket.socket):
        with suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def feed_file(hasher: Any, path: Path, limit: int, cancel: Cancellation) -> int:
    """Hash the first `limit` bytes of `path` into `hasher`; returns how many there were."""
    done = 0
    with path.open("rb") as src:
        while done < limit and (block := src.read(min(_HASH_BLOCK, limit - done))):
            cancel.check()
            hasher.update(block)
            done += len(block)
    return done


def hashes_match(file: RepoFile, path: Path, cancel: Cancellation) -> bool:
    """Whether the whole file at `path` has the listing's size and hash."""
    hasher = file.new_hasher()
    return feed_file(hasher, path, file.size + 1, cancel) == file.size and hasher.hexdigest() == _expected_hex(file)


def _expected_hex(file: RepoFile) -> str:
    return file.digest.split(":", 1)[1]


class PartFile:
    """The partial download of one file: its bytes on disk and the running hash of exactly those bytes."""

    def __init__(self, path: Path, file: RepoFile, cancel: Cancellation) -> None:
        self.path, self.file = path, file
        self._hasher = file.new_hasher()
        self.size = path.stat().st_size if path.is_file() else 0
        if self.size > file.size:  # not this file's bytes after all: start over
            path.unlink()
            self.size = 0
        if self.size:
            feed_file(self._hasher, path, self.size, cancel)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._out = path.open("ab", buffering=0)  # unbuffered: what progress counts is what the OS holds

    def append(self, chunk: bytes) -> None:
        if self.size + len(chunk) > self.file.size:
            raise CorruptDownload(f"the Hub sent more than the listed {self.file.size} bytes of {self.file.name}")
        self._out.write(chunk)
        self._hasher.update(chunk)
        self.size += len(chunk)

    def restart(self) -> None:
        self._out.truncate(0)
        self._hasher = self.file.new_hasher()
        self.size = 0

    def finish(self) -> None:
        """Raise CorruptDownload (and drop the bytes) unless the content has the listing's hash."""
        self._out.close()
        got = self._hasher.hexdigest()
        if got != _expected_hex(self.file):
            self.path.unlink(missing_ok=True)
            raise CorruptDownload(f"{self.file.name} does not match the listing ({self.file.digest}, got {got}); "
                                  "its partial file was removed, start again to fetch it anew")

    def close(self) -> None:
        self._out.close()


def download_file(file: RepoFile, part_path: Path, source: FileSource, cancel: Cancellation,
                  on_bytes: BytesCallback, retries: int) -> None:
    """Bring `part_path` to the complete, hash-checked content of `file`, resuming what it already holds.

    Network failures are retried `retries` times in a row (any progress resets the count), each retry a
    Range request from the bytes on disk; a cancel raises DownloadCancelled and keeps those bytes.
    """
    part = PartFile(part_path, file, cancel)
    try:
        on_bytes(part.size, 0)
        failures = 0
        while part.size < file.size:
            before = part.size
            try:
                _stream_into(part, source, cancel, on_bytes)
            except (httpx.TransportError, HfHubHTTPError) as err:
                cancel.check()
                failures = 0 if part.size > before else failures + 1
                if not _transient(err) or failures > retries:
                    raise _gave_up(err, source, part) from None
                cancel.sleep(min(2.0 ** (failures - 1), _MAX_BACKOFF_S))
                continue
            if part.size == before:
                raise HubError(f"the Hub ended {file.name} at byte {before} of {file.size}; start again to resume")
        part.finish()
    finally:
        part.close()


def _gave_up(err: Exception, source: FileSource, part: PartFile) -> Exception:
    if isinstance(err, httpx.TransportError) and part.size:
        return HubUnreachable(
            f"lost the connection to {source.endpoint} while fetching {part.file.name} "
            f"({type(err).__name__}); {part.size} of {part.file.size} bytes are kept, start again to resume")
    return source.error(err)


def _transient(err: Exception) -> bool:
    return not isinstance(err, HfHubHTTPError) or err.response.status_code in _TRANSIENT_STATUS


def _stream_into(part: PartFile, source: FileSource, cancel: Cancellation, on_bytes: BytesCallback) -> None:
    cancel.check()
    offset = part.size
    with source.open(part.file.name, offset) as response, cancel.watching(response):
        if offset and response.status_code != 206:
            part.restart()  # the server ignored the Range: take the file from its start
            on_bytes(0, 0)
        elif offset and not response.headers.get("Content-Range", "").startswith(f"bytes {offset}-"):
            raise HubError(f"the Hub answered another byte range than asked for {part.file.name}")
        for chunk in response.iter_bytes():
            cancel.check()
            part.append(chunk)
            on_bytes(part.size, len(chunk))
