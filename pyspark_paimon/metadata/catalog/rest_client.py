"""An HTTP client of Paimon's REST catalog API (the published OpenAPI spec, ``rest-catalog-open-api.yaml``).

Standard library only (``urllib``): JSON requests to ``<uri>/v1/config`` and ``<uri>/v1/<prefix>/...``, a bearer
token (``token.provider`` = ``bear``) and ``header.*`` options as headers, Paimon's ``ErrorResponse`` bodies
turned into our errors by status and resource type (404: the missing table / database / branch / tag /
snapshot; 409: the one that exists; anything else a :class:`CatalogError`). Idempotent reads are retried on
429 and 503 (Java retries the same); every request has a timeout.

:class:`RestEndpoint` is what a client needs (the server, the prefix the server's config names, the headers):
picklable, so a table's commit and its vended credentials (:mod:`.vended_credentials`) can call the server from
any process. Its headers carry the bearer token, so it never shows them: not in ``repr``, not in a message.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Mapping

from pyspark_paimon.errors import (
    BranchError,
    BranchNotFoundError,
    CatalogError,
    DatabaseNotFoundError,
    PaimonError,
    SnapshotNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    TagError,
    TagNotFoundError,
)
from pyspark_paimon.metadata.catalog.catalog_options import (
    PREFIX,
    TOKEN,
    TOKEN_PROVIDER,
    URI,
    CatalogConfig,
)

log = logging.getLogger(__name__)

TIMEOUT_S = 60.0
_RETRIES = 3
_RETRY_STATUS = (429, 503)
_MAX_RESPONSE_BYTES = 64 * 1024 * 1024

_NOT_FOUND: dict[str, type[PaimonError]] = {
    "DATABASE": DatabaseNotFoundError,
    "TABLE": TableNotFoundError,
    "BRANCH": BranchNotFoundError,
    "TAG": TagNotFoundError,
    "SNAPSHOT": SnapshotNotFoundError,
}
_EXISTS: dict[str, type[PaimonError]] = {
    "DATABASE": PaimonError,
    "TABLE": TableAlreadyExistsError,
    "BRANCH": BranchError,
    "TAG": TagError,
}


def quote(name: str) -> str:
    """A name as one path segment."""
    return urllib.parse.quote(name, safe="")


@dataclass(frozen=True)
class RestEndpoint:
    """How to reach one REST catalog: the server, the path prefix its config named, and the request headers
    (the bearer token among them, hence ``repr=False``)."""

    uri: str
    prefix: str = ""
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    options: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def base(self) -> str:
        return f"/v1/{quote(self.prefix)}" if self.prefix else "/v1"

    def table_path(self, database: str, table: str, *rest: str) -> str:
        parts = [self.base, "databases", quote(database), "tables", quote(table), *(quote(r) for r in rest)]
        return "/".join(parts)


def _auth_headers(config: CatalogConfig, options: Mapping[str, str]) -> dict[str, str]:
    headers = {k: v for k, v in options.items() if k.startswith("header.")}
    out = {k[len("header.") :]: v for k, v in headers.items()}
    provider = (options.get(TOKEN_PROVIDER) or ("bear" if options.get(TOKEN) else "")).strip().lower()
    if provider == "bear":
        out["Authorization"] = f"Bearer {options[TOKEN]}"
    return out


class RestClient:
    """Requests to one REST catalog (see the module docstring)."""

    def __init__(self, endpoint: RestEndpoint):
        self.endpoint = endpoint

    def __repr__(self) -> str:
        return f"RestClient({self.endpoint.uri!r}, prefix={self.endpoint.prefix!r})"

    @classmethod
    def connect(cls, config: CatalogConfig) -> "RestClient":
        """Ask the server for its config of ``config.warehouse`` (``GET /v1/config``) and merge it as Paimon
        does: the server's ``defaults``, then the client's options, then the server's ``overrides``."""
        uri = config.options[URI].strip().rstrip("/")
        bootstrap = cls(RestEndpoint(uri, headers=_auth_headers(config, config.options)))
        answer = bootstrap.get("/v1/config", {"warehouse": config.warehouse})
        merged = {**dict(answer.get("defaults") or {}), **config.options, **dict(answer.get("overrides") or {})}
        merged = {str(k): str(v) for k, v in merged.items()}
        return cls(RestEndpoint(uri, merged.get(PREFIX, ""), _auth_headers(config, merged), merged))

    # -- requests ----------------------------------------------------------------------------------
    def get(self, path: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        return self._request("GET", path, params=params)

    def post(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return self._request("POST", path, body=body)

    def delete(self, path: str) -> dict[str, Any]:
        return self._request("DELETE", path)

    def list_all(self, path: str, key: str, params: Mapping[str, str] | None = None) -> list[Any]:
        """Every element of a paged listing (``nextPageToken`` followed to the end)."""
        out: list[Any] = []
        query = dict(params or {})
        while True:
            answer = self.get(path, query)
            out.extend(answer.get(key) or [])
            token = answer.get("nextPageToken")
            if not token:
                return out
            query["pageToken"] = str(token)

    def _request(
        self, method: str, path: str, params: Mapping[str, str] | None = None, body: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        url = self.endpoint.uri + path + (f"?{urllib.parse.urlencode(dict(params))}" if params else "")
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Accept": "application/json", **self.endpoint.headers}
        if data is not None:
            headers["Content-Type"] = "application/json"
        for attempt in range(_RETRIES + 1):
            request = urllib.request.Request(url, data=data, method=method, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                    raw = response.read(_MAX_RESPONSE_BYTES + 1)
                    if len(raw) > _MAX_RESPONSE_BYTES:
                        raise CatalogError(f"The REST catalog's answer to {method} {path} is larger than 64 MiB.")
                    return json.loads(raw) if raw.strip() else {}
            except urllib.error.HTTPError as e:
                if e.code in _RETRY_STATUS and method == "GET" and attempt < _RETRIES:
                    time.sleep(0.2 * 2**attempt)
                    continue
                raise self._error(method, path, e) from None
            except (urllib.error.URLError, OSError) as e:
                raise CatalogError(
                    f"The REST catalog at {self.endpoint.uri} did not answer {method} {path}: {e}. Check option "
                    "'uri' and that the server is running."
                ) from None
            except json.JSONDecodeError as e:
                raise CatalogError(f"The REST catalog's answer to {method} {path} is not JSON: {e}.") from None
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _error(self, method: str, path: str, e: urllib.error.HTTPError) -> PaimonError:
        try:
            body = json.loads(e.read(64 * 1024) or b"{}")
        except (ValueError, OSError):
            body = {}
        body = body if isinstance(body, dict) else {}
        message = str(body.get("message") or e.reason or "")
        kind = str(body.get("resourceType") or "").upper()
        name = body.get("resourceName")
        what = f"{method} {path}: {message}" + (f" ({kind.lower()} '{name}')" if name else "")
        if e.code == 404:
            missing = kind.lower() or "resource"
            return _NOT_FOUND.get(kind, CatalogError)(f"The REST catalog has no such {missing}: {what}.")
        if e.code == 409:
            return _EXISTS.get(kind, CatalogError)(f"The REST catalog already has it: {what}.")
        if e.code in (401, 403):
            return CatalogError(
                f"The REST catalog refused {method} {path} ({e.code}: {message}). Check catalog options "
                "'token.provider' and 'token', and the permissions of the token."
            )
        return CatalogError(f"The REST catalog failed {what} (HTTP {e.code}).")
