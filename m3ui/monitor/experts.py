"""The expert panel's source: drive the engine's expert recorder, read its dumps, keep a rolling window.

Only when /server_info shows a recorder mode: on a server started without one, the recorder endpoints
raise in the scheduler and kill the whole server (ENGINE_CONTRACT.md §6), so without a mode this source
never calls them and explains how to turn the recorder on instead. Nor without a local view of the engine's
dump folder (`MonitorTarget.recorder_dir` None: an attached engine): dumps nobody reads would pile up there.

With mode `stat`, recording is started once per engine (a new engine, or the same one after it was
unreachable), then every poll dumps, reads the files that appeared in the recorder folder (never those
that were there before recording started), deletes what it read, and adds one slice to the window.
`checkpoint()` dumps on demand, so a chat answer can be bracketed by two dumps and its hit rate read
with `hit_rate_between()`. A dump pauses the engine's scheduler, so checkpoints are shared: one asked for while
a dump is due or in flight waits for the next dump that begins after it was asked, and checkpoints' dumps begin at
least `checkpoint_gap_s` apart, so N answers that end together cost one dump, not N in a row (a lone answer's
dump, the periodic ones aside, begins at once).

No dump is left behind for good (a real M3 dump is ~40 MB): one that lands after its dump call timed out is read
by the next poll, and one that nobody will read (it was there before recording started: a dump that timed out
before the engine went away and came back, or that was in flight when the app died) is deleted once it is
`stale_after_s` old, at most SWEEP_FILES a poll. A folder the monitor stops watching is swept the same way.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import httpx
import numpy as np

from launch.settings import FIELD_BY_NAME
from launch.sim.recorder import DEFAULT_RECORDER_DIR, RECORDER_DIR_ENV
from m3ui.experts.dump_reader import DumpReduction, read_dump
from m3ui.experts.heatmap import png_data_url, render_heatmap
from m3ui.experts.hit_rate import ExpertRank, HitRate, coldest_gpu_experts, hottest_cpu_experts
from m3ui.experts.recorder_files import DumpFile, DumpPair, list_dump_files, pair_dumps
from m3ui.experts.window import ExpertSlice, ExpertWindow, HitRatePoint
from m3ui.monitor.engine import EngineSnapshot
from m3ui.monitor.engine_parse import ServerInfo
from m3ui.monitor.http import EngineHttp
from m3ui.monitor.target import MonitorTarget
from torchzip.reader import TorchFileError

ExpertStatus = Literal["pending", "no_engine", "disabled", "unsupported_mode", "no_local_folder", "recording",
                       "error"]
ResidencySource = Literal["recorded", "assumed", "unknown"]

SUPPORTED_MODE = "stat"  # per_pass / per_token dump per-pass record lists, not counts
_UNREADABLE_AFTER_S = 10.0  # a dump file still unreadable this long after it was written is damaged
_MISSING_DUMPS_BEFORE_ERROR = 2
STALE_AFTER_S = 60.0  # a dump nobody read this long after it was written is deleted
SWEEP_FILES = 32  # dumps deleted at most per poll (or per folder left), so a crowded folder never stalls a poll


def _flag(name: str) -> str:
    return FIELD_BY_NAME[name].spec.flag


def enable_hint(dump_every_s: float) -> str:
    """How to start an engine whose expert routing this panel can show."""
    return (
        f"Start the engine with {_flag('expert_distribution_recorder_mode')} {SUPPORTED_MODE} and "
        f"{_flag('record_kt_gpu_expert_distribution')} (which experts sit on the GPU), with an "
        f"{_flag('expert_distribution_recorder_buffer_size')} larger than the forward passes it runs in "
        f"{dump_every_s:g} s (the time between two dumps; the default of 1000 suits decoding). The engine writes "
        f"its dumps to ${RECORDER_DIR_ENV} on its own host: for a remote engine that folder must be mounted "
        "here and given to the monitor."
    )


@dataclass(frozen=True, eq=False)
class ExpertSnapshot:
    time: float
    status: ExpertStatus
    reason: str | None = None  # why not "recording", or how to turn the recorder on
    window_s: float = 0.0
    activations: int = 0  # routed expert activations in the window
    hit_rate: HitRate | None = None  # None: no activations yet, or GPU residency unknown
    layer_hit_rates: tuple[float | None, ...] = ()  # per layer; None where the layer routed nothing
    residency_source: ResidencySource = "unknown"
    hottest_cpu: tuple[ExpertRank, ...] = ()  # the best candidates for the GPU
    coldest_gpu: tuple[ExpertRank, ...] = ()  # VRAM spent on little work
    last_dump: float | None = None
    warnings: tuple[str, ...] = ()
    counts: np.ndarray | None = field(default=None, repr=False)  # int64 [layers, experts] over the window
    residency: np.ndarray | None = field(default=None, repr=False)  # bool [layers, experts], latest known
    segments: tuple[np.ndarray, ...] = field(default=(), repr=False)  # each dump's counts (placement planner)

    @functools.cached_property
    def heatmap_png(self) -> bytes | None:
        """Layers x experts, GPU-resident experts marked; rendered once per snapshot, on first use (no
        cost while nobody watches the panel)."""
        return render_heatmap(self.counts, self.residency) if self.counts is not None else None

    @property
    def heatmap_data_url(self) -> str | None:
        png = self.heatmap_png
        return png_data_url(png) if png is not None else None


class ExpertSource:
    """Thread-safe: the sampler's engine thread polls it, chat threads take checkpoints."""

    def __init__(self, window_s: float, dump_every_s: float, timeout_s: float = 10.0, top_n: int = 10,
                 checkpoint_gap_s: float = 0.0, stale_after_s: float = STALE_AFTER_S) -> None:
        """`timeout_s` bounds each recorder call: a dump waits for the scheduler to finish its current batch
        and then saves ~40 MB, and one that times out here still writes its files for the next poll.
        `checkpoint_gap_s`: the least time between the starts of two checkpoints' dumps. `stale_after_s`: how old
        a dump nobody will read gets before it is deleted."""
        self._window = ExpertWindow(window_s)
        self._window_s = window_s
        self._dump_every_s = dump_every_s
        self._timeout_s = timeout_s
        self._top_n = top_n
        self._lock = threading.RLock()
        self._http: EngineHttp | None = None
        self._target = MonitorTarget()
        self._info: ServerInfo | None = None
        self._latest = ExpertSnapshot(time.time(), "pending", "waiting for the first engine sample")
        self._points: tuple[HitRatePoint, ...] = ()  # published with _latest
        self._checkpoint_gap_s = checkpoint_gap_s
        self._checkpoints = threading.Condition()  # guards the two below; never held during a dump
        self._checkpointing = False  # a checkpoint's dump is due or in flight
        self._stale_after_s = stale_after_s
        self._reset_recording()

    def _reset_recording(self) -> None:
        self._started_epoch: int | None = None  # the engine epoch recording was started in
        self._ignored: frozenset[str] = frozenset()  # files present before recording started: not ours
        self._consumed: set[str] = set()  # read, but could not be deleted
        self._damaged: dict[str, str] = {}
        self._boundary = 0.0  # end of the last slice
        self._last_dump: tuple[float, float | None] = (0.0, None)  # when the last dump began; its new boundary
        self._checkpoint_began = 0.0  # when the last checkpoint's dump began (the gap runs from there)
        self._missing_dumps = 0
        self._warnings: tuple[str, ...] = ()
        self._residency_source: ResidencySource = "unknown"
        self._window.clear()
        self._points = ()

    @property
    def folder(self) -> Path:
        assert self._target.recorder_dir is not None  # poll() never drives the recorder without one
        return self._target.recorder_dir

    def set_target(self, target: MonitorTarget) -> None:
        with self._lock:
            self.close()
            left = self._target.recorder_dir
            if left is not None and left != target.recorder_dir:  # nobody reads what lands there any more
                _delete_dumps(list_dump_files(left)[:SWEEP_FILES])
            self._target = target
            self._reset_recording()
            if target.engine_url:
                with contextlib.suppress(httpx.InvalidURL):  # the engine source reports the bad URL
                    self._http = EngineHttp(target.engine_url, target.api_key, self._timeout_s, self._timeout_s)

    def close(self) -> None:
        with self._lock:
            if self._http is not None:
                self._http.close()
                self._http = None

    def latest(self) -> ExpertSnapshot:
        return self._latest  # published whole: readers never wait for a dump in progress

    def points(self) -> tuple[HitRatePoint, ...]:
        return self._points

    def hit_rate_between(self, t0: float, t1: float) -> HitRate | None:
        """GPU hit rate of everything the engine routed between two checkpoints (or two times)."""
        with self._lock:
            return self._window.between(t0, t1)

    def checkpoint(self, after: float | None = None) -> float | None:
        """The boundary of a dump that began after `after` (a time.time() value; default now): it separates
        what the engine routed before from what came after. None: the recorder is not running, or the dump
        produced no file. Callers that arrive together share one dump (see the module's docstring)."""
        after = time.time() if after is None else after
        if self._started_epoch is None:
            return None
        with self._checkpoints:
            while self._last_dump[0] < after and self._checkpointing:
                self._checkpoints.wait()
            if self._last_dump[0] >= after:
                return self._last_dump[1]
            self._checkpointing = True
        try:
            with self._checkpoints:
                gap_ends = self._checkpoint_began + self._checkpoint_gap_s
                while (left := gap_ends - time.time()) > 0:  # callers arriving meanwhile join this dump
                    self._checkpoints.wait(left)
            with self._lock:
                if self._last_dump[0] < after:  # else a poll dumped while this waited for the lock
                    self._checkpoint_dump()
                    with self._checkpoints:
                        self._checkpoint_began = self._last_dump[0]
                return self._last_dump[1] if self._last_dump[0] >= after else None
        finally:
            with self._checkpoints:
                self._checkpointing = False
                self._checkpoints.notify_all()

    def _checkpoint_dump(self) -> None:
        if self._started_epoch is None or self._http is None:
            return
        if self._dump_and_read():
            self._publish("recording")
        else:
            self._publish(self._latest.status, self._latest.reason)

    def poll(self, engine: EngineSnapshot, epoch: int) -> ExpertSnapshot:
        """One step: start recording on a new engine, else dump and read. Never raises."""
        with self._lock:
            if self._http is None or not engine.reachable or engine.info is None:
                self._started_epoch = None
                return self._set("no_engine", engine.reason or "waiting for the engine to answer")
            self._info = info = engine.info
            if info.recorder_mode is None:
                self._started_epoch = None
                return self._set("disabled", "The engine runs without an expert recorder. " +
                                 enable_hint(self._dump_every_s))
            if info.recorder_mode != SUPPORTED_MODE:
                self._started_epoch = None
                return self._set("unsupported_mode", f"Recorder mode {info.recorder_mode!r} dumps per-pass "
                                 "records this panel does not read. " + enable_hint(self._dump_every_s))
            if self._target.recorder_dir is None:
                self._started_epoch = None
                return self._set("no_local_folder", "The engine records expert routing, but it writes its dumps to "
                                 f"${RECORDER_DIR_ENV} on its own host, and this monitor has no local view of that "
                                 "folder: expert statistics need the dump folder to be local (launch the engine "
                                 "from m3ui's admin panel).")
            if self._started_epoch != epoch:
                problem = self._start_recording()
                if problem:
                    return self._set("error", problem)
                self._started_epoch = epoch
            elif self._missing_dumps >= _MISSING_DUMPS_BEFORE_ERROR:
                # Dumps nobody can read would pile up on the engine's host: stop asking for them, and only
                # look for late files until the engine restarts (a new epoch starts recording afresh).
                added, self._warnings = self._read_new_dumps()
                if not added:
                    return self._publish("error", f"The engine dumped, but no dump file appeared in {self.folder}."
                                         f" It writes them to ${RECORDER_DIR_ENV} (default {DEFAULT_RECORDER_DIR})"
                                         " on its own host: give the monitor that folder (mounted here for a "
                                         "remote engine). Dumping is paused until the engine restarts.")
                self._missing_dumps = 0
            else:
                self._dump_and_read()
            self._sweep_stale()
            return self._publish("recording")

    def _set(self, status: ExpertStatus, reason: str) -> ExpertSnapshot:
        self._latest = ExpertSnapshot(time.time(), status, reason, self._window_s)
        return self._latest

    def _start_recording(self) -> str | None:
        assert self._http is not None
        self._reset_recording()
        self._ignored = frozenset(f.path.name for f in list_dump_files(self.folder))
        answer = self._http.post("/start_expert_distribution_record")
        if not answer.answered:
            return f"could not start the expert recorder: {answer.reason}"
        self._boundary = time.time()
        return None

    def _dump_and_read(self) -> int:
        """Dump, then read every new dump in the folder; the number of slices added."""
        assert self._http is not None
        began = time.time()
        answer = self._http.post("/dump_expert_distribution_record")
        warnings = () if answer.answered else (f"the last dump failed: {answer.reason}",)
        added, read_warnings = self._read_new_dumps()
        self._warnings = warnings + read_warnings
        if answer.answered:
            self._missing_dumps = 0 if added else self._missing_dumps + 1
        with self._checkpoints:
            self._last_dump = (began, self._boundary if added else None)
        return added

    def _read_new_dumps(self) -> tuple[int, tuple[str, ...]]:
        skip = self._ignored | self._consumed | self._damaged.keys()
        pairs = pair_dumps(tuple(f for f in list_dump_files(self.folder) if f.path.name not in skip))
        added, warnings = 0, []
        for pair in pairs:
            try:
                reduction = read_dump(pair, self._target.assumed_gpu_mask)
            except TorchFileError as error:
                if _age_s(pair.stat.path) > _UNREADABLE_AFTER_S:
                    self._damaged[pair.stat.path.name] = str(error)
                continue  # a young file may still be being written by another client's dump
            except OSError:
                continue  # removed meanwhile
            warnings += self._add(pair, reduction)
            warnings += self._delete(pair)
            added += 1
        warnings += [f"unreadable dump left in place: {why}" for why in self._damaged.values()]
        return added, tuple(dict.fromkeys(warnings))

    def _sweep_stale(self) -> None:
        """Delete the dumps from before recording started once they are stale: nobody will read them."""
        stale = [f for f in list_dump_files(self.folder)
                 if f.path.name in self._ignored and _age_s(f.path) > self._stale_after_s][:SWEEP_FILES]
        self._ignored -= {f.path.name for f in _delete_dumps(stale)}

    def _add(self, pair: DumpPair, reduction: DumpReduction) -> list[str]:
        """Add the dump's slice to the window; what looks wrong with it."""
        end = max(pair.stat.time, self._boundary)  # file times are the engine's clock; keep slices ordered
        self._window.add(ExpertSlice(self._boundary, end, reduction.counts, reduction.gpu_hits, reduction.passes),
                         reduction.residency)
        self._boundary = end
        if reduction.residency is not None:
            self._residency_source = "recorded" if reduction.residency_recorded else "assumed"
        ring = self._info is None or self._info.recorder_buffer_size != -1
        if ring and reduction.passes and reduction.passes >= reduction.buffer_rows:
            return [f"the recorder's ring of {reduction.buffer_rows} forward passes filled up between two dumps, "
                    f"so older passes were lost: raise {_flag('expert_distribution_recorder_buffer_size')} or "
                    "dump more often"]
        return []

    def _delete(self, pair: DumpPair) -> list[str]:
        problems = []
        for file in (pair.stat, pair.mask):
            if file is None:
                continue
            try:
                file.path.unlink(missing_ok=True)
            except OSError as error:
                self._consumed.add(file.path.name)
                problems.append(f"cannot delete read dumps in {self.folder} ({error.strerror}): they will pile up")
        return problems

    def _publish(self, status: ExpertStatus, reason: str | None = None) -> ExpertSnapshot:
        counts, residency = self._window.counts, self._window.residency
        warnings = self._warnings
        if self._residency_source == "unknown" and self._window.activations:
            warnings += ("which experts sit on the GPU is unknown: start the engine with "
                         f"{_flag('record_kt_gpu_expert_distribution')}",)
        ranked = counts is not None and residency is not None
        self._latest = ExpertSnapshot(
            time=time.time(), status=status, reason=reason, window_s=self._window_s,
            activations=self._window.activations, hit_rate=self._window.hit_rate(),
            layer_hit_rates=self._window.layer_hit_rates(), residency_source=self._residency_source,
            hottest_cpu=hottest_cpu_experts(counts, residency, self._top_n) if ranked else (),  # type: ignore[arg-type]  # ranked: neither is None
            coldest_gpu=coldest_gpu_experts(counts, residency, self._top_n) if ranked else (),  # type: ignore[arg-type]  # ranked: neither is None
            last_dump=self._boundary or None, warnings=warnings, counts=counts, residency=residency,
            segments=self._window.segments(),
        )
        self._points = self._window.points()
        return self._latest


def _delete_dumps(files: list[DumpFile] | tuple[DumpFile, ...]) -> list[DumpFile]:
    """Delete `files`; those that are gone now (deleted here, or meanwhile)."""
    gone = []
    for file in files:
        with contextlib.suppress(OSError):
            file.path.unlink(missing_ok=True)
            gone.append(file)
    return gone


def _age_s(path: Path) -> float:
    with contextlib.suppress(OSError):
        return time.time() - os.stat(path).st_mtime
    return 0.0
