"""Schema evolution on write (``write.merge-schema``, Java's ``SchemaMergingUtils``): the table takes the data's shape.

A write whose data has columns the table lacks adds them (nullable, at the end, new field ids; a ROW column's new
members likewise), in a schema committed before the data files are written, so the data commits against it; columns
the data lacks stay and are written as NULL. Existing column types are kept (the data is cast to them by the write's
store-assignment rules) unless ``write.merge-schema.type-widening`` is on: then a column whose data has a type
Paimon reaches by an implicit cast widens to it (INT to BIGINT, a larger DECIMAL precision with the same scale, a
longer VARCHAR), and with ``write.merge-schema.explicit-cast`` also by an explicit cast (BIGINT to INT, STRING to
DATE) -- as Paimon's master branch decides (apache/paimon#8042). Both are table options as well as write options.

The change is computed against the latest schema each time it is committed (``SchemaManager.commit_changes`` retries
from the new latest schema when another writer committed first): two writers adding the same column agree on it,
and a writer whose data conflicts with what the other committed gets the error naming the column.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping, Sequence

from pyspark_paimon.errors import SchemaMismatchError
from pyspark_paimon.metadata.schema.options import (
    BUCKET_KEY,
    WRITE_MERGE_SCHEMA,
    WRITE_MERGE_SCHEMA_EXPLICIT_CAST,
    WRITE_MERGE_SCHEMA_TYPE_WIDENING,
    CoreOptions,
)
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.types.casts import evolution_problem, same_but_nullability, supports_cast
from pyspark_paimon.metadata.types.model import (
    ArrayType,
    AtomicType,
    DataField,
    DataType,
    MapType,
    RowType,
    assign_field_ids,
    type_to_sql,
)

__all__ = ["MERGE_SCHEMA_KEYS", "SchemaMerge"]

#: The options that choose a write's schema evolution (table options, and write options of one write).
MERGE_SCHEMA_KEYS = (WRITE_MERGE_SCHEMA.key, WRITE_MERGE_SCHEMA_TYPE_WIDENING.key, WRITE_MERGE_SCHEMA_EXPLICIT_CAST.key)
_LENGTH = ("CHAR", "VARCHAR", "BINARY", "VARBINARY")
_PRECISION = ("TIMESTAMP", "TIMESTAMP_LTZ", "TIME")


@dataclass(frozen=True)
class SchemaMerge:
    """How one write evolves the table to its data (see the module docstring)."""

    type_widening: bool = False
    explicit_cast: bool = False

    @classmethod
    def of(cls, table_options: Mapping[str, str], write_options: Mapping[str, str]) -> "SchemaMerge | None":
        """The write's evolution from the table's options overlaid by the write's (None: the write must fit)."""
        view = CoreOptions({**table_options, **{k: v for k, v in write_options.items() if k in MERGE_SCHEMA_KEYS}})
        if not view.get(WRITE_MERGE_SCHEMA):
            return None
        widening = view.get(WRITE_MERGE_SCHEMA_TYPE_WIDENING)
        return cls(widening, widening and view.get(WRITE_MERGE_SCHEMA_EXPLICIT_CAST))

    def change(
        self, incoming: Sequence[tuple[str, DataType]], table: str
    ) -> Callable[[TableSchema], TableSchema | None]:
        """The schema change taking the data's columns ``incoming`` (name, type) into a table schema; None when the
        table already fits them."""

        def change(s: TableSchema) -> TableSchema | None:
            merger = _Merger(self, s, table)
            fields = merger.fields(s.fields, incoming, "")
            if fields == s.fields:
                return None
            return replace(s, fields=fields, highest_field_id=merger.highest)

        return change


class _Merger:
    def __init__(self, merge: SchemaMerge, schema: TableSchema, table: str):
        self.merge = merge
        self.schema = schema
        self.table = table
        self.highest = schema.highest_field_id
        bucket_keys = schema.bucket_keys if schema.core_options.is_set(BUCKET_KEY) else []
        self.keys = {*schema.partition_keys, *schema.primary_keys, *bucket_keys}

    def fail(self, column: str, why: str) -> SchemaMismatchError:
        return SchemaMismatchError(
            f"The data written to {self.table} cannot be merged into the table's schema: column '{column}' {why}."
        )

    def fields(
        self, base: Sequence[DataField], incoming: Sequence[tuple[str, DataType]], parent: str
    ) -> list[DataField]:
        """``base`` merged with ``incoming`` (matched by name, else case-insensitively when unambiguous); new
        ones appended with new field ids."""
        by_name = {name: t for name, t in incoming}
        by_lower: dict[str, list[str]] = {}
        for name, _ in incoming:
            by_lower.setdefault(name.lower(), []).append(name)
        used: set[str] = set()
        out = []
        for f in base:
            match = f.name if f.name in by_name else None
            if match is None and len(by_lower.get(f.name.lower(), [])) == 1:
                match = by_lower[f.name.lower()][0]
            if match is None:
                out.append(f)
                continue
            used.add(match)
            path = f"{parent}{f.name}"
            merged = self.type(f.type, by_name[match], path)
            if merged != f.type and not parent and f.name in self.keys:
                why = f"is a partition, primary or bucket key of type {type_to_sql(f.type)}"
                raise self.fail(path, f"{why}, which cannot change (existing rows are placed by it)")
            out.append(f if merged == f.type else f.with_type(merged))
        added = [(name, t.copy(nullable=True)) for name, t in incoming if name not in used]
        if added:
            new, self.highest = assign_field_ids(added, start=self.highest + 1)
            out.extend(new)
        return out

    def type(self, base: DataType, update: DataType, path: str) -> DataType:
        if same_but_nullability(base, update):
            return base
        if isinstance(base, RowType) and isinstance(update, RowType):
            members = self.fields(base.fields, [(f.name, f.type) for f in update.fields], f"{path}.")
            return base if members == list(base.fields) else replace(base, fields=tuple(members))
        if isinstance(base, (ArrayType, MapType)) and type(update) is type(base):
            merged = self._container(base, update, path)
            problem = evolution_problem(base, merged)
            if problem:
                why = f"would change to {type_to_sql(merged)}, which reads here cannot follow"
                raise self.fail(path, f"{why}: {problem}")
            return merged
        if not self.merge.type_widening:
            return base  # the data is cast to the column's type as it is written
        return self._widened(base, update, path)

    def _container(self, base: ArrayType | MapType, update: DataType, path: str) -> DataType:
        if isinstance(base, ArrayType) and isinstance(update, ArrayType):
            return replace(base, element=self.type(base.element, update.element, f"{path}.element"))
        assert isinstance(base, MapType) and isinstance(update, MapType)
        key = self.type(base.key, update.key, f"{path}.key")
        return replace(base, key=key, value=self.type(base.value, update.value, f"{path}.value"))

    def _widened(self, base: DataType, update: DataType, path: str) -> DataType:
        """Java's leaf rule with type widening on (``SchemaMergingUtils.merge``)."""
        explicit = self.merge.explicit_cast
        if not (isinstance(base, AtomicType) and isinstance(update, AtomicType)):
            raise self.fail(path, f"is {type_to_sql(base)} and the data holds {type_to_sql(update)}")
        have, got = type_to_sql(base), type_to_sql(update)
        widened: DataType
        if base.root == "DECIMAL" and update.root == "DECIMAL":
            if base.scale != update.scale:
                raise self.fail(path, f"is {have}, and the data's {got} has another scale")
            assert base.precision is not None and update.precision is not None
            widened = replace(base, precision=max(base.precision, update.precision))
        elif supports_cast(base.copy(nullable=True), update.copy(nullable=True), explicit):
            for attr, roots in (("length", _LENGTH), ("precision", _PRECISION)):
                a, b = getattr(base, attr), getattr(update, attr)
                if base.root in roots and update.root in roots and a is not None and b is not None and b < a:
                    if not explicit:
                        hint = "allowed with 'write.merge-schema.explicit-cast'"
                        raise self.fail(path, f"is {have}, and the data's {got} has a smaller {attr} ({hint})")
            widened = update.copy(nullable=base.nullable)
        else:
            hint = " without 'write.merge-schema.explicit-cast'" if supports_cast(base, update, True) else ""
            raise self.fail(path, f"is {have}, and Paimon casts no {got} into it{hint}")
        problem = evolution_problem(base, widened)
        if problem:
            why = f"would change from {have} to {type_to_sql(widened)}, which reads here cannot follow: {problem}"
            raise self.fail(path, why)
        return widened
