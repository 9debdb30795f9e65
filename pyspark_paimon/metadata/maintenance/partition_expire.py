"""Partition expiration after a commit (``partition.expiration-time``), as Java's ``NormalPartitionExpire``.

A partition expires when its time is before ``now - partition.expiration-time``:

* ``partition.expiration-strategy = values-time`` (default): the time read from the partition values with
  ``partition.timestamp-pattern`` / ``-formatter`` (:func:`..java_date.partition_timestamp`, Java's
  ``PartitionTimeExtractor``). A partition whose values are not such a time (or are NULL) never expires; it is
  logged, as Java logs it;
* ``update-time``: the creation time of the partition's newest live data file.

The expired partitions, ordered by their values joined with ``,`` and limited to ``partition.expiration-max-num``
(default 100), are dropped with OVERWRITE commits that delete every live file of them, ``partition.expiration-
batch-size`` partitions per commit (default: one commit). A drop is a commit like any other: the files stay
reachable from the older snapshots and are deleted only when snapshot expiration removes those.

**When.** Java keeps the last check time in each writer's memory, starting at a random point up to one
``partition.expiration-check-interval`` (default 1 h) back, and checks when the interval has passed. Our writers
are short-lived (one commit per batch job), so the memory is per process and table branch: the first commit of a
process to a table checks, later ones only once the interval has passed since the last completed check
(``0``: every commit). A check reads the table's live file entries; a check that fails is retried by the next
commit.
"""

from __future__ import annotations

import datetime as _dt
import logging
from typing import Any, Callable

from pyspark_paimon.metadata.java_date import JavaDateFormat, partition_timestamp
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.schema.options import (
    PARTITION_EXPIRATION_BATCH_SIZE,
    PARTITION_EXPIRATION_CHECK_INTERVAL,
    PARTITION_EXPIRATION_MAX_NUM,
    PARTITION_EXPIRATION_STRATEGY,
    PARTITION_EXPIRATION_TIME,
    PARTITION_TIMESTAMP_FORMATTER,
    PARTITION_TIMESTAMP_PATTERN,
    CoreOptions,
)
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.timeutil import local_datetime

log = logging.getLogger(__name__)

#: Commits the drop of some partitions (BinaryRow bytes) as one OVERWRITE snapshot; given by the commit.
DropPartitions = Callable[[frozenset[bytes]], "Snapshot | None"]

_EPOCH = _dt.datetime(1970, 1, 1)

#: (table path, branch) -> epoch ms of the last completed check in this process.
_last_check: dict[tuple[str, str], int] = {}


def check_due(store: FileStore, opts: CoreOptions, now_ms: int) -> bool:
    """Whether this commit checks for expired partitions (see "When" in the module docstring)."""
    if opts.get(PARTITION_EXPIRATION_TIME) is None:
        return False
    last = _last_check.get((store.table_path, store.branch))
    return last is None or now_ms >= last + opts.get(PARTITION_EXPIRATION_CHECK_INTERVAL)


def _value_text(value: Any, default_name: str) -> str:
    if value is None:
        return default_name
    if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
        return value.isoformat()
    return str(value)


def expired_partitions(store: FileStore, schema: TableSchema, now_ms: int) -> list[tuple[bytes, dict[str, str]]]:
    """The partitions of the latest snapshot of ``store``'s branch that expire at ``now_ms``, in Java's order
    and limit: (BinaryRow bytes, partition spec as text)."""
    opts = CoreOptions(schema.options)
    ttl = opts.get(PARTITION_EXPIRATION_TIME)
    if ttl is None or not schema.partition_keys:
        return []
    strategy = opts.get(PARTITION_EXPIRATION_STRATEGY)
    pattern = opts.get(PARTITION_TIMESTAMP_PATTERN)
    formatter = opts.get(PARTITION_TIMESTAMP_FORMATTER)
    if strategy == "values-time" and formatter is not None:
        JavaDateFormat(formatter)  # a formatter we cannot read fails the check, not each partition
    expire_before = local_datetime(now_ms) - _dt.timedelta(milliseconds=ttl)
    # File creation times are local wall-clock times stored as if UTC (Java's LocalDateTime), so compare so.
    expire_before_local_ms = (expire_before - _EPOCH) // _dt.timedelta(milliseconds=1)
    newest: dict[bytes, int | None] = {}
    for e in store.live_entries(store.snapshots.latest(), cached=True):
        created = e.file.creation_time_millis
        known = newest.get(e.partition)
        newest[e.partition] = created if known is None else max(known, created) if created is not None else known
    keys = list(schema.partition_keys)
    types = [f.type for f in schema.partition_fields]
    default_name = opts.partition_default_name
    found: list[tuple[bytes, list[str]]] = []
    for raw, created in newest.items():
        values = list(deserialize_row(raw, types))
        if strategy == "update-time":
            expired = created is not None and expire_before_local_ms > created
        else:
            try:
                expired = expire_before > partition_timestamp(keys, values, pattern, formatter)
            except (ValueError, OverflowError) as e:
                log.warning(
                    "Partition %s of %s is not expired: its time cannot be read from its values (%s). Check "
                    "'%s' / '%s', drop it by hand, or set '%s' = 'update-time'.",
                    dict(zip(keys, values)),
                    store.table_path,
                    e,
                    PARTITION_TIMESTAMP_PATTERN.key,
                    PARTITION_TIMESTAMP_FORMATTER.key,
                    PARTITION_EXPIRATION_STRATEGY.key,
                )
                expired = False
        if expired:
            found.append((raw, [_value_text(v, default_name) for v in values]))
    found.sort(key=lambda item: ",".join(item[1]))
    return [(raw, dict(zip(keys, texts))) for raw, texts in found[: opts.get(PARTITION_EXPIRATION_MAX_NUM)]]


def expire_partitions(
    store: FileStore, schema: TableSchema, drop: DropPartitions, now_ms: int
) -> list[dict[str, str]] | None:
    """Drop the expired partitions when a check is due; returns them (None: no check was due)."""
    opts = CoreOptions(schema.options)
    if not check_due(store, opts, now_ms):
        return None
    expired = expired_partitions(store, schema, now_ms)
    if expired:
        log.info("expiring partitions %s of %s (branch '%s')", [s for _, s in expired], store.table_path, store.branch)
        batch = opts.get(PARTITION_EXPIRATION_BATCH_SIZE) or len(expired)
        for start in range(0, len(expired), batch):
            drop(frozenset(raw for raw, _ in expired[start : start + batch]))
    _last_check[(store.table_path, store.branch)] = now_ms
    return [spec for _, spec in expired]


__all__ = ["DropPartitions", "check_due", "expire_partitions", "expired_partitions"]
