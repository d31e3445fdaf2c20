"""How the engine dies, with the real texts and the real process endings.

sglang-kt runs each TP rank's scheduler in a child process. A scheduler that raises logs
`Scheduler hit an exception: <traceback>` and sends SIGQUIT to the launcher, whose handler logs one line
and kills its own process tree with SIGKILL (exit status -9). A scheduler killed outright (the kernel's OOM
killer) leaves the launcher with `Rank 0 scheduler is dead.` and an EOFError traceback (exit status 1).
Texts: c10 CUDACachingAllocator (CUDA OOM), model_runner_kv_cache_mixin.py:671 (KV pool),
cuda_graph_runner.py (graph capture), entrypoints/engine.py (launcher), tokenizer_manager.py (running phase).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

from launch.sim.logs import EngineLog

Frame = tuple[str, int, str, str]  # file, line, function, source line

SGLANG_ROOT = "/usr/local/lib/python3.11/dist-packages/sglang"
SCHEDULER_FRAME: Frame = (f"{SGLANG_ROOT}/srt/managers/scheduler.py", 3209, "run_scheduler_process",
                          "scheduler = Scheduler(")
LOAD_FRAMES: tuple[Frame, ...] = (
    SCHEDULER_FRAME,
    (f"{SGLANG_ROOT}/srt/model_executor/model_runner.py", 1043, "load_model",
     "self.model = self.loader.load_model("),
)
KV_FRAMES: tuple[Frame, ...] = (
    SCHEDULER_FRAME,
    (f"{SGLANG_ROOT}/srt/model_executor/model_runner_kv_cache_mixin.py", 671, "init_memory_pool",
     "raise RuntimeError("),
)
GRAPH_FRAMES: tuple[Frame, ...] = (
    SCHEDULER_FRAME,
    (f"{SGLANG_ROOT}/srt/model_executor/cuda_graph_runner.py", 573, "__init__",
     "raise Exception("),
)
CUDA_GRAPH_CAPTURE_FAILED_MSG = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
    "3. disable torch compile by not using --enable-torch-compile\n"
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
)


def format_size(size: float) -> str:
    """c10's format_size: bytes, KiB, MiB or GiB with two decimals."""
    size = int(size)
    if size <= 1024:
        return f"{size} bytes"
    if size <= 1 << 20:
        return f"{size / 1024:.2f} KiB"
    if size <= 1 << 30:
        return f"{size / (1 << 20):.2f} MiB"
    return f"{size / (1 << 30):.2f} GiB"


def cuda_oom_message(*, tried: float, total: float, free: float, in_use: float, allocated: float) -> str:
    """torch.OutOfMemoryError's message (CUDACachingAllocator.cpp) for GPU 0."""
    reserved_unallocated = max(0.0, in_use - allocated) * 0.02
    return (
        f"CUDA out of memory. Tried to allocate {format_size(tried)}. GPU 0 has a total capacity of "
        f"{format_size(total)} of which {format_size(free)} is free. Including non-PyTorch memory, this process "
        f"has {format_size(in_use)} memory in use. Of the allocated memory {format_size(allocated)} is allocated "
        f"by PyTorch, and {format_size(reserved_unallocated)} is reserved by PyTorch but unallocated. If reserved "
        "but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
        "fragmentation.  See documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
    )


def kv_pool_message(mem_fraction: float) -> str:
    return ("Not enough memory. Please try to increase --mem-fraction-static. "
            f"Current value: self.server_args.mem_fraction_static={mem_fraction}")


def traceback_text(frames: Sequence[Frame], exception_line: str) -> str:
    lines = ["Traceback (most recent call last):"]
    for file, line, function, source in frames:
        lines += [f'  File "{file}", line {line}, in {function}', f"    {source}"]
    return "\n".join([*lines, exception_line]) + "\n"


def chained(first: str, second: str) -> str:
    """Two tracebacks as Python prints an exception raised while handling another."""
    return f"{first}\nDuring handling of the above exception, another exception occurred:\n\n{second}"


def _kill_own_tree() -> NoReturn:
    """sglang's kill_process_tree(os.getpid()): the process SIGKILLs itself."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)
    raise SystemExit(137)  # not reached


def scheduler_crash(log: EngineLog, traceback: str) -> NoReturn:
    """A scheduler raised during start: its traceback, the launcher's SIGQUIT line, then SIGKILL."""
    log.error(f"Scheduler hit an exception: {traceback}", rank=0)
    log.error("Received sigquit from a child process. It usually means the child failed.")
    _kill_own_tree()


def running_scheduler_crash(log: EngineLog, traceback: str) -> NoReturn:
    """A scheduler raised while serving: the tokenizer manager's SIGQUIT handler takes everything down."""
    log.error(f"Scheduler hit an exception: {traceback}", rank=0)
    log.error("SIGQUIT received. signum=3, frame=None. It usually means one child failed.")
    _kill_own_tree()


def scheduler_killed(log: EngineLog) -> NoReturn:
    """The kernel's OOM killer took the scheduler: the launcher's EOFError and exit status 1."""
    log.error("Rank 0 scheduler is dead. Please check if there are relevant logs.")
    log.error("Exit code: -9")
    frames = (
        (f"{SGLANG_ROOT}/launch_server.py", 121, "<module>", "run_server(server_args)"),
        (f"{SGLANG_ROOT}/srt/entrypoints/engine.py", 938, "_wait_for_scheduler_ready",
         "data = scheduler_pipe_readers[i].recv()"),
    )
    sys.stderr.write(traceback_text(frames, "EOFError"))
    sys.stderr.flush()
    raise SystemExit(1)
