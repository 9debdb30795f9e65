"""``Table``: the Python API of one branch of one Paimon table -- a thin facade over its ``FileStore``.

Spark is the main way to read and write; this class exposes the same engine without Spark for scripts,
tests and maintenance. It keeps few members: reads go through :meth:`Table.scan`, schema changes through
:meth:`Table.update_schema`, and refs, maintenance, chain tables and system tables through the namespaces
``t.tags``, ``t.branches``, ``t.maintenance``, ``t.chain`` and ``t.inspect`` (modules ``table_*.py``).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, Mapping, Sequence

import pyarrow as pa

from pyspark_paimon.api_types import ArrowData, Instant, WriteMode
from pyspark_paimon.datasource.dml.change_commit import MergeResult
from pyspark_paimon.datasource.dml.dml import delete_rows, update_rows
from pyspark_paimon.datasource.dml.dml_spark import SparkMergeBuilder, is_spark_frame
from pyspark_paimon.datasource.dml.merge_builder import MergeBuilder
from pyspark_paimon.datasource.jobs import WriteResult, overwrite_spec, prepare_write
from pyspark_paimon.datasource.schema_changes import merge_arrow_schema
from pyspark_paimon.datasource.stream.follow import Follower
from pyspark_paimon.datasource.versions.diff import Ref, diff_versions
from pyspark_paimon.datasource.write.arrow_input import arrow_stream
from pyspark_paimon.datasource.write.jvm_write import JVM_PATH, JvmPathUnsupportedError, refuse_unsupported, write_frame
from pyspark_paimon.datasource.write.key_upsert import upsert_by_key
from pyspark_paimon.datasource.write.row_id_update import update_by_row_id
from pyspark_paimon.datasource.write.write_paths import AUTO, check_engine, write_python_path
from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.effects import records_effects
from pyspark_paimon.metadata.identifier import split_suffix
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.rows.partition import parse_partition_spec
from pyspark_paimon.metadata.schema.options import CONSUMER_ID
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.commit import OverwriteSpec
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH, Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.schema_update import UpdateSchema
from pyspark_paimon.table_chain import Chain
from pyspark_paimon.table_inspect import Inspect
from pyspark_paimon.table_maintenance import Maintenance
from pyspark_paimon.table_refs import Branches, Tags
from pyspark_paimon.table_scan import Scan, version_options


class Table:
    """One branch of a Paimon table. Cheap to create; every property re-reads the latest metadata.

    Built by :meth:`Table.open` and :class:`~pyspark_paimon.catalog.Catalog`; ``store`` is the format's view
    of the branch (``store.fileio``, ``store.table_path``) for power users, ``uri`` what Spark loads. Nothing
    changes a ``Table`` in place: :meth:`on_branch` and :meth:`refresh` return new ones."""

    def __init__(self, store: FileStore, identifier: str | None = None):
        self.store = store
        """The format's view of this branch (``FileStore``: schemas, snapshots, manifests), for power users."""
        self.identifier = identifier or store.table_path.rstrip("/").rsplit("/", 1)[-1]
        """``db.table`` when opened through a :class:`~pyspark_paimon.catalog.Catalog`, else the directory name."""

    @classmethod
    def open(cls, uri: str, *, branch: str | None = None, storage_options: Mapping[str, Any] | None = None) -> "Table":
        """Open the table stored at ``uri`` (a table directory, optionally with a ``$branch_<b>`` suffix), on
        ``branch`` (default ``main``). ``storage_options`` are the fsspec file system's arguments
        (``{"key": ..., "secret": ...}`` for S3; docs/deploying.md)."""
        base, suffix = split_suffix(uri)
        fileio, path = FileIO.for_uri(base, dict(storage_options or {}))
        table = cls(FileStore(fileio, path, suffix.branch or branch or MAIN_BRANCH))
        table.schema  # noqa: B018 - fail early with a clear error
        return table

    def __repr__(self) -> str:
        return f"Table({self.identifier!r}, branch={self.branch!r}, path={self.uri!r})"

    @property
    def branch(self) -> str:
        """The branch this ``Table`` reads and writes (``main`` unless opened or moved with :meth:`on_branch`)."""
        return self.store.branch

    @property
    def uri(self) -> str:
        """The table's location as a URI (what ``spark.read.format('paimon').load`` takes)."""
        return self.store.fileio.uri(self.store.table_path)

    # -- metadata --------------------------------------------------------------------------------
    @property
    def schema(self) -> TableSchema:
        """The branch's latest schema: columns with their Paimon types and field ids, keys, options, comment
        (``schema.arrow_schema()`` is its Arrow form). Changed with :meth:`update_schema`."""
        return self.store.schema()

    @property
    def options(self) -> dict[str, str]:
        """The table options of the latest schema (a copy: change them with :meth:`update_schema`)."""
        return dict(self.schema.options)

    @property
    def primary_keys(self) -> list[str]:
        """The primary key columns (empty for an append table)."""
        return list(self.schema.primary_keys)

    @property
    def partition_keys(self) -> list[str]:
        """The partition columns (empty for an unpartitioned table)."""
        return list(self.schema.partition_keys)

    def latest_snapshot(self) -> Snapshot | None:
        """The branch's latest snapshot (None before the first commit)."""
        return self.store.snapshots.latest()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        """Snapshot ``snapshot_id`` of the branch (SnapshotNotFoundError naming the retained ids when it is gone)."""
        return self.store.snapshots.snapshot(snapshot_id)

    def snapshots(self) -> list[Snapshot]:
        """Every retained snapshot of the branch, oldest first (``t.inspect.history()`` also lists the expired
        snapshots tags preserved)."""
        return list(self.store.snapshots.snapshots())

    def on_branch(self, name: str) -> "Table":
        """The same table on branch ``name`` (BranchNotFoundError when it does not exist)."""
        table = Table(self.store.with_branch(name or MAIN_BRANCH), self.identifier)
        table.schema  # noqa: B018
        return table

    def refresh(self) -> "Table":
        """A new ``Table`` of the same branch at its latest state, read afresh. Reads already see every new
        commit; what a ``Table`` keeps is the schemas it has read, which a history rewrite (a forced
        ``fast_forward``, ``replace_main``, done here or by another process) can replace under the same ids:
        continue with ``t = t.refresh()`` after one."""
        table = Table(self.store.with_branch(self.branch), self.identifier)
        table.schema  # noqa: B018 - fail now when the branch is gone
        return table

    # -- reads, writes and schema changes ----------------------------------------------------------
    def scan(
        self,
        filter: str | None = None,
        columns: Sequence[str] | None = None,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp: Instant | None = None,
        read_options: Mapping[str, Any] | None = None,
    ) -> Scan:
        """A read of this branch: rows matching the SQL ``filter`` (Spark's ``filter`` read option grammar),
        ``columns`` only, of the version ``snapshot_id`` / ``tag`` / ``timestamp`` (the last snapshot committed
        at or before that :data:`~pyspark_paimon.api_types.Instant`; default the latest snapshot) selects.
        ``read_options`` are Paimon/Spark read option keys; giving a keyword and its key there is an error."""
        opts = version_options(read_options, filter=filter, snapshot_id=snapshot_id, tag=tag, timestamp=timestamp)
        return Scan(self, opts, columns)

    @records_effects("write")
    def write_arrow(
        self,
        data: ArrowData,
        *,
        mode: WriteMode = "append",
        overwrite_partition: Mapping[str, Any] | str | None = None,
        dynamic_partition_overwrite: bool = False,
        merge_schema: bool = False,
        on: str | Sequence[str] | None = None,
    ) -> WriteResult:
        """Write Arrow data in one commit; returns the snapshot committed and the files and rows written.
        ``mode`` (:data:`~pyspark_paimon.api_types.WriteMode`): ``'append'``, or ``'overwrite'`` of the whole
        table, of the partitions the data touches (``dynamic_partition_overwrite=True``) or of one partition
        (``overwrite_partition={"dt": "2025-08-11"}`` or ``"dt=2025-08-11"``).

        ``data`` is any Arrow stream: a pyarrow ``Table``, ``RecordBatch`` or ``RecordBatchReader``, an object with
        ``__arrow_c_stream__`` (a polars DataFrame, a DuckDB result...), an iterable of ``RecordBatch`` es, or a
        pandas DataFrame. A stream is written batch by batch (files are flushed as the write buffer fills), so it
        need not fit in memory.

        ``merge_schema`` (or the table option ``write.merge-schema``): columns the data has and the table lacks are
        added to the table (and, with ``write.merge-schema.type-widening``, columns widened to the data's types)
        before the data is written, in the same commit sequence; columns the data lacks are written NULL
        (docs/writing.md).

        Data-evolution tables (docs/row-tracking.md) also take ``mode='update'``: ``data`` holds ``_ROW_ID`` and
        some table columns, which are set on the rows those ids name (files of those columns only), and
        ``mode='upsert'`` with ``on=`` key column(s): rows whose key the table holds update those rows' other
        columns, the rest are appended as new rows. Either is one commit and takes no other option."""
        if mode in ("update", "upsert"):
            if overwrite_partition or dynamic_partition_overwrite or merge_schema or (mode == "update") != (on is None):
                raise OptionError(
                    f"mode='{mode}' takes {'on= (the key columns)' if mode == 'upsert' else 'no on='} and no "
                    "overwrite_partition / dynamic_partition_overwrite / merge_schema."
                )
            if mode == "update":
                return update_by_row_id(self.store, data)
            assert on is not None
            return upsert_by_key(self.store, data, on)
        if on is not None:
            raise OptionError("on= (the key columns) is for mode='upsert' only.")
        spec = self._overwrite(mode, overwrite_partition, dynamic_partition_overwrite)
        batches = arrow_stream(data, self.schema.arrow_schema())
        write_options = merge_arrow_schema(self.store, batches.schema, self.identifier, merge_schema)
        job = prepare_write(self.store, spec, write_options)
        writer = job.new_writer("local")
        try:
            for batch in batches:
                writer.write(batch)
            messages = writer.prepare_commit()
        except BaseException:
            writer.abort()
            raise
        return WriteResult.of(job.commit(messages), messages)

    @records_effects("write")
    def write_spark(
        self,
        source: Any,
        *,
        mode: WriteMode = "append",
        overwrite_partition: Mapping[str, Any] | str | None = None,
        dynamic_partition_overwrite: bool = False,
        engine: str = "auto",
    ) -> WriteResult:
        """Write the Spark DataFrame ``source`` (classic or Connect) in one commit. ``mode``,
        ``overwrite_partition`` and ``dynamic_partition_overwrite`` as in :meth:`write_arrow`.

        ``engine`` chooses the write path (docs/writing.md "Two write paths"): ``"jvm"`` has Spark's own Parquet
        writer write the data files (this package reads their footers, moves them into the table and commits); it
        writes Parquet append tables (unaware or fixed bucket) and fixed-bucket primary-key tables with a key of
        any number of columns (one row per key per write), atomic column types, and refuses any other table with
        an ``OptionError`` before anything is written. ``"python"`` writes with ``df.write.format("paimon")``,
        which writes every table. ``"auto"`` (the default) takes the JVM path where it writes the table, else the
        Python path. The result's ``path`` is ``"jvm"`` or ``"python"``; ``fallback`` says why ``"auto"`` took
        the Python path. ``source`` must have the table's columns; types differing from the table's are cast by
        Spark where store assignment allows."""
        check_engine(engine)
        spec = self._overwrite(mode, overwrite_partition, dynamic_partition_overwrite)
        fallback = None
        if engine != "python":
            try:
                refuse_unsupported(self.schema, self.store.table_path)
                snapshot, messages = write_frame(prepare_write(self.store, spec), source)
                return WriteResult.of(snapshot, messages, path=JVM_PATH)
            except JvmPathUnsupportedError as exc:  # raised before anything was written
                if engine != AUTO:
                    raise
                fallback = str(exc)
        return write_python_path(
            self.store,
            source,
            mode=mode,
            overwrite_partition=overwrite_partition,
            dynamic_partition_overwrite=dynamic_partition_overwrite,
            fallback=fallback,
        )

    def _overwrite(
        self, mode: str, overwrite_partition: Mapping[str, Any] | str | None, dynamic: bool
    ) -> OverwriteSpec | None:
        """What a write's ``mode`` and overwrite arguments replace (None: an append)."""
        if mode not in ("append", "overwrite"):
            raise OptionError(
                f"mode must be 'append' or 'overwrite', got '{mode}' ('update' and 'upsert' are modes of "
                "t.write_arrow, which writes data-evolution tables)."
            )
        if mode == "append":
            if overwrite_partition or dynamic:
                raise OptionError("overwrite_partition / dynamic_partition_overwrite need mode='overwrite'.")
            return None
        static = (
            parse_partition_spec(overwrite_partition)
            if isinstance(overwrite_partition, str)
            else (dict(overwrite_partition) if overwrite_partition else None)
        )
        return overwrite_spec(self.schema, "dynamic" if dynamic else None, static)

    # -- row-level changes (docs/dml.md) -------------------------------------------------------------
    @records_effects("delete rows")
    def delete(self, filter: str) -> MergeResult:
        """Delete the rows the SQL ``filter`` selects (the ``filter`` read option's grammar; ``'true'`` = all rows)
        from this branch in one commit; returns the snapshot committed and the counts (``result.deleted``).
        Primary-key tables write retractions; append tables rewrite the touched files (copy-on-write) or, with
        deletion vectors, write vectors."""
        return delete_rows(self.store, filter)

    @records_effects("update rows")
    def update(self, set: Mapping[str, str], filter: str | None = None) -> MergeResult:
        """Set ``{column: SQL expression}`` (e.g. ``{'v': 'v * 2', 'note': "'fixed'"}``) on the rows ``filter``
        selects (all rows without one), in one commit; returns the snapshot committed and the counts
        (``result.updated``). Key and partition columns cannot be set."""
        return update_rows(self.store, set, filter)

    def merge(self, source: ArrowData | Any, on: str | Sequence[str]) -> MergeBuilder:
        """A MERGE of ``source`` into this branch, matching rows on the key columns ``on``; add clauses and run
        it with ``execute()`` (one commit; returns a ``MergeResult`` of counts)::

            t.merge(new_rows, on="id").when_matched_update_all().when_not_matched_insert_all().execute()

        ``source`` is Arrow data as :meth:`write_arrow` takes it (matched in this process) or a Spark DataFrame
        (matched in the executors, one commit from the driver). Expressions name ``source.<col>`` and
        ``target.<col>``."""
        if is_spark_frame(source):
            return SparkMergeBuilder(self.store, source, on)
        return MergeBuilder(self.store, source, on)

    def diff(self, from_ref: Ref, to_ref: Ref) -> pa.Table:
        """The rows that differ from version ``from_ref`` to ``to_ref`` (a snapshot id, a tag, a branch name or
        ``'<branch>.<tag>'``), as Arrow: a leading ``rowkind`` column (``+I``, ``-D``, ``-U``/``+U`` pairs) and
        the table's columns, sorted by key. Only the buckets (or files) that differ are read. Primary-key tables
        are compared by key; append tables by file (docs/dml.md). For Spark: ``spark.createDataFrame(t.diff(...))``."""
        return diff_versions(self.store, from_ref, to_ref)

    def follow(
        self,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp: Instant | None = None,
        consumer: str | None = None,
        position: str | None = None,
        max_rows: int = 10_000,
        columns: Sequence[str] | None = None,
        filter: str | None = None,
        read_options: Mapping[str, Any] | None = None,
    ) -> Follower:
        """Follow this branch's changes without Spark (docs/following.md): ``poll()`` returns the rows committed
        since the last poll, at most ``max_rows``, with their kinds (``+I``, ``-U``, ``+U``, ``-D``), exactly as a
        ``readStream`` of the same table returns them; iterating polls for ever.

        Where it starts: ``snapshot_id`` (the changes of that snapshot and later), ``tag`` (the tag's rows, then
        the changes after it), ``timestamp`` (the changes committed at or after it), a ``consumer`` 's recorded
        progress (a new consumer starts as without one), ``position`` (exactly after a poll whose
        ``Changes.position`` you stored), else the latest state and then its changes. ``commit()`` advances the
        consumer only when asked. ``columns``, ``filter`` and ``read_options`` (the streaming read options,
        e.g. ``scan.mode``) narrow it as they narrow a stream. An expired start is a SnapshotNotFoundError."""
        options = version_options(read_options, filter=filter, snapshot_id=snapshot_id, tag=tag, timestamp=timestamp)
        if consumer is not None:
            options[CONSUMER_ID.key] = consumer
        return Follower(
            self.store, options, max_rows=max_rows, columns=columns, position=position, name=self.identifier
        )

    def update_schema(self) -> UpdateSchema:
        """Schema changes committed as ONE new schema version::

            with t.update_schema() as u:
                u.add_column("note", "string")
                u.set_options({"k": "v"})

        Leaving the block with an exception commits nothing; ``u.commit()`` is the explicit form."""
        return UpdateSchema(self)

    # -- namespaces -------------------------------------------------------------------------------
    @cached_property
    def tags(self) -> Tags:
        """The branch's tags: create, replace, rename, delete, get, list, expire."""
        return Tags(self)

    @cached_property
    def branches(self) -> Branches:
        """The table's branches: create, rename, delete, list, expire, merge, cherry-pick, publish."""
        return Branches(self)

    @cached_property
    def maintenance(self) -> Maintenance:
        """Compaction, snapshot expiration, orphan-file removal, rollback."""
        return Maintenance(self)

    @cached_property
    def chain(self) -> Chain:
        """What only chain tables have: explain, compact, hybrid reads, chain tags."""
        return Chain(self)

    @cached_property
    def inspect(self) -> Inspect:
        """The system tables as Arrow, one method each, and the branch's history."""
        return Inspect(self)
