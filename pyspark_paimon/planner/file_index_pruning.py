"""Skipping data files by their file indexes (bloom filter, bitmap), after statistics had their say.

Min/max statistics cannot exclude a file for ``id = 'x7Gq'`` when the file's ids span most of the alphabet; a
bloom filter or bitmap index can. Java consults a file's index at scan time when it is embedded in the
manifest and at read time when it is an ``.index`` file; we do both while planning, so a file the index
excludes is never handed to an executor (and Spark never opens it). Index files are read in parallel, once per
plan, and counted in the scan's explain (``index_files_read``, ``files_skipped_index``).

What each index can answer, for a conjunction of leaves (any leaf that excludes the file excludes it):

* bloom filter: ``=``, ``<=>`` with a value and ``IN`` (not negated), by hashing the literals as Java does;
  literals that do not fit the column exactly, ``±0.0``/NaN of a float column (equal in SQL, hashed apart) and
  CHAR columns (padding) are never used to exclude;
* bitmap: any leaves, because it lists every distinct value of the file and whether it has NULLs: the file is
  kept when one of them satisfies all leaves on the column together, evaluated with the same Arrow expression
  the residual filter uses.

An index that cannot be read (missing, malformed, or of a type or version we do not know) never excludes a
file. A column renamed or retyped since the file was written is matched by field id, and not used when its
type changed. ``file-index.read.enabled = false`` (read option or table option) turns this off.
"""

from __future__ import annotations

import struct
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa

from pyspark_paimon.errors import PaimonError
from pyspark_paimon.metadata.fileindex.bitmap_index import BitmapIndex
from pyspark_paimon.metadata.fileindex.bitmap_index import readable as bitmap_readable
from pyspark_paimon.metadata.fileindex.bloom_filter import BloomFilter
from pyspark_paimon.metadata.fileindex.container import FileIndexContainer
from pyspark_paimon.metadata.fileindex.fast_hash import hash_column, hashable
from pyspark_paimon.metadata.fileindex.index_spec import BITMAP, BLOOM_FILTER, INDEX_FILE_SUFFIX
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.schema.options import FILE_INDEX_READ_ENABLED, CoreOptions
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types.arrow import to_arrow_type
from pyspark_paimon.metadata.types.model import AtomicType, DataField
from pyspark_paimon.planner.predicate import Leaf, literal_array, to_arrow_expression

__all__ = ["IndexCounters", "FileIndexPruner", "index_file_of"]

# What reading or decoding an index written by any engine may raise: such an index never excludes a file.
_INDEX_ERRORS = (PaimonError, ValueError, IndexError, struct.error, FileNotFoundError)
_MAX_READERS = 16
_EQUALITY = ("=", "<=>", "in")


def index_file_of(f: DataFileMeta) -> str | None:
    """The name of ``f``'s index file among its extra files, if it has one."""
    for name in f.extra_files:
        if name.endswith(INDEX_FILE_SUFFIX):
            return name
    return None


@dataclass
class IndexCounters:
    """What index pruning did in one plan."""

    files_skipped: int = 0
    bytes_skipped: int = 0
    index_files_read: int = 0
    index_bytes_read: int = 0


@dataclass
class _FileView:
    """One data file's index container, decoded lazily per (column, index type)."""

    container: FileIndexContainer
    fields: Mapping[int, DataField]  # the file's fields by id
    decoded: dict[tuple[str, str], object] = field(default_factory=dict)


class FileIndexPruner:
    """The index check of one scan: ``prune(files)`` keeps the files whose indexes do not exclude ``pred``."""

    def __init__(self, store: FileStore, schema: TableSchema, pred: Sequence[Leaf], read_options: Mapping[str, str]):
        self.store = store
        self.schema = schema
        enabled = CoreOptions({**schema.options, **read_options}).get(FILE_INDEX_READ_ENABLED)
        part = set(schema.partition_keys)
        self.pred = tuple(leaf for leaf in pred if leaf.column not in part) if enabled else ()
        self._fields_of: dict[int, Mapping[int, DataField] | None] = {}
        self.counters = IndexCounters()

    @property
    def active(self) -> bool:
        return bool(self.pred)

    def _file_fields(self, schema_id: int) -> Mapping[int, DataField] | None:
        if schema_id not in self._fields_of:
            try:
                fs = self.schema if schema_id == self.schema.id else self.store.schemas.schema(schema_id)
                self._fields_of[schema_id] = {f.id: f for f in fs.fields}
            except PaimonError:  # unknown schema: its files keep their indexes unread
                self._fields_of[schema_id] = None
        return self._fields_of[schema_id]

    def prune(self, files: Sequence[tuple[DataFileMeta, str]]) -> set[str]:
        """The names of the data files (each with its bucket directory) whose index excludes the predicate."""
        if not self.pred:
            return set()
        candidates = [(f, d) for f, d in files if f.embedded_index is not None or index_file_of(f) is not None]
        separate = [(f, d) for f, d in candidates if f.embedded_index is None]
        loaded: dict[str, bytes | None] = {}
        if separate:
            with ThreadPoolExecutor(max_workers=min(_MAX_READERS, len(separate))) as pool:
                for item, data in zip(separate, pool.map(self._read_index_file, separate)):
                    loaded[item[0].file_name] = data
        excluded = set()
        for meta, _ in candidates:
            found = meta.embedded_index if meta.embedded_index is not None else loaded.get(meta.file_name)
            if found is not None and not self._may_match(meta, found):
                excluded.add(meta.file_name)
                self.counters.files_skipped += 1
                self.counters.bytes_skipped += meta.file_size
        return excluded

    def _read_index_file(self, item: tuple[DataFileMeta, str]) -> bytes | None:
        f, bucket_dir = item
        name = index_file_of(f)
        assert name is not None
        directory = f.external_path.rsplit("/", 1)[0] if f.external_path else bucket_dir
        try:
            data = self.store.fileio.read_bytes(f"{directory}/{name}")
        except FileNotFoundError:  # an index file gone missing only means no pruning for this file
            return None
        self.counters.index_files_read += 1
        self.counters.index_bytes_read += len(data)
        return data

    def _may_match(self, f: DataFileMeta, data: bytes) -> bool:
        fields = self._file_fields(f.schema_id)
        if fields is None:
            return True
        by_column: dict[str, list[Leaf]] = {}
        for leaf in self.pred:
            by_column.setdefault(leaf.column, []).append(leaf)
        try:
            view = _FileView(FileIndexContainer.parse(data, f"data file {f.file_name}"), fields)
            return all(self._column_may_match(view, column, leaves) for column, leaves in by_column.items())
        except _INDEX_ERRORS:  # an index we cannot read never excludes a file
            return True

    def _column_may_match(self, view: _FileView, column: str, leaves: list[Leaf]) -> bool:
        current = self.schema.field(column) if self.schema.has_field(column) else None
        if current is None or not isinstance(current.type, AtomicType):
            return True
        written = view.fields.get(current.id)
        if written is None or written.type.copy(nullable=True) != current.type.copy(nullable=True):
            return True  # the column is newer than the file, or its type changed since
        for index_type in view.container.slots.get(written.name, {}):
            if view.container.is_empty(written.name, index_type):
                continue
            if index_type == BLOOM_FILTER and not all(_bloom_may_match(view, written, leaf) for leaf in leaves):
                return False
            if index_type == BITMAP and not _bitmap_may_match(view, written, column, leaves):
                return False
        return True


def _bloom_may_match(view: _FileView, f: DataField, leaf: Leaf) -> bool:
    t = f.type
    if leaf.negated or leaf.op not in _EQUALITY or not hashable(t) or t.root == "CHAR":
        return True
    values = [v for v in (leaf.value if leaf.op == "in" else (leaf.value,)) if v is not None]
    if leaf.op == "<=>" and leaf.value is None:
        return True  # IS NULL: a bloom filter holds no NULLs
    literals = literal_array(values, to_arrow_type(t, f.name))
    if literals is None:
        return True
    if t.root in ("FLOAT", "DOUBLE"):
        floats = literals.to_numpy(zero_copy_only=False)
        if bool(np.any((floats == 0) | np.isnan(floats))):
            return True  # 0.0 = -0.0 in SQL, but they hash apart (and NaN likewise)
    key = (f.name, BLOOM_FILTER)
    bloom = view.decoded.get(key)
    if bloom is None:
        blob = view.container.blob(f.name, BLOOM_FILTER)
        assert blob is not None
        bloom = view.decoded[key] = BloomFilter.decode(blob)
    assert isinstance(bloom, BloomFilter)
    return bool(bloom.may_contain(hash_column(literals, t)).any())


def _bitmap_may_match(view: _FileView, f: DataField, column: str, leaves: list[Leaf]) -> bool:
    """Whether one distinct value of the file (or NULL) satisfies all ``leaves`` on ``column`` together."""
    if not bitmap_readable(f.type):
        return True
    key = (f.name, BITMAP)
    values = view.decoded.get(key)
    if values is None:
        blob = view.container.blob(f.name, BITMAP)
        assert blob is not None
        index = BitmapIndex.decode(blob, f.type)
        distinct = index.values(f.type)
        if index.has_null:
            distinct = pa.concat_arrays([distinct, pa.nulls(1, distinct.type)])
        values = view.decoded[key] = pa.table({column: distinct})
    assert isinstance(values, pa.Table)
    table = values.rename_columns([column])
    return table.filter(to_arrow_expression(leaves, table.schema)).num_rows > 0
