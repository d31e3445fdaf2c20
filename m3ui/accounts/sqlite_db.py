"""The accounts database file: SQLite in WAL mode (readers never wait for a writer), owner-only (0600), its
schema brought up to date by numbered migrations recorded in `schema_migrations`.

One connection per process, shared by threads under a lock: Gradio runs handlers in a thread pool, and these
statements take microseconds. Another process (`python -m m3ui.users`) may write at the same time: WAL and
the busy timeout make it wait its turn instead of failing with "database is locked".
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from m3ui.accounts.migrations import MIGRATIONS

DB_FILE_NAME = "accounts.sqlite3"
BUSY_TIMEOUT_MS = 10_000
PRIVATE_FILE_MODE = 0o600


class SqliteDb:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not path.exists():  # created owner-only before SQLite writes anything into it
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, PRIVATE_FILE_MODE))
        self._conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False,
                                     isolation_level=None)  # autocommit; `transaction` opens explicit ones
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        # WAL with NORMAL sync: a crash of the app loses nothing; only a power cut may lose the last commits
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        self._migrate()
        for side_file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            if side_file.exists():
                os.chmod(side_file, PRIVATE_FILE_MODE)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE (the write lock is taken at once, so two writers never deadlock), commit or roll back."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def query(self, sql: str, params: tuple[object, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def schema_version(self) -> int:
        return int(self.query("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")[0][0])

    def _migrate(self) -> None:
        with self.transaction() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                         "applied_at REAL NOT NULL)")
            done = int(conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[0])
            if done > len(MIGRATIONS):
                raise RuntimeError(f"{self.path}: schema version {done} is newer than this m3ui knows "
                                   f"({len(MIGRATIONS)}): upgrade m3ui")
            for version, statements in enumerate(MIGRATIONS[done:], start=done + 1):
                for statement in statements:
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_migrations VALUES (?, ?)", (version, time.time()))

    def close(self) -> None:
        with self._lock:
            self._conn.close()
