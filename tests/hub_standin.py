"""A stand-in for the Hugging Face Hub on 127.0.0.1, serving one tiny model repo to huggingface_hub 1.33.

It answers exactly what our weights code and huggingface_hub ask:
  GET  /api/models/{repo}[/revision/{rev}][?blobs=true]   model_info (siblings with size, blobId, lfs)
  HEAD /{repo}/resolve/{rev}/{name}                        X-Repo-Commit, ETag, X-Linked-Etag/-Size, length
  GET  /{repo}/resolve/{rev}/{name}                        the bytes; `Range: bytes=N-` answers 206
Errors carry the Hub's X-Error-Code header (RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo), so
huggingface_hub raises its typed exceptions. Knobs make transfers slow, cut, stalled or corrupted, and every
request is logged with the bytes it was served.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
REPO_ID = "m3ui-test/tiny-m3"
COMMIT = hashlib.sha1(b"tiny-m3 commit", usedforsecurity=False).hexdigest()
_SEND_PIECE = 16 * 1024


@dataclass(frozen=True)
class HubFile:
    name: str
    data: bytes
    lfs: bool

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def pointer(self) -> bytes:
        return f"version https://git-lfs.github.com/spec/v1\noid sha256:{self.sha256}\nsize {len(self.data)}\n".encode()

    @property
    def git_oid(self) -> str:
        """The git blob id: of the LFS pointer for LFS files, of the content otherwise (as the Hub reports)."""
        blob = self.pointer if self.lfs else self.data
        return hashlib.sha1(b"blob %d\0" % len(blob) + blob, usedforsecurity=False).hexdigest()

    def sibling(self) -> dict:
        entry: dict = {"rfilename": self.name, "size": len(self.data), "blobId": self.git_oid}
        if self.lfs:
            entry["lfs"] = {"sha256": self.sha256, "size": len(self.data), "pointerSize": len(self.pointer)}
        return entry


def _safetensors(tensor_bytes: int, seed: int) -> bytes:
    """A valid safetensors file holding one uint8 tensor of random bytes."""
    header = json.dumps({"w": {"dtype": "U8", "shape": [tensor_bytes], "data_offsets": [0, tensor_bytes]}}).encode()
    return struct.pack("<Q", len(header)) + header + random.Random(seed).randbytes(tensor_bytes)


def tiny_m3_files() -> tuple[HubFile, ...]:
    """config.json (the bundled M3 one), a safetensors index and two shards: ~2.1 MB in all."""
    config = (ROOT / "assets" / "minimax-m3" / "config.json").read_bytes()
    shards = {"model-00001-of-00002.safetensors": _safetensors(1_500_000, 1),
              "model-00002-of-00002.safetensors": _safetensors(600_000, 2)}
    index = json.dumps({"metadata": {"total_size": 2_100_000},
                        "weight_map": {"w": "model-00001-of-00002.safetensors"}}).encode()
    return (HubFile(".gitattributes", b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n", False),
            HubFile("config.json", config, False),
            HubFile("model.safetensors.index.json", index, False),
            *(HubFile(name, data, True) for name, data in shards.items()))


@dataclass
class RequestRecord:
    """Logged before the response goes out, and `bytes_sent` counted before each write: a client that has
    seen the end of a response always finds it complete in the log."""

    method: str
    path: str
    range: str | None
    status: int
    bytes_sent: int = 0


@dataclass
class Knobs:
    """Behaviour of the next requests; change them between runs (file name -> absolute byte offset)."""

    throttle_bps: int | None = None  # every file transfer at about this rate
    cut_at: dict[str, int] = field(default_factory=dict)  # every GET drops the connection at that offset
    drop_once_at: dict[str, int] = field(default_factory=dict)  # the next GET drops there, later ones don't
    stall_at: dict[str, int] = field(default_factory=dict)  # GET stops sending there, keeping the connection
    corrupt: set[str] = field(default_factory=set)  # serve these files with one byte flipped
    ignore_range: bool = False  # answer 200 with the whole file even to a Range request (some CDNs do)
    gated: bool = False  # file downloads answer 403 GatedRepo (listing stays public, as on the Hub)
    extra_siblings: list[dict] = field(default_factory=list)  # added to the listing as-is (hostile names)


class StandInHub:
    def __init__(self, files: tuple[HubFile, ...] | None = None, repo_id: str = REPO_ID) -> None:
        self.repo_id = repo_id
        self.files = {f.name: f for f in (files or tiny_m3_files())}
        self.knobs = Knobs()
        self.requests: list[RequestRecord] = []
        self._log_lock = threading.Lock()
        self._stopping = threading.Event()
        self.connections: set[socket.socket] = set()  # open client connections, closed on exit
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="hub-standin",
                                        daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def total_bytes(self) -> int:
        return sum(len(f.data) for f in self.files.values())

    def __enter__(self) -> StandInHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()  # releases stalled transfers
        self._server.shutdown()
        self._server.server_close()
        with self._log_lock:
            connections = list(self.connections)
        for conn in connections:  # keep-alive handler threads would otherwise wait for the client forever
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)

    def log(self, record: RequestRecord) -> None:
        with self._log_lock:
            self.requests.append(record)

    def file_gets(self, name: str) -> list[RequestRecord]:
        with self._log_lock:
            return [r for r in self.requests if r.method == "GET" and r.path.endswith(f"/resolve/{COMMIT}/{name}")]

    def bytes_served(self, name: str) -> int:
        return sum(r.bytes_sent for r in self.file_gets(name))

    def listing(self) -> dict:
        return {"_id": "0" * 24, "id": self.repo_id, "modelId": self.repo_id, "sha": COMMIT, "private": False,
                "gated": "manual" if self.knobs.gated else False, "disabled": False, "tags": [],
                "siblings": [f.sibling() for f in self.files.values()] + list(self.knobs.extra_siblings)}

    def stalled_wait(self) -> None:
        self._stopping.wait(60)


def _handler_for(hub: StandInHub) -> type[BaseHTTPRequestHandler]:
    class Handler(_HubHandler):
        pass

    Handler.hub = hub
    return Handler


class _HubHandler(BaseHTTPRequestHandler):
    hub: StandInHub
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        with self.hub._log_lock:
            self.hub.connections.add(self.connection)

    def finish(self) -> None:
        with self.hub._log_lock:
            self.hub.connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass  # keep pytest output clean; the hub keeps its own log

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._route(head=False)

    def do_HEAD(self) -> None:  # noqa: N802
        self._route(head=True)

    def _route(self, head: bool) -> None:
        path = unquote(urlsplit(self.path).path)
        api, resolve = f"/api/models/{self.hub.repo_id}", f"/{self.hub.repo_id}/resolve/"
        if path == api or path.startswith(api + "/revision/"):
            rev = path.removeprefix(api + "/revision/") if path != api else "main"
            self._api(rev, head)
        elif path.startswith(resolve):
            rev, _, name = path.removeprefix(resolve).partition("/")
            self._resolve(rev, name, head)
        elif path.startswith("/api/models/") or "/resolve/" in path:
            self._error(401, "RepoNotFound", "Repository not found", head)
        else:
            self._error(404, None, "Not found", head)

    def _api(self, rev: str, head: bool) -> None:
        if rev not in ("main", COMMIT):
            return self._error(404, "RevisionNotFound", "Invalid rev id", head)
        body = json.dumps(self.hub.listing()).encode()
        self._send_head(200, {"Content-Type": "application/json", "Content-Length": str(len(body))})
        self._finish(head, body, 0)

    def _resolve(self, rev: str, name: str, head: bool) -> None:
        file = self.hub.files.get(name)
        if rev not in ("main", COMMIT):
            return self._error(404, "RevisionNotFound", "Invalid rev id", head)
        if file is None:
            return self._error(404, "EntryNotFound", "Entry not found", head)
        if self.hub.knobs.gated:
            return self._error(403, "GatedRepo", "Access to model is restricted", head)
        data = bytearray(file.data)
        if name in self.hub.knobs.corrupt:
            data[len(data) // 2] ^= 0xFF
        start = 0 if self.hub.knobs.ignore_range else _range_start(self.headers.get("Range"))
        if start >= len(data) > 0:
            return self._error(416, None, "Range Not Satisfiable", head)
        etag = file.sha256 if file.lfs else file.git_oid
        headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{etag}"', "Accept-Ranges": "bytes",
                   "Content-Type": "application/octet-stream", "Content-Length": str(len(data) - start)}
        if file.lfs:
            headers |= {"X-Linked-Etag": f'"{etag}"', "X-Linked-Size": str(len(data))}
        if start:
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        self._send_head(206 if start else 200, headers)
        self._finish(head, bytes(data), start, name)

    def _send_head(self, status: int, headers: dict[str, str]) -> None:
        self._record = RequestRecord(self.command, self.path, self.headers.get("Range"), status)
        self.hub.log(self._record)
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()

    def _error(self, status: int, code: str | None, message: str, head: bool) -> None:
        body = json.dumps({"error": message}).encode()
        headers = {"Content-Type": "application/json", "Content-Length": str(len(body)), "X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        self._send_head(status, headers)
        self._finish(head, body, 0)

    def _finish(self, head: bool, data: bytes, start: int, name: str | None = None) -> None:
        if not head:
            self._send_body(data, start, name)

    def _send_body(self, data: bytes, start: int, name: str | None) -> None:
        knobs, offset = self.hub.knobs, start
        cuts = (knobs.cut_at.get(name), knobs.drop_once_at.pop(name, None)) if name else ()
        stop = min([len(data)] + [at for at in cuts if at is not None and at >= start])
        stall = knobs.stall_at.get(name) if name else None
        try:
            while offset < stop:
                if stall is not None and offset >= stall:
                    self.hub.stalled_wait()
                    break
                end = min(offset + _SEND_PIECE, stop, stall if stall is not None else stop)
                self._record.bytes_sent += end - offset
                self.wfile.write(data[offset:end])
                if knobs.throttle_bps:
                    time.sleep((end - offset) / knobs.throttle_bps)
                offset = end
        except OSError:  # the client went away (cancel): that is its right
            pass
        if offset < len(data):
            self._drop_connection()

    def _drop_connection(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)


def _range_start(header: str | None) -> int:
    """The N of `bytes=N-` (the only form huggingface_hub and our code send)."""
    if not header or not header.startswith("bytes="):
        return 0
    return int(header.removeprefix("bytes=").split("-", 1)[0])
