"""The one exception hierarchy of pyspark-paimon.

Every error a user can meet is a :class:`PaimonError`, so ``except PaimonError`` catches all of ours and
nothing else. Messages name the thing that is wrong (table, file, option, column, branch, tag) and say
what to do about it, because Spark wraps them in long tracebacks where a vague message is useless.
"""

from __future__ import annotations

from typing import Literal

Outcome = Literal["applied", "not applied", "partial", "unknown"]
"""What a failed operation left behind: ``'applied'`` (it took effect: running it again would do it twice),
``'not applied'`` (nothing changed: run it again), ``'partial'`` (some of its steps took effect: it is idempotent,
run it again to finish), ``'unknown'`` (the store did not say whether the last step took effect: look before
running it again)."""


class PaimonError(Exception):
    """Base class of every error raised by pyspark-paimon.

    ``outcome`` and ``safe_to_retry`` say what the failed operation left behind, where that is known: set by the
    error's class (a conflict changed nothing), by the code that raised it, or by the operation the error left
    (the API's calls, the Spark sinks' commits), which knows which of its steps had taken effect. None: the error
    says nothing about an effect (it was raised before the operation changed anything it could have changed,
    e.g. bad input), or it was raised outside an operation."""

    outcome: Outcome | None = None
    """What the failed operation left behind (:data:`Outcome`); None when the error says nothing about an effect."""
    safe_to_retry: bool | None = None
    """Whether running the same operation again is safe (``'not applied'`` or ``'partial'``); None when unknown."""


class StorageError(PaimonError, OSError):
    """A call to the file system or object store failed (the message names the call and the path). It is also an
    ``OSError``, as the failure it wraps was; ``outcome`` says what the operation it interrupted had done."""


class TableNotFoundError(PaimonError):
    """The table (or database) does not exist at the given location."""


class TableAlreadyExistsError(PaimonError):
    """A table was created where one already exists."""


class DatabaseNotFoundError(PaimonError):
    """The database directory does not exist."""


class DatabaseNotEmptyError(PaimonError):
    """A database still holding tables was dropped without ``cascade``."""


class CatalogError(PaimonError):
    """A catalog's metastore (a JDBC database, a REST server) failed, refused a request or timed out."""


class SchemaError(PaimonError):
    """A schema is invalid, or data does not match the table schema."""


class SchemaMismatchError(SchemaError):
    """Data written to a table does not match its schema."""


class UnsupportedTypeError(SchemaError):
    """A Paimon type that Spark or this connector cannot represent."""


class VariantError(SchemaError):
    """A VARIANT value that is malformed, or that a ``variant_get`` cannot convert to the type it asks for."""


class OptionError(PaimonError):
    """An unknown, unsupported, invalid or conflicting option."""


class FilterError(OptionError):
    """A SQL condition (the ``filter`` read option, ``t.scan(filter=)``, a delete or update filter) that cannot be
    parsed or does not fit the table. ``label`` names where it was given, ``text`` is the condition as typed and
    ``reason`` what is wrong with it."""

    def __init__(self, label: str, text: str, reason: str) -> None:
        super().__init__(f"{label} {text!r}: {reason}")
        self.label = label
        """Where the condition was given: ``"Read option 'filter' ="``, ``"delete filter"``, ``"--where"``..."""
        self.text = text
        """The condition as the user typed it."""
        self.reason = reason
        """What is wrong with it (a syntax error marks the place in the text)."""

    def __reduce__(self) -> tuple[type, tuple[str, str, str]]:
        return (type(self), (self.label, self.text, self.reason))


class CorruptMetadataError(PaimonError):
    """A schema, snapshot, tag, manifest or hint file cannot be parsed."""


class DataFileError(PaimonError):
    """A data file a snapshot references is missing or cannot be read."""


class CommitError(PaimonError):
    """A commit could not be completed."""


class CommitConflictError(CommitError):
    """A concurrent commit changed what this commit depends on; nothing was committed."""

    outcome: Outcome | None = "not applied"
    """A conflict commits nothing: ``'not applied'``."""
    safe_to_retry: bool | None = True
    """Re-planning and committing again is safe."""


class ConflictingKeysError(CommitError):
    """Two tasks of one write wrote different versions of one primary key of a table that cannot order them, so
    which one wins would be chance; nothing was committed (``datasource/write/key_conflicts.py``)."""


class CommitStateUnknownError(CommitError):
    """The commit may or may not have landed; its files must not be deleted."""

    outcome: Outcome | None = "unknown"
    """The store did not say whether the snapshot landed: ``'unknown'``."""
    safe_to_retry: bool | None = False
    """Not without looking first: the commit may have landed."""


class SnapshotNotFoundError(PaimonError):
    """A snapshot id that does not exist (never written or expired)."""


class TagError(PaimonError):
    """Invalid tag name, or a tag operation that cannot be done."""


class TagNotFoundError(TagError):
    """A tag that does not exist."""


class BranchError(PaimonError):
    """Invalid branch name, or a branch operation that cannot be done."""


class BranchNotFoundError(BranchError):
    """A branch that does not exist."""


class BranchConflictError(BranchError):
    """Publishing a branch (fast-forward) would discard changes the target holds and the branch does not."""


class BranchPublishRaceError(BranchError):
    """A commit (or another operation) changed the target while a branch was being published into it; the
    message says what landed and whether the publish was undone (``undone``: the target is as it was before
    the publish, plus the commits that raced it)."""

    def __init__(self, message: str, *, undone: bool) -> None:
        super().__init__(message)
        self.undone = undone
        """True when the publish was undone: the target is as before it, plus the commits that raced it."""
        self.outcome = "not applied" if undone else "partial"
        """``'not applied'`` when undone, else ``'partial'`` (the switch stands; the publish finishes on a rerun)."""
        self.safe_to_retry = True
        """A publish is idempotent: run it again."""


class ChainTableError(PaimonError):
    """A chain table is misconfigured or an operation would break its chain."""


class CompactionError(PaimonError):
    """A compaction that cannot be done correctly (a table layout or option it does not support)."""


class DmlError(PaimonError):
    """A delete, update or merge the table cannot take as asked (its merge engine defines no such change, a key
    or partition column would change, a merge source matches a row twice); the message names the way out."""


class BranchMergeConflictError(BranchConflictError):
    """A branch merge or cherry-pick found keys (append tables: data files) changed differently on both sides.
    ``keys``: the first of them as an Arrow table; ``count``: how many there are. Nothing was written."""

    def __init__(self, message: str, *, keys: object, count: int) -> None:
        super().__init__(message)
        self.keys = keys
        """The first conflicting keys, as an Arrow table."""
        self.count = count
        """How many keys conflict."""


class WorkerPythonError(PaimonError, ImportError):
    """A Spark Python worker runs an interpreter without pyspark-paimon's dependencies; the message names the
    interpreter, what it lacks and what to set (``PYSPARK_PYTHON`` / ``spark.pyspark.python``)."""


__all__ = [name for name in dir() if name.endswith("Error")] + ["Outcome"]
