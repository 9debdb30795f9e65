"""``t.tags`` and ``t.branches``: the refs of a table, thin delegation to ``metadata/refs`` (and
``metadata/maintenance/expire`` for deletes that reclaim files).

Tags and branches are handled alike. Sources are chosen with the same keywords everywhere: ``snapshot_id=``,
``tag=``, ``timestamp=`` (an :data:`~pyspark_paimon.api_types.Instant`) with ``timestamp_rule=`` (one default for
both: the last snapshot committed at or before the instant, the table as a read of that instant sees it),
``consumer=``, ``offset=``; none = the latest snapshot of the table's branch. ``delete`` and ``expire`` return
one result shape (:class:`~pyspark_paimon.metadata.maintenance.expire.RefDeleteResult`) for both kinds.
"""

from __future__ import annotations

import builtins

from pyspark_paimon.api_types import Duration, Instant, OnConflict, TimestampRule
from pyspark_paimon.datasource.versions import branch_merge as _branch_merge
from pyspark_paimon.errors import BranchError, TagError
from pyspark_paimon.metadata.catalog import rest_refs as _rest_refs
from pyspark_paimon.metadata.catalog.rest_metastore import rest_table
from pyspark_paimon.metadata.effects import records_effects
from pyspark_paimon.metadata.maintenance import expire as _expire
from pyspark_paimon.metadata.progress import Progress
from pyspark_paimon.metadata.refs import branches as _branches
from pyspark_paimon.metadata.refs import lineage as _lineage
from pyspark_paimon.metadata.refs import publish as _publish
from pyspark_paimon.metadata.refs import tags as _tags
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.table_scan import TableView


class Tags:
    """The tags of one branch of a table (``t.tags``)."""

    def __init__(self, table: TableView):
        self._table = table

    def __repr__(self) -> str:
        return f"Tags({self._table.identifier!r}, branch={self._table.branch!r})"

    def _manager(self) -> _tags.TagManager:
        store = self._table.store
        return _tags.TagManager(store)

    @records_effects("create tag")
    def create(
        self,
        name: str,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp: Instant | None = None,
        timestamp_rule: TimestampRule = _tags.AT_OR_BEFORE,
        time_retained: Duration | None = None,
        ignore_if_exists: bool = False,
        consumer: str | None = None,
        offset: Duration | None = None,
    ) -> _tags.Tag:
        """Tag the latest snapshot, ``snapshot_id`` (an expired one if a tag preserved it), the snapshot of
        ``tag``, or the snapshot ``timestamp`` selects: by default the last committed at or before it (the
        table as of that instant, as :meth:`Table.scan` reads it), with ``timestamp_rule='first-at-or-after'``
        the first committed at or after it (Paimon's ``create_tag_from_timestamp``). ``consumer``: the last
        snapshot that stream consumer has fully read (Databend's ``AT (STREAM => ...)``); ``offset`` ('-1 d', a
        negative timedelta or ms): the table as it was that long ago (Databend's ``AT (OFFSET => ...)``, by
        ``timestamp_rule``). ``time_retained`` defaults to the table's ``tag.default-time-retained``; a tag
        without retention never expires. Returns the tag made (the existing one with ``ignore_if_exists``)."""
        store = self._table.store
        if ignore_if_exists and _tags.TagManager(store).exists(name):
            return _tags.TagManager(store).get_tag(name)
        snapshot_id = _position(store, "tag", name, snapshot_id, (tag, timestamp), consumer, offset, timestamp_rule)
        return _tags.create_tag(
            store,
            name,
            snapshot_id=snapshot_id,
            from_tag=tag,
            from_timestamp=timestamp,
            time_retained=time_retained,
            ignore_if_exists=ignore_if_exists,
            options=self._table.options,
            timestamp_rule=timestamp_rule,
        )

    @records_effects("replace tag")
    def replace(
        self,
        name: str,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp: Instant | None = None,
        timestamp_rule: TimestampRule = _tags.AT_OR_BEFORE,
        time_retained: Duration | None = None,
    ) -> _tags.Tag:
        """Move the existing tag ``name`` (to the latest snapshot unless a source is given, as in :meth:`create`)."""
        store = self._table.store
        return _tags.replace_tag(
            store,
            name,
            snapshot_id=snapshot_id,
            from_tag=tag,
            from_timestamp=timestamp,
            time_retained=time_retained,
            options=self._table.options,
            timestamp_rule=timestamp_rule,
        )

    @records_effects("rename tag")
    def rename(self, old: str, new: str) -> _tags.Tag:
        """Rename tag ``old`` to ``new`` (only the tag file moves)."""
        return self._manager().rename(old, new)

    @records_effects("delete tag", idempotent=True)
    def delete(
        self, name: str, *, ignore_if_not_exists: bool = False, clean_files: bool = True
    ) -> _expire.RefDeleteResult:
        """Delete tag ``name`` and, as Java Paimon does, the files only it kept alive (files no snapshot, tag
        or changelog of any branch still references); ``clean_files=False`` removes only the tag file
        (``remove_orphan_files`` reclaims the rest later). The result names the tag (``result.deleted``) and the
        files deleted, and is truthy when the tag existed; a missing tag raises TagNotFoundError unless
        ``ignore_if_not_exists`` (then an empty, falsy result). Deletes a branch alike: :meth:`Branches.delete`."""
        store = self._table.store
        return _expire.delete_tags(store, [name], clean_files=clean_files, ignore_if_not_exists=ignore_if_not_exists)

    def get(self, name: str) -> _tags.Tag:
        """Tag ``name`` (TagNotFoundError listing the branch's tags when there is none)."""
        return self._manager().get_tag(name)

    def list(self) -> builtins.list[_tags.Tag]:
        """This branch's tags, ordered by snapshot id then name."""
        return self._manager().list_tags()

    @records_effects("expire tags", idempotent=True)
    def expire(
        self,
        *,
        older_than: Instant | None = None,
        clean_files: bool = True,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> _expire.RefDeleteResult:
        """Delete this branch's tags past their retention (and, with ``older_than``, all tags created before
        it) and the files only they kept alive (``clean_files=False``: the tag files only). ``dry_run`` only
        reports; ``progress(step, done, total)`` is called per data file deleted. The result names the tags
        (``result.deleted``) and files, as :meth:`Branches.expire`'s does for branches."""
        store = self._table.store
        return _expire.expire_tags(
            store, older_than=older_than, clean_files=clean_files, dry_run=dry_run, progress=progress
        )


def _position(
    store: FileStore,
    kind: str,
    name: str,
    snapshot_id: int | None,
    others: tuple[object, ...],
    consumer: str | None,
    offset: Duration | None,
    rule: TimestampRule,
) -> int | None:
    """The snapshot id a ref made AT a consumer's position or a relative offset points at (``snapshot_id``
    unchanged when neither is given); more than one source is refused."""
    if consumer is None and offset is None:
        return snapshot_id
    given = [x for x in (snapshot_id, *others, consumer, offset) if x is not None]
    if len(given) > 1:
        error = TagError if kind == "tag" else BranchError
        raise error(
            f"The {kind} '{name}' takes one source: give one of snapshot_id=, tag=, timestamp=, consumer= and offset=."
        )
    if consumer is not None:
        return _tags.consumer_snapshot(store, consumer).id
    return _tags.snapshot_at_offset(store, offset, rule).id


class Branches:
    """The branches of a table (``t.branches``); sources and publishing are relative to the table's branch."""

    def __init__(self, table: TableView):
        self._table = table

    def __repr__(self) -> str:
        return f"Branches({self._table.identifier!r}, branch={self._table.branch!r})"

    def _manager(self) -> _branches.BranchManager:
        store = self._table.store
        return _branches.BranchManager(store)

    @records_effects("create branch")
    def create(
        self,
        name: str,
        *,
        tag: str | None = None,
        snapshot_id: int | None = None,
        timestamp: Instant | None = None,
        timestamp_rule: TimestampRule = _tags.AT_OR_BEFORE,
        empty: bool = False,
        time_retained: Duration | None = None,
        ignore_if_exists: bool = False,
        consumer: str | None = None,
        offset: Duration | None = None,
    ) -> _lineage.BranchInfo:
        """Create branch ``name`` from the table's branch: from ``tag``, from ``snapshot_id`` (an expired one
        if a tag preserved it), from the snapshot ``timestamp`` selects (by default the last committed at or
        before it, as for tags; ``timestamp_rule='first-at-or-after'`` the first at or after it), or, with none
        of these, from the latest snapshot. ``empty=True`` makes Paimon's empty branch (the current schema, no
        data). ``time_retained``: :meth:`expire` deletes the branch once it has passed. The branch shares data files
        with this one; its origin and retention are recorded in ``branch/branch-<name>/branch.json``.
        ``consumer``: branch where that stream consumer has read up to (the last snapshot it fully consumed,
        Databend's ``AT (STREAM => ...)``); ``offset`` ('-1 d', a negative timedelta or ms): the table as it
        was that long ago (Databend's ``AT (OFFSET => ...)``, by ``timestamp_rule``)."""
        sourced = any(x is not None for x in (tag, snapshot_id, timestamp, consumer, offset))
        if empty and sourced:
            raise BranchError(
                f"Branch '{name}': empty=True takes no source (tag=, snapshot_id=, timestamp=, consumer=, offset=)."
            )
        rest = rest_table(self._table.store)
        if rest is not None:  # a REST table's branches are made by its server (Java's CatalogBranchManager)
            if ignore_if_exists and self._manager().exists(name):
                return self._manager().info(name)
            if sourced and (tag is None or any(x is not None for x in (snapshot_id, timestamp, consumer, offset))):
                raise _rest_refs.refuse(f"Branch '{name}' from a snapshot, an instant or a consumer")
            if time_retained is not None:
                raise _rest_refs.refuse(f"Branch '{name}' with a retention")
            return _rest_refs.create_branch(self._table.store, rest, name, tag=tag, empty=empty)
        if (consumer is not None or offset is not None) and not (ignore_if_exists and self._manager().exists(name)):
            store = self._table.store
            snapshot_id = _position(
                store, "branch", name, snapshot_id, (tag, timestamp), consumer, offset, timestamp_rule
            )
        return self._manager().create(
            name,
            self._table.branch,
            tag=tag,
            snapshot_id=snapshot_id,
            from_latest=not empty and not sourced,
            from_timestamp=timestamp,
            timestamp_rule=timestamp_rule,
            time_retained=time_retained,
            ignore_if_exists=ignore_if_exists,
        )

    @records_effects("rename branch")
    def rename(self, old: str, new: str) -> _lineage.BranchInfo:
        """Rename branch ``old`` to ``new``."""
        rest = rest_table(self._table.store)
        if rest is not None:
            return _rest_refs.rename_branch(self._table.store, rest, old, new)
        return self._manager().rename(old, new)

    @records_effects("delete branch", idempotent=True)
    def delete(
        self, name: str, *, ignore_if_not_exists: bool = False, clean_files: bool = True
    ) -> _expire.RefDeleteResult:
        """Delete branch ``name`` and the files only it kept alive (files no snapshot, tag or changelog of any
        other branch references), as :meth:`Tags.delete` deletes a tag; ``clean_files=False`` removes only its
        metadata, as Paimon's ``delete_branch`` (``remove_orphan_files`` reclaims the rest later). Branches
        created from it keep their history. The result names the branch (``result.deleted``) and the files
        deleted, and is truthy when the branch existed; a missing branch raises BranchNotFoundError unless
        ``ignore_if_not_exists`` (then an empty, falsy result), and a branch another branch's options read from
        (``scan.fallback-branch``, a chain table's branches) raises BranchError."""
        store = self._table.store
        rest = rest_table(store)
        if rest is not None:  # the server drops it and reclaims its files
            return _rest_refs.delete_branch(store, rest, name, ignore_if_not_exists=ignore_if_not_exists)
        return _expire.delete_branches(
            store, [name], clean_files=clean_files, ignore_if_not_exists=ignore_if_not_exists
        )

    def list(self) -> builtins.list[_lineage.BranchInfo]:
        """Every branch of the table except ``main``, by name."""
        return self._manager().list_branches()

    @records_effects("expire branches", idempotent=True)
    def expire(
        self,
        *,
        older_than: Instant | None = None,
        clean_files: bool = True,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> _expire.RefDeleteResult:
        """Delete the branches whose ``time_retained`` has passed (and, with ``older_than``, every branch created
        before it) and the files only they referenced (``clean_files=False``: their metadata only). Branches
        another branch's options read from are kept (``result.kept``). ``dry_run`` only reports;
        ``progress(step, done, total)`` is called per data file deleted. The result has the shape of
        :meth:`Tags.expire`'s."""
        store = self._table.store
        return _expire.expire_branches(
            store, older_than=older_than, clean_files=clean_files, dry_run=dry_run, progress=progress
        )

    @records_effects("fast-forward", idempotent=True)
    def fast_forward(
        self, name: str, *, force: bool = False, keep_retained_tags: bool = True
    ) -> _publish.PublishResult:
        """Publish branch ``name`` into the table's branch: its snapshots, schemas and tags from its earliest
        snapshot on replace the table branch's. Refuses with BranchConflictError when the table's branch has
        commits, tags or schema changes the branch does not contain; ``force=True`` discards them and reports
        them (``result.discarded_snapshots``, ``discarded_tags``, ``discarded_records``), keeping tags that carry
        a retention (``result.kept_tags``) unless ``keep_retained_tags=False``. Under a live writer use
        :meth:`publish`, which never fails nor loses a commit. With ``force`` the table branch's schemas may be
        replaced: continue with ``t = t.refresh()``."""
        rest = rest_table(self._table.store)
        if rest is not None:  # the server's 'forward' (into main, never forced)
            return _rest_refs.fast_forward(self._table.store, rest, name, force=force)
        return self._manager().fast_forward(
            name, self._table.branch, force=force, keep_retained_tags=keep_retained_tags
        )

    @records_effects("replace main", idempotent=True)
    def replace_main(self, name: str, *, keep_previous_as: str | None = None) -> _publish.PublishResult:
        """Make branch ``name`` the table's branch: its snapshots, schemas and tags become exact copies. The
        previous state is first saved as branch ``keep_previous_as`` or, when None, discarded. The schemas the
        ``Table`` read may have been replaced: continue with ``t = t.refresh()``."""
        if rest_table(self._table.store) is not None:
            raise _rest_refs.refuse("replace_main")
        return self._manager().replace_main(name, self._table.branch, keep_previous_as=keep_previous_as)

    @records_effects("merge branch")
    def merge(
        self, source: str, *, into: str | None = None, on_conflict: OnConflict = "fail"
    ) -> _branch_merge.BranchMergeResult:
        """Three-way merge of branch ``source`` into ``into`` (default: the table's branch) from their fork point,
        as ONE commit on ``into``. Primary-key tables merge by key: a key both sides changed differently is a
        conflict, which ``on_conflict='fail'`` reports (BranchMergeConflictError with the first keys and the
        count; nothing written), ``'source'`` resolves to the source's row and ``'target'`` to ``into``'s. Append
        tables merge by data file (the files the source added or removed since the fork)."""
        store = self._table.store
        return _branch_merge.merge_branch(store, source, into or store.branch, on_conflict)

    @records_effects("cherry-pick")
    def cherry_pick(
        self, version: int | str, *, onto: str | None = None, on_conflict: OnConflict = "fail"
    ) -> _branch_merge.BranchMergeResult:
        """Apply the changes of the one commit ``version`` (snapshot id or tag of the table's branch, or
        ``'<branch>.<id or tag>'``) onto branch ``onto`` (default: the table's branch) by key, in one commit;
        conflicts as in :meth:`merge`, relative to the commit's parent snapshot."""
        store = self._table.store
        return _branch_merge.cherry_pick(store, version, onto or store.branch, on_conflict)

    @records_effects("publish branch", idempotent=True)
    def publish(
        self, branch: str, *, into: str | None = None, on_conflict: OnConflict = "fail"
    ) -> _branch_merge.BranchMergeResult:
        """Safe publish of ``branch`` into ``into`` (default: the table's branch): one ordinary, retried commit on
        ``into`` whose content equals the branch head when ``into`` has not moved since the fork, else the
        three-way :meth:`merge`. Unlike :meth:`fast_forward` a live writer on ``into`` never makes it fail and
        never loses a commit."""
        store = self._table.store
        return _branch_merge.publish_branch(store, branch, into or store.branch, on_conflict)


__all__ = ["Branches", "Tags"]
