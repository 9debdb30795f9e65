"""Where a table's Iceberg metadata lives and how it is written: the table options as one record.

``metadata.iceberg.storage`` decides the directory, as Java's ``IcebergCommitCallback`` does, so that Java and
pyspark-paimon keep writing the same files: ``table-location`` puts it in ``<table>/metadata`` (an Iceberg
reader opens the table's own path), ``hadoop-catalog`` in ``<warehouse>/iceberg/<db>/<table>/metadata`` (the
warehouse of an Iceberg Hadoop catalog; the table must sit in a ``<db>.db`` directory).
``metadata.iceberg.storage-location`` overrides that default (``table-location`` or ``catalog-location``).
Paimon 0.9 spelled ``table-location`` as ``metadata.iceberg-compatible = true``; its tables keep working.

Inside the directory: ``v<N>.metadata.json`` is the Iceberg table as of Paimon snapshot ``N`` of the main
branch, ``version-hint.text`` names the current ``N`` (Iceberg's Hadoop tables find the table through it),
manifest lists are ``snap-*.avro``, manifests ``*-m<k>.avro`` and deletion vectors ``*.puffin``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.io.avro import avro_codec
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.schema.options import (
    DELETION_VECTORS_BITMAP64,
    MANIFEST_TARGET_FILE_SIZE,
    METADATA_ICEBERG_COMPACTION_MAX_FILE_NUM,
    METADATA_ICEBERG_COMPACTION_MIN_FILE_NUM,
    METADATA_ICEBERG_COMPATIBLE,
    METADATA_ICEBERG_DELETE_AFTER_COMMIT,
    METADATA_ICEBERG_FORMAT_VERSION,
    METADATA_ICEBERG_MANIFEST_COMPRESSION,
    METADATA_ICEBERG_MANIFEST_LEGACY_VERSION,
    METADATA_ICEBERG_PREVIOUS_VERSIONS_MAX,
    METADATA_ICEBERG_STORAGE,
    METADATA_ICEBERG_STORAGE_LOCATION,
    CoreOptions,
)
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH
from pyspark_paimon.metadata.store import FileStore

__all__ = ["VERSION_HINT", "IcebergLayout", "iceberg_layout", "metadata_version"]

#: The file Iceberg's Hadoop tables read to find the current metadata version (``org.apache.iceberg.hadoop.Util``).
VERSION_HINT = "version-hint.text"
_DB_SUFFIX = ".db"


@dataclass(frozen=True)
class IcebergLayout:
    """The Iceberg metadata of one table: its directory and the options that shape the files."""

    fileio: FileIO
    metadata_dir: str
    table_location: str
    format_version: int
    codec: str
    legacy_manifest_list: bool
    deletion_vectors: bool  # publish the table's deletion vectors (format 3, 64-bit vectors)
    compact_min: int
    compact_max: int
    target_size: int
    delete_after_commit: bool
    previous_versions_max: int
    #: Prefix of the manifests and manifest lists this process writes (Java: one uuid per callback).
    prefix: str = field(default_factory=lambda: str(uuid.uuid4()))

    def path(self, name: str) -> str:
        return f"{self.metadata_dir}/{name}"

    def metadata_path(self, version: int) -> str:
        return self.path(f"v{version}.metadata.json")

    @property
    def hint_path(self) -> str:
        return self.path(VERSION_HINT)

    def read_hint(self) -> int | None:
        """The version ``version-hint.text`` names, None when it is missing or unreadable."""
        try:
            return int(self.fileio.read_text(self.hint_path).strip())
        except (FileNotFoundError, ValueError):
            return None

    def write_hint(self, version: int) -> None:
        self.fileio.write_bytes(self.hint_path, str(version).encode())

    def versions(self) -> list[int]:
        """Every ``v<N>.metadata.json`` version in the directory, ascending."""
        return sorted(v for v in (metadata_version(n) for n in self.fileio.list_names(self.metadata_dir)) if v)


def metadata_version(name: str) -> int | None:
    """``N`` of a ``v<N>.metadata.json`` file name, else None."""
    if not (name.startswith("v") and name.endswith(".metadata.json")):
        return None
    digits = name[1 : -len(".metadata.json")]
    return int(digits) if digits.isdigit() else None


def _metadata_dir(store: FileStore, options: CoreOptions, storage: str) -> str:
    table = store.table_path.rstrip("/")
    parent, _, name = table.rpartition("/")
    location = options.get(METADATA_ICEBERG_STORAGE_LOCATION)
    if location is None:
        location = "table-location" if storage == "table-location" else "catalog-location"
    if location == "table-location":
        return f"{table}/metadata"
    db_parent, _, db = parent.rpartition("/")
    if not db.endswith(_DB_SUFFIX):
        raise OptionError(
            f"Option 'metadata.iceberg.storage' = '{storage}' of {store.fileio.uri(table)} keeps the Iceberg metadata "
            f"in the warehouse's iceberg/ directory, which needs the table in a '<db>.db' directory of a warehouse "
            f"(its parent is '{db}'). Create the table through a Catalog, or set "
            "'metadata.iceberg.storage-location' = 'table-location'."
        )
    return f"{db_parent}/iceberg/{db[: -len(_DB_SUFFIX)]}/{name}/metadata"


def iceberg_layout(store: FileStore, schema: TableSchema) -> IcebergLayout | None:
    """The table's Iceberg metadata, or None when it has none to keep: the option is unset or ``disabled``,
    or ``store`` is not the main branch (the Iceberg table is the main branch, as Iceberg readers see one
    table; commits to other branches leave it alone)."""
    options = schema.core_options
    storage = options.get(METADATA_ICEBERG_STORAGE)
    if storage == "disabled" and options.get(METADATA_ICEBERG_COMPATIBLE):
        storage = "table-location"  # Paimon 0.9's spelling: metadata in <table>/metadata
    if storage == "disabled" or store.branch != MAIN_BRANCH:
        return None
    version = int(options.get(METADATA_ICEBERG_FORMAT_VERSION))
    return IcebergLayout(
        fileio=store.fileio,
        metadata_dir=_metadata_dir(store, options, storage),
        table_location=store.fileio.uri(store.table_path.rstrip("/")),
        format_version=version,
        codec=avro_codec(options.get(METADATA_ICEBERG_MANIFEST_COMPRESSION), METADATA_ICEBERG_MANIFEST_COMPRESSION.key),
        legacy_manifest_list=options.get(METADATA_ICEBERG_MANIFEST_LEGACY_VERSION),
        deletion_vectors=options.deletion_vectors_enabled and options.get(DELETION_VECTORS_BITMAP64) and version >= 3,
        compact_min=options.get(METADATA_ICEBERG_COMPACTION_MIN_FILE_NUM),
        compact_max=options.get(METADATA_ICEBERG_COMPACTION_MAX_FILE_NUM),
        target_size=options.get(MANIFEST_TARGET_FILE_SIZE),
        delete_after_commit=options.get(METADATA_ICEBERG_DELETE_AFTER_COMMIT),
        previous_versions_max=options.get(METADATA_ICEBERG_PREVIOUS_VERSIONS_MAX),
    )
