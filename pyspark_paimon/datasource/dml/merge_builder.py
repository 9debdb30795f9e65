"""``t.merge(source, on=...)`` with an Arrow source: :class:`MergeBuilder` holds the clauses (delta-rs's style), joins
the source with the target rows by key in Arrow, decides per row (:meth:`MergeBuilder.decide`, which the Spark merge
reuses in its tasks) and writes the change as ONE commit through ``change_commit``. Without by-source clauses the
target read is pruned by the source's keys.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.datasource.dml.change_commit import MergeResult, apply_change
from pyspark_paimon.datasource.dml.change_rules import check_assigned, check_merge_engine, refuse_foreign
from pyspark_paimon.datasource.dml.change_target import Target, key_prune, load_target
from pyspark_paimon.datasource.dml.dml import store_column, with_columns
from pyspark_paimon.datasource.dml.row_id_dml import commit_by_row_ids, read_with_row_ids
from pyspark_paimon.datasource.dml.sql_eval import Scope, evaluate, evaluate_condition
from pyspark_paimon.datasource.dml.stale_reads import replanned
from pyspark_paimon.datasource.write.arrow_input import read_whole
from pyspark_paimon.errors import DmlError, OptionError
from pyspark_paimon.metadata.effects import records_effects
from pyspark_paimon.metadata.schema.row_tracking import data_evolution_enabled
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.store import FileStore

__all__ = ["MergeBuilder"]


@dataclass(frozen=True)
class _Clause:
    action: str  # update | update_all | delete | insert | insert_all
    condition: str | None = None
    values: Mapping[str, str] | None = None


class MergeBuilder:
    """``t.merge(source, on=...)``: clauses in delta-rs's style, run by :meth:`execute` as ONE commit.

    Expressions name ``source.<col>`` and ``target.<col>``; an unqualified name must be unambiguous. Within one
    group (matched, not matched, not matched by source) the first clause whose condition holds takes a row.
    """

    def __init__(self, store: FileStore, source: Any, on: str | Sequence[str]):
        self._store = store
        # The whole source is joined with the target rows by key, so it is read into memory here.
        self._source = read_whole(source, store.schema().arrow_schema(), "merge")
        self._on = [on] if isinstance(on, str) else list(on)
        if not self._on:
            raise OptionError("merge needs at least one key column in 'on'.")
        self._matched: list[_Clause] = []
        self._not_matched: list[_Clause] = []
        self._by_source: list[_Clause] = []

    def when_matched_update(self, set: Mapping[str, str], condition: str | None = None) -> "MergeBuilder":
        """Update target rows whose key matches a source row (and ``condition`` holds): ``set`` maps target
        columns to SQL expressions, e.g. ``{"v": "source.v", "n": "target.n + 1"}``. Key and partition columns
        cannot be set."""
        self._matched.append(_Clause("update", condition, dict(set)))
        return self

    def when_matched_update_all(self, condition: str | None = None) -> "MergeBuilder":
        """Update matched target rows (where ``condition`` holds) to the source row, column by name."""
        self._matched.append(_Clause("update_all", condition))
        return self

    def when_matched_delete(self, condition: str | None = None) -> "MergeBuilder":
        """Delete matched target rows (where ``condition`` holds)."""
        self._matched.append(_Clause("delete", condition))
        return self

    def when_not_matched_insert(self, values: Mapping[str, str], condition: str | None = None) -> "MergeBuilder":
        """Insert a row for each source row no target row matches (where ``condition`` holds): ``values`` maps
        target columns to SQL expressions over ``source.<col>``; columns not given are NULL."""
        self._not_matched.append(_Clause("insert", condition, dict(values)))
        return self

    def when_not_matched_insert_all(self, condition: str | None = None) -> "MergeBuilder":
        """Insert each unmatched source row (where ``condition`` holds) as it is, column by name."""
        self._not_matched.append(_Clause("insert_all", condition))
        return self

    def when_not_matched_by_source_delete(self, condition: str | None = None) -> "MergeBuilder":
        """Delete target rows no source row matches (where ``condition``, over ``target.<col>``, holds). This
        clause reads the whole target: without it a merge reads only what the source's keys select."""
        self._by_source.append(_Clause("delete", condition))
        return self

    # ---------------------------------------------------------------------------------------------
    def _checked_keys(self, schema: TableSchema) -> tuple[list[str], list[str]]:
        """The join keys as (table columns, source columns), once the clauses exist and the merge engine can
        apply them (shared by the Arrow and the Spark merge)."""
        if not (self._matched or self._not_matched or self._by_source):
            raise OptionError("merge has no clause; add when_matched_* / when_not_matched_* clauses before execute().")
        deletes = any(c.action == "delete" for c in [*self._matched, *self._by_source])
        updates = any(c.action.startswith("update") for c in self._matched)
        check_merge_engine(schema, self._store.table_path, deletes=deletes, updates=updates)
        return [self._table_column(schema, k) for k in self._on], [self._source_column(k) for k in self._on]

    # ---------------------------------------------------------------------------------------------
    @records_effects("merge")
    def execute(self) -> MergeResult:
        """Run the clauses as ONE commit on the target's branch; returns the snapshot committed and the rows
        inserted, updated and deleted. A source holding one key twice is refused before anything is written."""
        return self.run()

    def run(self) -> MergeResult:
        """:meth:`execute` without recording it as an operation (a Spark merge that runs as an Arrow one)."""
        store, source = self._store, self._source
        schema = store.schema()
        on, src_on = self._checked_keys(schema)
        keyed_source = source.select(src_on).rename_columns(on)
        keyed_source = pa.table({k: store_column(keyed_source.column(k), schema, k) for k in on})
        self._refuse_duplicate_keys(keyed_source, on)

        # Without by-source clauses only target rows whose keys the source holds can change: prune the read by
        # the source's keys (partitions, buckets, file and row-group statistics).
        prune = [] if self._by_source else key_prune(keyed_source, on)
        if data_evolution_enabled(schema.options):
            return self._execute_by_row_ids(schema, keyed_source, on, prune)

        def run() -> MergeResult:
            target = load_target(store, schema, None, prune)
            t_idx, s_idx = _join(target.rows, keyed_source, on)
            if not self._by_source and (target.file_of_row is None or target.positions is not None):
                # Primary-key and deletion-vector changes touch only the matched rows: drop the rest before the
                # clauses run (copy-on-write keeps every row of a file, for the rewrite).
                target, t_idx = _only_rows(target, t_idx), np.arange(len(t_idx), dtype=np.int64)
            rows = target.rows
            deleted, updated, new_rows, inserts = self.decide(schema, rows, source, t_idx, s_idx)
            return apply_change(store, schema, target, deleted, updated, new_rows, inserts)

        return replanned(store, run)

    def _execute_by_row_ids(
        self, schema: TableSchema, keyed_source: pa.Table, on: list[str], prune: list[Any]
    ) -> MergeResult:
        """A data-evolution table (``row_id_dml``): matched updates write their assigned columns by ``_ROW_ID``,
        deletes are deletion vectors (refused without ``deletion-vectors.enabled``, as Java), unmatched source rows
        are appended with new ids, one commit."""
        deletes = any(c.action == "delete" for c in [*self._matched, *self._by_source])
        if deletes and not schema.core_options.deletion_vectors_enabled:
            refuse_foreign("plain", self._store)  # names the data-evolution rule and the way out
        read = read_with_row_ids(self._store, None, prune)
        t_idx, s_idx = _join(read.rows, keyed_source, on)
        deleted, updated, new_rows, inserts = self.decide(schema, read.rows, self._source, t_idx, s_idx)
        src = self._source.take(pa.array(s_idx))
        table = self._store.table_path
        assigned = {
            c for k in self._matched for c in check_assigned(schema, table, list(self._assignments(schema, k, src)))
        }
        columns = {c: new_rows.column(c) for c in schema.field_names if c in assigned} if new_rows is not None else {}
        snapshot, vectors = commit_by_row_ids(self._store, read, updated & ~deleted, columns, inserts, deleted)
        done = snapshot is not None
        return MergeResult(
            inserted=inserts.num_rows if inserts is not None and done else 0,
            updated=int((updated & ~deleted).sum()) if done else 0,
            deleted=int(deleted.sum()) if done else 0,
            snapshot_id=snapshot.id if snapshot is not None else None,
            vectors_written=vectors,
            files_read=read.files_read,
        )

    def with_source(self, source: pa.Table) -> "MergeBuilder":
        """The same clauses over another Arrow source (a Spark merge task's share of the source rows)."""
        other = MergeBuilder(self._store, source, self._on)
        other._matched, other._not_matched, other._by_source = self._matched, self._not_matched, self._by_source
        return other

    def decide(
        self, schema: TableSchema, rows: pa.Table, source: pa.Table, t_idx: np.ndarray, s_idx: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, pa.Table | None, pa.Table | None]:
        """Apply the clauses to target ``rows`` and ``source`` rows matched as (``t_idx``, ``s_idx``) pairs: which
        target rows are deleted and updated, the updated rows' new values, and the rows to insert."""
        matched_t = np.zeros(rows.num_rows, dtype=bool)
        matched_t[t_idx] = True
        matched_s = np.zeros(source.num_rows, dtype=bool)
        matched_s[s_idx] = True
        deleted = np.zeros(rows.num_rows, dtype=bool)
        updated = np.zeros(rows.num_rows, dtype=bool)
        new_rows: pa.Table | None = None
        if self._matched and len(t_idx):
            new_rows = self._apply_matched(schema, rows, source, t_idx, s_idx, deleted, updated)
        if self._by_source:
            self._apply_by_source(rows, np.flatnonzero(~matched_t), deleted)
        inserts = (
            self._inserts(schema, source.take(pa.array(np.flatnonzero(~matched_s)))) if self._not_matched else None
        )
        return deleted, updated, new_rows, inserts

    def _table_column(self, schema: TableSchema, name: str) -> str:
        return _check_key(schema, name, self._store.table_path)

    def _source_column(self, name: str) -> str:
        names = self._source.column_names
        if name in names:
            return name
        lower = [n for n in names if n.lower() == name.lower()]
        if len(lower) != 1:
            raise OptionError(f"The merge source has no column '{name}' (columns: {', '.join(names)}).")
        return lower[0]

    @staticmethod
    def _refuse_duplicate_keys(keys: pa.Table, on: list[str]) -> None:
        valid = keys.filter(
            pc.and_(*[pc.is_valid(keys.column(k)) for k in on]) if len(on) > 1 else pc.is_valid(keys.column(on[0]))
        )
        counts = valid.group_by(on, use_threads=False).aggregate([([], "count_all")])
        dup = counts.filter(pc.greater(counts.column("count_all"), 1))
        if dup.num_rows:
            first = {k: dup.column(k)[0].as_py() for k in on}
            raise DmlError(
                f"The merge source holds {dup.num_rows} key(s) more than once (e.g. {first}); a target row would "
                "match several source rows. Deduplicate the source by the merge keys first."
            )

    def _scope(self, target: pa.Table | None, source: pa.Table | None, default: str | None) -> Scope:
        cols: dict[str, dict[str, pa.ChunkedArray]] = {}
        n = 0
        if target is not None:
            cols["target"] = {c: target.column(c) for c in target.column_names}
            n = target.num_rows
        if source is not None:
            cols["source"] = {c: source.column(c) for c in source.column_names}
            n = source.num_rows
        return Scope(cols, n, default)

    def _apply_matched(
        self,
        schema: TableSchema,
        rows: pa.Table,
        source: pa.Table,
        t_idx: np.ndarray,
        s_idx: np.ndarray,
        deleted: np.ndarray,
        updated: np.ndarray,
    ) -> pa.Table | None:
        tgt = rows.take(pa.array(t_idx))
        src = source.take(pa.array(s_idx))
        scope = self._scope(tgt, src, None)
        remaining = np.ones(len(t_idx), dtype=bool)
        new_cols: dict[str, pa.ChunkedArray] = {}
        upd_any = np.zeros(len(t_idx), dtype=bool)
        for clause in self._matched:
            cond = _condition(clause.condition, scope)
            hit = remaining & cond
            remaining &= ~hit
            if clause.action == "delete":
                deleted[t_idx[hit]] = True
                continue
            assigned = self._assignments(schema, clause, src)
            columns = check_assigned(schema, self._store.table_path, list(assigned))
            mask = pa.array(hit)
            for col, expr in zip(columns, assigned.values()):
                value = store_column(evaluate(expr, scope), schema, col)
                base = new_cols.get(col, tgt.column(col))
                chosen = pc.if_else(mask, value, base)
                new_cols[col] = chosen if isinstance(chosen, pa.ChunkedArray) else pa.chunked_array([chosen])
            upd_any |= hit
        updated[t_idx[upd_any]] = True
        if not new_cols:
            return None
        # Scatter the matched rows' new values back to target positions: concat + take, no per-row Python.
        n = rows.num_rows
        positions = np.arange(n, dtype=np.int64)
        positions[t_idx] = n + np.arange(len(t_idx), dtype=np.int64)
        index = pa.array(positions)
        full = {}
        for col, values in new_cols.items():
            joined = pa.chunked_array([*rows.column(col).chunks, *values.chunks], type=rows.column(col).type)
            full[col] = joined.take(index)
        return with_columns(rows, full)

    def _assignments(self, schema: TableSchema, clause: _Clause, src: pa.Table) -> dict[str, str]:
        """The columns a matched update clause sets, each to its SQL expression."""
        if clause.action == "delete":
            return {}
        if clause.action == "update_all":
            names = [self._source_column(f.name) if _has(src, f.name) else None for f in schema.fields]
            return {
                f.name: f"source.`{s}`"
                for f, s in zip(schema.fields, names)
                if s is not None and f.name not in schema.primary_keys and f.name not in schema.partition_keys
            }
        return dict(clause.values or {})

    def _apply_by_source(self, rows: pa.Table, unmatched: np.ndarray, deleted: np.ndarray) -> None:
        tgt = rows.take(pa.array(unmatched))
        scope = self._scope(tgt, None, "target")
        remaining = np.ones(len(unmatched), dtype=bool)
        for clause in self._by_source:
            hit = remaining & _condition(clause.condition, scope)
            remaining &= ~hit
            deleted[unmatched[hit]] = True

    def _inserts(self, schema: TableSchema, src: pa.Table) -> pa.Table | None:
        scope = self._scope(None, src, "source")
        remaining = np.ones(src.num_rows, dtype=bool)
        parts: list[pa.Table] = []
        arrow = schema.arrow_schema()
        for clause in self._not_matched:
            hit = remaining & _condition(clause.condition, scope)
            remaining &= ~hit
            if not hit.any():
                continue
            if clause.action == "insert_all":
                values = {f.name: f"source.`{self._source_column(f.name)}`" for f in schema.fields if _has(src, f.name)}
            else:
                values = dict(clause.values or {})
                unknown = [c for c in values if not schema.has_field(c)]
                if unknown:
                    raise OptionError(
                        f"Table {self._store.table_path} has no column(s) {unknown} to insert into (columns: "
                        f"{', '.join(schema.field_names)})."
                    )
            picked = src.filter(pa.array(hit))
            sub = self._scope(None, picked, "source")
            cols = []
            for f in schema.fields:
                if f.name in values:
                    cols.append(store_column(evaluate(values[f.name], sub), schema, f.name))
                else:
                    cols.append(pa.chunked_array([pa.nulls(picked.num_rows, arrow.field(f.name).type)]))
            parts.append(pa.Table.from_arrays(cols, schema=arrow))
        if not parts:
            return None
        return pa.concat_tables(parts)


def _has(table: pa.Table, name: str) -> bool:
    return name in table.column_names or sum(1 for n in table.column_names if n.lower() == name.lower()) == 1


def _check_key(schema: TableSchema, name: str, table: str) -> str:
    if schema.has_field(name):
        return name
    lower = [f.name for f in schema.fields if f.name.lower() == name.lower()]
    if len(lower) != 1:
        raise OptionError(
            f"Table {table} has no column '{name}' to merge on (columns: {', '.join(schema.field_names)})."
        )
    return lower[0]


def _condition(text: str | None, scope: Scope) -> np.ndarray:
    if text is None:
        return np.ones(scope.num_rows, dtype=bool)
    return evaluate_condition(text, scope).to_numpy(zero_copy_only=False).astype(bool)


def _only_rows(target: Target, t_idx: np.ndarray) -> Target:
    """``target`` reduced to the rows ``t_idx`` (each row once), in that order."""
    index = pa.array(t_idx)
    return replace(
        target,
        rows=target.rows.take(index),
        file_of_row=target.file_of_row[t_idx] if target.file_of_row is not None else None,
        positions=target.positions[t_idx] if target.positions is not None else None,
    )


def _join(rows: pa.Table, keys: pa.Table, on: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(target row, source row) index pairs whose keys are equal and not NULL (SQL equality)."""
    t = rows.select(on).append_column("__t", pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    s = keys.append_column("__s", pa.array(np.arange(keys.num_rows, dtype=np.int64)))
    for k in on:
        t = t.filter(pc.is_valid(t.column(k)))
        s = s.filter(pc.is_valid(s.column(k)))
    if t.num_rows == 0 or s.num_rows == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    joined = t.join(s, keys=on, join_type="inner", use_threads=False)
    return (
        joined.column("__t").to_numpy().astype(np.int64),
        joined.column("__s").to_numpy().astype(np.int64),
    )
