"""The GPU panel's source, through NVML: load, memory, power, temperature, PCIe traffic, engine memory.

Every reading is optional: NVML answers NOT_SUPPORTED for some on some boards (and inside some
containers), and a missing figure must not hide the others. PCIe traffic comes from NVML's cumulative
byte counters (cheap) rather than nvmlDeviceGetPcieThroughput, which blocks 20 ms per GPU and direction.
The engine's memory is the sum over NVML's compute processes that belong to the engine's process tree.
No NVIDIA GPU is a state ("no_gpu", with the reason from launch.hardware), not an error.

`python -m m3ui.monitor.gpu` prints two samples a second apart (the second has PCIe rates).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

import psutil
import pynvml

from launch.hardware import detect_gpus

GpuStatus = Literal["pending", "ok", "no_gpu", "error"]
_T = TypeVar("_T")
_PCIE_FIELDS = (pynvml.NVML_FI_DEV_PCIE_COUNT_TX_BYTES, pynvml.NVML_FI_DEV_PCIE_COUNT_RX_BYTES)


@dataclass(frozen=True)
class GpuSample:
    index: int  # NVML's index (all GPUs, whatever CUDA_VISIBLE_DEVICES says)
    name: str
    utilization_percent: float | None = None
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    power_watts: float | None = None
    power_limit_watts: float | None = None
    temperature_c: float | None = None
    pcie_tx_bytes_per_s: float | None = None  # None: NVML has no counter here, or first sample
    pcie_rx_bytes_per_s: float | None = None
    engine_memory_bytes: int | None = None  # None: unknown (no local engine, or see GpuSnapshot.note)


@dataclass(frozen=True)
class GpuSnapshot:
    time: float
    status: GpuStatus
    gpus: tuple[GpuSample, ...] = ()
    reason: str | None = None  # why there is nothing to show ("no_gpu", "error")
    note: str | None = None  # a caveat on some figures (engine memory not attributable)


def _optional(read: Callable[[], _T]) -> _T | None:
    try:
        return read()
    except pynvml.NVMLError:
        return None


@dataclass
class _PcieCounter:
    tx_bytes: int
    rx_bytes: int
    timestamp_us: int


class GpuSource:
    """Not thread-safe: the sampler's local thread owns it. NVML is initialised on the first sample."""

    def __init__(self) -> None:
        self._handles: list[tuple[int, object, str]] | None = None
        self._failure: GpuSnapshot | None = None
        self._pcie: dict[int, _PcieCounter] = {}

    def _start(self) -> GpuSnapshot | None:
        """Initialise NVML once; a snapshot saying why not when it cannot be."""
        if self._handles is not None or self._failure is not None:
            return self._failure
        try:
            pynvml.nvmlInit()
        except (pynvml.NVMLError, OSError):
            report = detect_gpus()  # says why in the doctor's words (no driver, no library, ...)
            status: GpuStatus = "no_gpu" if report.status == "no_gpu" else "error"
            self._failure = GpuSnapshot(time.time(), status, reason=report.error or "NVML could not start")
            return self._failure
        try:
            self._handles = []
            for index in range(pynvml.nvmlDeviceGetCount()):
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
                name = pynvml.nvmlDeviceGetName(handle)
                self._handles.append((index, handle, name.decode() if isinstance(name, bytes) else name))
        except pynvml.NVMLError as error:
            self.close()
            self._failure = GpuSnapshot(time.time(), "error", reason=f"NVML failed listing GPUs: {error}")
            return self._failure
        if not self._handles:
            self._failure = GpuSnapshot(time.time(), "no_gpu", reason="no NVIDIA GPU: the driver lists 0 devices")
        return self._failure

    def close(self) -> None:
        if self._handles is not None:
            with contextlib.suppress(pynvml.NVMLError):
                pynvml.nvmlShutdown()
            self._handles = None

    def sample(self, engine_pids: frozenset[int] = frozenset()) -> GpuSnapshot:
        failure = self._start()
        if failure is not None:
            return GpuSnapshot(time.time(), failure.status, reason=failure.reason)
        assert self._handles is not None
        engine_memory, note = self._engine_memory(engine_pids)
        gpus = tuple(
            self._read(index, handle, name, engine_memory.get(index) if engine_memory is not None else None)
            for index, handle, name in self._handles
        )
        return GpuSnapshot(time.time(), "ok", gpus, note=note)

    def _read(self, index: int, handle: object, name: str, engine_memory: int | None) -> GpuSample:
        memory = _optional(lambda: pynvml.nvmlDeviceGetMemoryInfo(handle))
        utilization = _optional(lambda: pynvml.nvmlDeviceGetUtilizationRates(handle))
        power = _optional(lambda: pynvml.nvmlDeviceGetPowerUsage(handle))  # mW
        limit = _optional(lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(handle))  # mW
        temperature = _optional(lambda: pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU))
        tx, rx = self._pcie_rates(index, handle)
        return GpuSample(
            index=index, name=name,
            utilization_percent=float(utilization.gpu) if utilization is not None else None,
            memory_used_bytes=int(memory.used) if memory is not None else None,
            memory_total_bytes=int(memory.total) if memory is not None else None,
            power_watts=power / 1000 if power is not None else None,
            power_limit_watts=limit / 1000 if limit is not None else None,
            temperature_c=float(temperature) if temperature is not None else None,
            pcie_tx_bytes_per_s=tx, pcie_rx_bytes_per_s=rx, engine_memory_bytes=engine_memory,
        )

    def _pcie_rates(self, index: int, handle: object) -> tuple[float | None, float | None]:
        values = _optional(lambda: pynvml.nvmlDeviceGetFieldValues(handle, list(_PCIE_FIELDS)))
        if values is None or any(v.nvmlReturn != pynvml.NVML_SUCCESS for v in values):
            return None, None
        now = _PcieCounter(int(values[0].value.ullVal), int(values[1].value.ullVal), int(values[0].timestamp))
        before, self._pcie[index] = self._pcie.get(index), now
        if before is None or now.timestamp_us <= before.timestamp_us:
            return None, None
        seconds = (now.timestamp_us - before.timestamp_us) / 1e6
        return (now.tx_bytes - before.tx_bytes) / seconds, (now.rx_bytes - before.rx_bytes) / seconds

    def _engine_memory(self, engine_pids: frozenset[int]) -> tuple[dict[int, int] | None, str | None]:
        """Engine memory per GPU index, or None and why it cannot be attributed."""
        if not engine_pids:
            return None, None
        assert self._handles is not None
        per_gpu: dict[int, int] = {}
        listed: set[int] = set()
        for index, handle, _ in self._handles:
            processes = _optional(lambda h=handle: pynvml.nvmlDeviceGetComputeRunningProcesses(h)) or []  # type: ignore[misc]  # a default argument binds the loop's handle
            listed.update(p.pid for p in processes)
            per_gpu[index] = sum(int(p.usedGpuMemory or 0) for p in processes if p.pid in engine_pids)
        if listed and not listed & engine_pids and not any(psutil.pid_exists(pid) for pid in listed):
            return None, ("NVML lists GPU processes by PIDs that do not exist here (another PID namespace, e.g. "
                          "a container): the engine's share of GPU memory is unknown")
        return per_gpu, None


def _format(snapshot: GpuSnapshot) -> str:
    if snapshot.status != "ok":
        return f"{snapshot.status}: {snapshot.reason}"
    lines = [f"note: {snapshot.note}"] if snapshot.note else []
    for gpu in snapshot.gpus:
        lines.append(f"[{gpu.index}] {gpu}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Two samples a second apart; give the engine's root PID to see its memory per GPU."""
    import argparse

    from m3ui.monitor.processes import EngineProcesses

    parser = argparse.ArgumentParser(prog="python -m m3ui.monitor.gpu", description=main.__doc__)
    parser.add_argument("engine_pid", type=int, nargs="?", help="the engine's root process (default: none)")
    args = parser.parse_args(argv)
    processes = EngineProcesses()
    processes.set_root(args.engine_pid)
    source = GpuSource()
    try:
        for pause in (1.0, 0.0):
            started = time.perf_counter()
            snapshot = source.sample(processes.sample().pids)
            print(f"{_format(snapshot)}\n(sampled in {(time.perf_counter() - started) * 1000:.1f} ms)")
            time.sleep(pause)
    finally:
        source.close()


if __name__ == "__main__":
    main()
