"""Our REST catalog client against the in-suite server (tests/rest_catalog_server.py): the shared REST suite,
commits through the ``commit`` endpoint (and their retry when another commit came first), branches and rollback
through the server, vended credentials (fetched, pickled, refreshed before expiry, never logged), refusals.

pypaimon's REST client passing the same suite against the same server is tests/interop/test_rest_interop.py.
"""

from __future__ import annotations

import logging
import pickle
import time
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.datasource.table_ref import resolve_table_ref
from pyspark_paimon.errors import BranchError, CatalogError, PaimonError, SchemaError
from pyspark_paimon.metadata.catalog.rest_metastore import RestSnapshotCommit, RestTable
from pyspark_paimon.metadata.catalog.vended_credentials import VendedCredentials, fsspec_arguments
from pyspark_paimon.metadata.io.fileio import FileIO
from tests.rest_catalog_server import RestCatalogServer, secrets_in
from tests.rest_catalog_suite import expected, run_ours, suite


def rest_catalog(options: dict[str, str]) -> Catalog:
    return Catalog("warehouse", options=options)


def test_our_client_passes_the_rest_suite(rest_options: dict[str, str]) -> None:
    steps = suite("suite_ours")
    assert run_ours(rest_catalog(rest_options), steps) == expected(steps)


def test_commits_go_through_the_server_and_retry_when_another_came_first(
    rest_server: RestCatalogServer, rest_options: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cat = rest_catalog(rest_options)
    t = cat.create_table("db.t", "id bigint", options={"bucket": "-1"})
    assert isinstance(t.store.snapshot_commit, RestSnapshotCommit)
    t.write_arrow(pa.table({"id": [1]}))
    assert not rest_server.fileio.exists(f"{t.store.table_path}/snapshot/snapshot-2")

    original = RestTable.commit
    calls: list[int] = []

    def racing(self: RestTable, snapshot: Any, base: Any, branch: str) -> bool:
        calls.append(snapshot.id)
        if len(calls) == 1:  # another client commits snapshot 2 first: ours is refused, then retried as 3
            rest_catalog(rest_options).get_table("db.t").write_arrow(pa.table({"id": [2]}))
        return original(self, snapshot, base, branch)

    monkeypatch.setattr(RestTable, "commit", racing)
    result = t.write_arrow(pa.table({"id": [3]}))
    assert calls[0] == 2 and result.snapshot_id == 3
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
    assert [c["snapshot"] for c in rest_server.state.commits] == [1, 2, 2, 3]


def test_branches_and_rollback_go_through_the_server(rest_options: dict[str, str]) -> None:
    cat = rest_catalog(rest_options)
    t = cat.create_table("db.t", "id bigint, v string", primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "v": ["a"]}))
    t.tags.create("v1")
    t.write_arrow(pa.table({"id": [1], "v": ["b"]}))
    info = t.branches.create("fix", tag="v1")
    assert info.name == "fix" and [b.name for b in t.branches.list()] == ["fix"]
    fix = t.on_branch("fix")
    assert isinstance(fix.store.snapshot_commit, RestSnapshotCommit)
    fix.write_arrow(pa.table({"id": [2], "v": ["c"]}))  # a branch commit goes through the server too
    assert sorted(fix.scan().to_arrow()["id"].to_pylist()) == [1, 2]
    t.branches.rename("fix", "fix2")
    assert [b.name for b in t.branches.list()] == ["fix2"]
    empty = t.branches.create("scratch", empty=True)
    assert empty.name == "scratch" and t.on_branch("scratch").latest_snapshot() is None
    assert t.branches.delete("scratch").deleted == ["scratch"]
    with pytest.raises(BranchError, match="create a tag first|Create a tag first"):
        t.branches.create("latest")  # the REST API branches from a tag or empty only
    rolled = t.maintenance.rollback_to(snapshot_id=1)
    assert rolled.previous_snapshot_id == 2 and rolled.current_snapshot_id == 1 and rolled.deleted_snapshots == [2]
    assert t.scan().to_arrow().to_pylist() == [{"id": 1, "v": "a"}]
    with pytest.raises(SchemaError, match="made by its server"):
        t.update_schema().add_column("w", "string").commit()
    with pytest.raises(PaimonError, match="Chain table"):
        cat.create_chain_table(
            "db.chain", "dt string, id bigint", partition_keys=["dt"], primary_keys=["dt", "id"], options={}
        )


def test_spark_options_name_the_catalog_and_resolve_by_identifier(rest_options: dict[str, str]) -> None:
    cat = rest_catalog(rest_options)
    t = cat.create_table("db.t", "id bigint")
    options = cat.spark_options()
    assert options["metastore"] == "rest" and options["warehouse"] == "warehouse"
    ref = resolve_table_ref({**options, "path": "db.t", "scan.snapshot-id": "1"})
    assert ref.path == t.store.table_path and isinstance(ref.snapshot_commit, RestSnapshotCommit)
    assert ref.options == {"path": "db.t", "scan.snapshot-id": "1", "warehouse": "warehouse"}  # no catalog keys
    assert "test-bearer-token" not in repr(ref)


def test_wrong_token_and_unknown_warehouse_are_clear_errors(rest_options: dict[str, str]) -> None:
    with pytest.raises(CatalogError, match="refused GET /v1/config \\(401") as refused:
        rest_catalog({**rest_options, "token": "wrong-secret-token"})
    assert "wrong-secret-token" not in str(refused.value)
    with pytest.raises(CatalogError, match="no such resource"):
        Catalog("elsewhere", options=rest_options)


def test_vended_credentials_are_pickled_and_refreshed_before_they_expire(rest_server: RestCatalogServer) -> None:
    rest_server.config.token_ttl_ms = 1500
    cat = rest_catalog(
        {"metastore": "rest", "uri": rest_server.uri, "token.provider": "bear", "token": rest_server.config.bearer}
    )
    t = cat.create_table("db.t", "id bigint")
    credentials = t.store.fileio.credentials
    assert isinstance(credentials, VendedCredentials)
    t.write_arrow(pa.table({"id": [1]}))
    assert rest_server.state.token_requests["db.t"] == 1  # one fetch served the whole write
    s3 = VendedCredentials(credentials.endpoint, "db", "t", "s3")  # what an S3 table's FileIO holds
    first = s3.storage_options()
    assert first == {"key": "AKID-2", "secret": "vended-secret-2"}
    shipped = pickle.loads(pickle.dumps(FileIO("s3", {"endpoint_url": "http://x"}, s3)))  # to an executor
    assert shipped.current_storage_options() == {"endpoint_url": "http://x", **first}
    assert rest_server.state.token_requests["db.t"] == 2, "fresh credentials travel, no new fetch"
    time.sleep(0.8)  # past half of their 1.5 s life: the next use fetches new ones
    assert shipped.credentials is not None and shipped.credentials.stale()
    assert shipped.current_storage_options()["secret"] == "vended-secret-3"
    assert rest_server.state.token_requests["db.t"] == 3


class _Stub:
    """Credentials whose staleness the test decides."""

    def __init__(self) -> None:
        self.n, self.is_stale = 0, True

    def storage_options(self) -> dict[str, Any]:
        if self.is_stale:
            self.n += 1
            self.is_stale = False
        return {"skip_instance_cache": True, "generation": self.n}

    def stale(self) -> bool:
        return self.is_stale


def test_fileio_rebuilds_its_file_system_with_fresh_credentials() -> None:
    stub = _Stub()
    fileio = FileIO("memory", {}, stub)
    first = fileio.fs
    assert fileio.fs is first and stub.n == 1
    stub.is_stale = True
    assert fileio.fs is not first and stub.n == 2
    assert fileio.current_storage_options()["generation"] == 2


def test_vended_keys_map_to_fsspec_arguments() -> None:
    token = {
        "fs.s3.accessKeyId": "AK",
        "fs.s3.accessKeySecret": "SK",
        "fs.s3.securityToken": "ST",
        "fs.s3.endpoint": "http://s3",
        "fs.oss.accessKeyId": "OAK",
    }
    assert fsspec_arguments("s3", token) == {
        "key": "AK",
        "secret": "SK",
        "token": "ST",
        "client_kwargs": {"endpoint_url": "http://s3"},
    }
    assert fsspec_arguments("oss", token) == {"key": "OAK"}
    assert fsspec_arguments("file", token) == {}


def test_secrets_are_never_logged_shown_or_raised(
    rest_server: RestCatalogServer, rest_options: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secrets = [rest_server.config.bearer, "vended-secret-1", "vended-secret-2", "AKID-1", "AKID-2"]
    cat = rest_catalog(rest_options)
    t = cat.create_table("db.t", "id bigint")
    t.write_arrow(pa.table({"id": [1]}))
    t.scan().to_arrow()
    creds = t.store.fileio.credentials
    assert isinstance(creds, VendedCredentials)
    s3 = VendedCredentials(creds.endpoint, "db", "t", "s3")
    s3.storage_options()  # holds AKID-2 / vended-secret-2 now
    shown = [
        repr(cat),
        repr(cat.config),
        repr(cat.metastore),
        repr(t),
        repr(t.store),
        repr(t.store.fileio),
        repr(creds),
        repr(s3),
        repr(FileIO("s3", {}, s3)),
        repr(t.store.snapshot_commit),
        repr(resolve_table_ref({**cat.spark_options(), "path": "db.t"})),
    ]
    errors = []
    rest_server.config.bearer = "rotated"  # every request of ours is refused now
    for attempt in (lambda: t.write_arrow(pa.table({"id": [2]})), lambda: cat.list_databases()):
        with pytest.raises(PaimonError) as raised:
            attempt()
        errors.append(f"{raised.value}\n{raised.value.__cause__}")
    assert secrets_in("\n".join([caplog.text, *shown, *errors]), secrets) == []
    assert "AKID-2" in str(s3.storage_options()), "the secret was there to be leaked"
