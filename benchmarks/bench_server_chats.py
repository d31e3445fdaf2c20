"""What keeping chats on the server costs (m3ui/accounts/server_chats.py), on a real SQLite file in WAL mode.

1. Latency a turn adds: one session saves its chat after each of TURNS questions and answers (the chat grows,
   as a real one does); p50/p99 of the save, and the database size per 1,000 turns.
2. Concurrency: 32 sessions (threads, half of them through a second connection as a second app process would
   hold) each append a message per save to their own chat for --seconds; then every message is counted in the
   database: each stored exactly once, and no "database is locked" (or any other) error reached a session.

Run from the repo root: `python benchmarks/bench_server_chats.py [--seconds 120] [--check [--ci]]`. `--check` exits
1 when a message was lost or duplicated, an error reached a session (hard gates), or the p99 save, best of up to 3
runs, is over 50 ms (with `--ci` or CI=true: over 100 ms, and the sessions write for 30 s). The last line
printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.timing_gate import Gate, Timing, add_arguments  # noqa: E402
from m3ui.accounts import AccountStore  # noqa: E402
from m3ui.accounts.server_chats import ServerChats  # noqa: E402
from m3ui.accounts.sqlite_db import DB_FILE_NAME  # noqa: E402
from m3ui.conversation import AssistantTurn, Conversation  # noqa: E402
from m3ui.conversation.library import new_chat  # noqa: E402

TURNS = 1000
SESSIONS = 32
P99_TARGET_MS = 50.0
ANSWER = "A cache keeps recently used data close to the core, so the next access is fast. " * 8  # ~650 chars


def db_bytes(folder: Path) -> int:
    return sum((folder / name).stat().st_size for name in os.listdir(folder) if name.startswith(DB_FILE_NAME))


def turn_latency(folder: Path) -> dict[str, float]:
    store = AccountStore.open(folder)
    store.add("bench", "bench-password")
    chats = ServerChats(store)
    before = db_bytes(folder)
    times: list[float] = []
    chat, revision = new_chat(), 0
    per_chat = 50  # a new chat every 50 turns: records stay the size of real chats
    for n in range(TURNS):
        if n % per_chat == 0:
            chat, revision = new_chat(), 0
        conversation = chat.conversation.ask(f"Question {n}: how does a CPU cache work?").add(AssistantTurn(ANSWER))
        chat = chat.with_conversation(conversation)
        start = time.perf_counter()
        revision = chats.save("bench", chat, revision).revision
        times.append((time.perf_counter() - start) * 1000)
    store.db.query("PRAGMA wal_checkpoint(TRUNCATE)")
    size = db_bytes(folder) - before
    store.close()
    times.sort()
    return {"p50_ms": statistics.median(times), "p99_ms": times[int(len(times) * 0.99) - 1],
            "db_bytes_per_1000_turns": size * 1000 / TURNS}


def concurrency(folder: Path, seconds: float) -> dict[str, float]:
    store = AccountStore.open(folder)
    store.add("team", "team-password")
    first, second = ServerChats(store), ServerChats(AccountStore.open(folder))
    errors: list[str] = []
    sent: list[list[str]] = [[] for _ in range(SESSIONS)]
    chat_ids: list[str] = [""] * SESSIONS
    deadline = time.monotonic() + seconds

    def session(n: int) -> None:
        chats = first if n % 2 else second
        chat, revision = new_chat(), 0
        chat_ids[n] = chat.id
        conversation = Conversation()
        while time.monotonic() < deadline:
            message = f"s{n}-m{len(sent[n])}"
            conversation = conversation.ask(message)
            chat = chat.with_conversation(conversation)
            try:
                revision = chats.save("team", chat, revision).revision
            except Exception as exc:  # noqa: BLE001 - every error counts as one that reached a user
                errors.append(f"{type(exc).__name__}: {exc}")
                return
            sent[n].append(message)

    threads = [threading.Thread(target=session, args=(n,)) for n in range(SESSIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stored: list[str] = []
    for chat_id in chat_ids:
        loaded = first.load("team", chat_id)
        stored += [t.content for t in loaded.chat.conversation.turns] if loaded else []
    expected = [m for messages in sent for m in messages]
    return {"sessions": SESSIONS, "seconds": seconds, "messages_sent": len(expected),
            "messages_stored": len(stored), "exactly_once": sorted(stored) == sorted(expected),
            "errors": len(errors), "first_error": errors[0] if errors else "", "saves_per_s": len(expected) / seconds}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, help="how long the 32 sessions write (default 120; CI 30)")
    add_arguments(p)
    args = p.parse_args()
    gate = Gate.from_args(args)
    seconds = args.seconds or (30.0 if gate.ci else 120.0)  # 30 s is still thousands of contended saves
    with tempfile.TemporaryDirectory(prefix="m3ui-bench-chats-") as tmp:
        runs = iter(range(1, 4))

        def measure_latency() -> dict[str, float]:
            latency = turn_latency(Path(tmp) / f"latency-{next(runs)}")
            print(f"storing a turn: p50 {latency['p50_ms']:.2f} ms, p99 {latency['p99_ms']:.2f} ms; database "
                  f"{latency['db_bytes_per_1000_turns'] / 1e6:.2f} MB per 1,000 turns (~{len(ANSWER)}-char answers)")
            return latency

        latencies, best = gate.best_of(measure_latency, lambda latency: [
            Timing("p99 save", latency["p99_ms"], P99_TARGET_MS, " ms")])
        load = concurrency(Path(tmp) / "load", seconds)
        print(f"{SESSIONS} sessions for {seconds:.0f} s: {load['messages_sent']} messages sent, "
              f"{load['messages_stored']} stored, exactly once: {load['exactly_once']}, errors: {load['errors']} "
              f"{load['first_error']}; {load['saves_per_s']:.0f} saves/s; cores: {os.cpu_count()}")
    hard = [*([] if load["exactly_once"] else ["a message was lost or stored twice"]),
            *([f"{load['errors']} errors reached a session, first: {load['first_error']}"] if load["errors"] else [])]
    failed = gate.failures(best, hard)
    print(json.dumps({**latencies[-1], **load, "p99_ms_best": best[0].value, "runs_taken": len(latencies),
                      "cores": os.cpu_count(), "ok": not failed}))
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
