"""The REST catalog suite: one sequence of catalog operations with their expected results, which our REST client
(tests/metadata/test_rest_catalog.py) and pypaimon's (tests/interop/test_rest_interop.py) both pass against the
in-suite server (tests/rest_catalog_server.py).

Each step is ``(op, args, expected)``; ``expected`` None means "no result to check". Reads answer sorted
``[id, v]`` pairs, listings sorted names, ``missing`` the kind of error a lookup of a dropped name raises.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

Step = tuple[str, dict[str, Any], Any]


def suite(db: str) -> list[Step]:
    """The suite on database ``db`` (each client uses its own, on one server)."""
    t, t2 = f"{db}.orders", f"{db}.orders2"
    first = [[1, "a"], [2, "b"]]
    latest = [[1, "a"], [2, "B"], [3, "c"]]
    return [
        ("create_database", {"name": db, "properties": {"team": "suite"}}, None),
        ("database_option", {"name": db, "key": "team"}, "suite"),
        ("list_tables", {"database": db}, []),
        ("create_table", {"identifier": t}, None),
        ("list_tables", {"database": db}, ["orders"]),
        ("write", {"identifier": t, "rows": first}, None),
        ("write", {"identifier": t, "rows": [[2, "B"], [3, "c"]]}, None),
        ("read", {"identifier": t}, latest),
        ("create_tag", {"identifier": t, "name": "v1", "snapshot_id": 1}, None),
        ("list_tags", {"identifier": t}, ["v1"]),
        ("get_tag", {"identifier": t, "name": "v1"}, 1),
        ("create_branch", {"identifier": t, "name": "b1", "tag": "v1"}, None),
        ("list_branches", {"identifier": t}, ["b1"]),
        ("read", {"identifier": f"{t}$branch_b1"}, first),
        ("drop_branch", {"identifier": t, "name": "b1"}, None),
        ("list_branches", {"identifier": t}, []),
        ("delete_tag", {"identifier": t, "name": "v1"}, None),
        ("list_tags", {"identifier": t}, []),
        ("rename_table", {"source": t, "target": t2}, None),
        ("list_tables", {"database": db}, ["orders2"]),
        ("missing", {"identifier": t}, "table"),
        ("read", {"identifier": t2}, latest),
        ("drop_table", {"identifier": t2}, None),
        ("list_tables", {"database": db}, []),
        ("drop_database", {"name": db}, None),
        ("database_exists", {"name": db}, False),
    ]


COLUMNS = "id bigint not null, v string"
TABLE_OPTIONS = {"bucket": "1"}


def pairs(table: pa.Table) -> list[list[Any]]:
    return sorted([r["id"], r["v"]] for r in table.select(["id", "v"]).to_pylist())


def run_ours(catalog: Any, steps: list[Step]) -> list[Any]:
    """Run the suite through our ``Catalog`` (the REST one) and ``Table`` API; one result per step."""
    from pyspark_paimon.errors import TableNotFoundError

    out: list[Any] = []
    for op, a, _ in steps:
        result: Any = None
        if op == "create_database":
            catalog.create_database(a["name"], ignore_if_exists=False, properties=a["properties"])
        elif op == "database_option":
            result = catalog.metastore.database_properties(a["name"]).get(a["key"])
        elif op == "database_exists":
            result = a["name"] in catalog.list_databases()
        elif op == "list_tables":
            result = catalog.list_tables(a["database"])
        elif op == "create_table":
            catalog.create_table(a["identifier"], COLUMNS, primary_keys=["id"], options=TABLE_OPTIONS)
        elif op == "write":
            rows = a["rows"]
            data = pa.table({"id": [r[0] for r in rows], "v": [r[1] for r in rows]})
            catalog.get_table(a["identifier"]).write_arrow(data)
        elif op == "read":
            result = pairs(catalog.get_table(a["identifier"]).scan().to_arrow())
        elif op == "create_tag":
            catalog.get_table(a["identifier"]).tags.create(a["name"], snapshot_id=a["snapshot_id"])
        elif op == "list_tags":
            result = [tag.name for tag in catalog.get_table(a["identifier"]).tags.list()]
        elif op == "get_tag":
            result = catalog.get_table(a["identifier"]).tags.get(a["name"]).snapshot_id
        elif op == "delete_tag":
            catalog.get_table(a["identifier"]).tags.delete(a["name"])
        elif op == "create_branch":
            catalog.get_table(a["identifier"]).branches.create(a["name"], tag=a["tag"])
        elif op == "list_branches":
            result = [b.name for b in catalog.get_table(a["identifier"]).branches.list()]
        elif op == "drop_branch":
            catalog.get_table(a["identifier"]).branches.delete(a["name"])
        elif op == "rename_table":
            catalog.rename_table(a["source"], a["target"])
        elif op == "missing":
            try:
                catalog.get_table(a["identifier"])
                result = None
            except TableNotFoundError:
                result = "table"
        elif op == "drop_table":
            catalog.drop_table(a["identifier"])
        elif op == "drop_database":
            catalog.drop_database(a["name"])
        else:
            raise AssertionError(f"unknown suite op {op}")
        out.append(result)
    return out


def expected(steps: list[Step]) -> list[Any]:
    return [e for _, _, e in steps]
