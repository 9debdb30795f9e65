"""``Table``: the Python API of one branch of one Paimon table (schema, snapshots, evolution, Arrow I/O).

Spark is the main way to read and write; this class exposes the same engine without Spark for scripts,
tests and maintenance (tags, branches, compaction live here too as they are added).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

import pyarrow as pa

from pyspark_paimon.datasource import chain as _chain
from pyspark_paimon.datasource import compact as _compact
from pyspark_paimon.datasource.jobs import ReadJob, overwrite_spec, prepare_read, prepare_write
from pyspark_paimon.datasource.system_tables import read_system_table
from pyspark_paimon.errors import ChainTableError, OptionError, PaimonError
from pyspark_paimon.metadata.identifier import split_suffix
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.maintenance import expire as _expire
from pyspark_paimon.metadata.maintenance import orphans as _orphans
from pyspark_paimon.metadata.refs import branches as _branches
from pyspark_paimon.metadata.refs import rollback as _rollback
from pyspark_paimon.metadata.refs import tags as _tags
from pyspark_paimon.metadata.rows.partition import parse_partition_spec
from pyspark_paimon.metadata.schema.options import validate_table_options
from pyspark_paimon.metadata.schema.table_schema import SchemaManager, TableSchema
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH, Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types.ddl import parse_ddl
from pyspark_paimon.metadata.types.model import DataType
from pyspark_paimon.planner.compact_strategy import sorted_run_count
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
    # On the main side of a chain table each change is applied to the snapshot and delta branches too, one
    # branch after the other (not atomic), because chain reads need the same schema on all three.
    def add_column(self, name: str, data_type: DataType | str, comment: str | None = None) -> TableSchema:
        parsed = parse_ddl(f"`{name}` {data_type}")[0][1] if isinstance(data_type, str) else data_type
        return self._evolve_chain(lambda m: m.add_column(name, parsed, comment))

    def drop_column(self, name: str) -> TableSchema:
        return self._evolve_chain(lambda m: m.drop_column(name))

    def rename_column(self, old: str, new: str) -> TableSchema:
        return self._evolve_chain(lambda m: m.rename_column(old, new))

    def set_options(self, options: Mapping[str, Any]) -> TableSchema:
        opts = {k: str(v) for k, v in options.items()}
        validate_table_options(opts, creating=True, table=self.identifier)
        _chain.check_chain_options(self.store, {**self.schema.options, **opts}, self.identifier)
        return self._evolve_chain(lambda m: m.set_options(opts))

    def remove_options(self, keys: Iterable[str]) -> TableSchema:
        keys = list(keys)
        _chain.check_chain_options(
            self.store, {k: v for k, v in self.schema.options.items() if k not in keys}, self.identifier
        )
        return self._evolve_chain(lambda m: m.remove_options(keys))

    def _evolve_chain(self, change: Callable[[SchemaManager], TableSchema]) -> TableSchema:
        peers = _chain.chain_peer_branches(self.store, self.schema)
        result = change(self.store.schemas)
        done = [self.branch]
        for branch in dict.fromkeys([*peers, *_chain.chain_peer_branches(self.store, result)]):
            try:
                change(SchemaManager(self.fileio, self.path, branch))
            except PaimonError as exc:
                raise ChainTableError(
                    f"Chain table {self.identifier}: the change was applied to branch(es) {done} but failed on branch "
                    f"'{branch}': {exc}. Chain reads need the same schema on all three branches; fix branch "
                    f"'{branch}' with Table.branch_table('{branch}')."
                ) from exc
            done.append(branch)
        return result

    # -- Arrow I/O without Spark -------------------------------------------------------------------
    def new_read(
        self,
        options: Mapping[str, str] | None = None,
        predicate: Sequence[Leaf] = (),
        columns: Sequence[str] | None = None,
    ) -> ReadJob:
        opts = ReadOptions.from_options(options or {})
        store = self.store if not opts.branch else self.store.with_branch(opts.branch)
        return prepare_read(store, opts, predicate, columns, exact_filters=predicate)

    def to_arrow(
        self,
        options: Mapping[str, str] | None = None,
        predicate: Sequence[Leaf] = (),
        columns: Sequence[str] | None = None,
    ) -> pa.Table:
        """Read this branch (latest snapshot, or the version named by time-travel ``options``)."""
        return self.new_read(options, predicate, columns).to_arrow()

    def inspect(self, name: str, options: Mapping[str, str] | None = None) -> pa.Table:
        """System table ``name`` of this branch as Arrow: ``snapshots``, ``schemas``, ``options``, ``tags``,
        ``branches``, ``files``, ``manifests`` or ``partitions`` (Paimon's columns; the same rows Spark reads
        from ``t$name``). ``options`` may time-travel ``files``/``manifests``/``partitions``
        (``{'scan.tag-name': 't1'}``)."""
        return read_system_table(self.store, name.lstrip("$"), options)

    def explain(self, options: Mapping[str, str] | None = None, predicate: Sequence[Leaf] = ()) -> dict[str, Any]:
        """How a read with ``options`` and ``predicate`` is planned, without reading any data file.

        Returns ``snapshot_id``, ``schema_id``, ``counters`` (manifests, partitions, buckets, files and bytes:
        total, selected and skipped per pruning level), a ``splits`` summary (count, partitions, files, bytes,
        rows, raw-convertible splits), ``split_list`` (partition, bucket, files, bytes per split) and ``notes``.
        Primary-key reads also report ``sorted_runs`` per split (level-0 files plus non-empty higher levels:
        what a read of the bucket merges, and what compaction reduces) and ``splits.max_sorted_runs``.
        """
        plan = self.new_read(options, predicate).plan
        out = plan.explain()
        if plan.schema.primary_keys:
            runs = [sorted_run_count(s.files) for s in plan.splits]
            for item, count in zip(out["split_list"], runs):
                item["sorted_runs"] = count
            out["splits"]["max_sorted_runs"] = max(runs, default=0)
        return out

    def write_arrow(
        self,
        data: pa.Table | pa.RecordBatch,
        mode: str = "append",
        overwrite_partition: Mapping[str, Any] | str | None = None,
        dynamic_partition_overwrite: bool = False,
    ) -> Snapshot | None:
        """Write Arrow data in one commit. ``mode`` is 'append' or 'overwrite' (as in Spark)."""
        if mode not in ("append", "overwrite"):
            raise OptionError(f"mode must be 'append' or 'overwrite', got '{mode}'.")
        spec = None
        if mode == "overwrite":
            static = (
                parse_partition_spec(overwrite_partition)
                if isinstance(overwrite_partition, str)
                else (dict(overwrite_partition) if overwrite_partition else None)
            )
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
    def create_tag(
        self,
        name: str,
        snapshot_id: int | None = None,
        *,
        time_retained: Any = None,
        from_timestamp: Any = None,
        from_tag: str | None = None,
        ignore_if_exists: bool = False,
        timestamp_rule: str = _tags.AT_OR_AFTER,
    ) -> _tags.Tag:
        """Tag the latest snapshot, ``snapshot_id`` (an expired one if a tag preserved it), the snapshot of
        tag ``from_tag``, or the snapshot ``from_timestamp`` (epoch ms or a datetime; naive = local time)
        selects: by default the first committed at or after it (Paimon's ``create_tag_from_timestamp``), with
        ``timestamp_rule='last-at-or-before'`` the last committed at or before it (the table as of that
        instant, as Databend and Iceberg tag "as of"). ``time_retained`` ('7 d', a timedelta or ms) defaults
        to the table's ``tag.default-time-retained``; a tag without retention never expires."""
        return _tags.create_tag(
            self.store,
            name,
            snapshot_id=snapshot_id,
            from_tag=from_tag,
            from_timestamp=from_timestamp,
            time_retained=time_retained,
            ignore_if_exists=ignore_if_exists,
            options=self.options,
            timestamp_rule=timestamp_rule,
        )

    def replace_tag(
        self,
        name: str,
        snapshot_id: int | None = None,
        *,
        time_retained: Any = None,
        from_timestamp: Any = None,
        from_tag: str | None = None,
        timestamp_rule: str = _tags.AT_OR_AFTER,
    ) -> _tags.Tag:
        """Move the existing tag ``name`` (to the latest snapshot unless a source is given; sources as in
        :meth:`create_tag`)."""
        return _tags.replace_tag(
            self.store,
            name,
            snapshot_id=snapshot_id,
            from_tag=from_tag,
            from_timestamp=from_timestamp,
            time_retained=time_retained,
            options=self.options,
            timestamp_rule=timestamp_rule,
        )

    def rename_tag(self, old: str, new: str) -> _tags.Tag:
        return _tags.TagManager(self.store).rename(old, new)

    def delete_tag(
        self, name: str | Sequence[str], *, ignore_if_not_exists: bool = False, clean_files: bool = True
    ) -> list[str]:
        """Delete tag(s) (a name, a comma-separated list, or a list) and, as Java Paimon does, the files only
        they kept alive: files no snapshot, tag or changelog of any branch still references.
        ``clean_files=False`` removes only the tag files (``remove_orphan_files`` reclaims the rest later)."""
        names = [n.strip() for n in name.split(",")] if isinstance(name, str) else list(name)
        return _expire.delete_tags(
            self.store, names, clean_files=clean_files, ignore_if_not_exists=ignore_if_not_exists
        ).expired_tags

    def list_tags(self) -> list[_tags.Tag]:
        """This branch's tags, ordered by snapshot id then name."""
        return _tags.TagManager(self.store).list_tags()

    def rollback_to(self, snapshot_id: int | None = None, *, tag: str | None = None) -> _rollback.RollbackResult:
        """Make ``snapshot_id`` (or the snapshot of ``tag``) the latest snapshot of this branch again, deleting
        newer snapshots and tags (Paimon semantics; no data files are deleted)."""
        return _rollback.rollback_to(self.store, snapshot_id=snapshot_id, tag=tag)

    def expire_snapshots(
        self,
        retain_max: int | None = None,
        retain_min: int | None = None,
        older_than: Any = None,
        max_deletes: int | None = None,
        *,
        dry_run: bool = False,
    ) -> _expire.ExpireResult:
        """Expire old snapshots of this branch; unset arguments come from the ``snapshot.*`` table options.
        Deletes only files no snapshot, tag or changelog of *any* branch still references."""
        return _expire.expire_snapshots(
            self.store,
            retain_max=retain_max,
            retain_min=retain_min,
            older_than=older_than,
            max_deletes=max_deletes,
            options=self.options,
            dry_run=dry_run,
        )

    def expire_tags(self, older_than: Any = None, *, clean_files: bool = True) -> list[str]:
        """Delete this branch's tags past their retention (and, with ``older_than``, all tags created before
        it) and, as Java does, the files only they kept alive (``clean_files=False``: the tag files only);
        returns their names."""
        return _expire.expire_tags(self.store, older_than=older_than, clean_files=clean_files).expired_tags

    def remove_orphan_files(self, older_than: Any = None, dry_run: bool = False) -> _orphans.OrphanResult:
        """Delete files under the table that no snapshot, tag or changelog of any branch references and that
        are older than ``older_than`` (default: one day ago). ``dry_run`` only lists them."""
        return _orphans.remove_orphan_files(self.store, older_than=older_than, dry_run=dry_run)

    # -- compaction (logic in planner/compact_strategy.py and datasource/compact.py) ------------
    def compact(
        self,
        partitions: Iterable[Mapping[str, Any] | str] | Mapping[str, Any] | str | None = None,
        full: bool = False,
        spark: Any = None,
    ) -> _compact.CompactResult:
        """Compact this branch in one COMPACT snapshot (Paimon's ``CALL sys.compact``).

        ``partitions`` (dicts or 'k=v,k2=v2' specs; a partial spec matches every partition with those values)
        restricts it; default every partition. Primary-key buckets: ``full`` merges every file of a bucket
        into sorted files at the max level (reads then need no merge), otherwise Paimon's universal rules
        (``num-sorted-run.compaction-trigger``, ``compaction.max-size-amplification-percent``,
        ``compaction.size-ratio``) decide what to merge. Fixed append buckets: small files are rewritten into
        files of ``target-file-size`` (``compaction.min.file-num``; ``full``: Paimon's full rule). Unaware-bucket
        append tables: Paimon's coordinator packs the small files of each partition by size, ``full`` or not
        (as ``CALL sys.compact`` does). With a
        SparkSession ``spark`` (classic or Connect) each bucket is compacted in an executor and this process
        commits; without, here. Returns what was done (truthy when a snapshot was committed)."""
        runner = _compact.session_runner(spark) if spark is not None else None
        return _compact.compact(self.store, partitions, full=full, runner=runner)

    # -- chain tables (§10; logic in planner/chain*.py and datasource/chain.py) ------------------
    def explain_chain(
        self,
        partitions: Iterable[Mapping[str, Any] | str] | Mapping[str, Any] | str | None = None,
        *,
        options: Mapping[str, str] | None = None,
        predicate: Sequence[Leaf] = (),
    ) -> list[dict[str, Any]]:
        """How a full read of this chain table resolves each partition: ``source`` ('main', 'snapshot' or
        'chain'), ``anchor`` (the snapshot partition merged from), ``deltas`` (the delta partitions merged
        in, in merge order), ``buckets``, ``files`` per branch and ``splits``. ``partitions`` (dicts or
        'k=v' specs; partial specs match every partition with those values) restrict the report; ``options``
        may carry time travel (``scan.timestamp-millis``, ``scan.tag-name``)."""
        return _chain.explain_chain(
            self._read_store(options), ReadOptions.from_options(options or {}), predicate, partitions
        )

    def compact_chain(
        self,
        partition: Mapping[str, Any] | str | None = None,
        *,
        partitions: Iterable[Mapping[str, Any] | str] | None = None,
        start: Mapping[str, Any] | str | None = None,
        end: Mapping[str, Any] | str | None = None,
        overwrite: bool = False,
    ) -> _chain.ChainCompactResult:
        """Write the chain-merged view of ``partition`` (or ``partitions``, or every delta partition from
        ``start`` to ``end`` inclusive) into the snapshot branch, in one commit, so later reads of it hit the
        snapshot branch. A partition already in the snapshot branch is skipped unless ``overwrite``. Returns
        what was compacted and what was skipped (and why); truthy when something was written."""
        parts: list[Mapping[str, Any] | str] = []
        if partition is not None:
            parts.append(partition)
        if partitions is not None:
            parts.extend([partitions] if isinstance(partitions, (str, Mapping)) else list(partitions))
        return _chain.compact_chain(self.store, partitions=parts or None, start=start, end=end, overwrite=overwrite)

    def chain_hybrid(
        self,
        predicate: Sequence[Leaf] = (),
        columns: Sequence[str] | None = None,
        options: Mapping[str, str] | None = None,
    ) -> pa.Table:
        """Paimon's *hybrid* read: the full (chain) read UNION ALL the delta branch's rows, with the same
        filter. In Spark: ``full.unionByName(spark.read.format('paimon').option('branch', delta).load(p))``."""
        cfg = _chain.require_chain_config(self.store)
        full = self.to_arrow(options, predicate, columns)
        delta = self.branch_table(cfg.delta_branch or "").to_arrow(options, predicate, columns)
        return pa.concat_tables([full, delta.cast(full.schema)])

    def create_chain_tag(
        self, name: str, *, time_retained: Any = None, ignore_if_exists: bool = False
    ) -> dict[str, _tags.Tag]:
        """A *chain tag*: tag ``name`` on the latest snapshot of the delta, the snapshot and the main branch
        (each one that has a snapshot), so ``scan.tag-name`` = ``name`` reads the chain table as it is now; a
        branch without snapshots reads as empty at that tag. Returns the tags by branch. Not atomic across
        branches: do not write to the table while tagging."""
        cfg = _chain.require_chain_config(self.store)
        out: dict[str, _tags.Tag] = {}
        for branch in (cfg.delta_branch, cfg.snapshot_branch, self.branch):
            table = self.branch_table(branch or "")
            if table.latest_snapshot() is None:
                continue  # empty now: reads of the tag see it empty (no data when the tag was made)
            out[table.branch] = table.create_tag(name, time_retained=time_retained, ignore_if_exists=ignore_if_exists)
        if not out:
            raise ChainTableError(f"Chain table {self.identifier} has no data on any branch yet; nothing to tag.")
        return out

    def _read_store(self, options: Mapping[str, str] | None) -> FileStore:
        branch = ReadOptions.from_options(options or {}).branch
        return self.store if not branch else self.store.with_branch(branch)

    # -- branches (logic in metadata/refs/branches.py) -------------------------------------------------------
    def _branch_manager(self) -> _branches.BranchManager:
        return _branches.BranchManager(self.store)

    def create_branch(
        self,
        name: str,
        tag: str | None = None,
        *,
        snapshot_id: int | None = None,
        from_latest: bool = False,
        from_timestamp: Any = None,
        timestamp_rule: str = _tags.AT_OR_BEFORE,
        time_retained: Any = None,
        ignore_if_exists: bool = False,
    ) -> _branches.BranchInfo:
        """Create branch ``name`` from this branch: from ``tag`` (Paimon's way), from ``snapshot_id`` (an
        expired one if a tag preserved it), from the latest snapshot (``from_latest=True``), from the snapshot
        ``from_timestamp`` (epoch ms or datetime; naive = local time) selects, or, with none of these, empty
        (the current schema, no data; its first commit is snapshot 1). A timestamp selects by default the last
        snapshot committed at or before it (the table as a read ``timestampAsOf`` it sees, as Databend and
        Iceberg branch "as of"); ``timestamp_rule='first-at-or-after'`` picks Paimon's tag rule instead.
        ``time_retained`` ('7 d', timedelta, ms): :meth:`expire_branches` drops the branch once it has
        passed. The branch shares data files with this one; its origin and retention are recorded in
        ``branch/branch-<name>/branch.json``."""
        return self._branch_manager().create(
            name,
            self.branch,
            tag=tag,
            snapshot_id=snapshot_id,
            from_latest=from_latest,
            from_timestamp=from_timestamp,
            timestamp_rule=timestamp_rule,
            time_retained=time_retained,
            ignore_if_exists=ignore_if_exists,
        )

    def expire_branches(self, older_than: Any = None, *, dry_run: bool = False) -> _expire.BranchExpireResult:
        """Drop the table's branches whose ``time_retained`` has passed (and, with ``older_than``, every branch
        created before it), deleting the files only they referenced; no file another snapshot, tag or branch
        can reach is touched. Branches another branch's options read from are kept (``result.kept``);
        branches created from a dropped one keep their lineage. ``dry_run`` only reports."""
        return _expire.expire_branches(self.store, older_than=older_than, dry_run=dry_run)

    def list_branches(self) -> list[_branches.BranchInfo]:
        """Every branch of the table except ``main``, by name."""
        return self._branch_manager().list_branches()

    def rename_branch(self, old: str, new: str) -> _branches.BranchInfo:
        return self._branch_manager().rename(old, new)

    def drop_branch(self, name: str, *, ignore_if_not_exists: bool = False) -> bool:
        """Delete branch ``name``'s metadata (its data files are reclaimed by ``remove_orphan_files``)."""
        return self._branch_manager().drop(name, ignore_if_not_exists=ignore_if_not_exists)

    def fast_forward(self, branch: str, *, force: bool = False) -> _branches.PublishResult:
        """Publish ``branch`` into this table's branch (``main`` for ``db.t``): its snapshots, schemas and tags
        from its earliest snapshot on replace this branch's, as Paimon's fast-forward does. Refuses with
        :class:`~pyspark_paimon.errors.BranchConflictError` when this branch has commits, tags or schema
        changes the branch does not contain (they would be lost); ``force=True`` discards them. Concurrent
        readers see the old or the new state, never a mix (see ``metadata/refs/branches.py``)."""
        result = self._branch_manager().fast_forward(branch, self.branch, force=force)
        self.store = FileStore(self.fileio, self.path, self.branch)  # drop cached schemas of the old state
        return result

    def replace_main(self, branch: str, *, keep_previous_as: str | None = None) -> _branches.PublishResult:
        """Make ``branch`` this table's branch (``main`` for ``db.t``): its snapshots, schemas and tags become
        exact copies of ``branch``'s. The previous state is first saved as branch ``keep_previous_as`` (a full
        copy) or, when None, discarded (its files become orphans)."""
        result = self._branch_manager().replace_main(branch, self.branch, keep_previous_as=keep_previous_as)
        self.store = FileStore(self.fileio, self.path, self.branch)
        return result
