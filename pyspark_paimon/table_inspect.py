"""``t.inspect``: the system tables of a table's branch as Arrow, one method per table, with the same rows
Spark reads from ``t$name`` (both read through ``datasource/system_tables.py``)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from pyspark_paimon.api_types import Instant
from pyspark_paimon.datasource.system_tables import read_system_table
from pyspark_paimon.metadata.refs.graph import ref_graph
from pyspark_paimon.metadata.refs.tags import TagManager
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.timeutil import local_datetime
from pyspark_paimon.table_scan import TableView, version_options

HISTORY_SCHEMA = pa.schema(
    [
        pa.field("snapshot_id", pa.int64(), nullable=False),
        pa.field("commit_time", pa.timestamp("ms")),  # local wall clock, as the system tables show it
        pa.field("commit_kind", pa.string()),
        pa.field("delta_records", pa.int64()),
        pa.field("total_records", pa.int64()),
        pa.field("schema_id", pa.int64()),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("note", pa.string()),
    ]
)


class Inspect:
    """System tables of one branch of a table (``t.inspect``)."""

    def __init__(self, table: TableView):
        self._table = table

    def __repr__(self) -> str:
        return f"Inspect({self._table.identifier!r}, branch={self._table.branch!r})"

    def _read(self, name: str, **version: Any) -> pa.Table:
        return read_system_table(self._table.store, name, version_options(None, **version))

    def snapshots(self) -> pa.Table:
        """``$snapshots``: one row per snapshot of the branch."""
        return self._read("snapshots")

    def schemas(self) -> pa.Table:
        """``$schemas``: one row per schema version."""
        return self._read("schemas")

    def options(self) -> pa.Table:
        """``$options``: the table options (key, value)."""
        return self._read("options")

    def tags(self) -> pa.Table:
        """``$tags``: one row per tag of the branch."""
        return self._read("tags")

    def branches(self) -> pa.Table:
        """``$branches``: one row per branch of the table."""
        return self._read("branches")

    def files(
        self, *, snapshot_id: int | None = None, tag: str | None = None, timestamp: Instant | None = None
    ) -> pa.Table:
        """``$files``: the live data files of a version (default the latest snapshot)."""
        return self._read("files", snapshot_id=snapshot_id, tag=tag, timestamp=timestamp)

    def manifests(
        self, *, snapshot_id: int | None = None, tag: str | None = None, timestamp: Instant | None = None
    ) -> pa.Table:
        """``$manifests``: the manifest files of a version (default the latest snapshot)."""
        return self._read("manifests", snapshot_id=snapshot_id, tag=tag, timestamp=timestamp)

    def partitions(
        self, *, snapshot_id: int | None = None, tag: str | None = None, timestamp: Instant | None = None
    ) -> pa.Table:
        """``$partitions``: record, file and size totals per partition of a version (default the latest)."""
        return self._read("partitions", snapshot_id=snapshot_id, tag=tag, timestamp=timestamp)

    def buckets(
        self, *, snapshot_id: int | None = None, tag: str | None = None, timestamp: Instant | None = None
    ) -> pa.Table:
        """``$buckets``: record, file and size totals per (partition, bucket) of a version (default the latest)."""
        return self._read("buckets", snapshot_id=snapshot_id, tag=tag, timestamp=timestamp)

    def consumers(self) -> pa.Table:
        """``$consumers``: the streaming consumers of the branch and the snapshot each reads next."""
        return self._read("consumers")

    def statistics(
        self, *, snapshot_id: int | None = None, tag: str | None = None, timestamp: Instant | None = None
    ) -> pa.Table:
        """``$statistics``: the table statistics of a version (Spark's ``ANALYZE TABLE`` writes them; no row
        without)."""
        return self._read("statistics", snapshot_id=snapshot_id, tag=tag, timestamp=timestamp)

    def aggregation_fields(self) -> pa.Table:
        """``$aggregation_fields``: each column's type and its ``fields.<column>.*`` options."""
        return self._read("aggregation_fields")

    def table_indexes(
        self, *, snapshot_id: int | None = None, tag: str | None = None, timestamp: Instant | None = None
    ) -> pa.Table:
        """``$table_indexes``: the index files (deletion vectors, hash indexes) of a version."""
        return self._read("table_indexes", snapshot_id=snapshot_id, tag=tag, timestamp=timestamp)

    def file_key_ranges(
        self, *, snapshot_id: int | None = None, tag: str | None = None, timestamp: Instant | None = None
    ) -> pa.Table:
        """``$file_key_ranges``: each live data file's key range (``min_key``/``max_key``) of a version."""
        return self._read("file_key_ranges", snapshot_id=snapshot_id, tag=tag, timestamp=timestamp)

    def audit_log(
        self,
        filter: str | None = None,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp: Instant | None = None,
    ) -> pa.Table:
        """``$audit_log``: the rows of a version (default the latest), each led by its row kind ``rowkind``
        (+I, or +U for a primary key whose newest record was an update); ``filter`` as for :meth:`Table.scan`."""
        return self._data("audit_log", filter, snapshot_id=snapshot_id, tag=tag, timestamp=timestamp)

    def binlog(
        self,
        filter: str | None = None,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp: Instant | None = None,
    ) -> pa.Table:
        """``$binlog``: :meth:`audit_log` with every column as a one-element array (Paimon's binlog format)."""
        return self._data("binlog", filter, snapshot_id=snapshot_id, tag=tag, timestamp=timestamp)

    def ro(
        self,
        filter: str | None = None,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp: Instant | None = None,
    ) -> pa.Table:
        """``$ro`` (read-optimized): primary-key tables read only their top-level files, with no merge (fast,
        but rows not yet compacted up are missing or stale); append tables read as usual."""
        return self._data("ro", filter, snapshot_id=snapshot_id, tag=tag, timestamp=timestamp)

    def row_tracking(
        self,
        filter: str | None = None,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp: Instant | None = None,
    ) -> pa.Table:
        """``$row_tracking``: the rows of a version of a row-tracking table, each ending with its ``_ROW_ID`` and
        ``_SEQUENCE_NUMBER`` (the read option ``read.row-tracking-columns`` of :meth:`Table.scan` does the same)."""
        return self._data("row_tracking", filter, snapshot_id=snapshot_id, tag=tag, timestamp=timestamp)

    def _data(self, name: str, filter: str | None, **version: Any) -> pa.Table:
        return read_system_table(self._table.store, name, version_options(None, filter=filter, **version))

    def history(self) -> pa.Table:
        """The branch's snapshots, newest first: when (local time), what kind of commit, rows changed and in
        total, schema and the tags on each; snapshots that expired but a tag preserved are listed too
        (``note`` 'expired, kept by tag'; the latest snapshot has ``note`` 'latest')."""
        store = self._table.store
        tags: dict[int, list[str]] = {}
        preserved: dict[int, Snapshot] = {}
        for tag in TagManager(store).list_tags():
            tags.setdefault(tag.snapshot_id, []).append(tag.name)
            preserved[tag.snapshot_id] = tag.snapshot
        snaps = {s.id: s for s in store.snapshots.snapshots()}
        latest = store.snapshots.latest()
        rows = []
        for sid in sorted(set(snaps) | set(preserved), reverse=True):
            s = snaps.get(sid) or preserved[sid]
            note = (
                "latest"
                if latest is not None and sid == latest.id
                else ("expired, kept by tag" if sid not in snaps else None)
            )
            rows.append(
                {
                    "snapshot_id": sid,
                    "commit_time": local_datetime(s.time_millis),
                    "commit_kind": s.commit_kind,
                    "delta_records": s.delta_record_count,
                    "total_records": s.total_record_count,
                    "schema_id": s.schema_id,
                    "tags": tags.get(sid, []),
                    "note": note,
                }
            )
        return pa.Table.from_pylist(rows, schema=HISTORY_SCHEMA)

    def refs_graph(self) -> pa.Table:
        """Every branch's snapshots as a ``git log --graph`` (newest first; the CLI's ``history --graph``): the
        lane picture in ``graph``, the owning ``branch``, the snapshot, its ``refs`` (branch heads, ``tag: t``,
        ``consumer: c``), ``forked_from`` (``<branch>@<id>``) on a branch's oldest own snapshot and its
        ``lane``. Covers the whole table, whichever branch ``t`` is bound to; only metadata is read."""
        return ref_graph(self._table.store).to_arrow()


__all__ = ["Inspect"]
