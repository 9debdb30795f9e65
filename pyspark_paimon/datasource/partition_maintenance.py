"""Paimon's partition procedures: ``expire_partitions``, ``mark_partition_done`` and ``rescale``.

Each is what Java's Spark procedure of that name does, on one branch:

* :func:`expire_partitions` is the partition expiration a commit runs (``partition_expire.expired_partitions``:
  ``partition.expiration-time``, values-time or update-time), now and without the check interval, with the
  procedure's arguments overlaid on the table's options; the expired partitions are dropped with OVERWRITE
  commits (``partition.expiration-batch-size`` partitions each), as after a commit;
* :func:`mark_partition_done` runs the table's ``partition.mark-done-action`` for the given partitions:
  ``success-file`` writes (or touches) ``<table>/<partition path>/_SUCCESS`` in Java's JSON, which schedulers
  poll; the other actions need a metastore or a custom Java class and are refused;
* :func:`rescale` rewrites the selected partitions of a fixed-bucket (or postpone-bucket) table into
  ``bucket_num`` buckets: their merged rows are read split by split and written into the new buckets (the
  writer's buffer bounds the memory), then one OVERWRITE commit replaces exactly those partitions. Java commits in
  strict mode so that a write racing the rescale is not silently dropped; here a commit that landed after the
  read makes the rescale fail before it commits (its files are deleted).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from pyspark_paimon.datasource.compact.compact_plan import PartitionSpecs, partition_matcher
from pyspark_paimon.datasource.jobs import prepare_read, prepare_write, read_planned_split
from pyspark_paimon.errors import CommitConflictError, OptionError
from pyspark_paimon.metadata.io.jackson import to_jackson_json
from pyspark_paimon.metadata.maintenance.partition_expire import expired_partitions
from pyspark_paimon.metadata.rows.partition import coerce_partition_value, parse_partition_spec, partition_path
from pyspark_paimon.metadata.schema.options import (
    PARTITION_EXPIRATION_BATCH_SIZE,
    PARTITION_EXPIRATION_MAX_NUM,
    PARTITION_EXPIRATION_STRATEGY,
    PARTITION_EXPIRATION_TIME,
    PARTITION_MARK_DONE_ACTION,
    PARTITION_TIMESTAMP_FORMATTER,
    PARTITION_TIMESTAMP_PATTERN,
    POSTPONE_BUCKET,
    CoreOptions,
    validate_table_options,
)
from pyspark_paimon.metadata.snapshots.commit import FileStoreCommit, OverwriteSpec
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.read_options import ReadOptions

__all__ = [
    "ExpirePartitionsResult",
    "MarkDoneResult",
    "RescaleResult",
    "expire_partitions",
    "mark_partition_done",
    "rescale",
    "SUCCESS_FILE",
]

#: Java's ``SuccessFileMarkDoneAction.SUCCESS_FILE_NAME``.
SUCCESS_FILE = "_SUCCESS"


@dataclass
class ExpirePartitionsResult:
    """The partitions dropped (specs as text, Java's order) and the OVERWRITE snapshots that dropped them."""

    partitions: list[dict[str, str]] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.snapshots)


@dataclass
class MarkDoneResult:
    """The success files written, one per partition."""

    paths: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.paths)


@dataclass
class RescaleResult:
    """What a rescale rewrote: partitions, rows, files before and after, the new bucket number, the snapshot."""

    snapshot: Snapshot | None = None
    bucket_num: int = 0
    partitions: int = 0
    rows: int = 0
    files_before: int = 0
    files_after: int = 0

    def __bool__(self) -> bool:
        return self.snapshot is not None


def _overlay(store: FileStore, settings: Mapping[str, Any], options: Mapping[str, str] | str | None) -> Any:
    """The branch's schema with ``settings`` (None = keep) and ``options`` ('k=v,k2=v2' or a dict) overlaid."""
    schema = store.schema()
    extra = parse_partition_spec(options) if isinstance(options, str) else dict(options or {})
    merged = {**schema.options, **{k: str(v) for k, v in extra.items()}}
    merged.update({k: str(v) for k, v in settings.items() if v is not None})
    validate_table_options(merged, creating=False, table=store.table_path)
    return replace(schema, options=merged)


def expire_partitions(
    store: FileStore,
    *,
    expiration_time: str | None = None,
    timestamp_formatter: str | None = None,
    timestamp_pattern: str | None = None,
    expire_strategy: str | None = None,
    max_expires: int | None = None,
    options: Mapping[str, str] | str | None = None,
    now_ms: int | None = None,
) -> ExpirePartitionsResult:
    """Drop the partitions of ``store``'s branch that have expired now (Paimon's ``expire_partitions``); unset
    arguments come from the table's ``partition.*`` options."""
    schema = _overlay(
        store,
        {
            PARTITION_EXPIRATION_TIME.key: expiration_time,
            PARTITION_TIMESTAMP_FORMATTER.key: timestamp_formatter,
            PARTITION_TIMESTAMP_PATTERN.key: timestamp_pattern,
            PARTITION_EXPIRATION_STRATEGY.key: expire_strategy,
            PARTITION_EXPIRATION_MAX_NUM.key: max_expires,
        },
        options,
    )
    core = CoreOptions(schema.options)
    if core.get(PARTITION_EXPIRATION_TIME) is None or not schema.partition_keys:
        raise OptionError(
            f"expire_partitions of {store.table_path}: "
            + (
                "the table has no partitions."
                if not schema.partition_keys
                else "no expiration time: give expiration_time (e.g. '7 d') or set 'partition.expiration-time'."
            )
        )
    now = int(time.time() * 1000) if now_ms is None else now_ms
    expired = expired_partitions(store, schema, now)
    result = ExpirePartitionsResult([spec for _, spec in expired])
    batch = core.get(PARTITION_EXPIRATION_BATCH_SIZE) or len(expired)
    committer = FileStoreCommit(store, store.schema().options)
    for start in range(0, len(expired), max(batch, 1)):
        raws = frozenset(raw for raw, _ in expired[start : start + batch])
        snapshot = committer.commit([], overwrite=OverwriteSpec("static", raws))
        if snapshot is not None:
            result.snapshots.append(snapshot)
    return result


def _partition_dirs(store: FileStore, partitions: PartitionSpecs) -> list[str]:
    """Relative directories of ``partitions`` (dicts or 'k=v,k2=v2' texts; a partial spec names the directory
    of its leading keys, as Java builds it from the spec in the table's partition-key order)."""
    schema = store.schema()
    if not schema.partition_keys:
        raise OptionError(f"mark_partition_done of {store.table_path}: the table has no partitions.")
    if partitions is None:
        raise OptionError("mark_partition_done needs the partitions to mark, e.g. 'dt=2025-08-11'.")
    items = [partitions] if isinstance(partitions, (str, Mapping)) else list(partitions)
    options = schema.core_options
    dirs = []
    for item in items:
        specs = [parse_partition_spec(s) for s in item.split(";") if s.strip()] if isinstance(item, str) else [item]
        for spec in specs:
            unknown = [k for k in spec if k not in schema.partition_keys]
            if unknown or not spec:
                raise OptionError(
                    f"mark_partition_done partition {dict(spec)} names {unknown or 'no column'}: give partition "
                    f"columns of the table ({', '.join(schema.partition_keys)})."
                )
            fields = [f for f in schema.partition_fields if f.name in spec]
            values = [coerce_partition_value(schema, f.name, spec[f.name]) for f in fields]
            dirs.append(partition_path(values, fields, options.partition_default_name, options.partition_legacy_name))
    return dirs


def mark_partition_done(store: FileStore, partitions: PartitionSpecs) -> MarkDoneResult:
    """Mark ``partitions`` done by the table's ``partition.mark-done-action`` (Paimon's ``mark_partition_done``)."""
    actions = store.schema().core_options.get(PARTITION_MARK_DONE_ACTION) or []
    refused = [a for a in actions if a != "success-file"]
    if refused:
        raise OptionError(
            f"'partition.mark-done-action' of {store.table_path} includes {refused}: those actions need a metastore, "
            "an HTTP endpoint or a custom Java class, which pyspark-paimon does not run. Use 'success-file' (or run "
            "the procedure with Paimon)."
        )
    result = MarkDoneResult()
    now = int(time.time() * 1000)
    for directory in _partition_dirs(store, partitions):
        path = f"{store.table_path}/{directory}/{SUCCESS_FILE}"
        created = now
        if store.fileio.exists(path):
            try:
                created = int(json.loads(store.fileio.read_text(path))["creationTime"])
            except (ValueError, KeyError, TypeError):
                created = now  # an unreadable success file is replaced, as a new one
        store.fileio.mkdirs(f"{store.table_path}/{directory}")
        store.fileio.write_bytes(path, to_jackson_json({"creationTime": created, "modificationTime": now}).encode())
        result.paths.append(path)
    return result


def rescale(store: FileStore, bucket_num: int | None = None, partitions: PartitionSpecs = None) -> RescaleResult:
    """Rewrite ``partitions`` (default all) of ``store``'s branch into ``bucket_num`` buckets (default the
    table's ``bucket``) in one OVERWRITE commit (Paimon 1.4's ``rescale``)."""
    schema = store.schema()
    bucket = schema.core_options.bucket
    if bucket_num is None:
        if bucket == POSTPONE_BUCKET:
            raise OptionError(
                f"rescale of {store.table_path}, a postpone-bucket table: give the resulting bucket number "
                "(bucket_num)."
            )
        bucket_num = bucket
    if bucket == -1 or bucket_num <= 0:
        raise OptionError(
            f"rescale of {store.table_path}: bucket_num must be a positive number of buckets of a fixed- or "
            f"postpone-bucket table (the table has 'bucket' = {bucket}, bucket_num = {bucket_num}); dynamic and "
            "unaware-bucket tables have no bucket number to change."
        )
    latest = store.snapshots.latest()
    if latest is None:
        raise OptionError(f"Table {store.table_path} has no snapshot: nothing to rescale.")
    job = prepare_read(store, ReadOptions.from_options({"scan.snapshot-id": str(latest.id)}))
    matcher = partition_matcher(schema, partitions, what="rescale")
    splits = [s for s in job.splits if matcher is None or matcher(s.partition_values)]
    result = RescaleResult(bucket_num=bucket_num)
    if not splits:
        return result
    result.partitions = len({s.partition for s in splits})
    result.files_before = sum(len(s.files) for s in splits)
    write = prepare_write(store, OverwriteSpec("dynamic") if schema.partition_keys else OverwriteSpec("all"))
    ctx = replace(write.context, options={**write.context.options, "bucket": str(bucket_num)}, partition_buckets={})
    write = replace(write, context=ctx)
    writer = write.new_writer("rescale")
    try:
        for split in splits:
            for batch in read_planned_split(job.context, split):
                result.rows += batch.num_rows
                writer.write(batch)
        messages = writer.prepare_commit()
        now = store.snapshots.latest()
        if now is None or now.id != latest.id:
            raise CommitConflictError(
                f"rescale of {store.table_path}: snapshot {now.id if now else None} was committed while the rescale "
                f"read snapshot {latest.id}; its rows would be lost. Nothing was committed; run rescale again."
            )
        result.snapshot = write.commit(messages)
    except BaseException:
        writer.abort()
        raise
    result.files_after = sum(len(m.new_files) for m in messages)
    return result
