"""``Table``: the Python API of one branch of one Paimon table (schema, snapshots, evolution, Arrow I/O).

Spark is the main way to read and write; this class exposes the same engine without Spark for scripts,
tests and maintenance (tags, branches, compaction live here too as they are added).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa

from pyspark_paimon.datasource.jobs import (
    ReadJob,
    overwrite_spec,
    parse_partition_spec,
    prepare_read,
    prepare_write,
)
from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.fileio import FileIO
from pyspark_paimon.metadata.options import validate_table_options
from pyspark_paimon.metadata.schema import TableSchema
from pyspark_paimon.metadata.snapshot import MAIN_BRANCH, Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types import DataType, parse_ddl
from pyspark_paimon.planner.predicate import Leaf
from pyspark_paimon.planner.read_options import ReadOptions


class Table:
    """One branch of a Paimon table. Cheap to create; every property re-reads the latest metadata."""

    def __init__(self, fileio: FileIO, path: str, identifier: str | None = None, branch: str = MAIN_BRANCH):
        self.fileio = fileio
        self.path = path
        self.identifier = identifier or path.rstrip("/").rsplit("/", 1)[-1]
        self.branch = branch or MAIN_BRANCH
        self.store = FileStore(fileio, path, self.branch)

    @classmethod
    def open(cls, uri: str, branch: str = MAIN_BRANCH, **storage_options: Any) -> "Table":
        """Open the table stored at ``uri`` (a table directory, optionally with a ``$branch_<b>`` suffix)."""
        from pyspark_paimon.metadata.identifier import split_suffix  # noqa: PLC0415

        base, suffix = split_suffix(uri)
        fileio, path = FileIO.for_uri(base, storage_options)
        table = cls(fileio, path, branch=suffix.branch or branch)
        table.schema  # noqa: B018 - fail early with a clear error
        return table

    def __repr__(self) -> str:
        return f"Table({self.identifier!r}, branch={self.branch!r}, path={self.uri!r})"

    @property
    def uri(self) -> str:
        return self.fileio.uri(self.path)

    # -- metadata --------------------------------------------------------------------------------
    @property
    def schema(self) -> TableSchema:
        return self.store.schema()

    @property
    def arrow_schema(self) -> pa.Schema:
        return self.schema.arrow_schema()

    @property
    def options(self) -> dict[str, str]:
        return dict(self.schema.options)

    @property
    def primary_keys(self) -> list[str]:
        return list(self.schema.primary_keys)

    @property
    def partition_keys(self) -> list[str]:
        return list(self.schema.partition_keys)

    def latest_snapshot(self) -> Snapshot | None:
        return self.store.snapshots.latest()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self.store.snapshots.snapshot(snapshot_id)

    def snapshots(self) -> list[Snapshot]:
        return list(self.store.snapshots.snapshots())

    def branch_table(self, branch: str) -> "Table":
        """The same table on another branch."""
        table = Table(self.fileio, self.path, self.identifier, branch)
        table.schema  # noqa: B018
        return table

    # -- schema evolution (each writes schema-N+1 on this branch) --------------------------------
    def add_column(self, name: str, data_type: DataType | str, comment: str | None = None) -> TableSchema:
        if isinstance(data_type, str):
            data_type = parse_ddl(f"`{name}` {data_type}")[0][1]
        return self.store.schemas.add_column(name, data_type, comment)

    def drop_column(self, name: str) -> TableSchema:
        return self.store.schemas.drop_column(name)

    def rename_column(self, old: str, new: str) -> TableSchema:
        return self.store.schemas.rename_column(old, new)

    def set_options(self, options: Mapping[str, Any]) -> TableSchema:
        opts = {k: str(v) for k, v in options.items()}
        validate_table_options(opts, creating=True, table=self.identifier)
        return self.store.schemas.set_options(opts)

    def remove_options(self, keys: Iterable[str]) -> TableSchema:
        return self.store.schemas.remove_options(list(keys))

    # -- Arrow I/O without Spark -------------------------------------------------------------------
    def new_read(self, options: Mapping[str, str] | None = None, predicate: Sequence[Leaf] = (),
                 columns: Sequence[str] | None = None) -> ReadJob:
        opts = ReadOptions.from_options(options or {})
        store = self.store if not opts.branch else self.store.with_branch(opts.branch)
        return prepare_read(store, opts, predicate, columns, exact_filters=predicate)

    def to_arrow(self, options: Mapping[str, str] | None = None, predicate: Sequence[Leaf] = (),
                 columns: Sequence[str] | None = None) -> pa.Table:
        """Read this branch (latest snapshot, or the version named by time-travel ``options``)."""
        return self.new_read(options, predicate, columns).to_arrow()

    def write_arrow(self, data: pa.Table | pa.RecordBatch, mode: str = "append",
                    overwrite_partition: Mapping[str, Any] | str | None = None,
                    dynamic_partition_overwrite: bool = False) -> Snapshot | None:
        """Write Arrow data in one commit. ``mode`` is 'append' or 'overwrite' (as in Spark)."""
        if mode not in ("append", "overwrite"):
            raise OptionError(f"mode must be 'append' or 'overwrite', got '{mode}'.")
        spec = None
        if mode == "overwrite":
            static = parse_partition_spec(overwrite_partition) if isinstance(overwrite_partition, str) else (
                dict(overwrite_partition) if overwrite_partition else None)
            spec = overwrite_spec(self.schema, "dynamic" if dynamic_partition_overwrite else None, static)
        elif overwrite_partition or dynamic_partition_overwrite:
            raise OptionError("overwrite_partition / dynamic_partition_overwrite need mode='overwrite'.")
        job = prepare_write(self.store, spec)
        writer = job.new_writer("local")
        try:
            writer.write(data)
            messages = writer.prepare_commit()
        except BaseException:
            writer.abort()
            raise
        return job.commit(messages)
