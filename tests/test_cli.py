"""The ``pyspark-paimon`` command line: Paimon's procedure names and arguments as subcommands, run in process
through ``cli.main(argv)``, plus one run of the real entry point in a subprocess."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import cli
from pyspark_paimon.table import Table

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def table(catalog: Any) -> Table:
    """Append table with snapshots 1, 2, 3 (one row each)."""
    t = catalog.create_table("db.c", "id bigint, v string")
    for i in (1, 2, 3):
        t.write_arrow(pa.table({"id": [i], "v": [str(i)]}))
    return t


def run(capsys: Any, *argv: str) -> tuple[int, list[dict[str, Any]], str]:
    """Exit code, the JSON rows printed, and stderr."""
    code = cli.main([*argv, "--json"] if argv and argv[0] != "--help" else list(argv))
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines() if line.startswith("{")], err


def test_tags(capsys: Any, table: Table) -> None:
    code, rows, _ = run(capsys, "create_tag", "--table", table.store.table_path, "--tag", "t1", "--snapshot", "1")
    assert code == 0 and rows[0]["tag_name"] == "t1" and rows[0]["snapshot_id"] == 1
    code, rows, _ = run(
        capsys, "create_tag", "--table", table.store.table_path, "--tag", "t3", "--time_retained", "1 d"
    )
    assert rows[0]["snapshot_id"] == 3 and rows[0]["time_retained"] == "1 d"
    first = table.snapshot(1).time_millis
    code, rows, _ = run(
        capsys, "create_tag_from_timestamp", "--table", table.store.table_path, "--tag", "ts", "--timestamp", str(first)
    )
    assert code == 0 and rows[0]["snapshot_id"] == 1
    assert run(capsys, "rename_tag", "--table", table.store.table_path, "--tag", "ts", "--target_tag", "ts2")[0] == 0
    code, rows, _ = run(capsys, "list_tags", "--table", table.store.table_path)
    assert [(r["tag_name"], r["snapshot_id"]) for r in rows] == [("t1", 1), ("ts2", 1), ("t3", 3)]
    code, rows, _ = run(
        capsys, "delete_tag", "--table", table.store.table_path, "--tag", "t1,ts2", "--clean_files", "false"
    )
    assert rows == [{"tag": "t1", "action": "deleted"}, {"tag": "ts2", "action": "deleted"}]
    assert [t.name for t in table.tags.list()] == ["t3"]
    expire = ("expire_tags", "--table", table.store.table_path, "--older_than", "2999-01-01 00:00:00")
    code, rows, _ = run(capsys, *expire, "--dry_run")
    assert rows[0] == {"tag": "t3", "action": "would delete"} and rows[1]["tag"] == "(files)"
    code, rows, _ = run(capsys, *expire)
    assert rows[0] == {"tag": "t3", "action": "deleted"} and table.tags.list() == []
    code, rows, _ = run(capsys, *expire)
    assert code == 0 and rows == [{"tag": "(none)", "action": "no tag was due; nothing deleted"}]


def test_branches_with_a_warehouse_and_a_db_table_identifier(capsys: Any, table: Table, warehouse: str) -> None:
    table.tags.create("t2", snapshot_id=2)
    wh = ["--warehouse", warehouse, "--table", "db.c"]
    code, rows, _ = run(capsys, "create_branch", *wh, "--branch", "b", "--tag", "t2", "--time_retained", "2 h")
    assert code == 0 and rows[0]["created_from_tag"] == "t2" and rows[0]["time_retained"] == "2 h"
    assert run(capsys, "create_branch", *wh, "--branch", "b", "--tag", "t2", "--ignoreIfExists")[0] == 0
    assert run(capsys, "create_branch", *wh, "--branch", "s1", "--snapshot", "1")[0] == 0
    code, rows, _ = run(
        capsys, "create_branch", *wh, "--branch", "at", "--timestamp", str(table.snapshot(2).time_millis)
    )
    assert rows[0]["created_from_snapshot"] == 2  # the table as of that instant
    assert run(capsys, "rename_branch", *wh, "--from_branch", "s1", "--to_branch", "s1b")[0] == 0
    code, rows, _ = run(capsys, "list_branches", *wh)
    assert [(r["branch_name"], r["created_from_snapshot"]) for r in rows] == [("at", 2), ("b", 2), ("s1b", 1)]
    # Write on branch b (addressed with --on_branch), then publish it into main.
    table.on_branch("b").write_arrow(pa.table({"id": [9], "v": ["b"]}))
    code, rows, _ = run(capsys, "history", *wh, "--on_branch", "b")
    assert [r["snapshot_id"] for r in rows] == [3, 2] and rows[1]["tags"] == "t2"
    table.maintenance.rollback_to(snapshot_id=2)
    code, rows, _ = run(capsys, "fast_forward", *wh, "--branch", "b")
    assert code == 0 and rows[0]["latest_id"] == 3
    assert sorted(r["id"] for r in table.scan().to_arrow().to_pylist()) == [1, 2, 9]
    code, rows, _ = run(capsys, "replace_main", *wh, "--branch", "s1b", "--keep_previous_as", "old_main")
    assert code == 0 and rows[0]["latest_id"] == 1 and rows[0]["kept_previous_as"] == "old_main"
    code, rows, _ = run(capsys, "delete_branch", *wh, "--branch", "at,s1b")
    assert rows == [{"branch": "at", "action": "deleted"}, {"branch": "s1b", "action": "deleted"}]  # metadata only
    code, rows, _ = run(capsys, "expire_branches", *wh, "--older_than", "2999-01-01 00:00:00", "--dry_run")
    assert [r["branch"] for r in rows if r["action"] == "would delete"] == ["b", "old_main"]
    assert [b.name for b in table.branches.list()] == ["b", "old_main"]


def test_rollback_expire_orphans_and_history(capsys: Any, table: Table) -> None:
    table.tags.create("t2", snapshot_id=2)
    code, rows, _ = run(capsys, "history", "--table", table.store.table_path, "--limit", "2")
    assert [(r["snapshot_id"], r["note"]) for r in rows] == [(3, "latest"), (2, None)]
    assert rows[0]["total_records"] == 3 and rows[0]["commit_kind"] == "APPEND"
    code, rows, _ = run(capsys, "rollback", "--table", table.store.table_path, "--version", "t2")
    assert code == 0 and rows[0]["current_snapshot_id"] == 2 and rows[0]["deleted_snapshots"] == "3"
    code, rows, _ = run(capsys, "rollback_to", "--table", table.store.table_path, "--snapshot_id", "1")
    assert rows[0]["current_snapshot_id"] == 1
    for i in (4, 5):
        table.write_arrow(pa.table({"id": [i], "v": [str(i)]}))
    code, rows, _ = run(
        capsys,
        "rollback_to_timestamp",
        "--table",
        table.store.table_path,
        "--timestamp",
        str(table.snapshot(2).time_millis),
    )
    assert rows[0]["current_snapshot_id"] == 2
    code, rows, _ = run(
        capsys,
        "expire_snapshots",
        "--table",
        table.store.table_path,
        "--retain_max",
        "1",
        "--retain_min",
        "1",
        "--older_than",
        "2999-01-01 00:00:00",
    )
    assert rows[0]["expired_snapshots"] == "1"
    code, rows, _ = run(capsys, "history", "--table", table.store.table_path)
    assert [(r["snapshot_id"], r["note"]) for r in rows] == [(2, "latest")]
    code, rows, _ = run(capsys, "remove_orphan_files", "--table", table.store.table_path, "--dry_run")
    assert code == 0 and rows[-1]["orphan_file"].startswith("(")


def test_compact(capsys: Any, catalog: Any) -> None:
    t = catalog.create_table(
        "db.pk",
        "id bigint not null, v string, dt string",
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "1", "write-only": "true"},
    )
    for i in range(3):
        t.write_arrow(pa.table({"id": [1, i + 2], "v": [f"v{i}", "x"], "dt": ["a", "b"]}))
    code, rows, _ = run(
        capsys, "compact", "--table", t.store.table_path, "--partitions", "dt=a", "--compact_strategy", "full"
    )
    assert code == 0 and rows[0]["buckets"] == 1 and rows[0]["files_before"] == 3 and rows[0]["files_after"] == 1
    assert t.latest_snapshot().commit_kind == "COMPACT"
    assert sorted(t.scan().to_arrow().to_pylist(), key=lambda r: (r["dt"], r["id"]))[0] == {
        "id": 1,
        "v": "v2",
        "dt": "a",
    }


def test_compact_defaults_to_full_as_paimons_spark_procedure(capsys: Any, catalog: Any) -> None:
    """Three level-0 files are below the universal trigger (5 sorted runs), so a minor compaction leaves them;
    the default (full, as Java's ``CompactProcedure``) merges them into one file at the max level."""
    t = catalog.create_table(
        "db.pk2", "id bigint not null, v string", primary_keys=["id"], options={"bucket": "1", "write-only": "true"}
    )
    for i in range(3):
        t.write_arrow(pa.table({"id": [1, i + 2], "v": [f"v{i}", "x"]}))
    code, rows, _ = run(capsys, "compact", "--table", t.store.table_path, "--compact_strategy", "minor")
    assert code == 0 and len(t.store.live_entries(t.latest_snapshot())) == 3
    code, rows, _ = run(capsys, "compact", "--table", t.store.table_path)
    entries = t.store.live_entries(t.latest_snapshot())
    # The max level: num-levels defaults to num-sorted-run.compaction-trigger (5) + 1 levels, 0..5.
    assert code == 0 and len(entries) == 1 and entries[0].file.level == 5


def test_errors_are_one_line_and_exit_non_zero(capsys: Any, table: Table) -> None:
    code, _, err = run(capsys, "delete_tag", "--table", table.store.table_path, "--tag", "nope")
    assert code == 1
    assert err.startswith("pyspark-paimon: error: Tag 'nope' does not exist") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "create_tag", "--table", table.store.table_path + "_missing", "--tag", "x")
    assert code == 1 and "Traceback" not in err
    assert cli._storage_options(["anon=false", "secret=123", "token=a=b"]) == {
        "anon": False,
        "secret": "123",
        "token": "a=b",
    }
    code, _, err = run(capsys, "list_tags", "--table", table.store.table_path, "--fs", "novalue")
    assert code == 1 and "key=value" in err
    code, _, err = run(capsys, "list_tags", "--table", table.store.table_path + "$branch_a", "--on_branch", "b")
    assert code == 1 and "disagree" in err
    code, _, err = run(capsys, "create_tag", "--table", table.store.table_path, "--tag", "x", "--snapshot", "one")
    assert code == 2 and "expected an integer" in err
    code, _, err = run(capsys, "no_such_procedure", "--table", table.store.table_path)
    assert code == 2 and "invalid choice" in err


def test_errors_name_the_argument_and_the_fix(capsys: Any, table: Table, monkeypatch: Any, tmp_path: Path) -> None:
    code, _, err = run(capsys, "expire_snapshots", "--table", table.store.table_path, "--retain_max", "1")
    assert code == 1 and "--retain_min" in err and "snapshot.num-retained.min" in err and "which is 10" in err
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "list_tags", "--table", "db.c")
    assert code == 1 and "needs --warehouse" in err


def test_list_tags_shows_a_create_time_for_tags_without_retention(capsys: Any, table: Table) -> None:
    table.tags.create("plain")
    code, rows, _ = run(capsys, "list_tags", "--table", table.store.table_path)
    assert code == 0 and rows[0]["tag_name"] == "plain" and rows[0]["create_time"] is not None
    assert rows[0]["time_retained"] is None


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_long_procedures_show_progress_only_on_a_terminal(capsys: Any, catalog: Any, monkeypatch: Any) -> None:
    t = catalog.create_table(
        "db.p",
        "id bigint, dt string",
        partition_keys=["dt"],
        options={"bucket": "1", "bucket-key": "id", "write-only": "true"},
    )
    for i in range(3):
        t.write_arrow(pa.table({"id": [i, i], "dt": ["a", "b"]}))
    assert cli.progress_for(io.StringIO()) is None  # not a terminal: no progress lines in captured output
    tty = FakeTTY()
    monkeypatch.setattr(sys, "stderr", tty)
    assert cli.main(["compact", "--table", t.store.table_path, "--compact_strategy", "full"]) == 0
    assert tty.getvalue().endswith("\rcompact buckets: 1/2\rcompact buckets: 2/2\n")
    steps: list[tuple[str, int, int]] = []
    t.maintenance.expire_snapshots(retain_max=1, retain_min=1, progress=lambda *s: steps.append(s))
    assert steps and steps[-1][1] == steps[-1][2] and {s[0] for s in steps} == {"delete data files"}


def test_every_procedure_has_help_and_the_script_entry_point_runs(table: Table) -> None:
    """pyproject declares the console script as cli.main; ``python -m pyspark_paimon`` is the same program."""
    pyproject = (ROOT / "pyproject.toml").read_text()  # (tomllib is 3.11+; the package supports 3.10)
    scripts = pyproject.split("[project.scripts]", 1)[1].split("\n[", 1)[0]
    assert 'pyspark-paimon = "pyspark_paimon.cli:main"' in scripts
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyspark_paimon",
            "create_tag",
            "--table",
            table.store.table_path,
            "--tag",
            "cli",
            "--snapshot",
            "2",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    header, row = done.stdout.splitlines()
    assert header.split()[:2] == ["tag_name", "snapshot_id"] and row.split()[:2] == ["cli", "2"]
    done = subprocess.run(
        [sys.executable, "-m", "pyspark_paimon", "delete_tag", "--table", table.store.table_path, "--tag", "nope"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 1 and done.stderr.startswith("pyspark-paimon: error:") and not done.stdout
    names = [p.name for p in cli.PROCEDURES]
    assert len(names) == len(set(names))
    for name in names:
        assert name in cli.build_parser().format_help()


def test_delete_where(capsys: Any, table: Table) -> None:
    """Paimon's delete action: ``delete --where``; a refusal is one line on stderr."""
    code, rows, _ = run(capsys, "delete", "--table", table.store.table_path, "--where", "id >= 2")
    assert code == 0 and rows == [{"deleted": 2, "snapshot_id": 4}]
    assert table.scan().to_arrow().to_pylist() == [{"id": 1, "v": "1"}]
    code, _, err = run(capsys, "delete", "--table", table.store.table_path, "--where", "nope = 1")
    assert code == 1 and "nope" in err


def test_refs_at_a_consumer_and_an_offset(capsys: Any, table: Table) -> None:
    from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager

    ConsumerManager(table.store).record("etl", 3)
    path = table.store.table_path
    code, rows, _ = run(capsys, "create_tag", "--table", path, "--tag", "at_etl", "--consumer", "etl")
    assert code == 0 and rows[0]["snapshot_id"] == 2
    code, rows, _ = run(capsys, "create_branch", "--table", path, "--branch", "b_etl", "--consumer", "etl")
    assert code == 0 and rows[0]["created_from_snapshot"] == 2
    code, rows, _ = run(capsys, "create_tag", "--table", path, "--tag", "now", "--offset", "-0 s")
    assert code == 0 and rows[0]["snapshot_id"] == 3
    code, _, err = run(capsys, "create_branch", "--table", path, "--branch", "old", "--offset", "-30 d")
    assert code == 1 and "before branch 'main'" in err and "shorter offset" in err
    code, _, err = run(capsys, "create_tag", "--table", path, "--tag", "x", "--consumer", "ghost")
    assert code == 1 and "no consumer 'ghost' (its consumers: etl)" in err


def test_merge_cherry_pick_and_publish_branches(capsys: Any, table: Table) -> None:
    wh = ("--table", table.store.table_path)
    table.branches.create("m")
    table.on_branch("m").write_arrow(pa.table({"id": [7], "v": ["m"]}))
    picked = table.on_branch("m").latest_snapshot()
    assert picked is not None
    code, rows, _ = run(capsys, "cherry_pick", *wh, "--version", f"m.{picked.id}", "--onto", "main")
    assert code == 0 and rows[0]["snapshot_id"] is not None
    code, rows, _ = run(capsys, "merge_branch", *wh, "--branch", "m")
    assert code == 0 and rows[0]["snapshot_id"] is None  # already merged by the cherry-pick
    code, rows, _ = run(capsys, "publish_branch", *wh, "--branch", "m", "--on_conflict", "source")
    assert code == 0 and rows[0]["source"] == "m"
    assert 7 in [r["id"] for r in table.scan().to_arrow().to_pylist()]


def test_ordered_compact_and_partition_and_consumer_procedures(capsys: Any, catalog: Any) -> None:
    """Paimon's names and arguments: compact with order_strategy / order_by / options, expire_partitions,
    mark_partition_done, rescale, reset_consumer (Spark's camelCase spellings too) and clear_consumers."""
    t = catalog.create_table("db.o", "dt string, x bigint, y bigint", partition_keys=["dt"])
    for i in range(3):
        t.write_arrow(pa.table({"dt": ["2020-01-01"] * 50, "x": list(range(i, 150, 3)), "y": list(range(50))}))
    path = t.store.table_path
    code, rows, err = run(
        capsys,
        *("compact", "--table", path, "--order_strategy", "zorder", "--order_by", "x,y"),
        *("--options", "target-file-size=1kb"),
    )
    assert code == 0, err
    assert rows[0]["files_before"] == 3 and rows[0]["files_after"] > 3 and rows[0]["rows_after"] == 150
    code, _, err = run(capsys, "compact", "--table", path, "--order_strategy", "zorder")
    assert code == 1 and "order by" in err
    code, rows, _ = run(capsys, "mark_partition_done", "--table", path, "--partitions", "dt=2020-01-01")
    assert code == 0 and rows[0]["success_file"].endswith("dt=2020-01-01/_SUCCESS")
    code, rows, _ = run(
        capsys, "expire_partitions", "--table", path, "--expiration_time", "1 d", "--timestamp_formatter", "yyyy-MM-dd"
    )
    assert code == 0 and rows == [{"expired_partitions": "dt=2020-01-01"}] and t.scan().to_arrow().num_rows == 0
    code, rows, _ = run(capsys, "expire_partitions", "--table", path, "--expiration_time", "1 d")
    assert rows == [{"expired_partitions": "No expired partitions."}]
    k = catalog.create_table("db.k", "id bigint, v bigint", primary_keys=["id"], options={"bucket": "1"})
    k.write_arrow(pa.table({"id": [1, 2, 3], "v": [1, 2, 3]}))
    code, rows, _ = run(capsys, "rescale", "--table", k.store.table_path, "--bucket_num", "3")
    assert code == 0 and rows[0]["bucket_num"] == 3
    assert {e.total_buckets for e in k.store.live_entries(k.latest_snapshot())} == {3}
    code, rows, _ = run(
        capsys, "reset_consumer", "--table", k.store.table_path, "--consumerId", "c1", "--nextSnapshotId", "1"
    )
    assert code == 0 and rows == [{"result": True}] and k.inspect.consumers().to_pylist()[0]["consumer_id"] == "c1"
    code, rows, _ = run(capsys, "clear_consumers", "--table", k.store.table_path, "--including_consumers", "c.*")
    assert code == 0 and rows == [{"cleared_consumer": "c1"}] and k.inspect.consumers().num_rows == 0
