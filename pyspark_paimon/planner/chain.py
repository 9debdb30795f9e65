"""Chain tables (format reference §10): configuration, validation and the batch read plan.

A chain table keeps one logical table in three branches of one Paimon table: the loaded branch ("main",
normally empty), a **snapshot** branch holding complete copies of some partitions, and a **delta** branch
holding each partition's increment. A full read of partition ``T`` is resolved like this (§10.2):

1. a partition that exists in main is read from main only;
2. a partition that exists in the snapshot branch is read from there as it is (never merged with deltas);
3. a partition that exists only in the delta branch is *chain-resolved*: its **anchor** is the snapshot
   partition of the same group with the greatest chain value strictly below ``T`` (natural order of the
   partition values, ignoring the user's partition filter); the anchor's files and the delta partitions in
   ``(anchor, T]`` are merged by the trimmed primary key. Without an anchor, every delta partition of the
   group up to ``T`` is merged. Rows carry ``T``'s partition values.

Choosing the deltas in ``(anchor, T]``: Paimon steps time from the anchor to ``T`` with
``partition.timestamp-pattern`` / ``-formatter`` and keeps the steps that exist as delta partitions (with a
10,000,000-step guard). We list the delta partitions that exist instead and keep those whose timestamp lies
in ``(anchor, T]`` and whose values are exactly what the formatter renders for that timestamp (what the
stepping would have produced). Same set, no enumeration, no step limit.

Merge order across branches: ``_SEQUENCE_NUMBER`` is branch-local, so the user ``sequence.field`` decides
recency; rows that tie on it are ordered by a per-file **rank** (anchor files 0, then the deltas in
partition order) before ``_SEQUENCE_NUMBER``, so a later partition wins a tie. (Paimon leaves such ties to
the branch-local sequence numbers, i.e. effectively arbitrary.)

Without a partition filter (Spark 4 without filter pushdown) every partition of the three branches is
resolved; with one, only the matching partitions are targets, but anchors and deltas are still found.
Both give the same rows for the same query.

This module is planning only (driver side, no Spark, no data reads).
"""

from __future__ import annotations

import bisect
import datetime as _dt
import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from pyspark_paimon.errors import ChainTableError
from pyspark_paimon.metadata.binary_row import deserialize_row
from pyspark_paimon.metadata.manifest import DataFileMeta, ManifestEntry
from pyspark_paimon.metadata.schema import TableSchema
from pyspark_paimon.metadata.snapshot import MAIN_BRANCH, Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.tags import TagManager
from pyspark_paimon.metadata.types import ArrayType, DataType, MapType, MultisetType, RowType
from pyspark_paimon.planner.predicate import Leaf, eval_on_values, leaves_on
from pyspark_paimon.planner.read_options import ReadOptions
from pyspark_paimon.planner.scan import ScanCounters, ScanPlan, ScanPlanner, split_target_size
from pyspark_paimon.planner.sections import decoded_key_range, key_sections, sortable_key
from pyspark_paimon.planner.split import DataSplit

__all__ = [
    "ENABLED", "SNAPSHOT_BRANCH", "DELTA_BRANCH", "CHAIN_KEYS", "KEY_RANGE_SPLIT", "AUTO_THRESHOLD",
    "TIMESTAMP_PATTERN", "TIMESTAMP_FORMATTER",
    "ChainConfig", "PartitionTimeResolver", "JavaDateFormat", "ChainTarget", "ChainReadPlan",
    "chain_options_enabled", "validate_chain_definition", "chain_config", "chain_read_config",
    "validate_branch_schemas", "resolve_chain_snapshots", "chain_read_schema", "plan_chain",
    "snapshot_drop_violations", "BranchPartitions", "stores_of", "MAIN", "SNAPSHOT", "DELTA",
]

ENABLED = "chain-table.enabled"
SNAPSHOT_BRANCH = "scan.fallback-snapshot-branch"
DELTA_BRANCH = "scan.fallback-delta-branch"
CHAIN_KEYS = "chain-table.chain-partition-keys"
KEY_RANGE_SPLIT = "chain-table.split.key-range-enabled"
AUTO_THRESHOLD = "chain-table.compact.auto-threshold"
TIMESTAMP_PATTERN = "partition.timestamp-pattern"
TIMESTAMP_FORMATTER = "partition.timestamp-formatter"

MAIN, SNAPSHOT, DELTA = "main", "snapshot", "delta"  # roles of the three branches


# ------------------------------------------------------------------------------------------------------
# Java DateTimeFormatter subset
# ------------------------------------------------------------------------------------------------------
_ALLOWED_LETTERS = frozenset("yuMLdDHkms")


@dataclass(frozen=True)
class _Tok:
    letter: str  # "" for a literal
    count: int = 0
    text: str = ""


class JavaDateFormat:
    """The numeric subset of Java's ``DateTimeFormatter`` patterns that Paimon allows for chain tables.

    Letters ``y u M L d D H k m s`` (numeric forms) and literals (plain characters or ``'quoted'`` text).
    Anything else is refused with a :class:`ChainTableError`, as Paimon's validation does: the formatter
    must step by whole seconds at least and must pin a complete date.
    """

    def __init__(self, pattern: str):
        self.pattern = pattern
        self.tokens = self._tokenize(pattern)
        letters = {t.letter for t in self.tokens if t.letter}
        has_year = bool(letters & {"y", "u"})
        has_month_day = bool(letters & {"M", "L"}) and "d" in letters
        if not (has_year and (has_month_day or "D" in letters)):
            raise ChainTableError(
                f"Option '{TIMESTAMP_FORMATTER}' = '{pattern}' must contain a complete date: a year (y or u) and "
                "either month and day (M and d) or the day of the year (D), e.g. 'yyyyMMdd'.")
        self._regex = re.compile("".join(self._regex_of(t) for t in self.tokens) + r"\Z")

    @staticmethod
    def _tokenize(pattern: str) -> list[_Tok]:
        tokens: list[_Tok] = []
        i, n = 0, len(pattern)
        while i < n:
            c = pattern[i]
            if c == "'":
                j = i + 1
                buf = []
                while True:
                    if j >= n:
                        raise ChainTableError(f"Option '{TIMESTAMP_FORMATTER}' = '{pattern}' has an unterminated "
                                              "quote.")
                    if pattern[j] == "'":
                        if j + 1 < n and pattern[j + 1] == "'":
                            buf.append("'")
                            j += 2
                            continue
                        break
                    buf.append(pattern[j])
                    j += 1
                tokens.append(_Tok("", 0, "'" if j == i + 1 else "".join(buf)))
                i = j + 1
                continue
            if c.isascii() and c.isalpha():
                if c not in _ALLOWED_LETTERS:
                    raise ChainTableError(
                        f"Option '{TIMESTAMP_FORMATTER}' = '{pattern}' uses the pattern letter '{c}'. Chain tables "
                        "allow only y u M L d D H k m s (numeric) plus literals; the smallest step is one second.")
                j = i
                while j < n and pattern[j] == c:
                    j += 1
                count = j - i
                if c in "ML" and count >= 3:
                    raise ChainTableError(
                        f"Option '{TIMESTAMP_FORMATTER}' = '{pattern}' uses a text month ('{c * count}'); use the "
                        "numeric form 'MM' (text months cannot be partition-sortable).")
                if c in "dHkms" and count > 2 or c == "D" and count > 3:
                    raise ChainTableError(f"Option '{TIMESTAMP_FORMATTER}' = '{pattern}': '{c * count}' is too "
                                          "many pattern letters.")
                tokens.append(_Tok(c, count))
                i = j
                continue
            if c in "[]{}#":
                raise ChainTableError(f"Option '{TIMESTAMP_FORMATTER}' = '{pattern}' uses the reserved character "
                                      f"'{c}'; quote it ('{c}') to use it as a literal.")
            if tokens and not tokens[-1].letter:
                tokens[-1] = _Tok("", 0, tokens[-1].text + c)
            else:
                tokens.append(_Tok("", 0, c))
            i += 1
        return tokens

    @staticmethod
    def _regex_of(t: _Tok) -> str:
        if not t.letter:
            return re.escape(t.text)
        c, k = t.letter, t.count
        if c in "yu":
            body = r"\d{2}" if k == 2 else r"\d{%d,9}" % k
        elif c == "D":
            body = {1: r"\d{1,3}", 2: r"\d{2,3}"}.get(k, r"\d{3}")
        else:
            body = r"\d{1,2}" if k == 1 else r"\d{2}"
        return f"({body})"

    def parse(self, text: str) -> _dt.datetime:
        m = self._regex.match(text)
        if m is None:
            raise ValueError(f"'{text}' does not match the formatter '{self.pattern}'")
        fields = [t for t in self.tokens if t.letter]
        year = month = day = doy = None
        hour = minute = second = 0
        for t, g in zip(fields, m.groups()):
            v = int(g)
            if t.letter in "yu":
                year = 2000 + v if t.count == 2 else v
            elif t.letter in "ML":
                month = v
            elif t.letter == "d":
                day = v
            elif t.letter == "D":
                doy = v
            elif t.letter == "H":
                hour = v
            elif t.letter == "k":
                if not 1 <= v <= 24:
                    raise ValueError(f"clock hour {v} out of range")
                hour = 0 if v == 24 else v
            elif t.letter == "m":
                minute = v
            elif t.letter == "s":
                second = v
        assert year is not None
        if month is not None and day is not None:
            base = _dt.datetime(year, month, day)
        else:
            assert doy is not None
            if not 1 <= doy <= (366 if _is_leap(year) else 365):
                raise ValueError(f"day of year {doy} out of range")
            base = _dt.datetime(year, 1, 1) + _dt.timedelta(days=doy - 1)
        return base.replace(hour=hour, minute=minute, second=second)

    def format(self, value: _dt.datetime) -> str:
        out = []
        for t in self.tokens:
            if not t.letter:
                out.append(t.text)
                continue
            c, k = t.letter, t.count
            if c in "yu":
                out.append(f"{value.year % 100:02d}" if k == 2 else f"{value.year:0{k}d}")
            elif c in "ML":
                out.append(f"{value.month:0{k}d}")
            elif c == "d":
                out.append(f"{value.day:0{k}d}")
            elif c == "D":
                out.append(f"{value.timetuple().tm_yday:0{k}d}")
            elif c == "H":
                out.append(f"{value.hour:0{k}d}")
            elif c == "k":
                out.append(f"{value.hour or 24:0{k}d}")
            elif c == "m":
                out.append(f"{value.minute:0{k}d}")
            elif c == "s":
                out.append(f"{value.second:0{k}d}")
        return "".join(out)


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


class PartitionTimeResolver:
    """Partition values <-> a timestamp, via ``partition.timestamp-pattern`` and ``-formatter``.

    The pattern references partition columns as ``$col`` (``'$dt $hour:00:00'``); substituting the values
    gives a text the formatter parses. :meth:`render` goes back: format a timestamp and read the column
    values out of the text by matching the pattern, so a partition is *canonical* when rendering its own
    timestamp gives its own values (e.g. hour ``'09'``, not ``'9'``).
    """

    def __init__(self, pattern: str, formatter: str, partition_keys: Sequence[str]):
        self.pattern = pattern
        self.format = JavaDateFormat(formatter)
        keys = sorted(partition_keys, key=len, reverse=True)  # '$dtx' must not be read as '$dt' + 'x'
        parts: list[tuple[str, str]] = []  # ("key", name) or ("lit", text)
        i = 0
        while i < len(pattern):
            if pattern[i] == "$":
                name = next((k for k in keys if pattern.startswith(k, i + 1)), None)
                if name is not None:
                    parts.append(("key", name))
                    i += 1 + len(name)
                    continue
            if parts and parts[-1][0] == "lit":
                parts[-1] = ("lit", parts[-1][1] + pattern[i])
            else:
                parts.append(("lit", pattern[i]))
            i += 1
        self.columns = list(dict.fromkeys(name for kind, name in parts if kind == "key"))
        if not self.columns:
            raise ChainTableError(
                f"Option '{TIMESTAMP_PATTERN}' = '{pattern}' references no partition column; write it with $col, "
                f"e.g. '${partition_keys[-1] if partition_keys else 'dt'}' (partition columns: "
                f"{', '.join(partition_keys)}).")
        self._parts = parts
        regex, seen = [], {}
        for kind, text in parts:
            if kind == "lit":
                regex.append(re.escape(text))
            elif text in seen:
                regex.append(f"(?P=g{seen[text]})")
            else:
                seen[text] = len(seen)
                regex.append(f"(?P<g{seen[text]}>.+?)")
        self._groups = {name: f"g{idx}" for name, idx in seen.items()}
        self._regex = re.compile("".join(regex) + r"\Z", re.DOTALL)

    def text_of(self, values: Mapping[str, Any]) -> str:
        return "".join(_value_text(values.get(text)) if kind == "key" else text for kind, text in self._parts)

    def to_time(self, values: Mapping[str, Any]) -> _dt.datetime:
        """The timestamp of a partition; ValueError when its values do not fit the pattern/formatter."""
        if any(values.get(c) is None for c in self.columns):
            raise ValueError("a referenced partition value is NULL")
        return self.format.parse(self.text_of(values))

    def render(self, value: _dt.datetime) -> dict[str, str] | None:
        m = self._regex.match(self.format.format(value))
        if m is None:
            return None
        return {name: m.group(g) for name, g in self._groups.items()}

    def canonical_time(self, values: Mapping[str, Any]) -> _dt.datetime | None:
        """The timestamp of a partition that time stepping would produce, else None."""
        try:
            t = self.to_time(values)
        except (ValueError, OverflowError):
            return None
        rendered = self.render(t)
        if rendered is None or any(rendered[c] != _value_text(values.get(c)) for c in self.columns):
            return None
        return t


def _value_text(v: Any) -> str:
    if isinstance(v, _dt.date) and not isinstance(v, _dt.datetime):
        return v.isoformat()
    return "" if v is None else str(v)


# ------------------------------------------------------------------------------------------------------
# Configuration and validation
# ------------------------------------------------------------------------------------------------------
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


def chain_options_enabled(options: Mapping[str, str]) -> bool:
    raw = str(options.get(ENABLED, "false")).strip().lower()
    if raw not in ("true", "false"):
        raise ChainTableError(f"Option '{ENABLED}' must be 'true' or 'false', got '{options.get(ENABLED)}'.")
    return raw == "true"


def validate_chain_definition(partition_keys: Sequence[str], primary_keys: Sequence[str],
                              options: Mapping[str, str], table: str = "the table") -> ChainConfig:
    """Paimon's chain-table rules (``SchemaValidation.validateChainTable``), as a :class:`ChainTableError`."""
    where = f"Chain table {table}"
    if str(options.get("type", "table")).strip().lower() != "table":
        raise ChainTableError(f"{where}: only 'type' = 'table' can be a chain table.")
    if not primary_keys:
        raise ChainTableError(f"{where} needs a primary key (chain reads merge rows by key across branches).")
    if not partition_keys:
        raise ChainTableError(f"{where} must be partitioned: the chain runs over partitions (e.g. a date column).")
    bucket_raw = options.get("bucket")
    try:
        bucket = int(str(bucket_raw).strip()) if bucket_raw is not None else -1
    except ValueError:
        raise ChainTableError(f"{where}: option 'bucket' = '{bucket_raw}' must be an integer.") from None
    if bucket <= 0:
        raise ChainTableError(f"{where} needs a fixed bucket count: set 'bucket' to N > 0 (got {bucket}); chain "
                              "splits join the same bucket of the snapshot and delta branches.")
    seq = [s.strip() for s in str(options.get("sequence.field") or "").split(",") if s.strip()]
    if not seq:
        raise ChainTableError(f"{where} needs the option 'sequence.field': sequence numbers are branch-local, so "
                              "only a user sequence column can order rows across the snapshot and delta branches.")
    engine = str(options.get("merge-engine") or "deduplicate").strip().lower()
    if engine == "first-row":
        raise ChainTableError(f"{where}: the first-row merge engine cannot be used (it forbids 'sequence.field', "
                              "which chain tables require). Use deduplicate or partial-update.")
    if engine == "aggregation":
        aggregated = [s for s in seq if options.get(f"fields.{s}.aggregate-function")]
        if aggregated:
            raise ChainTableError(f"{where}: the sequence field(s) {aggregated} cannot be aggregated; remove "
                                  f"'fields.{aggregated[0]}.aggregate-function'.")
    producer = str(options.get("changelog-producer") or "none").strip().lower()
    if producer not in ("none", "input"):
        raise ChainTableError(f"{where}: 'changelog-producer' = '{producer}' is not allowed; use 'none' or 'input'.")
    if str(options.get("deletion-vectors.enabled", "false")).strip().lower() == "true" and engine != "deduplicate":
        raise ChainTableError(f"{where}: deletion vectors are only allowed with the deduplicate merge engine.")
    strategy = options.get("partition.expiration-strategy")
    if strategy is not None and str(strategy).strip().lower() != "values-time":
        raise ChainTableError(f"{where}: 'partition.expiration-strategy' must be 'values-time' (got '{strategy}').")
    pattern = options.get(TIMESTAMP_PATTERN)
    formatter = options.get(TIMESTAMP_FORMATTER)
    if not pattern or not formatter:
        missing = [k for k, v in ((TIMESTAMP_PATTERN, pattern), (TIMESTAMP_FORMATTER, formatter)) if not v]
        raise ChainTableError(f"{where} needs {' and '.join(repr(m) for m in missing)}, e.g. "
                              f"'{TIMESTAMP_PATTERN}' = '${partition_keys[-1]}' and '{TIMESTAMP_FORMATTER}' = "
                              "'yyyyMMdd': they turn partition values into time to find the deltas of a chain.")
    raw_keys = options.get(CHAIN_KEYS)
    if raw_keys is None or not str(raw_keys).strip():
        chain_keys = tuple(partition_keys)
    else:
        chain_keys = tuple(k.strip() for k in str(raw_keys).split(",") if k.strip())
        unknown = [k for k in chain_keys if k not in partition_keys]
        if unknown or not chain_keys:
            raise ChainTableError(f"{where}: '{CHAIN_KEYS}' = '{raw_keys}' names {unknown or 'nothing'}, which are "
                                  f"not partition keys (partition keys: {', '.join(partition_keys)}).")
        if tuple(partition_keys[len(partition_keys) - len(chain_keys):]) != chain_keys:
            raise ChainTableError(
                f"{where}: '{CHAIN_KEYS}' = '{raw_keys}' must be a contiguous suffix of the partition keys "
                f"({', '.join(partition_keys)}), e.g. '{partition_keys[-1]}'; the keys before it form the group.")
    PartitionTimeResolver(str(pattern), str(formatter), list(partition_keys))  # validates both options
    threshold = None
    raw_threshold = options.get(AUTO_THRESHOLD)
    if raw_threshold is not None and str(raw_threshold).strip():
        try:
            threshold = int(str(raw_threshold).strip())
        except ValueError:
            threshold = -1
        if threshold < 1:
            raise ChainTableError(f"{where}: '{AUTO_THRESHOLD}' = '{raw_threshold}' must be a positive integer (the "
                                  "number of merged delta partitions above which a delta write compacts).")
    key_range = str(options.get(KEY_RANGE_SPLIT, "true")).strip().lower()
    if key_range not in ("true", "false"):
        raise ChainTableError(f"Option '{KEY_RANGE_SPLIT}' must be 'true' or 'false', got '{key_range}'.")
    snapshot_branch = (options.get(SNAPSHOT_BRANCH) or "").strip() or None
    delta_branch = (options.get(DELTA_BRANCH) or "").strip() or None
    if snapshot_branch and snapshot_branch == delta_branch:
        raise ChainTableError(f"{where}: '{SNAPSHOT_BRANCH}' and '{DELTA_BRANCH}' must name two different branches "
                              f"(both are '{snapshot_branch}').")
    if MAIN_BRANCH in (snapshot_branch, delta_branch):
        raise ChainTableError(f"{where}: the snapshot and delta branches cannot be '{MAIN_BRANCH}'.")
    return ChainConfig(snapshot_branch, delta_branch, tuple(partition_keys), chain_keys, str(pattern),
                       str(formatter), key_range == "true", threshold)


def chain_config(schema: TableSchema, table: str = "the table") -> ChainConfig | None:
    """The validated chain definition of a schema, or None when ``chain-table.enabled`` is off."""
    if not chain_options_enabled(schema.options):
        return None
    return validate_chain_definition(schema.partition_keys, schema.primary_keys, schema.options, table)


def chain_read_config(store: FileStore) -> ChainConfig | None:
    """The chain config when reading ``store``'s branch is a chain read (Paimon's wiring, §10.1): chain
    enabled, both fallback branches set, and the loaded branch is neither of them. Else None (plain read)."""
    schema = store.schemas.latest()
    if schema is None or not chain_options_enabled(schema.options):
        return None
    cfg = chain_config(schema, store.table_path)
    if cfg is None or not cfg.complete or store.branch in (cfg.snapshot_branch, cfg.delta_branch):
        return None
    return cfg


def _strip_nullability(t: DataType) -> DataType:
    t = t.copy(nullable=True)
    if isinstance(t, RowType):
        return replace(t, fields=tuple(replace(f, type=_strip_nullability(f.type), description=None)
                                       for f in t.fields))
    if isinstance(t, (ArrayType, MultisetType)):
        return replace(t, element=_strip_nullability(t.element))
    if isinstance(t, MapType):
        return replace(t, key=_strip_nullability(t.key), value=_strip_nullability(t.value))
    return t


def _row_signature(schema: TableSchema) -> list[tuple[int, str, DataType]]:
    return [(f.id, f.name, _strip_nullability(f.type)) for f in schema.fields]


def validate_branch_schemas(schemas: Mapping[str, TableSchema], table: str = "the table") -> None:
    """The three branches must have the same row type (ids, names, types; nullability ignored), because files
    of every branch are read into one merge by field id (``FallbackReadFileStoreTable.validateSchema``)."""
    items = list(schemas.items())
    base_branch, base = items[0]
    want = _row_signature(base)
    for branch, schema in items[1:]:
        got = _row_signature(schema)
        if got != want:
            a = {(i, n): t for i, n, t in want}
            b = {(i, n): t for i, n, t in got}
            diff = sorted({f"{n}#{i}" for (i, n) in set(a) ^ set(b)} |
                          {f"{n}#{i}" for (i, n) in set(a) & set(b) if a[(i, n)] != b[(i, n)]})
            raise ChainTableError(
                f"Chain table {table}: branch '{branch}' (schema {schema.id}) does not have the same columns as "
                f"branch '{base_branch}' (schema {base.id}); differing columns (name#field id): "
                f"{', '.join(diff) or 'column order'}. Apply the same schema change on every chain branch "
                "(Table.add_column etc. on the main branch of a chain table does this).")
        if list(schema.partition_keys) != list(base.partition_keys) or \
                list(schema.primary_keys) != list(base.primary_keys):
            raise ChainTableError(f"Chain table {table}: branch '{branch}' has partition keys {schema.partition_keys} "
                                  f"and primary keys {schema.primary_keys}, but branch '{base_branch}' has "
                                  f"{base.partition_keys} and {base.primary_keys}.")


# ------------------------------------------------------------------------------------------------------
# Which snapshot of each branch (time travel)
# ------------------------------------------------------------------------------------------------------
def _at_time(store: FileStore, ts: int) -> Snapshot | None:
    snap = store.snapshots.earlier_or_equal_time_millis(ts)
    if snap is not None:
        return snap
    tagged = [t for t in TagManager(store.fileio, store.table_path, store.branch).list()
              if t.snapshot.time_millis <= ts]
    return max(tagged, key=lambda t: t.snapshot.time_millis).snapshot if tagged else None


def resolve_chain_snapshots(stores: Mapping[str, FileStore], opts: ReadOptions,
                            table: str = "the table") -> dict[str, Snapshot | None]:
    """One consistent snapshot per branch role (None = the branch had no data then).

    * no time travel: each branch's latest snapshot;
    * ``scan.timestamp(-millis)``: on every branch the latest snapshot committed at or before that time;
    * ``scan.tag-name`` (or ``scan.version`` naming such a tag): a *chain tag*, i.e. a tag of that name on the
      snapshot and on the delta branch (``Table.create_chain_tag`` makes one). Main uses its own tag of that
      name, else its state at the delta tag's creation time;
    * snapshot ids and watermarks are branch-local and refused.
    """
    if opts.incremental_between or opts.incremental_between_timestamp:
        raise ChainTableError(f"Chain table {table}: incremental reads are reads of the delta branch; read with "
                              f"option('branch', '{stores[DELTA].branch}') instead.")
    if opts.snapshot_id is not None or opts.watermark is not None:
        what = "scan.snapshot-id" if opts.snapshot_id is not None else "scan.watermark"
        raise ChainTableError(
            f"Chain table {table}: '{what}' cannot select a version, because snapshot ids and watermarks are "
            "branch-local and the snapshot and delta branches number their snapshots independently. Use "
            "'scan.timestamp-millis' (applied to every branch) or 'scan.tag-name' with a chain tag "
            "(Table.create_chain_tag), or read one branch with option('branch', ...).")
    tag = opts.tag_name
    if opts.version is not None:
        version = opts.version
        if any(TagManager(s.fileio, s.table_path, s.branch).exists(version) for r, s in stores.items() if r != MAIN):
            tag = version
        else:
            raise ChainTableError(
                f"Chain table {table}: version '{version}' is not a chain tag (a tag of that name on the branches "
                f"'{stores[SNAPSHOT].branch}' and '{stores[DELTA].branch}'). Create one with Table.create_chain_tag, "
                "or use 'scan.timestamp-millis'.")
    if tag is not None:
        return _resolve_chain_tag(stores, tag, table)
    if opts.timestamp_millis is not None:
        return {role: _at_time(s, opts.timestamp_millis) for role, s in stores.items()}
    return {role: s.snapshots.latest() for role, s in stores.items()}


def _tag_millis(t: Any) -> int | None:
    return int(t.create_time.timestamp() * 1000) if t.create_time is not None else None


def _resolve_chain_tag(stores: Mapping[str, FileStore], tag: str, table: str) -> dict[str, Snapshot | None]:
    """A chain tag: the tag ``tag`` on the snapshot and delta branches. A branch that had no snapshot yet at the
    tag's instant (so :meth:`Table.create_chain_tag` could not tag it) reads as empty; main uses its own tag of
    that name, else its state at that instant."""
    found: dict[str, Any] = {}
    for role in (SNAPSHOT, DELTA):
        s = stores[role]
        tm = TagManager(s.fileio, s.table_path, s.branch)
        if tm.exists(tag):
            found[role] = tm.get_tag(tag)
    if not found:
        names = {stores[r].branch: TagManager(stores[r].fileio, stores[r].table_path, stores[r].branch).list_names()
                 for r in (SNAPSHOT, DELTA)}
        raise ChainTableError(
            f"Chain table {table}: tag '{tag}' exists on neither the snapshot branch '{stores[SNAPSHOT].branch}' nor "
            f"the delta branch '{stores[DELTA].branch}'. Time travel to a tag needs a chain tag: create it with "
            f"Table.create_chain_tag('{tag}'). Existing tags: {names}.")
    # The instant the chain tag stands for: the tag's creation time (Paimon records one only for tags with a
    # retention), else the newest tagged snapshot's commit time.
    ref = found.get(DELTA) or found[SNAPSHOT]
    when = _tag_millis(ref)
    if when is None:
        when = max(t.snapshot.time_millis for t in found.values())
    out: dict[str, Snapshot | None] = {}
    for role in (SNAPSHOT, DELTA):
        if role in found:
            out[role] = found[role].snapshot
            continue
        s = stores[role]
        if _at_time(s, when) is not None:
            raise ChainTableError(
                f"Chain table {table}: tag '{tag}' exists on branch "
                f"'{stores[SNAPSHOT if role == DELTA else DELTA].branch}' but not on the {role} branch '{s.branch}', "
                "which had data when the tag was created. Create the tag there too (Table.create_chain_tag tags "
                "both branches at once), or use 'scan.timestamp-millis'.")
        out[role] = None
    main = stores[MAIN]
    main_tags = TagManager(main.fileio, main.table_path, main.branch)
    if main_tags.exists(tag):
        out[MAIN] = main_tags.get(tag)
    else:
        out[MAIN] = _at_time(main, when)
    return out


def stores_of(main: FileStore, cfg: ChainConfig) -> dict[str, FileStore]:
    assert cfg.snapshot_branch and cfg.delta_branch
    return {MAIN: main, SNAPSHOT: main.with_branch(cfg.snapshot_branch), DELTA: main.with_branch(cfg.delta_branch)}


def _latest_schemas(stores: Mapping[str, FileStore], table: str) -> dict[str, TableSchema]:
    out = {}
    for role, s in stores.items():
        schema = s.schemas.latest()
        if schema is None:
            raise ChainTableError(
                f"Chain table {table}: the {role} branch '{s.branch}' does not exist. Create it with "
                f"Table.create_branch('{s.branch}') (an empty branch), or fix the option "
                f"'{SNAPSHOT_BRANCH if role == SNAPSHOT else DELTA_BRANCH}'.")
        out[role] = s.schema()
    return out


def _read_schema(stores: Mapping[str, FileStore], latest: Mapping[str, TableSchema],
                 snaps: Mapping[str, Snapshot | None], opts: ReadOptions) -> TableSchema:
    if not opts.time_travel:
        return latest[MAIN]
    for role in (DELTA, SNAPSHOT, MAIN):
        snap = snaps.get(role)
        if snap is not None:
            return stores[role].schemas.schema(snap.schema_id)
    return latest[MAIN]


def chain_read_schema(store: FileStore, opts: ReadOptions) -> TableSchema | None:
    """The schema a chain read of ``store`` returns, or None when reading ``store`` is not a chain read."""
    cfg = chain_read_config(store)
    if cfg is None:
        return None
    stores = stores_of(store, cfg)
    latest = _latest_schemas(stores, store.table_path)
    snaps = resolve_chain_snapshots(stores, opts, store.table_path)
    return _read_schema(stores, latest, snaps, opts)


# ------------------------------------------------------------------------------------------------------
# Planning
# ------------------------------------------------------------------------------------------------------
# Natural order of partition values (NULL first), as Paimon compares chain partitions.
_sortable = sortable_key


@dataclass
class ChainTarget:
    """How one requested partition is read (what :meth:`Table.explain_chain` reports)."""

    partition: dict[str, Any]
    source: str  # "main" | "snapshot" | "chain"
    anchor: dict[str, Any] | None = None
    deltas: list[dict[str, Any]] = field(default_factory=list)
    buckets: list[int] = field(default_factory=list)
    files: dict[str, int] = field(default_factory=dict)  # branch -> number of files read
    splits: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"partition": dict(self.partition), "source": self.source,
                "anchor": dict(self.anchor) if self.anchor is not None else None,
                "deltas": [dict(d) for d in self.deltas], "delta_count": len(self.deltas),
                "buckets": list(self.buckets), "files": dict(self.files), "splits": self.splits}


@dataclass
class ChainReadPlan:
    plan: ScanPlan
    schema: TableSchema
    schemas: dict[str, dict[int, TableSchema]]  # branch -> schema id -> schema
    targets: list[ChainTarget]
    snapshots: dict[str, Snapshot | None]  # branch name -> snapshot read
    config: ChainConfig


@dataclass
class BranchPartitions:
    """Live entries of one branch snapshot, grouped by decoded partition values."""

    entries: dict[tuple, list[ManifestEntry]]
    raw: dict[tuple, bytes]

    @classmethod
    def of(cls, store: FileStore, snapshot: Snapshot | None, schema: TableSchema) -> "BranchPartitions":
        types = [f.type for f in schema.partition_fields]
        cache: dict[bytes, tuple] = {}
        entries: dict[tuple, list[ManifestEntry]] = {}
        raw: dict[tuple, bytes] = {}
        for e in store.live_entries(snapshot):
            values = cache.get(e.partition)
            if values is None:
                values = tuple(deserialize_row(e.partition, types))
                cache[e.partition] = values
            entries.setdefault(values, []).append(e)
            raw.setdefault(values, e.partition)
        return cls(entries, raw)


def plan_chain(main: FileStore, cfg: ChainConfig, opts: ReadOptions, predicate: Sequence[Leaf] = (), *,
               partition_filter: Callable[[dict[str, Any]], bool] | None = None, use_main: bool = True,
               force_chain: Iterable[tuple] = (), only_chain: bool = False) -> ChainReadPlan:
    """Plan a chain read of ``main`` (the loaded branch) per §10.2.

    ``predicate`` leaves on partition columns (and ``partition_filter``) choose the target partitions; other
    leaves are left to the caller's residual filter, applied after merging. ``use_main=False`` ignores the
    loaded branch (chain compaction reads the snapshot/delta pair only); partitions in ``force_chain`` are
    chain-resolved even when the snapshot branch has them (compaction with overwrite); ``only_chain`` drops
    snapshot-branch splits (compaction writes chain-resolved partitions only).
    """
    table = main.table_path
    stores = stores_of(main, cfg)
    latest = _latest_schemas(stores, table)
    validate_branch_schemas(latest, table)
    snaps = resolve_chain_snapshots(stores, opts, table)
    schema = _read_schema(stores, latest, snaps, opts)
    names = [f.name for f in schema.partition_fields]
    part_pred = leaves_on(predicate, names)
    forced = set(force_chain)

    def wanted(values: tuple) -> bool:
        named = dict(zip(names, values))
        return eval_on_values(part_pred, named) and (partition_filter is None or partition_filter(named))

    branch_of = {role: s.branch for role, s in stores.items()}
    schemas: dict[str, dict[int, TableSchema]] = {}
    for role, s in stores.items():
        schemas[s.branch] = {sid: s.schemas.schema(sid) for sid in s.schemas.list_ids()}

    counters = ScanCounters()
    splits: list[DataSplit] = []
    targets: list[ChainTarget] = []

    # Level 1: the loaded branch wins for every partition it has.
    main_parts: set[tuple] = set()
    if use_main:
        # Partition leaves only: file pruning by value filters must never make a main partition look missing.
        main_plan = ScanPlanner(main, schema).plan(
            snaps[MAIN], part_pred, partition_filter=(lambda named: wanted(tuple(named[n] for n in names))))
        _add_counters(counters, main_plan.counters)
        by_part: dict[tuple, list[DataSplit]] = {}
        for s in main_plan.splits:
            by_part.setdefault(tuple(s.partition_values), []).append(s)
        for values, part_splits in by_part.items():
            main_parts.add(values)
            splits.extend(part_splits)
            targets.append(ChainTarget(dict(zip(names, values)), "main",
                                       buckets=sorted({s.bucket for s in part_splits}),
                                       files={main.branch: sum(len(s.files) for s in part_splits)},
                                       splits=len(part_splits)))

    snap_parts = BranchPartitions.of(stores[SNAPSHOT], snaps[SNAPSHOT], schema)
    delta_parts = BranchPartitions.of(stores[DELTA], snaps[DELTA], schema)

    # Level 2a: snapshot-branch partitions are complete.
    s_hit = {p for p in snap_parts.entries if wanted(p) and p not in main_parts and p not in forced}
    if s_hit and not only_chain:
        hit_entries = [e for p in s_hit for e in snap_parts.entries[p]]
        snap_plan = ScanPlanner(stores[SNAPSHOT], schema).plan_entries(hit_entries)
        _add_counters(counters, snap_plan.counters)
        by_part = {}
        for s in snap_plan.splits:
            s = replace(s, file_branches={f.file_name: branch_of[SNAPSHOT] for f in s.files})
            by_part.setdefault(tuple(s.partition_values), []).append(s)
        for values, part_splits in by_part.items():
            splits.extend(part_splits)
            targets.append(ChainTarget(dict(zip(names, values)), "snapshot",
                                       buckets=sorted({s.bucket for s in part_splits}),
                                       files={branch_of[SNAPSHOT]: sum(len(s.files) for s in part_splits)},
                                       splits=len(part_splits)))

    # Level 2b: delta-only partitions are chain-resolved.
    chain_targets = sorted((p for p in delta_parts.entries if wanted(p) and p not in main_parts and p not in s_hit),
                           key=_sortable)
    if chain_targets:
        g = cfg.group_size
        resolver = cfg.resolver()
        snap_by_group: dict[tuple, list[tuple]] = {}
        for p in snap_parts.entries:
            snap_by_group.setdefault(p[:g], []).append(p)
        delta_by_group: dict[tuple, list[tuple]] = {}
        for p in delta_parts.entries:
            delta_by_group.setdefault(p[:g], []).append(p)
        for group in (snap_by_group, delta_by_group):
            for parts in group.values():
                parts.sort(key=lambda p: _sortable(p[g:]))
        target_size = split_target_size(schema.options, {})
        key_fields = schema.trimmed_primary_key_fields
        for t in chain_targets:
            group = t[:g]
            anchors = snap_by_group.get(group, [])
            anchor_keys = [_sortable(p[g:]) for p in anchors]
            pos = bisect.bisect_left(anchor_keys, _sortable(t[g:]))
            anchor = anchors[pos - 1] if pos > 0 else None
            group_deltas = delta_by_group.get(group, [])
            if anchor is not None:
                deltas = _deltas_after_anchor(resolver, names, anchor, t, group_deltas, table)
            else:
                deltas = [d for d in group_deltas if _sortable(d[g:]) < _sortable(t[g:]) or d == t]
            tsplits = _chain_splits(stores, schema, schemas, key_fields, cfg, t, anchor, deltas, snap_parts,
                                    delta_parts, delta_parts.raw[t], target_size, table)
            splits.extend(tsplits)
            files: dict[str, int] = {}
            for s in tsplits:
                for f in s.files:
                    b = s.file_branches.get(f.file_name, main.branch)
                    files[b] = files.get(b, 0) + 1
                counters.files_selected += len(s.files)
                counters.bytes_selected += s.size_bytes
            counters.partitions_selected += 1
            targets.append(ChainTarget(
                dict(zip(names, t)), "chain", dict(zip(names, anchor)) if anchor is not None else None,
                [dict(zip(names, d)) for d in deltas], sorted({s.bucket for s in tsplits}), files, len(tsplits)))

    targets.sort(key=lambda tg: _sortable(tg.partition[n] for n in names))
    plan = ScanPlan(snaps[MAIN], schema, splits, counters,
                    notes=[f"chain: {tg.source} {tg.partition}" for tg in targets])
    return ChainReadPlan(plan, schema, schemas, targets, {branch_of[r]: s for r, s in snaps.items()}, cfg)


def _add_counters(total: ScanCounters, part: ScanCounters) -> None:
    for k, v in part.as_dict().items():
        setattr(total, k, getattr(total, k) + v)


def _deltas_after_anchor(resolver: PartitionTimeResolver, names: Sequence[str], anchor: tuple, target: tuple,
                         group_deltas: Sequence[tuple], table: str) -> list[tuple]:
    """The existing delta partitions that Paimon's time stepping over (anchor, target] would visit."""
    def time_of(values: tuple, role: str) -> _dt.datetime:
        named = dict(zip(names, values))
        try:
            return resolver.to_time(named)
        except (ValueError, OverflowError) as exc:
            raise ChainTableError(
                f"Chain table {table}: the {role} partition {named} does not fit '{TIMESTAMP_PATTERN}' = "
                f"'{resolver.pattern}' with '{TIMESTAMP_FORMATTER}' = '{resolver.format.pattern}' ({exc}); "
                "fix the partition values or the options.") from exc

    lo = time_of(anchor, "anchor")
    hi = time_of(target, "target")
    out = []
    for d in group_deltas:
        if d == target:
            out.append(d)
            continue
        t = resolver.canonical_time(dict(zip(names, d)))
        if t is not None and lo < t <= hi:
            out.append(d)
    return out


def _chain_splits(stores: Mapping[str, FileStore], schema: TableSchema,
                  schemas: Mapping[str, Mapping[int, TableSchema]], key_fields: Sequence[Any], cfg: ChainConfig,
                  target: tuple, anchor: tuple | None, deltas: Sequence[tuple], snap_parts: BranchPartitions,
                  delta_parts: BranchPartitions, raw: bytes, target_size: int, table: str) -> list[DataSplit]:
    """One split per bucket of ``target`` (cut further by key ranges when enabled): the anchor's files then
    the deltas' files, each with its branch, directory and merge rank; rows relabelled to ``target``."""
    snap_branch = stores[SNAPSHOT].branch
    delta_branch = stores[DELTA].branch
    sources: list[tuple[str, tuple, list[ManifestEntry]]] = []
    if anchor is not None:
        sources.append((snap_branch, anchor, snap_parts.entries[anchor]))
    sources.extend((delta_branch, d, delta_parts.entries[d]) for d in deltas)
    totals = {e.total_buckets for _, _, entries in sources for e in entries}
    if len(totals) > 1:
        raise ChainTableError(
            f"Chain table {table}: inconsistent bucket numbers {sorted(totals)} between the anchor and delta "
            f"partitions of {dict(zip(schema.partition_keys, target))}; all chain branches must use the same "
            "'bucket' value.")
    by_bucket: dict[int, list[tuple[DataFileMeta, str, str, int]]] = {}
    store = stores[MAIN]
    for rank, (branch, values, entries) in enumerate(sources):
        for e in sorted(entries, key=lambda e: (e.file.level, e.file.min_sequence_number, e.file.file_name)):
            path = store.bucket_path(schema, values, e.bucket)
            by_bucket.setdefault(e.bucket, []).append((e.file, branch, path, rank))
    total = totals.pop() if totals else schema.num_buckets
    out = []
    for bucket in sorted(by_bucket):
        items = by_bucket[bucket]
        branches = {f.file_name: b for f, b, _, _ in items}
        paths = {f.file_name: p for f, _, p, _ in items}
        ranks = {f.file_name: r for f, _, _, r in items}
        files = [f for f, _, _, _ in items]
        single_source = len({r for _, _, _, r in items}) == 1
        groups = [files]
        if cfg.key_range_split and len(files) > 1:
            groups = _pack_sections(files, branches, schemas, key_fields, target_size)
        for group_files in groups:
            raw_ok = (single_source and all(f.level > 0 for f in group_files)
                      and all(f.delete_row_count == 0 for f in group_files)
                      and len({f.level for f in group_files}) == 1)
            names = {f.file_name for f in group_files}
            out.append(DataSplit(
                raw, tuple(target), bucket, total, tuple(group_files), store.bucket_path(schema, target, bucket),
                raw_ok, file_branches={n: branches[n] for n in names}, file_bucket_paths={n: paths[n] for n in names},
                file_ranks={n: ranks[n] for n in names}, relabel_partition=True))
    return out


def _pack_sections(files: Sequence[DataFileMeta], branches: Mapping[str, str],
                   schemas: Mapping[str, Mapping[int, TableSchema]], key_fields: Sequence[Any],
                   target_size: int) -> list[list[DataFileMeta]]:
    """Cut one bucket's files into independent key-range sections, packed in key order to ~target size."""
    def key_of(f: DataFileMeta) -> tuple[tuple, tuple]:
        file_schema = schemas[branches[f.file_name]][f.schema_id]
        by_id = {x.id: x for x in file_schema.fields}
        types = [by_id[k.id].type if k.id in by_id else k.type for k in key_fields]
        return decoded_key_range(f, types)

    sections = key_sections(files, key_of)
    out: list[list[DataFileMeta]] = []
    size = 0
    for sec in sections:
        sec_size = sum(f.file_size for f in sec)
        if out and size + sec_size <= target_size:
            out[-1].extend(sec)
            size += sec_size
        else:
            out.append(list(sec))
            size = sec_size
    return out


# ------------------------------------------------------------------------------------------------------
# Write-side rule: dropping snapshot partitions (§10.7)
# ------------------------------------------------------------------------------------------------------
def snapshot_drop_violations(cfg: ChainConfig, snapshot_parts: Iterable[tuple], delta_parts: Iterable[tuple],
                             dropped: Iterable[tuple]) -> list[tuple[tuple, list[tuple]]]:
    """Dropped snapshot partitions that delta partitions still depend on: deltas of the same group follow it
    (before the next remaining snapshot partition) and no earlier snapshot partition remains to anchor them.
    Returns (dropped partition, dependent deltas) pairs."""
    g = cfg.group_size
    dropped = set(dropped)
    remaining = [p for p in snapshot_parts if p not in dropped]
    deltas = list(delta_parts)
    out = []
    for d in sorted(dropped, key=_sortable):
        group, chain = d[:g], _sortable(d[g:])
        same = [_sortable(p[g:]) for p in remaining if p[:g] == group]
        if any(c < chain for c in same):
            continue
        nxt = min((c for c in same if c > chain), default=None)
        dependents = [x for x in deltas if x[:g] == group and _sortable(x[g:]) > chain
                      and (nxt is None or _sortable(x[g:]) < nxt)]
        if dependents:
            out.append((d, sorted(dependents, key=_sortable)))
    return out
