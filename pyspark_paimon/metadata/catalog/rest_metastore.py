"""Paimon's REST catalog (``metastore`` = ``rest``): databases and tables kept by a server, files read and
written directly.

The server answers where a table lives (``GET .../tables/<t>``: its ``path``, ``id`` and schema) and, with
``data-token.enabled``, the credentials to its files (:mod:`.vended_credentials`). Reads and writes then touch
the files themselves, as Java's and pypaimon's clients do, and a commit goes through the server: the new
snapshot is sent to ``POST .../commit`` with the table's id and the uuid of the snapshot it was prepared on, and
the server makes it the next snapshot or answers ``success: false`` (another commit came first; the caller
retries on the new latest). That is :class:`RestSnapshotCommit`, the table's
:class:`~pyspark_paimon.metadata.store.SnapshotCommit`. Branches and rollback also go through the server, as
Java's ``CatalogBranchManager`` and ``catalogTableRollback`` do (:class:`RestTable`); tags are files, as in Java.
"""

from __future__ import annotations

from typing import Mapping

from pyspark_paimon.errors import DatabaseNotFoundError, PaimonError, TableNotFoundError
from pyspark_paimon.metadata.catalog.catalog_options import DATA_TOKEN_ENABLED, CatalogConfig
from pyspark_paimon.metadata.catalog.metastore import Metastore, NewTable, TableLocation
from pyspark_paimon.metadata.catalog.rest_client import RestClient, RestEndpoint, quote
from pyspark_paimon.metadata.catalog.vended_credentials import VendedCredentials
from pyspark_paimon.metadata.identifier import BRANCH_PREFIX
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH, Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types.json_codec import field_to_json
from pyspark_paimon.metadata.types.model import assign_field_ids


def object_name(table: str, branch: str) -> str:
    """The table's name in REST paths: ``t``, or ``t$branch_b`` for branch ``b`` (Paimon's identifier)."""
    return table if not branch or branch == MAIN_BRANCH else f"{table}${BRANCH_PREFIX}{branch}"


class RestTable:
    """The server side of one REST table: its commits, branches and rollback (picklable). Tags are files, as in
    Java's client (the server's tag endpoints serve other clients, and see the same files)."""

    def __init__(self, endpoint: RestEndpoint, database: str, table: str, table_id: str | None):
        self.endpoint = endpoint
        self.database = database
        self.table = table
        self.table_id = table_id

    def __repr__(self) -> str:
        return f"RestTable({self.database}.{self.table}, {self.endpoint.uri!r})"

    def path(self, *rest: str, branch: str = MAIN_BRANCH) -> str:
        return self.endpoint.table_path(self.database, object_name(self.table, branch), *rest)

    @property
    def client(self) -> RestClient:
        return RestClient(self.endpoint)

    def commit(self, snapshot: Snapshot, base: Snapshot | None, branch: str) -> bool:
        answer = self.client.post(
            self.path("commit", branch=branch),
            {
                "tableId": self.table_id,
                "baseSnapshotUuid": base.uuid if base is not None else None,
                "snapshot": snapshot.to_dict(),
                "statistics": [],
            },
        )
        return bool(answer.get("success"))

    # -- branches (Java's CatalogBranchManager) ----------------------------------------------------
    def list_branches(self) -> list[str]:
        return sorted(str(b) for b in self.client.get(self.path("branches")).get("branches") or [])

    def create_branch(self, name: str, from_tag: str | None = None) -> None:
        self.client.post(self.path("branches"), {"branch": name, "fromTag": from_tag})

    def drop_branch(self, name: str) -> None:
        self.client.delete(self.path("branches", name))

    def rename_branch(self, old: str, new: str) -> None:
        self.client.post(self.path("branches", old, "rename"), {"toBranch": new})

    def fast_forward(self, name: str) -> None:
        self.client.post(self.path("branches", name, "forward"), {"branch": name})

    # -- rollback ----------------------------------------------------------------------------------
    def rollback(self, *, snapshot_id: int | None = None, tag: str | None = None, branch: str = MAIN_BRANCH) -> None:
        instant = {"type": "snapshot", "snapshotId": snapshot_id} if tag is None else {"type": "tag", "tagName": tag}
        self.client.post(self.path("rollback", branch=branch), {"instant": instant, "fromSnapshot": None})


class RestSnapshotCommit:
    """A REST table's snapshot commit: ``POST .../commit`` (see the module docstring)."""

    def __init__(self, table: RestTable):
        self.table = table

    def __repr__(self) -> str:
        return f"RestSnapshotCommit({self.table!r})"

    def commit(self, store: FileStore, snapshot: Snapshot, base: Snapshot | None) -> bool:
        return self.table.commit(snapshot, base, store.branch)


def rest_table(store: FileStore) -> RestTable | None:
    """The REST table ``store`` belongs to, or None for a table of another catalog (or of none)."""
    commit = store.snapshot_commit
    return commit.table if isinstance(commit, RestSnapshotCommit) else None


class RestMetastore(Metastore):
    """A REST catalog (see the module docstring)."""

    def __init__(self, config: CatalogConfig):
        super().__init__(config)
        self.client = RestClient.connect(config)
        self.endpoint = self.client.endpoint
        self.data_token = self.endpoint.options.get(DATA_TOKEN_ENABLED, "false").strip().lower() == "true"

    def _databases(self, *rest: str) -> str:
        return "/".join([self.endpoint.base, "databases", *(quote(r) for r in rest)])

    # -- databases ---------------------------------------------------------------------------------
    def list_databases(self) -> list[str]:
        return sorted(str(d) for d in self.client.list_all(self._databases(), "databases"))

    def database_exists(self, name: str) -> bool:
        try:
            self.client.get(self._databases(name))
            return True
        except DatabaseNotFoundError:
            return False

    def database_properties(self, name: str) -> dict[str, str]:
        answer = self.client.get(self._databases(name))
        props = {str(k): str(v) for k, v in (answer.get("options") or {}).items()}
        if answer.get("location"):
            props.setdefault("location", str(answer["location"]))
        return props

    def create_database(self, name: str, properties: Mapping[str, str] | None = None) -> None:
        self.client.post(self._databases(), {"name": name, "options": dict(properties or {})})

    def drop_database(self, name: str) -> None:
        self.client.delete(self._databases(name))

    # -- tables ------------------------------------------------------------------------------------
    def list_tables(self, database: str) -> list[str]:
        return sorted(str(t) for t in self.client.list_all(self._databases(database, "tables"), "tables"))

    def table_exists(self, database: str, table: str) -> bool:
        try:
            self.client.get(self._databases(database, "tables", table))
            return True
        except (TableNotFoundError, DatabaseNotFoundError):
            return False

    def locate(self, database: str, table: str) -> TableLocation:
        answer = self.client.get(self._databases(database, "tables", table))
        path = answer.get("path")
        if not path:
            raise PaimonError(f"The REST catalog answered no 'path' for table '{database}.{table}'.")
        fileio, local = FileIO.for_uri(str(path), dict(self.config.storage_options))
        if self.data_token:
            fileio.credentials = VendedCredentials(self.endpoint, database, table, fileio.protocol)
        binding = RestTable(self.endpoint, database, table, answer.get("id"))
        return TableLocation(f"{database}.{table}", fileio, local, RestSnapshotCommit(binding))

    def create_table(self, database: str, table: str, spec: NewTable) -> TableLocation:
        fields, _ = assign_field_ids(list(spec.columns))
        schema = {
            "fields": [field_to_json(f) for f in fields],
            "partitionKeys": list(spec.partition_keys),
            "primaryKeys": list(spec.primary_keys),
            "options": dict(spec.options or {}),
            "comment": spec.comment,
        }
        identifier = {"database": database, "object": table}
        self.client.post(self._databases(database, "tables"), {"identifier": identifier, "schema": schema})
        return self.locate(database, table)

    def drop_table(self, database: str, table: str) -> None:
        self.client.delete(self._databases(database, "tables", table))

    def rename_table(self, source: tuple[str, str], target: tuple[str, str]) -> None:
        self.client.post(
            "/".join([self.endpoint.base, "tables", "rename"]),
            {
                "source": {"database": source[0], "object": source[1]},
                "destination": {"database": target[0], "object": target[1]},
            },
        )
