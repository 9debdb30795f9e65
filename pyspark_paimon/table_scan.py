"""``Scan``: one planned read of a table, made by :meth:`Table.scan`.

A Scan is only read options: the SQL ``filter`` goes in as Spark's ``filter`` read option and the version
keywords as Paimon's ``scan.*`` keys, so a Scan plans through the same path a Spark read does
(``datasource.jobs.prepare_read``) and returns the same rows.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Protocol, Sequence

import pyarrow as pa

from pyspark_paimon.api_types import Instant
from pyspark_paimon.datasource.jobs import ReadJob, prepare_read
from pyspark_paimon.datasource.read.jvm_read import spark_frame
from pyspark_paimon.datasource.read.routing import route
from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.timeutil import to_millis
from pyspark_paimon.planner.explain import ScanExplain, explain_plan
from pyspark_paimon.planner.read_options import FILTER_KEY, ReadOptions

SNAPSHOT_ID_KEY = "scan.snapshot-id"
TAG_NAME_KEY = "scan.tag-name"
TIMESTAMP_MILLIS_KEY = "scan.timestamp-millis"


def version_options(
    read_options: Mapping[str, Any] | None = None,
    *,
    filter: str | None = None,
    snapshot_id: int | None = None,
    tag: str | None = None,
    timestamp: Instant | None = None,
) -> dict[str, str]:
    """The read options of a read: ``read_options`` plus the keyword arguments under their Paimon keys.

    A keyword and the same key in ``read_options`` would be two answers to one question, so that is an error
    (naming both) rather than a silent precedence rule."""
    opts = {str(k): str(v) for k, v in (read_options or {}).items()}
    given = {
        FILTER_KEY: ("filter", filter),
        SNAPSHOT_ID_KEY: ("snapshot_id", snapshot_id),
        TAG_NAME_KEY: ("tag", tag),
        TIMESTAMP_MILLIS_KEY: ("timestamp", timestamp),
    }
    lowered = {k.lower() for k in opts}
    for key, (arg, value) in given.items():
        if value is None:
            continue
        if key in lowered:
            raise OptionError(f"{arg}= and read_options['{key}'] both choose the same thing; pass only one of them.")
        if arg == "timestamp":
            opts[key] = str(to_millis(value, "timestamp"))
        elif arg == "snapshot_id":
            if isinstance(value, bool) or not isinstance(value, int):
                raise OptionError(f"snapshot_id must be an int, got {value!r}.")
            opts[key] = str(value)
        else:
            opts[key] = str(value)
    return opts


def explain_job(job: ReadJob) -> ScanExplain:
    """The planning report of ``job`` (see :meth:`Scan.explain`), with the reader each split gets."""
    return replace(explain_plan(job.plan), readers=route(job.planned, job.context).explain())


class TableView(Protocol):
    """What the API modules (Scan and the ``t.*`` namespaces) use of a :class:`~pyspark_paimon.table.Table`;
    they type against this so that none of them imports ``table.py`` (which imports them)."""

    store: FileStore
    identifier: str

    @property
    def branch(self) -> str: ...

    @property
    def options(self) -> dict[str, str]: ...

    def latest_snapshot(self) -> Snapshot | None: ...

    def on_branch(self, name: str) -> "TableView": ...

    def scan(
        self,
        filter: str | None = None,
        columns: Sequence[str] | None = None,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp: Instant | None = None,
        read_options: Mapping[str, Any] | None = None,
    ) -> "Scan": ...


class Scan:
    """A read of one table version: ``t.scan("id > 3", ["id", "v"], tag="t1").to_arrow()``.

    Nothing is planned until the rows, the count or the plan are asked for (:meth:`to_arrow`,
    :meth:`to_arrow_batch_reader`, :meth:`count`, :meth:`explain`, :meth:`to_spark`); each call plans afresh
    (so a Scan of the latest snapshot sees commits made after it was built). A Scan is an Arrow stream
    (``__arrow_c_stream__``): ``pa.table(scan)``, ``polars.DataFrame(scan)`` and DuckDB's
    ``duckdb.sql("select ... from scan")`` read it directly."""

    def __init__(
        self,
        table: TableView,
        read_options: Mapping[str, str],
        columns: Sequence[str] | None = None,
        row_limit: int | None = None,
    ):
        self.table = table
        """The table read."""
        self.read_options: dict[str, str] = dict(read_options)
        """The read options this read plans with (the filter and version keywords under their Paimon keys)."""
        self.columns = list(columns) if columns is not None else None
        """The columns read (None: all)."""
        self.row_limit = row_limit
        """At most this many rows are read (None: no limit; :meth:`limit` sets it)."""

    def __repr__(self) -> str:
        limit = f", limit={self.row_limit}" if self.row_limit is not None else ""
        return f"Scan({self.table.identifier!r}, read_options={self.read_options!r}, columns={self.columns!r}{limit})"

    def _store(self, opts: ReadOptions) -> FileStore:
        store = self.table.store
        return store if not opts.branch else store.with_branch(opts.branch)

    def read_job(self, columns: Sequence[str] | None = None) -> ReadJob:
        """The planned read (the engine's :class:`~pyspark_paimon.datasource.jobs.ReadJob`), for power users;
        ``columns`` replaces the Scan's projection."""
        opts = ReadOptions.from_options(self.read_options)
        return prepare_read(self._store(opts), opts, (), self.columns if columns is None else columns)

    def limit(self, n: int) -> "Scan":
        """The same read returning at most ``n`` rows (which ones is not defined): reading stops once ``n`` rows
        are out, so ``t.scan().limit(10).to_arrow()`` opens only the files those rows come from."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise OptionError(f"limit must be an int >= 0, got {n!r}.")
        return Scan(self.table, self.read_options, self.columns, n)

    def to_arrow(self) -> pa.Table:
        """Every selected row as one Arrow table (rows in no particular order), read on every core; with a
        :meth:`limit`, split after split until it is reached."""
        if self.row_limit is not None:
            return self.to_arrow_batch_reader().read_all()
        return self.read_job().to_arrow()

    def to_arrow_batch_reader(self) -> pa.RecordBatchReader:
        """The selected rows as a ``pyarrow.RecordBatchReader``, in bounded memory: splits are read one at a time
        as the reader is consumed (a split is a data file, or a primary-key bucket's merged files), and reading
        stops at the :meth:`limit`. Its schema is the read's, even when no row matches."""
        return self.read_job().batch_reader(self.row_limit)

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The Arrow PyCapsule stream protocol: what ``pa.table(scan)``, ``polars.DataFrame(scan)`` and DuckDB
        read (through :meth:`to_arrow_batch_reader`, so in bounded memory)."""
        return self.to_arrow_batch_reader().__arrow_c_stream__(requested_schema)

    def count(self) -> int:
        """How many rows the read returns (at most the :meth:`limit`), without decoding what metadata answers
        exactly: splits read without a merge and without a row filter left to apply (append tables; compacted
        primary-key buckets; deletion vectors that record their cardinality) are counted from their files'
        row counts, any other split is read (no column decoded but what a merge or a filter needs)."""
        return self.read_job(columns=[]).count_rows(self.row_limit)

    def explain(self) -> ScanExplain:
        """How this read is planned, without reading any data file: a
        :class:`~pyspark_paimon.planner.explain.ScanExplain` with ``snapshot_id``, ``schema_id``, ``counters``
        (manifests, partitions, buckets, files and bytes: total, selected and skipped per pruning level), a
        ``splits`` summary (count, partitions, files, bytes, stored rows, raw-convertible splits and, for
        primary-key reads, ``max_sorted_runs``), ``split_list`` (partition, bucket, files, bytes, rows per
        split; ``sorted_runs`` for primary-key reads: level-0 files plus non-empty higher levels, what a read of
        the bucket merges and compaction reduces), ``notes``, and ``readers``: which reader :meth:`to_spark`
        gives each split (``summary``: "jvm: N files, python: M splits"; ``python_reasons``).
        ``dataclasses.asdict`` gives it as a dict."""
        return explain_job(self.read_job())

    def to_spark(self, spark: Any) -> Any:
        """This read as a DataFrame of ``spark`` (classic or Connect): the splits that need no merge are read by
        Spark's own Parquet/ORC reader (at JVM speed, with pushdown and column pruning), the others by the
        ``paimon`` source; both from this one plan, unioned. ``explain().readers`` says which reader serves
        what. The rows and the schema are those of ``spark.read.format('paimon')`` with the same options (and
        the :meth:`limit`, applied with the DataFrame's ``limit``)."""
        store = self._store(ReadOptions.from_options(self.read_options))
        job = self.read_job()
        frame = spark_frame(
            spark,
            job,
            route(job.planned, job.context),
            table_uri=store.fileio.uri(store.table_path),
            branch=store.branch,
            read_options={k: v for k, v in self.read_options.items() if k.lower() != "branch"},
            columns=self.columns,
            storage_options=store.fileio.current_storage_options(),
        )
        return frame if self.row_limit is None else frame.limit(self.row_limit)


__all__ = ["Scan", "TableView", "explain_job", "version_options"]
