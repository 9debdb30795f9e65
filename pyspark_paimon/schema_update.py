"""``UpdateSchema``: several schema changes committed as ONE new schema version (``t.update_schema()``).

Changes are recorded, then applied in memory to the latest schema and committed once as ``schema-N+1``
(``SchemaManager.commit_changes``: atomic create, retried from the new latest schema when another writer
committed ``schema-N+1`` first). Leaving the ``with`` block with an exception commits nothing.

On a chain table the same changes are committed to the snapshot and delta branches first and to the main
branch last (Paimon's #8810 commits main first, so a failure in between leaves chain reads failing). Main is the
commit point: chain reads return main's schema and read a branch that is already ahead by field id
(``planner.chain.versions.aligned_schemas``), so no reader sees the branches differ, whichever step fails. The
same change run again finishes it: a branch that already has it is skipped.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Callable, Iterable, Mapping, Sequence

from pyspark_paimon.datasource import chain as _chain
from pyspark_paimon.datasource.schema_changes import check_stored_values
from pyspark_paimon.errors import ChainTableError, PaimonError, SchemaError
from pyspark_paimon.metadata.catalog.rest_metastore import rest_table
from pyspark_paimon.metadata.effects import records_effects
from pyspark_paimon.metadata.schema.options import validate_table_options
from pyspark_paimon.metadata.schema.table_schema import SchemaManager, TableSchema
from pyspark_paimon.metadata.types.ddl import parse_ddl
from pyspark_paimon.metadata.types.model import DataType, quote_ident
from pyspark_paimon.planner.chain.config import row_signature
from pyspark_paimon.table_scan import TableView

_Change = Callable[[SchemaManager], Callable[[TableSchema], TableSchema | None]]


class UpdateSchema:
    """Collects schema changes of one table; :meth:`commit` (or leaving the ``with`` block) writes them.

    Every change method (``add_column``, ``drop_column``, ``rename_column``, ``update_column_type``,
    ``update_column_nullability``, ``update_column_comment``, ``update_column_position``, ``update_comment``,
    ``set_options``, ``remove_options``) returns ``self``, so calls can be chained. Checks that need the schema
    (does the column exist, may the option or the type change) run at commit, against the schema the changes are
    applied to."""

    def __init__(self, table: TableView):
        self._table = table
        self._changes: list[_Change] = []
        self._set: dict[str, str] = {}
        self._removed: list[str] = []
        self._committed: TableSchema | None = None

    def __enter__(self) -> "UpdateSchema":
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None and self._committed is None:
            self.commit()

    def add_column(
        self,
        name: str,
        data_type: DataType | str,
        comment: str | None = None,
        *,
        first: bool = False,
        after: str | None = None,
    ) -> "UpdateSchema":
        """Add nullable column ``name`` (a Paimon DataType or Spark DDL text such as ``'string'``) at the end, or
        ``first``, or right ``after`` another column."""
        parsed = _type_of(name, data_type)
        self._changes.append(lambda m: m.add_column_change(name, parsed, comment, after=after, first=first))
        return self

    def update_column_type(
        self, name: str | Sequence[str], data_type: DataType | str, *, keep_nullability: bool = True
    ) -> "UpdateSchema":
        """Change a column's type (``name``; a ROW member: ``("col", "member")``) by Paimon's rules: widening
        (INT to BIGINT, a larger DECIMAL or VARCHAR), and explicit casts (BIGINT to INT, numbers to STRING...) unless
        the table sets ``disable-explicit-type-casting``. Files written before keep their values and are converted
        when read; a stored value that does not fit the new type fails the read naming the column. The column keeps
        its NULL / NOT NULL unless ``keep_nullability=False`` (then ``data_type``'s applies)."""
        parsed = _type_of(name if isinstance(name, str) else ".".join(name), data_type)
        self._changes.append(lambda m: m.update_column_type_change(name, parsed, keep_nullability))
        return self

    def update_column_nullability(self, name: str | Sequence[str], nullable: bool) -> "UpdateSchema":
        """Make a column nullable, or NOT NULL: refused while the table option
        ``alter-column-null-to-not-null.disabled`` is true (its default), and when a stored row holds a NULL."""
        self._changes.append(lambda m: m.update_column_nullability_change(name, nullable))
        return self

    def update_column_comment(self, name: str | Sequence[str], comment: str | None) -> "UpdateSchema":
        """Set a column's comment (None removes it)."""
        self._changes.append(lambda m: m.update_column_comment_change(name, comment))
        return self

    def update_column_position(
        self,
        name: str,
        *,
        first: bool = False,
        after: str | None = None,
        before: str | None = None,
        last: bool = False,
    ) -> "UpdateSchema":
        """Move a column: ``first``, ``last``, or right ``after`` / ``before`` another. Only the order changes (data
        files map columns by field id)."""
        self._changes.append(
            lambda m: m.update_column_position_change(name, first=first, after=after, before=before, last=last)
        )
        return self

    def update_comment(self, comment: str | None) -> "UpdateSchema":
        """Set the table's comment (None removes it)."""
        self._changes.append(lambda m: m.update_comment_change(comment))
        return self

    def drop_column(self, name: str) -> "UpdateSchema":
        """Remove column ``name`` (its field id is never reused)."""
        self._changes.append(lambda m: m.drop_column_change(name))
        return self

    def rename_column(self, old: str, new: str) -> "UpdateSchema":
        """Rename a column, keeping its field id (old data files still map to it)."""
        self._changes.append(lambda m: m.rename_column_change(old, new))
        return self

    def set_options(self, options: Mapping[str, Any]) -> "UpdateSchema":
        """Set table options (validated as at create time)."""
        opts = {str(k): str(v) for k, v in options.items()}
        validate_table_options(opts, creating=True, table=self._table.identifier)
        self._set.update(opts)
        for k in opts:
            if k in self._removed:
                self._removed.remove(k)
        self._changes.append(lambda m: m.set_options_change(opts))
        return self

    def remove_options(self, keys: Iterable[str]) -> "UpdateSchema":
        """Remove table options (back to their defaults)."""
        removed = list(keys)
        self._removed.extend(removed)
        for k in removed:
            self._set.pop(k, None)
        self._changes.append(lambda m: m.remove_options_change(removed))
        return self

    @records_effects("schema change")
    def commit(self) -> TableSchema:
        """Write every recorded change as one new schema of the table's branch (and, on a chain table, of its
        snapshot and delta branches); returns the new schema (the latest one when nothing changed)."""
        if self._committed is not None:
            raise SchemaError("This UpdateSchema was already committed; start a new one with t.update_schema().")
        table = self._table
        store = table.store
        if rest_table(store) is not None:
            raise SchemaError(
                f"Schema changes of REST catalog table '{table.identifier}' are made by its server (Paimon's "
                "alterTable), which this client does not send yet: change the schema through the server's own tools, "
                "then continue with t = t.refresh()."
            )
        schema = store.schema()
        if self._set or self._removed:
            options = {k: v for k, v in {**schema.options, **self._set}.items() if k not in self._removed}
            _chain.check_chain_options(store, options, table.identifier)
        target = self._preview(store.schemas, schema)
        check_stored_values(store, schema, target, table.identifier)
        peers = dict.fromkeys([*_chain.chain_peer_branches(store, schema), *_chain.chain_peer_branches(store, target)])
        done: list[str] = []
        for branch in peers:  # the snapshot and delta branches first: main, the commit point, last
            manager = SchemaManager(store.fileio, store.table_path, branch)
            try:
                if not self._already_applied(manager, target):
                    self._commit_on(manager)
            except (PaimonError, OSError) as exc:
                state = f"already applied to {done}; " if done else ""
                raise ChainTableError(
                    f"Chain table {table.identifier}: the change failed on branch '{branch}' ({state}not on "
                    f"'{table.branch}', so chain reads still see the old schema): {exc}. Fix the cause and run "
                    "the same change again; branches that already have it are skipped."
                ) from exc
            done.append(branch)
        try:
            result = self._commit_on(store.schemas)
        except (PaimonError, OSError) as exc:
            if not done:
                raise
            raise ChainTableError(
                f"Chain table {table.identifier}: the change reached branch(es) {done} but not "
                f"'{table.branch}': {exc}. Chain reads keep returning the old schema of '{table.branch}' (the "
                "branches ahead are read by field id); run the same change again to finish it."
            ) from exc
        self._committed = result
        return result

    def _preview(self, manager: SchemaManager, schema: TableSchema) -> TableSchema:
        """The schema the recorded changes make of ``schema``, computed without committing."""
        current = schema
        for change in self._changes:
            new = change(manager)(current)
            if new is not None:
                current = new
        return current

    def _already_applied(self, manager: SchemaManager, target: TableSchema) -> bool:
        """Does ``manager``'s branch already have the change (a retry after a failure on a later branch)? Its
        columns equal the target's and the options set and removed are already so."""
        latest = manager.latest()
        if latest is None or row_signature(latest) != row_signature(target):
            return False
        options = latest.options
        return all(options.get(k) == v for k, v in self._set.items()) and not any(k in options for k in self._removed)

    def _commit_on(self, manager: SchemaManager) -> TableSchema:
        return manager.commit_changes([change(manager) for change in self._changes])


def _type_of(name: str, data_type: DataType | str) -> DataType:
    """A Paimon type, or Spark DDL text such as ``'bigint'`` or ``'decimal(12, 2)'`` (nullable unless it says
    ``NOT NULL``)."""
    return parse_ddl(f"{quote_ident(name)} {data_type}")[0][1] if isinstance(data_type, str) else data_type


__all__ = ["UpdateSchema"]
