"""Finding the engine an earlier app left running (its state file) and re-attaching to it or stopping it.

An app killed with SIGKILL cannot stop its engine, and the engine, in its own session, outlives it. The
next app calls `recover()` before starting anything, so no engine is ever orphaned for good and two
engines never fight over the same GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from launch.process_group import is_running, surviving_group, terminate_group
from launch.run_state import clear_run_state, read_run_state, state_path
from launch.supervisor import Supervisor


class RecoveryAction(Enum):
    NOTHING = "nothing"  # no state file
    CLEANED = "cleaned"  # the recorded engine had already exited; the stale file was removed
    TERMINATED = "terminated"  # it was still running and has been stopped
    ATTACHED = "attached"  # it was still running and the given supervisor now watches it
    IN_USE = "in_use"  # a live app supervises it; left alone


@dataclass(frozen=True)
class RecoveryResult:
    action: RecoveryAction
    message: str
    pid: int | None = None
    run_dir: Path | None = None


def recover(run_root: Path, adopt_into: Supervisor | None = None, grace: float = 10.0) -> RecoveryResult:
    """Deal with the engine recorded in `run_root`'s state file: re-attach it to `adopt_into` when one is
    given and it is still alive, else terminate it (its whole group); clean the file when it is dead."""
    if not state_path(run_root).exists():
        return RecoveryResult(RecoveryAction.NOTHING, "no engine was left running")
    state = read_run_state(run_root)
    if state is None:
        clear_run_state(run_root)
        return RecoveryResult(RecoveryAction.CLEANED, "removed an unreadable state file")
    found: dict[str, Any] = {"pid": state.pid, "run_dir": state.run_dir}
    # An app whose pid was recycled (an app that is pid 1 in a container is, every time) is not running.
    if is_running(state.owner_pid, state.owner_create_time):
        return RecoveryResult(RecoveryAction.IN_USE, f"app pid {state.owner_pid} still supervises it", **found)
    if is_running(state.pid, state.create_time) and adopt_into is not None:
        adopt_into.adopt(state)
        return RecoveryResult(RecoveryAction.ATTACHED, f"re-attached to engine pid {state.pid}", **found)
    if surviving_group(state.pgid, state.create_time):
        terminate_group(state.pgid, grace)
        clear_run_state(run_root)
        return RecoveryResult(RecoveryAction.TERMINATED, f"stopped engine pid {state.pid} left running", **found)
    clear_run_state(run_root)
    return RecoveryResult(RecoveryAction.CLEANED, f"engine pid {state.pid} had already exited", **found)
