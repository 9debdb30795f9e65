"""``Scan``: one planned read of a table, made by :meth:`Table.scan`.

A Scan is only read options: the SQL ``filter`` goes in as Spark's ``filter`` read option and the version
keywords as Paimon's ``scan.*`` keys, so a Scan plans through the same path a Spark read does
(``datasource.jobs.prepare_read``) and returns the same rows.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Protocol, Sequence

import pyarrow as pa

from pyspark_paimon.api_types import Instant
from pyspark_paimon.datasource.jobs import ReadJob, prepare_read
from pyspark_paimon.datasource.read.jvm_read import spark_frame
from pyspark_paimon.datasource.read.routing import route
from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.timeutil import to_millis
from pyspark_paimon.planner.compact_strategy import sorted_run_count
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


def explain_job(job: ReadJob) -> dict[str, Any]:
    """The planning report of ``job`` (see :meth:`Scan.explain`), with sorted runs for primary-key reads."""
    plan = job.plan
    out = plan.explain()
    out["readers"] = route(job.planned, job.context).explain()  # what Scan.to_spark reads with the JVM readers
    if plan.schema.primary_keys:
        runs = [sorted_run_count(s.files) for s in plan.splits]
        for item, count in zip(out["split_list"], runs):
            item["sorted_runs"] = count
        out["splits"]["max_sorted_runs"] = max(runs, default=0)
    return out


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

    Nothing is planned until :meth:`to_arrow`, :meth:`to_batches` or :meth:`explain` is called; each call
    plans afresh (so a Scan of the latest snapshot sees commits made after it was built)."""

    def __init__(self, table: TableView, read_options: Mapping[str, str], columns: Sequence[str] | None = None):
        self.table = table
        """The table read."""
        self.read_options: dict[str, str] = dict(read_options)
        """The read options this read plans with (the filter and version keywords under their Paimon keys)."""
        self.columns = list(columns) if columns is not None else None
        """The columns read (None: all)."""

    def __repr__(self) -> str:
        return f"Scan({self.table.identifier!r}, read_options={self.read_options!r}, columns={self.columns!r})"

    def _store(self, opts: ReadOptions) -> FileStore:
        store = self.table.store
        return store if not opts.branch else store.with_branch(opts.branch)

    def read_job(self) -> ReadJob:
        """The planned read (the engine's :class:`~pyspark_paimon.datasource.jobs.ReadJob`), for power users."""
        opts = ReadOptions.from_options(self.read_options)
        return prepare_read(self._store(opts), opts, (), self.columns)

    def to_arrow(self) -> pa.Table:
        """Every selected row as one Arrow table (rows in no particular order)."""
        return self.read_job().to_arrow()

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The selected rows as Arrow batches, split after split (for reads larger than memory)."""
        return self.read_job().read_batches()

    def explain(self) -> dict[str, Any]:
        """How this read is planned, without reading any data file.

        Returns ``snapshot_id``, ``schema_id``, ``counters`` (manifests, partitions, buckets, files and bytes:
        total, selected and skipped per pruning level), a ``splits`` summary (count, partitions, files, bytes,
        rows, raw-convertible splits), ``split_list`` (partition, bucket, files, bytes per split) and ``notes``.
        Primary-key reads also report ``sorted_runs`` per split (level-0 files plus non-empty higher levels:
        what a read of the bucket merges, and what compaction reduces) and ``splits.max_sorted_runs``.
        ``readers`` says which reader :meth:`to_spark` gives each split (``summary``: "jvm: N files, python: M
        splits", and why each Python split needs the Python source).
        """
        return explain_job(self.read_job())

    def to_spark(self, spark: Any) -> Any:
        """This read as a DataFrame of ``spark`` (classic or Connect): the splits that need no merge are read by
        Spark's own Parquet/ORC reader (at JVM speed, with pushdown and column pruning), the others by the
        ``paimon`` source; both from this one plan, unioned. ``explain()['readers']`` says which reader serves
        what. The rows and the schema are those of ``spark.read.format('paimon')`` with the same options."""
        store = self._store(ReadOptions.from_options(self.read_options))
        job = self.read_job()
        return spark_frame(
            spark,
            job,
            route(job.planned, job.context),
            table_uri=store.fileio.uri(store.table_path),
            branch=store.branch,
            read_options={k: v for k, v in self.read_options.items() if k.lower() != "branch"},
            columns=self.columns,
            storage_options=store.fileio.storage_options,
        )


__all__ = ["Scan", "TableView", "explain_job", "version_options"]
