"""Branches and rollback of a REST table, done by its server and reported like the file-based ones.

Java's client sends a REST table's branch operations and rollbacks to the server (``CatalogBranchManager``,
``catalogTableRollback``) instead of writing the files itself; these functions do the same through
:class:`~.rest_metastore.RestTable` and answer with the records ``t.branches`` and ``t.maintenance`` return for any
table, read back from the files the server wrote. What the REST API cannot express is refused with the way
round: a branch is created empty or from a tag, publishing into ``main`` only, without ``force``.
"""

from __future__ import annotations

from pyspark_paimon.errors import BranchError, BranchNotFoundError
from pyspark_paimon.metadata.catalog.rest_metastore import RestTable
from pyspark_paimon.metadata.maintenance.expire import RefDeleteResult
from pyspark_paimon.metadata.refs.branches import BranchManager
from pyspark_paimon.metadata.refs.lineage import BranchInfo
from pyspark_paimon.metadata.refs.publish import PublishResult
from pyspark_paimon.metadata.refs.rollback import RollbackResult
from pyspark_paimon.metadata.refs.tags import TagManager
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH
from pyspark_paimon.metadata.store import FileStore


def refuse(what: str) -> BranchError:
    """The error for a branch operation the REST API cannot express, with the way round."""
    return BranchError(
        f"{what} is not possible on a REST catalog table: its server creates branches empty or from a tag, and "
        "forwards them into main. Create a tag first (t.tags.create('x')) and branch from it "
        "(t.branches.create('b', tag='x')), or use t.branches.publish, which commits through the server."
    )


def create_branch(store: FileStore, rest: RestTable, name: str, *, tag: str | None, empty: bool) -> BranchInfo:
    """Branch ``name`` of the table, made by the server: empty (``empty``) or from ``tag``."""
    if store.branch != MAIN_BRANCH:
        raise refuse(f"Branching from branch '{store.branch}'")
    if not empty and tag is None:
        raise refuse(f"Branch '{name}' from a snapshot, an instant or the latest snapshot")
    rest.create_branch(name, tag)
    return BranchManager(store).info(name)


def delete_branch(store: FileStore, rest: RestTable, name: str, *, ignore_if_not_exists: bool) -> RefDeleteResult:
    """Drop branch ``name`` through the server (which reclaims its files)."""
    if not BranchManager(store).exists(name):
        if ignore_if_not_exists:
            return RefDeleteResult("branch")
        raise BranchNotFoundError(f"Branch '{name}' does not exist in REST table {rest.database}.{rest.table}.")
    rest.drop_branch(name)
    return RefDeleteResult("branch", deleted=[name])


def rename_branch(store: FileStore, rest: RestTable, old: str, new: str) -> BranchInfo:
    rest.rename_branch(old, new)
    return BranchManager(store).info(new)


def fast_forward(store: FileStore, rest: RestTable, name: str, *, force: bool) -> PublishResult:
    """Publish branch ``name`` into ``main`` through the server's ``forward``."""
    if store.branch != MAIN_BRANCH or force:
        raise refuse("A forced fast-forward, or one into a branch other than main,")
    before = store.snapshots.latest_id()
    rest.fast_forward(name)
    return PublishResult(name, MAIN_BRANCH, before, store.snapshots.latest_id())


def rollback(store: FileStore, rest: RestTable, *, snapshot_id: int | None, tag: str | None) -> RollbackResult:
    """Roll the branch back through the server; the result is read from the files before and after."""
    ids_before = set(store.snapshots.list_ids())
    tags = TagManager(store)
    tags_before = set(tags.list_names())
    previous = store.snapshots.latest_id()
    rest.rollback(snapshot_id=snapshot_id, tag=tag, branch=store.branch)
    ids_after = set(store.snapshots.list_ids())
    current = store.snapshots.latest_id()
    assert current is not None
    return RollbackResult(
        previous,
        current,
        sorted(ids_before - ids_after),
        sorted(tags_before - set(TagManager(store).list_names())),
    )
