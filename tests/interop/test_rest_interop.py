"""pypaimon's REST client, unchanged, against the in-suite REST server (tests/rest_catalog_server.py): it passes
the same REST suite our client passes (tests/rest_catalog_suite.py), and a table one client writes through the
server's ``commit`` endpoint the other reads, both ways."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from pyspark_paimon import Catalog
from tests.interop.helpers import OracleBatch
from tests.oracle import table_spec
from tests.rest_catalog_server import RestCatalogServer
from tests.rest_catalog_suite import TABLE_OPTIONS, Step, expected, pairs, suite

SPEC = table_spec([["id", "BIGINT", False], ["v", "STRING"]], primary_keys=["id"], options=TABLE_OPTIONS)


def pypaimon_options(server: RestCatalogServer, rest_options: dict[str, str]) -> dict[str, str]:
    return {**rest_options, "warehouse": server.config.warehouse}


def run_pypaimon(batch: OracleBatch, steps: list[Step]) -> list[Any]:
    """Queue the suite on ``batch`` (one oracle process), run it, and answer one result per step."""
    pending: list[tuple[str, Any]] = []
    for i, (op, a, _) in enumerate(steps):
        if op == "create_table":
            pending.append(("none", batch.write(a["identifier"], [], create=SPEC)))
        elif op == "write":
            pending.append(("none", batch.write(a["identifier"], [a["rows"]])))
        elif op == "read":
            batch.read(f"read-{i}", a["identifier"], impls=["pypaimon"])
            pending.append(("read", f"read-{i}"))
        else:
            ops = {
                "create_database": {"op": "create_database", "name": a.get("name"), "properties": a.get("properties")},
                "database_option": {"op": "get_database", "name": a.get("name")},
                "database_exists": {"op": "list_databases"},
                "list_tables": {"op": "list_tables", "database": a.get("database")},
                "create_tag": {"op": "create_tag", **{k: a.get(k) for k in ("identifier", "name", "snapshot_id")}},
                "list_tags": {"op": "list_tags", "identifier": a.get("identifier")},
                "get_tag": {"op": "get_tag", "identifier": a.get("identifier"), "name": a.get("name")},
                "delete_tag": {"op": "delete_tag", "identifier": a.get("identifier"), "name": a.get("name")},
                "create_branch": {
                    "op": "create_branch",
                    "identifier": a.get("identifier"),
                    "name": a.get("name"),
                    "from_tag": a.get("tag"),
                },
                "list_branches": {"op": "list_branches", "identifier": a.get("identifier")},
                "drop_branch": {"op": "drop_branch", "identifier": a.get("identifier"), "name": a.get("name")},
                "rename_table": {"op": "rename_table", "source": a.get("source"), "target": a.get("target")},
                "missing": {"op": "table", "identifier": a.get("identifier"), "expect_error": True},
                "drop_table": {"op": "drop_table", "identifier": a.get("identifier")},
                "drop_database": {"op": "drop_database", "name": a.get("name")},
            }
            pending.append((op, batch.catalog([ops[op]])))
    batch.run()
    out: list[Any] = []
    for (op, _, _), (kind, ref) in zip(steps, pending):
        if kind == "read":
            out.append(pairs(batch.tables[ref]["pypaimon"]))
            continue
        if kind == "none":
            out.append(None)
            continue
        result = batch.results[ref]["results"][0]
        step_args = steps[len(out)][1]
        if op == "database_option":
            result = result.get(step_args["key"])
        elif op == "database_exists":
            result = step_args["name"] in result
        elif op == "missing":
            result = "table" if result["error"] == "TableNotExistException" else result
        out.append(result)
    return out


def test_pypaimon_passes_the_rest_suite(
    rest_server: RestCatalogServer, rest_options: dict[str, str], oracle_python: str
) -> None:
    steps = suite("suite_pypaimon")
    assert run_pypaimon(OracleBatch(pypaimon_options(rest_server, rest_options)), steps) == expected(steps)
    assert rest_server.state.token_requests, "pypaimon read its data through vended credentials"


def test_a_table_written_by_one_client_is_read_by_the_other(
    rest_server: RestCatalogServer, rest_options: dict[str, str], oracle_python: str
) -> None:
    cat = Catalog("warehouse", options=rest_options)
    ours = cat.create_table("db.ours", "id bigint not null, v string", primary_keys=["id"], options=TABLE_OPTIONS)
    ours.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    batch = OracleBatch(pypaimon_options(rest_server, rest_options))
    batch.read("ours", "db.ours", impls=["pypaimon"])
    batch.write("db.ours", [[[2, "B"]]])  # pypaimon commits on top of our snapshot through the server
    batch.write("db.theirs", [[[7, "x"], [8, "y"]]], create=SPEC)
    batch.run()
    assert pairs(batch.tables["ours"]["pypaimon"]) == [[1, "a"], [2, "b"]]
    assert pairs(cat.get_table("db.ours").scan().to_arrow()) == [[1, "a"], [2, "B"]]
    theirs = cat.get_table("db.theirs")
    assert pairs(theirs.scan().to_arrow()) == [[7, "x"], [8, "y"]]
    theirs.write_arrow(pa.table({"id": [8], "v": ["Y"]}))
    check = OracleBatch(pypaimon_options(rest_server, rest_options))
    check.read("theirs", "db.theirs", impls=["pypaimon"])
    check.run()
    assert pairs(check.tables["theirs"]["pypaimon"]) == [[7, "x"], [8, "Y"]]
    assert [c["table"] for c in rest_server.state.commits] == ["db.ours", "db.ours", "db.theirs", "db.theirs"]
