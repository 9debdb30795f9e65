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
from pyspark_paimon.metadata import expire as _expire
from pyspark_paimon.metadata import orphans as _orphans
from pyspark_paimon.metadata import rollback as _rollback
from pyspark_paimon.metadata import tags as _tags
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

    # -- tags, rollback and maintenance (logic in metadata/tags, rollback, expire, orphans) -------
    def create_tag(self, name: str, snapshot_id: int | None = None, *, time_retained: Any = None,
                   from_timestamp: Any = None, from_tag: str | None = None,
                   ignore_if_exists: bool = False) -> _tags.Tag:
        """Tag the latest snapshot, ``snapshot_id`` (an expired one if a tag preserved it), the snapshot of
        tag ``from_tag``, or the first snapshot committed at or after ``from_timestamp`` (epoch ms or a
        datetime; naive = local time). ``time_retained`` ('7 d', a timedelta or ms) defaults to the table's
        ``tag.default-time-retained``; a tag without retention never expires."""
        return _tags.create_tag(self.fileio, self.path, self.branch, name, snapshot_id=snapshot_id,
                                from_tag=from_tag, from_timestamp=from_timestamp, time_retained=time_retained,
                                ignore_if_exists=ignore_if_exists, options=self.options)

    def replace_tag(self, name: str, snapshot_id: int | None = None, *, time_retained: Any = None,
                    from_timestamp: Any = None, from_tag: str | None = None) -> _tags.Tag:
        """Move the existing tag ``name`` (to the latest snapshot unless a source is given)."""
        return _tags.replace_tag(self.fileio, self.path, self.branch, name, snapshot_id=snapshot_id,
                                 from_tag=from_tag, from_timestamp=from_timestamp, time_retained=time_retained,
                                 options=self.options)

    def rename_tag(self, old: str, new: str) -> _tags.Tag:
        return _tags.TagManager(self.fileio, self.path, self.branch).rename(old, new)

    def delete_tag(self, name: str | Sequence[str], *, ignore_if_not_exists: bool = False,
                   clean_files: bool = False) -> list[str]:
        """Delete tag(s) (a name, a comma-separated list, or a list). Only the tag files are removed unless
        ``clean_files``, which also deletes the files nothing else (on any branch) still references."""
        names = [n.strip() for n in name.split(",")] if isinstance(name, str) else list(name)
        return _expire.delete_tags(self.fileio, self.path, self.branch, names, clean_files=clean_files,
                                   ignore_if_not_exists=ignore_if_not_exists).expired_tags

    def list_tags(self) -> list[_tags.Tag]:
        """This branch's tags, ordered by snapshot id then name."""
        return _tags.TagManager(self.fileio, self.path, self.branch).list()

    def rollback_to(self, snapshot_id: int | None = None, *, tag: str | None = None) -> _rollback.RollbackResult:
        """Make ``snapshot_id`` (or the snapshot of ``tag``) the latest snapshot of this branch again, deleting
        newer snapshots and tags (Paimon semantics; no data files are deleted)."""
        return _rollback.rollback_to(self.fileio, self.path, self.branch, snapshot_id=snapshot_id, tag=tag)

    def expire_snapshots(self, retain_max: int | None = None, retain_min: int | None = None,
                         older_than: Any = None, max_deletes: int | None = None, *,
                         dry_run: bool = False) -> _expire.ExpireResult:
        """Expire old snapshots of this branch; unset arguments come from the ``snapshot.*`` table options.
        Deletes only files no snapshot, tag or changelog of *any* branch still references."""
        return _expire.expire_snapshots(self.fileio, self.path, self.branch, retain_max=retain_max,
                                        retain_min=retain_min, older_than=older_than, max_deletes=max_deletes,
                                        options=self.options, dry_run=dry_run)

    def expire_tags(self, older_than: Any = None, *, clean_files: bool = False) -> list[str]:
        """Delete this branch's tags past their retention (and, with ``older_than``, all tags created before
        it); returns their names."""
        return _expire.expire_tags(self.fileio, self.path, self.branch, older_than=older_than,
                                   clean_files=clean_files).expired_tags

    def remove_orphan_files(self, older_than: Any = None, dry_run: bool = False) -> _orphans.OrphanResult:
        """Delete files under the table that no snapshot, tag or changelog of any branch references and that
        are older than ``older_than`` (default: one day ago). ``dry_run`` only lists them."""
        return _orphans.remove_orphan_files(self.fileio, self.path, older_than=older_than, dry_run=dry_run)
