"""An exclusive create that recognises its own landed create by content.

On an object store the answer to a create can be lost after the file was written: ``FileIO`` retries a transient
error, and the retry finds the file and reports "exists"; or the error reaches the caller although the file is
there. A caller that takes either for "someone else has it" reports its own tag, schema, branch record or published
snapshot as "already exists" or a race, and may even undo work that landed. Every caller that creates a named
metadata file goes through :func:`create_own`, which reads the file back and compares bytes: the one way to tell
"my create landed" from "another writer's file is there".

Content decides, so a caller must make its bytes its own where another writer could write the same bytes and the
difference would matter (a creation id in ``branch.json``, a filler snapshot's uuid, a schema's commit time); where
two writers of identical bytes produce the same result, counting the other's file as one's own is harmless.
"""

from __future__ import annotations

from pyspark_paimon.metadata.io.fileio import FileIO


def read_or_none(fileio: FileIO, path: str) -> bytes | None:
    """The file's bytes, or None when it does not exist."""
    try:
        return fileio.read_bytes(path)
    except FileNotFoundError:
        return None


def create_own(fileio: FileIO, path: str, data: bytes) -> bool:
    """Create ``path`` holding ``data`` unless it exists. True when the file now holds exactly ``data`` because
    this call created it, also when the create's answer was lost (a retried create that found the file, or a
    create that raised after the file was written); False when another writer's file is there. A create that
    raised and left no file (or another writer's) re-raises: nothing of this call is there."""
    try:
        if fileio.try_create(path, data):
            return True
    except OSError:
        if read_or_none(fileio, path) == data:
            return True
        raise
    return read_or_none(fileio, path) == data


__all__ = ["create_own", "read_or_none"]
