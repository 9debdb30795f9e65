"""Which write path ``t.write_spark`` takes (its ``engine``), and the Python path's run and result.

Why: the JVM path (:mod:`~pyspark_paimon.datasource.write.jvm_write`) writes some table kinds only, and a caller
who just wants the DataFrame in the table should not have to know which. The rule (docs/writing.md, "Two write
paths"): ``engine="auto"`` (the default) takes the JVM path where it writes the table and else the Python path,
``df.write.format("paimon")`` with the same mode and overwrite; ``"jvm"`` refuses a table it does not write
(:class:`~pyspark_paimon.datasource.write.jvm_write.JvmPathUnsupportedError`, before anything is written); ``"python"``
always takes the Python path. The result's ``path`` says which ran, and ``fallback`` why ``"auto"`` did not take
the JVM path (also logged at INFO). The Python path's result is built from the snapshots its write committed (the
branch's non-compaction snapshots after the one current when the write started: a concurrent writer's commits on
the same branch in that window are counted too). Nothing here imports pyspark: DataFrame methods of the frame given.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pyspark_paimon.datasource.jobs import WriteResult
from pyspark_paimon.datasource.write.jvm_write import PYTHON_PATH
from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.manifests.manifest import KIND_ADD, DataFileMeta
from pyspark_paimon.metadata.snapshots.commit import CommitMessage
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore

__all__ = ["AUTO", "ENGINES", "check_engine", "write_python_path"]

log = logging.getLogger(__name__)

AUTO = "auto"
#: The values of ``t.write_spark(engine=...)``.
ENGINES = (AUTO, "jvm", "python")


def check_engine(engine: str) -> None:
    """Raise :class:`OptionError` for an ``engine`` that is not one of :data:`ENGINES`."""
    if engine not in ENGINES:
        raise OptionError(
            f"engine must be one of {list(ENGINES)}, got {engine!r}: 'auto' takes the JVM write path where it "
            "writes the table, 'jvm' only that path, 'python' df.write.format('paimon') (docs/writing.md)."
        )


def write_python_path(
    store: FileStore,
    frame: Any,
    *,
    mode: str,
    overwrite_partition: Mapping[str, Any] | str | None,
    dynamic_partition_overwrite: bool,
    fallback: str | None = None,
) -> WriteResult:
    """Write ``frame`` with ``frame.write.format("paimon")`` into ``store``'s branch, ``mode`` and the overwrite
    arguments meaning what they mean to ``t.write_arrow`` (a partitioned table's plain overwrite replaces the whole
    table whatever the session's ``partitionOverwriteMode``), and return the result of what it committed."""
    if fallback is not None:
        log.info("t.write_spark(engine='auto') takes the Python write path: %s", fallback)
    before = store.snapshots.latest_id() or 0
    writer = frame.write.format("paimon").mode(mode).option("branch", store.branch)
    for key, value in store.fileio.current_storage_options().items():
        writer = writer.option(f"fs.{key}", value if isinstance(value, str) else json.dumps(value))
    if mode == "overwrite" and store.schema().partition_keys:
        if overwrite_partition:
            writer = writer.option("overwrite-partition", _spec_text(overwrite_partition))
        else:
            writer = writer.option("partitionOverwriteMode", "dynamic" if dynamic_partition_overwrite else "static")
    writer.save(store.fileio.uri(store.table_path))
    snapshot, messages = _committed_since(store, before)
    return replace(WriteResult.of(snapshot, messages, path=PYTHON_PATH), fallback=fallback)


def _spec_text(spec: Mapping[str, Any] | str) -> str:
    return spec if isinstance(spec, str) else ",".join(f"{k}={v}" for k, v in spec.items())


def _committed_since(store: FileStore, before: int) -> tuple[Snapshot | None, list[CommitMessage]]:
    """The last non-compaction snapshot after ``before`` and the files those snapshots added, as commit messages
    (one per partition and bucket)."""
    latest = store.snapshots.latest_id() or 0
    last: Snapshot | None = None
    added: dict[tuple[bytes, int], tuple[int, list[DataFileMeta]]] = {}
    manifests = store.manifests
    for sid in range(before + 1, latest + 1):
        snapshot = store.snapshots.snapshot(sid)
        if snapshot.commit_kind == "COMPACT":
            continue
        last = snapshot
        for e in manifests.read_entries(manifests.read_list(snapshot.delta_manifest_list)):
            if e.kind == KIND_ADD:
                added.setdefault((e.partition, e.bucket), (e.total_buckets, []))[1].append(e.file)
    messages = [
        CommitMessage(partition=p, bucket=b, total_buckets=n, new_files=tuple(files))
        for (p, b), (n, files) in added.items()
    ]
    return last, messages
