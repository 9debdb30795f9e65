"""Where a read or write points: a table path, a branch, maybe a system table (Spark-free, picklable).

Spark hands a data source its options as a flat string map; :func:`resolve_table_ref` is the one place that
turns them (``path``/``paths``, ``warehouse``, ``branch``, ``fs.*`` storage options, ``$branch_x``/``$files``
suffixes, and the catalog options of a JDBC or REST catalog: ``metastore``, ``uri``...) into a :class:`TableRef`,
so the Spark classes and the Python API address tables the same way. A table named by identifier is found
through its catalog (:mod:`pyspark_paimon.metadata.catalog`), which also says how its commits land.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Mapping

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.catalog.catalog_options import WAREHOUSE, CatalogConfig, is_catalog_key
from pyspark_paimon.metadata.catalog.connect import open_metastore, table_location
from pyspark_paimon.metadata.catalog.metastore import NewTable
from pyspark_paimon.metadata.identifier import Suffix, parse_identifier, split_suffix
from pyspark_paimon.metadata.io.fileio import FileIO, storage_options_from_strings
from pyspark_paimon.metadata.refs.branches import BranchManager
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH
from pyspark_paimon.metadata.store import FileStore, SnapshotCommit


@dataclass(frozen=True)
class TableRef:
    """Where a Spark read or write points: a table path, a branch, maybe a system table. Picklable.

    ``options`` are the read/write options (the catalog's were taken out); a table named by identifier in a JDBC
    or REST catalog also carries that catalog (``catalog``, ``identifier``: a write that creates the table
    creates it there) and its commit (``snapshot_commit``)."""

    fileio: FileIO
    path: str
    branch: str = MAIN_BRANCH
    system_table: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    snapshot_commit: SnapshotCommit | None = field(default=None, repr=False)
    catalog: CatalogConfig | None = None
    identifier: tuple[str, str] | None = None

    def store(self) -> FileStore:
        return FileStore(self.fileio, self.path, self.branch, self.snapshot_commit)

    def create_in_catalog(self, spec: NewTable) -> TableSchema | None:
        """Create the table through its catalog (a JDBC row, a REST ``create``); None for a table of no catalog
        (or of a filesystem catalog, whose writes create the directory themselves)."""
        if self.catalog is None or self.identifier is None:
            return None
        metastore = open_metastore(self.catalog)
        database, table = self.identifier
        if not metastore.database_exists(database):
            metastore.create_database(database)
        return metastore.create_table(database, table, spec).store().schema()


def resolve_table_ref(options: Mapping[str, str]) -> TableRef:
    """Turn Spark's options (``path``/``paths``, ``warehouse`` and the catalog options, ``branch``, ``fs.*``) into a
    :class:`TableRef`."""
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    catalog_options = {k: opts.pop(k) for k in [k for k in opts if is_catalog_key(k)]}
    # ``fs.<key>`` options travel inside the FileIO, which is pickled to every executor with the plan.
    storage = storage_options_from_strings({k[3:]: v for k, v in opts.items() if k.startswith("fs.")})
    target = opts.get("path")
    if target is None and "paths" in opts:
        paths = json.loads(opts["paths"])
        if len(paths) != 1:
            raise OptionError(f"A Paimon read takes exactly one table, got {len(paths)} paths: {paths}.")
        target = paths[0]
    if not target:
        raise OptionError(
            "No table given. Use .load('/warehouse/db.db/table') or .option('warehouse', wh).load('db.table')."
        )
    warehouse = opts.get(WAREHOUSE)
    if warehouse:
        db, table, suffix = parse_identifier(target)
        config = CatalogConfig.of(warehouse, catalog_options, storage)
        location = table_location(open_metastore(config), db, table)
        branch = _choose_branch(suffix, opts.get("branch"))
        in_catalog = config if config.metastore != "filesystem" else None
        return TableRef(
            location.fileio,
            location.path,
            branch,
            suffix.system_table,
            opts,
            location.snapshot_commit,
            in_catalog,
            (db, table),
        )
    if catalog_options:
        raise OptionError(
            f"Catalog options {sorted(catalog_options)} need a table named by identifier in a catalog: "
            ".option('warehouse', ...).load('db.table'). A table loaded by path belongs to no catalog."
        )
    base, suffix = split_suffix(target)
    fileio, path = FileIO.for_uri(base, storage)
    branch = _choose_branch(suffix, opts.get("branch"))
    return TableRef(fileio, path, branch, suffix.system_table, opts)


def _choose_branch(suffix: Suffix, option: str | None) -> str:
    if suffix.branch and option and suffix.branch != option:
        raise OptionError(
            f"The table is addressed as branch '{suffix.branch}' ($branch_{suffix.branch}) but option 'branch' says "
            f"'{option}'; give only one."
        )
    return suffix.branch or option or MAIN_BRANCH


#: Write option of write-audit-publish: the job's writes go to this branch, created from the written branch when
#: absent; after auditing it, ``t.branches.publish(<name>)`` lands it (docs/branches.md, "Write-audit-publish").
AUDIT_BRANCH_OPTION = "audit-branch"


def route_to_audit_branch(ref: TableRef) -> TableRef:
    """Write-audit-publish: ``ref`` pointed at the branch its ``audit-branch`` write option names, creating that
    branch from ``ref``'s branch (its latest snapshot; empty when it has none) when it does not exist yet."""
    name = ref.options.get(AUDIT_BRANCH_OPTION)
    if name is None:
        return ref
    name = name.strip()
    store = ref.store()
    if not name or name == store.branch:
        raise OptionError(
            f"Write option '{AUDIT_BRANCH_OPTION}' = {name!r} must name a branch other than the one written "
            f"('{store.branch}'), e.g. 'audit_<job id>'."
        )
    if store.schemas.latest() is None:
        raise OptionError(
            f"Write option '{AUDIT_BRANCH_OPTION}' needs an existing table; {ref.path} has none yet. Create it "
            "with a first write (or Catalog.create_table), then write through the audit branch."
        )
    manager = BranchManager(store)
    if not manager.exists(name):
        has_data = store.snapshots.latest() is not None
        manager.create(name, store.branch, from_latest=has_data, ignore_if_exists=True)
    return replace(ref, branch=name)
