"""Chain tables (Java's `SchemaValidation.validateChainTable`): the definition, its validation and when a read is a
chain read.

A chain table is one Paimon table whose data lives in three branches: the loaded branch ("main", normally
empty), a **snapshot** branch with complete copies of some partitions and a **delta** branch with each
partition's increment. Which branches play these roles, which partition keys form the chain, and how
partition values map to time all come from table options. This module turns those options into a validated
:class:`ChainConfig` (Paimon's ``SchemaValidation.validateChainTable`` rules, as :class:`ChainTableError`),
decides whether reading a branch is a chain read (Paimon's wiring: enabled, both fallback branches set, the
loaded branch is neither), checks that the three branches share one row type, and names the branch roles.

It is shared by table creation and option changes (the catalog), the read planner and the write rules, none
of which needs the planning itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence, TypeVar

from pyspark_paimon.errors import ChainTableError, OptionError
from pyspark_paimon.metadata.java_date import PartitionTimeResolver
from pyspark_paimon.metadata.schema.options import (
    BUCKET,
    CHAIN_TABLE_CHAIN_PARTITION_KEYS,
    CHAIN_TABLE_COMPACT_AUTO_THRESHOLD,
    CHAIN_TABLE_ENABLED,
    CHAIN_TABLE_SPLIT_KEY_RANGE_ENABLED,
    CHANGELOG_PRODUCER,
    DELETION_VECTORS_ENABLED,
    FIELD_AGGREGATE_FUNCTION,
    MERGE_ENGINE,
    PARTITION_TIMESTAMP_FORMATTER,
    PARTITION_TIMESTAMP_PATTERN,
    SCAN_FALLBACK_DELTA_BRANCH,
    SCAN_FALLBACK_SNAPSHOT_BRANCH,
    SEQUENCE_FIELD,
    TYPE,
    ConfigOption,
    CoreOptions,
)
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types.model import ArrayType, DataType, MapType, MultisetType, RowType

T = TypeVar("T")
# Paimon's partition expiration strategy: inert here (we do not expire partitions), but chain tables require
# 'values-time' as Paimon does.
PARTITION_EXPIRATION_STRATEGY = "partition.expiration-strategy"

__all__ = [
    "MAIN",
    "SNAPSHOT",
    "DELTA",
    "ChainConfig",
    "chain_options_enabled",
    "validate_chain_definition",
    "chain_config",
    "chain_read_config",
    "validate_branch_schemas",
    "row_signature",
    "stores_of",
]

MAIN, SNAPSHOT, DELTA = "main", "snapshot", "delta"  # roles of the three branches


@dataclass(frozen=True)
class ChainConfig:
    """A validated chain-table definition (from one branch's schema options)."""

    snapshot_branch: str | None
    delta_branch: str | None
    partition_keys: tuple[str, ...]
    chain_keys: tuple[str, ...]
    pattern: str
    formatter: str
    key_range_split: bool = True
    auto_threshold: int | None = None

    @property
    def group_keys(self) -> tuple[str, ...]:
        return self.partition_keys[: len(self.partition_keys) - len(self.chain_keys)]

    @property
    def group_size(self) -> int:
        return len(self.partition_keys) - len(self.chain_keys)

    @property
    def complete(self) -> bool:
        """Both fallback branches named: reads of other branches are chain reads."""
        return bool(self.snapshot_branch) and bool(self.delta_branch)

    def resolver(self) -> PartitionTimeResolver:
        return PartitionTimeResolver(self.pattern, self.formatter, self.partition_keys)


def _get(options: CoreOptions, option: ConfigOption[T], where: str) -> T:
    """``option``'s typed value; a bad value is a :class:`ChainTableError` (the chain definition is wrong)."""
    try:
        return options.get(option)
    except OptionError as exc:
        raise ChainTableError(f"{where}: {exc}") from None


def chain_options_enabled(options: Mapping[str, str]) -> bool:
    return _get(CoreOptions(options), CHAIN_TABLE_ENABLED, "Chain table option")


def validate_chain_definition(
    partition_keys: Sequence[str], primary_keys: Sequence[str], options: Mapping[str, str], table: str = "the table"
) -> ChainConfig:
    """Paimon's chain-table rules (``SchemaValidation.validateChainTable``), as a :class:`ChainTableError`."""
    where = f"Chain table {table}"
    co = CoreOptions(options)
    if _get(co, TYPE, where) != "table":
        raise ChainTableError(f"{where}: only 'type' = 'table' can be a chain table.")
    if not primary_keys:
        raise ChainTableError(f"{where} needs a primary key (chain reads merge rows by key across branches).")
    if not partition_keys:
        raise ChainTableError(f"{where} must be partitioned: the chain runs over partitions (e.g. a date column).")
    bucket = _get(co, BUCKET, where)
    if bucket <= 0:
        raise ChainTableError(
            f"{where} needs a fixed bucket count: set 'bucket' to N > 0 (got {bucket}); chain "
            "splits join the same bucket of the snapshot and delta branches."
        )
    seq = _get(co, SEQUENCE_FIELD, where) or []
    if not seq:
        raise ChainTableError(
            f"{where} needs the option 'sequence.field': sequence numbers are branch-local, so "
            "only a user sequence column can order rows across the snapshot and delta branches."
        )
    engine = _get(co, MERGE_ENGINE, where)
    if engine == "first-row":
        raise ChainTableError(
            f"{where}: the first-row merge engine cannot be used (it forbids 'sequence.field', "
            "which chain tables require). Use deduplicate or partial-update."
        )
    if engine == "aggregation":
        aggregated = [s for s in seq if co.is_set(FIELD_AGGREGATE_FUNCTION.of(s))]
        if aggregated:
            raise ChainTableError(
                f"{where}: the sequence field(s) {aggregated} cannot be aggregated; remove "
                f"'{FIELD_AGGREGATE_FUNCTION.of(aggregated[0]).key}'."
            )
    producer = _get(co, CHANGELOG_PRODUCER, where)
    if producer not in ("none", "input"):
        raise ChainTableError(
            f"{where}: '{CHANGELOG_PRODUCER.key}' = '{producer}' is not allowed; use 'none' or 'input'."
        )
    if _get(co, DELETION_VECTORS_ENABLED, where) and engine != "deduplicate":
        raise ChainTableError(f"{where}: deletion vectors are only allowed with the deduplicate merge engine.")
    strategy = options.get(PARTITION_EXPIRATION_STRATEGY)  # inert for us; Paimon's chain rule still applies
    if strategy is not None and str(strategy).strip().lower() != "values-time":
        raise ChainTableError(f"{where}: '{PARTITION_EXPIRATION_STRATEGY}' must be 'values-time' (got '{strategy}').")
    pattern = _get(co, PARTITION_TIMESTAMP_PATTERN, where)
    formatter = _get(co, PARTITION_TIMESTAMP_FORMATTER, where)
    if not pattern or not formatter:
        missing = [
            o.key
            for o, v in ((PARTITION_TIMESTAMP_PATTERN, pattern), (PARTITION_TIMESTAMP_FORMATTER, formatter))
            if not v
        ]
        raise ChainTableError(
            f"{where} needs {' and '.join(repr(m) for m in missing)}, e.g. "
            f"'{PARTITION_TIMESTAMP_PATTERN.key}' = '${partition_keys[-1]}' and "
            f"'{PARTITION_TIMESTAMP_FORMATTER.key}' = 'yyyyMMdd': they turn partition values into "
            "time to find the deltas of a chain."
        )
    listed = _get(co, CHAIN_TABLE_CHAIN_PARTITION_KEYS, where)
    raw_keys = co.text(CHAIN_TABLE_CHAIN_PARTITION_KEYS)
    if raw_keys is None:
        chain_keys = tuple(partition_keys)
    else:
        chain_keys = tuple(listed or ())
        unknown = [k for k in chain_keys if k not in partition_keys]
        if unknown or not chain_keys:
            raise ChainTableError(
                f"{where}: '{CHAIN_TABLE_CHAIN_PARTITION_KEYS.key}' = '{raw_keys}' names "
                f"{unknown or 'nothing'}, which are not partition keys (partition keys: "
                f"{', '.join(partition_keys)})."
            )
        if tuple(partition_keys[len(partition_keys) - len(chain_keys) :]) != chain_keys:
            raise ChainTableError(
                f"{where}: '{CHAIN_TABLE_CHAIN_PARTITION_KEYS.key}' = '{raw_keys}' must be a contiguous suffix of the "
                f"partition keys ({', '.join(partition_keys)}), e.g. '{partition_keys[-1]}'; the keys before it form "
                "the group."
            )
    PartitionTimeResolver(pattern, formatter, list(partition_keys))  # validates both options
    try:
        threshold = co.get(CHAIN_TABLE_COMPACT_AUTO_THRESHOLD)
    except OptionError:
        threshold = -1
    if threshold is not None and threshold < 1:
        raise ChainTableError(
            f"{where}: '{CHAIN_TABLE_COMPACT_AUTO_THRESHOLD.key}' = "
            f"'{co.text(CHAIN_TABLE_COMPACT_AUTO_THRESHOLD)}' must be a positive integer (the "
            "number of merged delta partitions above which a delta write compacts)."
        )
    key_range = _get(co, CHAIN_TABLE_SPLIT_KEY_RANGE_ENABLED, where)
    snapshot_branch = (_get(co, SCAN_FALLBACK_SNAPSHOT_BRANCH, where) or "").strip() or None
    delta_branch = (_get(co, SCAN_FALLBACK_DELTA_BRANCH, where) or "").strip() or None
    if snapshot_branch and snapshot_branch == delta_branch:
        raise ChainTableError(
            f"{where}: '{SCAN_FALLBACK_SNAPSHOT_BRANCH.key}' and '{SCAN_FALLBACK_DELTA_BRANCH.key}' "
            f"must name two different branches (both are '{snapshot_branch}')."
        )
    if MAIN_BRANCH in (snapshot_branch, delta_branch):
        raise ChainTableError(f"{where}: the snapshot and delta branches cannot be '{MAIN_BRANCH}'.")
    return ChainConfig(
        snapshot_branch, delta_branch, tuple(partition_keys), chain_keys, pattern, formatter, key_range, threshold
    )


def chain_config(schema: TableSchema, table: str = "the table") -> ChainConfig | None:
    """The validated chain definition of a schema, or None when ``chain-table.enabled`` is off."""
    if not chain_options_enabled(schema.options):
        return None
    return validate_chain_definition(schema.partition_keys, schema.primary_keys, schema.options, table)


def chain_read_config(store: FileStore, latest: TableSchema | None = None) -> ChainConfig | None:
    """The chain config when reading ``store``'s branch is a chain read (Paimon's wiring, Java's
    `SchemaValidation.validateChainTable`): chain enabled, both fallback branches set, and the loaded branch is neither
    of them. Else None (plain read). ``latest`` is the branch's latest schema when the caller has it already (saves a
    listing)."""
    schema = latest if latest is not None else store.schemas.latest()
    if schema is None or not chain_options_enabled(schema.options):
        return None
    cfg = chain_config(schema, store.table_path)
    if cfg is None or not cfg.complete or store.branch in (cfg.snapshot_branch, cfg.delta_branch):
        return None
    return cfg


def _strip_nullability(t: DataType) -> DataType:
    t = t.copy(nullable=True)
    if isinstance(t, RowType):
        return replace(t, fields=tuple(replace(f, type=_strip_nullability(f.type), description=None) for f in t.fields))
    if isinstance(t, (ArrayType, MultisetType)):
        return replace(t, element=_strip_nullability(t.element))
    if isinstance(t, MapType):
        return replace(t, key=_strip_nullability(t.key), value=_strip_nullability(t.value))
    return t


def row_signature(schema: TableSchema) -> list[tuple[int, str, DataType]]:
    """What the three chain branches must agree on: each column's field id, name and type (nullability ignored)."""
    return [(f.id, f.name, _strip_nullability(f.type)) for f in schema.fields]


def validate_branch_schemas(schemas: Mapping[str, TableSchema], table: str = "the table") -> None:
    """The three branches must have the same row type (ids, names, types; nullability ignored), because files
    of every branch are read into one merge by field id (``FallbackReadFileStoreTable.validateSchema``)."""
    items = list(schemas.items())
    base_branch, base = items[0]
    want = row_signature(base)
    for branch, schema in items[1:]:
        got = row_signature(schema)
        if got != want:
            a = {(i, n): t for i, n, t in want}
            b = {(i, n): t for i, n, t in got}
            diff = sorted(
                {f"{n}#{i}" for (i, n) in set(a) ^ set(b)}
                | {f"{n}#{i}" for (i, n) in set(a) & set(b) if a[(i, n)] != b[(i, n)]}
            )
            raise ChainTableError(
                f"Chain table {table}: branch '{branch}' (schema {schema.id}) does not have the same columns as "
                f"branch '{base_branch}' (schema {base.id}); differing columns (name#field id): "
                f"{', '.join(diff) or 'column order'}. Apply the same schema change on every chain branch "
                "(Table.update_schema() on the main branch of a chain table does this)."
            )
        if list(schema.partition_keys) != list(base.partition_keys) or list(schema.primary_keys) != list(
            base.primary_keys
        ):
            raise ChainTableError(
                f"Chain table {table}: branch '{branch}' has partition keys {schema.partition_keys} "
                f"and primary keys {schema.primary_keys}, but branch '{base_branch}' has "
                f"{base.partition_keys} and {base.primary_keys}."
            )


def stores_of(main: FileStore, cfg: ChainConfig) -> dict[str, FileStore]:
    """The store of each branch role (main is the loaded branch) of a complete chain definition."""
    assert cfg.snapshot_branch and cfg.delta_branch
    return {MAIN: main, SNAPSHOT: main.with_branch(cfg.snapshot_branch), DELTA: main.with_branch(cfg.delta_branch)}
