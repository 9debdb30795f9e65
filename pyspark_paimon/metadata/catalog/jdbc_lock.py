"""The JDBC catalog's lock (Java's ``JdbcCatalogLock``), and the commit that takes it.

Where Java's JDBC catalog takes its lock, so do we: with catalog option ``lock.enabled`` (default: on for object
stores, as Java's ``lockEnabled()``), creating, renaming and committing to a table run while holding the row
``<catalog-key>.<database>.<table>`` of ``paimon_distributed_locks``. The row is the lock: inserting it wins,
its primary key makes a second insert fail, deleting it releases. A holder that died leaves its row behind; a
row older than its ``expire_time_seconds`` (the ``lock-acquire-timeout``) is deleted by the next acquirer, as in
Java. Waiting sleeps 50 ms, doubling up to ``lock-check-max-sleep``, and gives up after ``lock-acquire-timeout``.

Java's commit under the lock (``RenamingSnapshotCommit``) checks that ``snapshot-N`` is absent and creates it;
:class:`JdbcLockCommit` does the same through the store's atomic create, so a writer that does not take the lock
(pypaimon's) still cannot overwrite a commit.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import contextmanager
from typing import Iterator

from pyspark_paimon.errors import CatalogError, CommitConflictError
from pyspark_paimon.metadata.catalog.jdbc_store import LOCKS, SqlDatabase
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore

_FIRST_SLEEP_MS = 50


class JdbcLock:
    """Locks of one JDBC catalog (picklable: the database URI and the timings)."""

    def __init__(self, db: SqlDatabase, catalog_key: str, acquire_timeout_ms: int, max_sleep_ms: int):
        self.db = db
        self.catalog_key = catalog_key
        self.acquire_timeout_ms = acquire_timeout_ms
        self.max_sleep_ms = max_sleep_ms

    def lock_id(self, database: str, table: str) -> str:
        return f"{self.catalog_key}.{database}.{table}"

    def _try_acquire(self, lock_id: str) -> bool:
        expire_seconds = max(1, self.acquire_timeout_ms // 1000)
        try:
            self.db.run(
                [
                    (
                        f"DELETE FROM {LOCKS} WHERE strftime('%s', 'now') - strftime('%s', acquired_at) "
                        "> expire_time_seconds AND lock_id = ?",
                        (lock_id,),
                    ),
                    (f"INSERT INTO {LOCKS} (lock_id, expire_time_seconds) VALUES (?, ?)", (lock_id, expire_seconds)),
                ]
            )
            return True
        except sqlite3.IntegrityError:  # the row is there: someone holds the lock
            return False

    @contextmanager
    def held(self, database: str, table: str) -> Iterator[None]:
        """Hold the lock of ``database.table`` for the ``with`` block."""
        lock_id = self.lock_id(database, table)
        started = time.monotonic()
        sleep_ms = _FIRST_SLEEP_MS
        while not self._try_acquire(lock_id):
            waited = (time.monotonic() - started) * 1000
            if waited > self.acquire_timeout_ms:
                raise CatalogError(
                    f"Could not take the JDBC catalog lock '{lock_id}' within {int(waited)} ms (option "
                    "'lock-acquire-timeout'): another writer holds it. Retry later; a lock left by a writer that "
                    f"died is released after that timeout, or delete its row from {LOCKS}."
                )
            sleep_ms = min(sleep_ms * 2, self.max_sleep_ms)
            time.sleep(sleep_ms / 1000)
        try:
            yield
        finally:
            self.db.run([(f"DELETE FROM {LOCKS} WHERE lock_id = ?", (lock_id,))])


class JdbcLockCommit:
    """A JDBC catalog table's snapshot commit under the catalog lock (see the module docstring)."""

    def __init__(self, lock: JdbcLock, database: str, table: str):
        self.lock = lock
        self.database = database
        self.table = table

    def __repr__(self) -> str:
        return f"JdbcLockCommit({self.lock.lock_id(self.database, self.table)!r})"

    def commit(self, store: FileStore, snapshot: Snapshot, base: Snapshot | None) -> bool:
        try:
            held = self.lock.held(self.database, self.table)
            held.__enter__()
        except CatalogError as e:  # nothing was created: the commit did not land, its files may go
            raise CommitConflictError(f"Nothing was committed: {e}") from e
        try:
            if store.snapshots.exists(snapshot.id):
                return False
            return store.snapshots.try_commit(snapshot)
        finally:
            held.__exit__(None, None, None)
