"""Every fenced Python example in docs/ runs, or says why it cannot (DEVELOPERS.md, "Docs examples").

A page's examples run in order in one test (one shared SparkSession), each on a fresh warehouse that
:class:`Docs` builds for it: the ``orders`` table the guide talks about (days 2025-08-10 and 2025-08-11, each
committed on its day and tagged with it, a stream consumer ``etl``), the DataFrames and Arrow tables the examples
write (``df``, ``arrow_table``...), and what a page needs beyond that. Absolute paths in examples
(``/data/warehouse``, ``/wh``, ``/warehouse``, ``/chk``, ``/checkpoints``, any other ``/data/...``, also after
``jdbc:sqlite:``) point into the test's temporary directory; the REST catalog address ``http://catalog:8080`` is
the in-suite server (tests/rest_catalog_server.py) that the page's builder started. A loop that polls for ever
(``for changes in follower``) ends where it would first sleep with nothing new. A block that cannot run here (an
object store, a Connect server, a query that never ends) has ``<!-- not runnable: <why> -->`` on the line before
its fence.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import re
import shutil
import sqlite3
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Iterator
from unittest import mock

import duckdb
import duckdb_extension_avro
import duckdb_extension_iceberg
import polars
import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table, register
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager
from pyspark_paimon.variant import variant_array
from tests.iceberg_readers import _extension_file
from tests.rest_catalog_server import RestCatalogServer, ServerConfig

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^([ \t]*)```python[ \t]*\n(.*?)^\1```[ \t]*$", re.S | re.M)
_MARKER = re.compile(r"<!--\s*not runnable:\s*(.*?)\s*-->\s*$")
_PATHS = re.compile(r"""(?:(?<=["'])|(?<=jdbc:sqlite:))/(data/warehouse|data|wh|warehouse|chk|checkpoints)(?=[/"'])""")
REST_URI = "http://catalog:8080"  # the examples' REST catalog: the in-suite server a builder started


@dataclasses.dataclass(frozen=True)
class Example:
    page: str  # relative to docs/
    line: int  # of the opening fence
    index: int  # the page's n-th Python block (from 0)
    code: str
    not_runnable: str | None  # the reason given in the marker, if any


def examples() -> list[Example]:
    out = []
    for path in sorted(DOCS.rglob("*.md")):
        text = path.read_text()
        for index, m in enumerate(_FENCE.finditer(text)):
            line = text.count("\n", 0, m.start()) + 1
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marker = _MARKER.search(before)
            indent = m.group(1)
            code = "\n".join(s[len(indent) :] if s.startswith(indent) else s for s in m.group(2).splitlines())
            out.append(Example(str(path.relative_to(DOCS)), line, index, code, marker.group(1) if marker else None))
    return out


# --------------------------------------------------------------------------------------------- the world
ORDERS_DDL = "dt string, id bigint, amount decimal(10,2), ts timestamp"
ORDERS = pa.schema(
    [("dt", pa.string()), ("id", pa.int64()), ("amount", pa.decimal128(10, 2)), ("ts", pa.timestamp("us"))]
)
# (day, [(id, amount)]): 2025-08-11 is the guide's bad batch (amounts in cents for two orders).
DAYS = [
    ("2025-08-10", [(1, "10.50"), (2, "20.00"), (3, "30.25")]),
    ("2025-08-11", [(4, "150000.00"), (5, "250000.00"), (6, "12.00")]),
]


def orders_rows(day: str, items: list[tuple[int, str]]) -> pa.Table:
    when = dt.datetime.fromisoformat(day).replace(hour=9)
    return pa.table(
        {
            "dt": [day] * len(items),
            "id": [i for i, _ in items],
            "amount": [Decimal(a) for _, a in items],
            "ts": [when] * len(items),
        },
        schema=ORDERS,
    )


@contextlib.contextmanager
def committed_on(day: str) -> Iterator[None]:
    """Commits made inside are dated noon (local time) of ``day``, as a daily job's would be: the examples'
    instants (``datetime(2025, 8, 10, 18)``, ``scan.timestamp``) then select them."""
    millis = int(dt.datetime.fromisoformat(day).replace(hour=12).timestamp() * 1000)
    with mock.patch("pyspark_paimon.metadata.snapshots.commit.now_millis", lambda: millis):
        yield


class Docs:
    """Builds the namespace an example runs in (a fresh warehouse per example)."""

    def __init__(self, spark: Any, root: Path):
        self.spark = spark
        self.root = root
        self.count = 0

    def base(self) -> dict[str, Any]:
        self.count += 1
        warehouse = self.root / f"wh{self.count}"
        warehouse.mkdir()
        cat = Catalog(str(warehouse))
        rows = orders_rows("2025-08-12", [(7, "70.00"), (8, "80.00")])
        return {
            "spark": self.spark,
            "warehouse": str(warehouse),
            "cat": cat,
            "catalog": cat,
            "Catalog": Catalog,
            "Table": Table,
            "register": register,
            "datetime": dt.datetime,
            "dataclasses": dataclasses,
            "pa": pa,
            "polars": polars,
            "duckdb": duckdb,
            "schema": ORDERS,
            "df": self.spark.createDataFrame(rows.to_pylist(), ORDERS_DDL),
            "arrow_table": orders_rows("2025-08-12", [(9, "90.00"), (10, "100.00")]),
            "ms": int(dt.datetime(2025, 8, 10, 11).timestamp() * 1000),
        }

    def world(self, *, days: int = 2, tags: bool = True, name: str = "default.orders") -> dict[str, Any]:
        """:meth:`base` plus the guide's ``orders`` table (``t``, ``orders``, ``path``) holding ``days`` days, each
        tagged with its date unless not ``tags``."""
        ns = self.base()
        t = ns["cat"].create_table(
            name, ORDERS_DDL, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "2"}
        )
        for day, items in DAYS[:days]:
            with committed_on(day):
                t.write_arrow(orders_rows(day, items))
            if tags:
                t.tags.create(day)
        ConsumerManager(t.store).record("etl", 2)  # next snapshot 2: it has read snapshot 1
        ns.update(t=t, orders=t, path=t.uri)
        return ns

    def path_of(self, ns: dict[str, Any], code: str) -> str:
        """``code`` with the examples' absolute paths moved into this example's warehouse."""
        mapping = {"data/warehouse": ns["warehouse"], "wh": ns["warehouse"], "warehouse": ns["warehouse"]}
        mapping.update({"chk": str(self.root / f"chk{self.count}"), "checkpoints": str(self.root / f"cp{self.count}")})
        mapping["data"] = str(self.root / f"data{self.count}")
        if "/data/" in code:
            Path(mapping["data"]).mkdir(exist_ok=True)
        code = _PATHS.sub(lambda m: mapping[m.group(1)], code)
        if REST_URI in code:
            code = code.replace(REST_URI, ns.pop("_rest").uri)
        return code


# ------------------------------------------------------------------------------------ what each page needs
def _bare(docs: Docs, example: Example) -> dict[str, Any]:
    return docs.base()


def _orders(docs: Docs, example: Example) -> dict[str, Any]:
    return docs.world()


def _quickstart(docs: Docs, example: Example) -> dict[str, Any]:
    if "create_table" in example.code:
        return docs.base()  # the example creates the table
    return docs.world(tags=False)  # the examples tag it


def _reading(docs: Docs, example: Example) -> dict[str, Any]:
    ns = docs.world()
    t = ns["t"]
    t.write_arrow(orders_rows("2025-08-12", [(7, "7.00")]))  # snapshot 3
    t.branches.create("fix")
    t.on_branch("fix").tags.create("t1")  # scan.version 'fix.t1'
    ns["scan"] = t.scan(filter="dt = '2025-08-11'")
    events = ns["cat"].create_table("db.events", "dt string, user_id bigint, v string", partition_keys=["dt"])
    events.write_arrow(pa.table({"dt": ["2025-08-11"], "user_id": pa.array([42], pa.int64()), "v": ["x"]}))
    return ns


def _writing(docs: Docs, example: Example) -> dict[str, Any]:
    ns = docs.base()
    ns["path"] = f"{ns['warehouse']}/default.db/orders"  # the first write creates it
    frame = orders_rows("2025-08-11", [(11, "1.00"), (12, "2.00")])
    ns["df"] = docs.spark.createDataFrame(
        orders_rows("20250811", [(1, "1.00")]).to_pylist(), ORDERS_DDL
    )  # overwrite-partition 'dt=20250811'
    ns["t"] = ns["cat"].create_table("default.arrow_orders", ORDERS_DDL, partition_keys=["dt"])
    ns["arrow_table"] = frame
    ns["polars_frame"] = polars.from_arrow(frame)
    ns["pandas_frame"] = frame.to_pandas()
    ns["batches"] = frame.to_batches()
    ns["schema"] = frame.schema
    ns["produce"] = lambda: iter(frame.to_batches())
    return ns


DML_DDL = "id bigint, dt string, amount decimal(10,2), status string, currency string, note string"


def _dml(docs: Docs, example: Example) -> dict[str, Any]:
    ns = docs.base()
    t = ns["cat"].create_table("default.orders", DML_DDL, partition_keys=["dt"], primary_keys=["id", "dt"])
    t.write_arrow(
        pa.table(
            {
                "id": [1, 2, 3, 17, 18],
                "dt": ["2025-08-11"] * 5,
                "amount": [Decimal("10.00"), Decimal("20.00"), Decimal("1500.00"), Decimal("1.00"), Decimal("2.00")],
                "status": ["ok", "test", "ok", "ok", "ok"],
                "currency": ["EUR", "USD", "EUR", "USD", "USD"],
                "note": [None] * 5,
            },
            schema=pa.schema([(f.name, f.type) for f in t.schema.arrow_schema()]),
        )
    )
    t.branches.create("fix")
    ns.update(t=t, path=t.uri)
    if "staging.orders" in example.code:  # a Spark table as the merge source: a staging copy of the table
        spark = docs.spark
        spark.sql(f"CREATE DATABASE IF NOT EXISTS staging LOCATION '{docs.root / 'staging'}'")
        spark.read.format("paimon").load(t.uri).write.mode("overwrite").saveAsTable("staging.orders")
    return ns


def _branches(docs: Docs, example: Example) -> dict[str, Any]:
    # The overview fast-forwards main to a branch of tag 2025-08-10 (main must not have moved since); the merge
    # examples cherry-pick snapshot 7 of 'fix'.
    overview = 't.branches.fast_forward("fix")' in example.code
    ns = docs.world(days=1 if overview else 2)
    if "cherry_pick" in example.code:
        t = ns["t"]
        t.branches.create("fix")
        fix = t.on_branch("fix")
        for i in range(5):  # snapshot 7 of 'fix' (cherry-picked below)
            fix.write_arrow(orders_rows("2025-08-12", [(20 + i, "1.00")]))
        ns["t"].write_arrow(orders_rows("2025-08-12", [(30, "3.00")]))  # main moves on too
    ns["corrected_df"] = docs.spark.createDataFrame(orders_rows("2025-08-11", [(4, "1500.00")]).to_pylist(), ORDERS_DDL)
    return ns


def _chain(docs: Docs, example: Example) -> dict[str, Any]:
    ns = docs.base()
    ns["path"] = f"{ns['warehouse']}/default.db/t"
    ddl = "t1 string, t2 string, t3 string, date string"
    ns["full_df"] = docs.spark.createDataFrame([("a", "1", "x", "20250810"), ("b", "1", "y", "20250810")], ddl)
    ns["delta_df"] = docs.spark.createDataFrame([("a", "2", "x2", "20250811")], ddl)
    ns["full"] = docs.spark.createDataFrame([("a", "2", "x2", "20250811")], ddl)
    ns["incremental"] = docs.spark.createDataFrame([("a", "2", "x2", "20250811")], ddl)
    return ns


def _maintenance(docs: Docs, example: Example) -> dict[str, Any]:
    ns = docs.world()
    t = ns["t"]
    for i in range(2):  # snapshots 3 and 4, after the two tagged days
        t.write_arrow(orders_rows("2025-08-12", [(40 + i, "4.00")]))
    ns["cat"].create_table("db.t", ORDERS_DDL, primary_keys=["id"]).write_arrow(orders_rows("2025-08-12", [(1, "1")]))
    if "dt=20250817" in example.code:  # the partition procedures' example names day 20250817 (yyyyMMdd)
        t.write_arrow(orders_rows("2025-08-12", [(50, "5.00")]).set_column(0, "dt", pa.array(["20250817"])))
    if "order_by" in example.code:  # ordered compaction: an unaware-bucket append table of points, several files
        points = ns["cat"].create_table("db.points", "x bigint, y bigint")
        for i in range(3):
            points.write_arrow(
                pa.table({"x": pa.array(range(i, 600, 3), pa.int64()), "y": pa.array(range(200), pa.int64())})
            )
        ns["t"] = points
    return ns


def _file_indexes(docs: Docs, example: Example) -> dict[str, Any]:
    ns = docs.base()
    if "rewrite_file_index" in example.code:  # the events table of the page, partitioned by day
        t = ns["cat"].create_table("db.events", "id bigint, user_id string, dt string", partition_keys=["dt"])
        t.write_arrow(pa.table({"id": pa.array([1, 2], pa.int64()), "user_id": ["u1", "u2"], "dt": ["2025-08-11"] * 2}))
        ns["t"] = t
    return ns


def _iceberg(docs: Docs, example: Example) -> dict[str, Any]:
    ns = docs.base()
    ns["batch"] = pa.table({"id": pa.array([1, 2], pa.int64()), "status": ["ok", "new"], "amount": [1.5, 2.5]})
    if "iceberg_scan" in example.code:
        t = ns["cat"].create_table(
            "default.orders",
            "id bigint not null, status string, amount double",
            primary_keys=["id"],
            options={"bucket": "1", "metadata.iceberg.storage": "table-location"},
        )
        while not (Path(t.uri) / "metadata" / "v7.metadata.json").exists():  # the version the example names
            t.write_arrow(ns["batch"])
        ns["_during"] = [mock.patch("duckdb.connect", _duckdb_with_iceberg(duckdb.connect))]
    return ns


def _duckdb_with_iceberg(connect: Callable[..., Any]) -> Callable[..., Any]:
    """``duckdb.connect`` with the iceberg extension loaded from the test extra's wheels, as the example's comment
    assumes (no extension download)."""

    def loaded(*args: Any, **kwargs: Any) -> Any:
        con = connect(*args, **kwargs)
        con.execute("SET autoinstall_known_extensions = false")
        for module in (duckdb_extension_avro, duckdb_extension_iceberg):
            con.execute(f"LOAD '{_extension_file(module)}'")
        return con

    return loaded


def _streaming(docs: Docs, example: Example) -> dict[str, Any]:
    ns = docs.world()
    ns["mirror_path"] = f"{ns['warehouse']}/default.db/mirror"
    t = ns["t"]
    t.tags.create("day1", snapshot_id=1)
    ns.update(
        upstream_path=t.uri,
        upstream_day1_snapshot=1,
        fixed_logic=lambda frame: frame,
        orders=ns["cat"].create_table("default.out", ORDERS_DDL, partition_keys=["dt"], primary_keys=["dt", "id"]),
    )
    out = ns["orders"]
    out.write_arrow(orders_rows(*DAYS[0]))
    out.tags.create("day1")
    ns["orders_path"] = out.uri
    return ns


def _variant(docs: Docs, example: Example) -> dict[str, Any]:
    ns = docs.base()
    ns.update(json=json, Decimal=Decimal, date=dt.date, path=f"{ns['warehouse']}/default.db/events")
    if "parse_json" in example.code:
        return ns  # the example's Spark write creates the table
    if "dt = " in example.code:  # the filter examples: events of a day whose payloads have the paths asked for
        t = ns["cat"].create_table("default.events", "id bigint, dt string, payload variant", partition_keys=["dt"])
        payload = variant_array(['{"user": {"id": 1001}, "tags": ["a"]}', '{"user": {"id": 7}}'], json=True)
        t.write_arrow(pa.table({"id": pa.array([1, 2], pa.int64()), "dt": ["2025-08-11"] * 2, "payload": payload}))
    else:  # the examples write (id, payload) rows
        t = ns["cat"].create_table("default.events", "id bigint, payload variant")
    ns.update(t=t, path=t.uri)
    return ns


def _catalogs(docs: Docs, example: Example) -> dict[str, Any]:
    ns = docs.base()
    if REST_URI in example.code:  # the example's REST catalog, warehouse 'prod'
        server = RestCatalogServer(str(docs.root / f"rest{docs.count}"), ServerConfig(warehouse="prod")).start()
        ns.update(_rest=server, TOKEN=server.config.bearer, _during=[_stopping(server)])
    else:  # the JDBC catalog of the first example, holding its table
        data = docs.root / f"data{docs.count}"
        data.mkdir()
        db = Catalog(ns["warehouse"], options={"metastore": "jdbc", "uri": f"jdbc:sqlite:{data / 'catalog.db'}"})
        db.create_table("sales.orders", "id bigint, v string", primary_keys=["id"], options={"bucket": "4"})
        ns.update(db=db, df=docs.spark.createDataFrame([(1, "a"), (2, "b")], "id bigint, v string"))
    return ns


@contextlib.contextmanager
def _stopping(server: RestCatalogServer) -> Iterator[None]:
    try:
        yield
    finally:
        server.stop()


def _errors(docs: Docs, example: Example) -> dict[str, Any]:
    ns = docs.world()
    ns["batch"] = ns["arrow_table"]
    return ns


def _following(docs: Docs, example: Example) -> dict[str, Any]:
    ns = docs.world(name="sales.orders")
    applied: list[pa.Table] = []
    ns.update(apply=applied.append, upsert_and_delete=_upsert_and_delete)
    ns["_during"] = [mock.patch("pyspark_paimon.datasource.stream.follow.time", SimpleNamespace(sleep=_idle))]
    return ns


def _upsert_and_delete(db: sqlite3.Connection, changes: pa.Table) -> None:
    """The sink of the exactly-once example: the orders' rows by key, in SQLite."""
    db.execute("CREATE TABLE IF NOT EXISTS orders (dt TEXT, id INTEGER, amount TEXT, PRIMARY KEY (dt, id))")
    rows = changes.select(["rowkind", "dt", "id", "amount"]).to_pylist()
    gone = [(r["dt"], r["id"]) for r in rows if r["rowkind"] in ("-D", "-U")]
    db.executemany("DELETE FROM orders WHERE dt = ? AND id = ?", gone)
    kept = [(r["dt"], r["id"], str(r["amount"])) for r in rows if r["rowkind"] in ("+I", "+U")]
    db.executemany("INSERT OR REPLACE INTO orders VALUES (?, ?, ?)", kept)


class NothingNewError(Exception):
    """Where a follower would sleep with nothing new: ends an example's ``for changes in follower`` loop."""


def _idle(seconds: float) -> None:
    raise NothingNewError


def _schema_evolution(docs: Docs, example: Example) -> dict[str, Any]:
    if "update_schema" in example.code:  # the ALTER example: a table with the columns it changes
        ns = docs.base()
        ddl = "id bigint, qty int, address struct<street: string, zip: int>, legacy string"
        t = ns["cat"].create_table("default.orders", ddl, primary_keys=["id"])
        t.write_arrow(
            pa.table(
                {
                    "id": pa.array([1, 2], pa.int64()),
                    "qty": pa.array([3, 4], pa.int32()),
                    "address": [{"street": "Main", "zip": 10115}, {"street": "Elm", "zip": 80331}],
                    "legacy": ["x", None],
                },
                schema=t.schema.arrow_schema(),
            )
        )
        ns["t"] = t
        return ns
    ns = docs.world()  # the merge-schema example: data with a column the orders table lacks
    spark = docs.spark
    ns["df"] = ns["df"].selectExpr("*", "'rush' AS note")
    ns["arrow_table"] = ns["arrow_table"].append_column("channel", pa.array(["web"] * ns["arrow_table"].num_rows))
    incoming = ns["cat"].create_table("default.incoming", f"{ORDERS_DDL}, source string")
    incoming.write_arrow(orders_rows("2025-08-13", [(20, "2.00")]).append_column("source", pa.array(["shop"])))
    ns["stream_df"] = spark.readStream.format("paimon").load(incoming.uri)
    return ns


def _row_tracking(docs: Docs, example: Example) -> dict[str, Any]:
    ns = docs.base()
    events = ns["cat"].create_table("db.events", "id bigint, kind string", options={"row-tracking.enabled": "true"})
    for start in (0, 800):  # two commits: ids 0..799, then 800..1599
        ids = pa.array(range(start, start + 800), pa.int64())
        events.write_arrow(pa.table({"id": ids, "kind": pa.array(["click"] * 800)}))
    return ns


PAGES: dict[str, Callable[[Docs, Example], dict[str, Any]]] = {
    "index.md": _bare,
    "quickstart.md": _quickstart,
    "reading.md": _reading,
    "writing.md": _writing,
    "dml.md": _dml,
    "branches.md": _branches,
    "chain-tables.md": _chain,
    "maintenance.md": _maintenance,
    "file-indexes.md": _file_indexes,
    "iceberg.md": _iceberg,
    "streaming.md": _streaming,
    "variant.md": _variant,
    "catalogs.md": _catalogs,
    "errors.md": _errors,
    "following.md": _following,
    "schema-evolution.md": _schema_evolution,
    "row-tracking.md": _row_tracking,
}


# ------------------------------------------------------------------------------------------------ tests
def test_every_example_runs_or_says_why_not() -> None:
    """Each Python block is on a page the runner knows, or marked with a reason; markers sit on a fence."""
    found = examples()
    assert found
    unknown = sorted({e.page for e in found if e.not_runnable is None and e.page not in PAGES})
    assert unknown == [], "give these pages a namespace in PAGES, or mark their blocks <!-- not runnable: why -->"
    assert all(len(e.not_runnable.split()) >= 3 for e in found if e.not_runnable is not None), "say why, briefly"
    stray = []
    for path in sorted(DOCS.rglob("*.md")):
        lines = path.read_text().splitlines()
        for n, text in enumerate(lines):
            if _MARKER.search(text) and not (n + 1 < len(lines) and lines[n + 1].lstrip().startswith("```python")):
                stray.append(f"{path.relative_to(DOCS)}:{n + 1}")
    assert stray == [], "a not-runnable marker must be the line right before a ```python fence"


def _pages() -> list[str]:
    return sorted({e.page for e in examples() if e.not_runnable is None})


@pytest.mark.parametrize("page", _pages())
def test_page_examples_run(page: str, spark: Any, tmp_path: Path) -> None:
    docs = Docs(spark, tmp_path)
    build = PAGES[page]
    try:
        for example in [e for e in examples() if e.page == page and e.not_runnable is None]:
            ns = build(docs, example)
            code = docs.path_of(ns, example.code)
            try:
                with contextlib.ExitStack() as during:
                    for patch in ns.pop("_during", []):
                        during.enter_context(patch)
                    exec(compile(code, f"docs/{page}:{example.line}", "exec"), ns)  # noqa: S102 - the docs' own code
            except NothingNewError:
                pass  # a loop that polls for ever has read everything there is
            except Exception as exc:
                raise AssertionError(f"docs/{page}, the Python block at line {example.line} failed: {exc!r}") from exc
            for query in spark.streams.active:  # a stream an example started: let it finish its run, then stop
                query.processAllAvailable()
                query.stop()
    finally:
        spark.sql("DROP DATABASE IF EXISTS staging CASCADE")
        register(spark)  # an example may register the source again; the session keeps the suite's registration
        shutil.rmtree(tmp_path, ignore_errors=True)
