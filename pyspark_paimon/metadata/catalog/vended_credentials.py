"""Vended data credentials of a REST catalog (``data-token.enabled``): short-lived storage keys per table.

A REST server may hand out the credentials to a table's files (``GET .../tables/<t>/token``: a map of Paimon
file-system options and ``expiresAt``). They become the table's :class:`~pyspark_paimon.metadata.io.fileio.FileIO`
credentials: merged into its fsspec arguments (:func:`fsspec_arguments` maps Paimon's S3 and OSS keys), pickled
with it to every executor, and fetched again shortly before they expire (Java refreshes an hour ahead; a token
living less than two hours is refreshed once half its life is gone). They are never logged: the ``repr`` shows
only the table and the expiry, and no message includes a value.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Mapping

from pyspark_paimon.metadata.catalog.rest_client import RestClient, RestEndpoint

log = logging.getLogger(__name__)

#: Java refreshes a data token when less than this much of its life is left (``TOKEN_EXPIRATION_SAFE_TIME_MILLIS``).
SAFE_MARGIN_MS = 3_600_000

# Paimon's vended keys (Java's and pypaimon's spellings, and Hadoop's s3a ones) -> the fsspec argument.
_S3_KEYS = {
    "fs.s3.accessKeyId": "key",
    "fs.s3a.access.key": "key",
    "fs.s3a.access-key": "key",
    "fs.s3.accessKeySecret": "secret",
    "fs.s3a.secret.key": "secret",
    "fs.s3a.secret-key": "secret",
    "fs.s3.securityToken": "token",
    "fs.s3a.session.token": "token",
}
_S3_CLIENT_KEYS = {
    "fs.s3.endpoint": "endpoint_url",
    "fs.s3a.endpoint": "endpoint_url",
    "fs.s3.region": "region_name",
    "fs.s3a.endpoint.region": "region_name",
}
_OSS_KEYS = {
    "fs.oss.accessKeyId": "key",
    "fs.oss.accessKeySecret": "secret",
    "fs.oss.securityToken": "token",
    "fs.oss.endpoint": "endpoint",
}


def now_millis() -> int:
    return int(time.time() * 1000)


def fsspec_arguments(protocol: str, token: Mapping[str, str]) -> dict[str, Any]:
    """The fsspec arguments of a vended token for a file system of ``protocol``. Keys this package cannot map
    are left out (named in a debug log, never their values); a local file system needs none."""
    out: dict[str, Any] = {}
    unknown = []
    for key, value in token.items():
        if protocol in ("s3", "s3a") and key in _S3_KEYS:
            out[_S3_KEYS[key]] = value
        elif protocol in ("s3", "s3a") and key in _S3_CLIENT_KEYS:
            out.setdefault("client_kwargs", {})[_S3_CLIENT_KEYS[key]] = value
        elif protocol == "oss" and key in _OSS_KEYS:
            out[_OSS_KEYS[key]] = value
        else:
            unknown.append(key)
    if unknown and protocol not in ("file", "local", "memory"):
        log.debug("Vended credential keys not used for %s://: %s", protocol, sorted(unknown))
    return out


class VendedCredentials:
    """The data credentials of one REST table, refreshed before they expire (FileIO's ``credentials``)."""

    def __init__(self, endpoint: RestEndpoint, database: str, table: str, protocol: str):
        self.endpoint = endpoint
        self.database = database
        self.table = table
        self.protocol = protocol
        self._arguments: dict[str, Any] | None = None
        self._fetched_at = 0
        self.expires_at: int | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"VendedCredentials({self.database}.{self.table}, expires_at={self.expires_at})"

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def stale(self) -> bool:
        """Whether the credentials are about to expire (or were never fetched): the next use fetches new ones."""
        if self._arguments is None:
            return True
        if self.expires_at is None:
            return False
        margin = min(SAFE_MARGIN_MS, max(0, self.expires_at - self._fetched_at) // 2)
        return self.expires_at - now_millis() <= margin

    def storage_options(self) -> dict[str, Any]:
        """The fsspec arguments of the current credentials, fetched first when :meth:`stale`."""
        with self._lock:
            if self.stale():
                self._refresh()
            assert self._arguments is not None
            return dict(self._arguments)

    def _refresh(self) -> None:
        answer = RestClient(self.endpoint).get(self.endpoint.table_path(self.database, self.table, "token"))
        token = {str(k): str(v) for k, v in (answer.get("token") or {}).items()}
        # Java and pypaimon name the expiry 'expiresAtMillis'; the published spec 'expiresAt'.
        expires = answer.get("expiresAtMillis", answer.get("expiresAt"))
        self._arguments = fsspec_arguments(self.protocol, token)
        self._fetched_at = now_millis()
        self.expires_at = int(expires) if expires is not None else None
        log.info("Fetched data credentials of %s.%s (expire at %s)", self.database, self.table, self.expires_at)
