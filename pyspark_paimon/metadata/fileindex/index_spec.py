"""Which file indexes a table's new data files carry (Java's ``FileIndexOptions``), and building them.

The table options name them: ``file-index.<type>.columns`` lists the columns (a map column's value under one
key as ``m[key]``) and ``file-index.<type>.<column>.<option>`` tunes one (``items`` and ``fpp`` of a bloom filter).
We write the types Java 1.0 has, ``bloom-filter`` and ``bitmap``; other types (``bsi``, ``range-bitmap``) are
neither written nor used, which only means less pruning. Like Java's writer, a file's indexes cover every row of
the file (for primary-key tables: the value columns of every record, retractions included), one container per
data file; :mod:`~pyspark_paimon.metadata.fileindex.container` frames it and the writer stores it in the manifest
or in ``<data file>.index`` by ``file-index.in-manifest-threshold``.

Option mistakes Java's writer fails on fail here too, when a write starts (:class:`OptionError` naming the
option and the fix): an empty or unknown column, a per-column option of a column the type does not list, a
nested index on a non-map column or a map whose keys are not strings, and a type the index cannot hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.fileindex.bitmap_index import encode_bitmap_index
from pyspark_paimon.metadata.fileindex.bitmap_index import writable as bitmap_writable
from pyspark_paimon.metadata.fileindex.bloom_filter import DEFAULT_FPP, DEFAULT_ITEMS, BloomFilter
from pyspark_paimon.metadata.fileindex.container import encode_container
from pyspark_paimon.metadata.fileindex.fast_hash import hash_column, hashable
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.schema.options import FILE_INDEX_IN_MANIFEST_THRESHOLD, CoreOptions
from pyspark_paimon.metadata.types.model import AtomicType, DataField, DataType, MapType

__all__ = [
    "BLOOM_FILTER",
    "BITMAP",
    "WRITTEN_TYPES",
    "INDEX_FILE_SUFFIX",
    "ColumnIndex",
    "FileIndexSpec",
    "index_file_name",
    "next_index_file_name",
    "options_for_columns",
]

BLOOM_FILTER = "bloom-filter"
BITMAP = "bitmap"
WRITTEN_TYPES = (BLOOM_FILTER, BITMAP)
#: Suffix of index files (Java's ``DataFilePathFactory.INDEX_PATH_SUFFIX``).
INDEX_FILE_SUFFIX = ".index"
_PREFIX = "file-index."
_COLUMNS = ".columns"
_FIX = "fix the table option (Table.update_schema().set_options / remove_options)"


def index_file_name(data_file: str) -> str:
    """The index file of a newly written data file: ``<data file>.index``."""
    return data_file + INDEX_FILE_SUFFIX


def next_index_file_name(index_file: str) -> str:
    """The name a rewrite gives the index file replacing ``index_file`` (Java's ``createNewFileIndexFilePath``):
    ``x-<n>.index`` becomes ``x-<n+1>.index``, any other ``x.index`` becomes ``x-1.index``."""
    dot = index_file.rfind(".")
    dash = index_file.rfind("-")
    if dash != -1 and dot > dash:
        number = index_file[dash + 1 : dot]
        if number.isdigit():
            return f"{index_file[: dash + 1]}{int(number) + 1}{INDEX_FILE_SUFFIX}"
    return f"{index_file[:dot] if dot != -1 else index_file}-1{INDEX_FILE_SUFFIX}"


def _split_nested(name: str) -> tuple[str, str | None]:
    """``m[k]`` -> (``m``, ``k``); a plain name -> (name, None) (Java's ``topLevelIndexOfNested``)."""
    start = name.find("[")
    if start != -1 and name.endswith("]"):
        return name[:start], name[start + 1 : -1]
    return name, None


@dataclass(frozen=True)
class ColumnIndex:
    """One index to write: ``index_type`` over ``column`` (its map value under ``nested_key``) with its options."""

    column: str
    nested_key: str | None
    index_type: str
    options: Mapping[str, str]
    value_type: DataType

    @property
    def name(self) -> str:
        """The column name the container records (``m[k]`` for a map key)."""
        return self.column if self.nested_key is None else f"{self.column}[{self.nested_key}]"

    def encode(self, values: pa.Array | pa.ChunkedArray) -> bytes:
        """This index of one file's column values."""
        if self.index_type == BLOOM_FILTER:
            return BloomFilter.build(hash_column(values, self.value_type), *bloom_shape(self.options)).encode()
        return encode_bitmap_index(values, self.value_type)


def bloom_shape(options: Mapping[str, str]) -> tuple[int, float]:
    """(items, fpp) of a bloom filter from its options (``items``, ``fpp``)."""
    return int(options.get("items", DEFAULT_ITEMS)), float(options.get("fpp", DEFAULT_FPP))


@dataclass(frozen=True)
class FileIndexSpec:
    """The indexes every new data file of a table gets, and where they go."""

    indexes: tuple[ColumnIndex, ...]
    in_manifest_threshold: int

    @classmethod
    def of(cls, options: Mapping[str, str], fields: Sequence[DataField], table: str = "the table") -> "FileIndexSpec":
        """The spec of a table's options (``fields``: the columns its data files hold); :class:`OptionError` for
        what Java's writer refuses."""
        by_name = {f.name: f for f in fields}
        columns: dict[str, list[str]] = {}  # index type -> column names, as listed
        tuning: dict[tuple[str, str], dict[str, str]] = {}  # (index type, column) -> options
        for key, value in options.items():
            if not key.startswith(_PREFIX) or not str(value).strip():
                continue
            rest = key[len(_PREFIX) :]
            if key.endswith(_COLUMNS):
                index_type = rest[: -len(_COLUMNS)]
                names = str(value).split(",")
                if any(not n.strip() for n in names):
                    raise OptionError(f"Option '{key}' = '{value}' of {table} lists an empty column; {_FIX}.")
                columns[index_type] = [n.strip() for n in names]
                continue
            parts = rest.split(".")
            if len(parts) == 3:  # <type>.<column>.<option>; other shapes are not per-column options (Java too)
                tuning.setdefault((parts[0], parts[1]), {})[parts[2]] = str(value).strip()
        for (index_type, column), _ in tuning.items():
            top = _split_nested(column)[0]
            listed = columns.get(index_type, [])
            if column not in listed and not any(_split_nested(c)[0] == top for c in listed):
                raise OptionError(
                    f"Option 'file-index.{index_type}.{column}.*' of {table} tunes column '{column}', which "
                    f"'file-index.{index_type}.columns' does not list; {_FIX}."
                )
        indexes = []
        for index_type, names in columns.items():
            if index_type not in WRITTEN_TYPES:
                continue  # bsi, range-bitmap...: not written here (option_keys: inert)
            for name in names:
                column, nested = _split_nested(name)
                field = by_name.get(column)
                if field is None:
                    raise OptionError(
                        f"Option 'file-index.{index_type}.columns' of {table} names column '{column}', which the "
                        f"table does not have; {_FIX}."
                    )
                opts = {**tuning.get((index_type, column), {})}
                if nested is not None:
                    if not isinstance(field.type, MapType):
                        raise OptionError(
                            f"Option 'file-index.{index_type}.columns' of {table} indexes '{name}', but column "
                            f"'{column}' is not a map (only map values can be indexed by key); {_FIX}."
                        )
                    key_type = field.type.key
                    if not isinstance(key_type, AtomicType) or key_type.root not in ("CHAR", "VARCHAR"):
                        raise OptionError(
                            f"Option 'file-index.{index_type}.columns' of {table} indexes '{name}', but the keys "
                            f"of map column '{column}' are {key_type}, not strings; {_FIX}."
                        )
                    opts.update(tuning.get((index_type, name), {}))
                    value_type = field.type.value
                else:
                    value_type = field.type
                _check_type(index_type, name, value_type, table)
                _check_options(index_type, name, opts, table)
                indexes.append(ColumnIndex(column, nested, index_type, opts, value_type))
        threshold = CoreOptions(options).get(FILE_INDEX_IN_MANIFEST_THRESHOLD)
        return cls(tuple(indexes), threshold)

    @property
    def active(self) -> bool:
        return bool(self.indexes)

    def for_file(self, fields: Sequence[DataField], file_fields: Sequence[DataField]) -> "FileIndexSpec":
        """This spec (of a table whose columns are ``fields``) for a data file written with ``file_fields``:
        each column by the name it had in the file (matched by field id, as Java's rewrite maps names); columns
        the file lacks, or whose type there the index cannot hold, are left out."""
        ids = {f.name: f.id for f in fields}
        by_id = {f.id: f for f in file_fields}
        out = []
        for ix in self.indexes:
            found = by_id.get(ids.get(ix.column, -1))
            if found is None:
                continue
            value_type = found.type
            if ix.nested_key is not None:
                if not isinstance(value_type, MapType):
                    continue
                value_type = value_type.value
            holds = hashable(value_type) if ix.index_type == BLOOM_FILTER else bitmap_writable(value_type)
            if holds:
                out.append(ColumnIndex(found.name, ix.nested_key, ix.index_type, ix.options, value_type))
        return FileIndexSpec(tuple(out), self.in_manifest_threshold)

    def write(
        self, fileio: FileIO, rows: pa.Table, data_path: str, created: list[str]
    ) -> tuple[bytes | None, str | None]:
        """The indexes of a data file just written at ``data_path`` holding ``rows``, placed as Java places them:
        (container, None) to embed in the manifest, or (None, index file name) when the container exceeds
        ``file-index.in-manifest-threshold`` (written beside the data file as ``<data file>.index``; its path is
        appended to ``created`` first, so an aborted write removes it). (None, None) without indexes."""
        if not self.indexes:
            return None, None
        return self.place(fileio, self.build(rows), index_file_name(data_path), created)

    def place(
        self, fileio: FileIO, container: bytes, index_path: str, created: list[str]
    ) -> tuple[bytes | None, str | None]:
        """Embed ``container`` or write it to ``index_path`` (Java's rule: a file only above the threshold)."""
        if len(container) <= self.in_manifest_threshold:
            return container, None
        created.append(index_path)
        fileio.write_bytes(index_path, container)
        return None, index_path.rsplit("/", 1)[-1]

    def build(self, table: pa.Table, names: Mapping[str, str] | None = None) -> bytes:
        """The container of one data file's rows ``table`` (its columns named as the spec's; ``names`` maps a
        spec column to the table's column when they differ)."""
        blobs: dict[str, dict[str, bytes | None]] = {}
        for ix in self.indexes:
            values = table.column((names or {}).get(ix.column, ix.column))
            if ix.nested_key is not None:
                values = pc.map_lookup(values, pa.scalar(ix.nested_key, pa.string()), "first")
            blobs.setdefault(ix.name, {})[ix.index_type] = ix.encode(values)
        return encode_container(blobs)


def _check_type(index_type: str, name: str, t: DataType, table: str) -> None:
    ok = hashable(t) if index_type == BLOOM_FILTER else bitmap_writable(t)
    if not ok:
        raise OptionError(
            f"Option 'file-index.{index_type}.columns' of {table} indexes '{name}' of type {t}, which a "
            f"{index_type} index cannot hold (Java Paimon refuses it too); {_FIX}."
        )


def _check_options(index_type: str, name: str, opts: Mapping[str, str], table: str) -> None:
    if index_type != BLOOM_FILTER:
        return
    try:
        BloomFilter.shape(*bloom_shape(opts))
    except ValueError as e:
        raise OptionError(
            f"Options 'file-index.bloom-filter.{name}.items' / '.fpp' of {table} are not usable: {e}; {_FIX}."
        ) from None


def options_for_columns(options: Mapping[str, str], columns: Sequence[str]) -> dict[str, str]:
    """``options`` as they apply to a data file holding only ``columns`` (a data-evolution update's file): each
    ``file-index.<type>.columns`` list keeps the columns the file holds (dropped when none is left), and per-column
    tuning of the others is dropped, so the file gets the indexes of its own columns and no error for the rest."""
    held = set(columns)
    out: dict[str, str] = {}
    for key, value in options.items():
        if key.startswith(_PREFIX) and key.endswith(_COLUMNS):
            kept = [n.strip() for n in str(value).split(",") if _split_nested(n.strip())[0] in held]
            if kept:
                out[key] = ",".join(kept)
            continue
        parts = key[len(_PREFIX) :].split(".") if key.startswith(_PREFIX) else []
        if len(parts) == 3 and _split_nested(parts[1])[0] not in held:
            continue
        out[key] = value
    return out
