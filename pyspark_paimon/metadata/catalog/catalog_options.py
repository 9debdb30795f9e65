"""Catalog options: which metastore a catalog uses and how to reach it, named as Paimon's catalog options are.

A catalog is described by plain strings (Spark hands a data source nothing else, and Paimon's engines configure
catalogs the same way): ``warehouse`` plus ``metastore`` (``filesystem``, the default; ``jdbc``; ``rest``),
``uri`` and the metastore's own keys below. :class:`CatalogConfig` is the one parsed form, shared by the
Python API (``Catalog(warehouse, options=...)``) and the Spark source (the same keys as read/write options).

Secrets (a REST ``token``, ``jdbc.password``, DLF keys) stay in the config but never in its ``repr`` nor in any
message: :func:`masked` is how every message shows catalog options.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.schema.option_values import parse_duration_ms

Metastore = Literal["filesystem", "jdbc", "rest"]
METASTORES: tuple[Metastore, ...] = ("filesystem", "jdbc", "rest")

METASTORE = "metastore"
URI = "uri"
WAREHOUSE = "warehouse"
# JDBC (Java's JdbcCatalogOptions / CatalogOptions)
CATALOG_KEY = "catalog-key"
LOCK_ENABLED = "lock.enabled"
LOCK_ACQUIRE_TIMEOUT = "lock-acquire-timeout"
LOCK_CHECK_MAX_SLEEP = "lock-check-max-sleep"
SYNC_ALL_PROPERTIES = "sync-all-properties"
# REST (Paimon's RESTCatalogOptions)
TOKEN_PROVIDER = "token.provider"
TOKEN = "token"
DATA_TOKEN_ENABLED = "data-token.enabled"
PREFIX = "prefix"

#: Every catalog option key we honour (besides the ``header.*`` and ``jdbc.*`` families).
CATALOG_KEYS = frozenset(
    {
        METASTORE,
        URI,
        CATALOG_KEY,
        LOCK_ENABLED,
        LOCK_ACQUIRE_TIMEOUT,
        LOCK_CHECK_MAX_SLEEP,
        SYNC_ALL_PROPERTIES,
        TOKEN_PROVIDER,
        TOKEN,
        DATA_TOKEN_ENABLED,
        PREFIX,
    }
)
CATALOG_KEY_PREFIXES = ("header.", "jdbc.")
_SECRET_WORDS = ("token", "password", "secret", "key-id", "access-key", "credential", "authorization")
_DEFAULTS = {
    CATALOG_KEY: "jdbc",
    LOCK_ACQUIRE_TIMEOUT: "8 min",
    LOCK_CHECK_MAX_SLEEP: "8 s",
    SYNC_ALL_PROPERTIES: "true",
    DATA_TOKEN_ENABLED: "false",
}


def is_catalog_key(key: str) -> bool:
    """Whether ``key`` (lower case) is a catalog option, which the Spark source takes out of its read/write
    options before they are checked."""
    return key in CATALOG_KEYS or key.startswith(CATALOG_KEY_PREFIXES)


def is_secret(key: str) -> bool:
    """Whether the value of catalog option ``key`` is a secret (never shown)."""
    low = key.lower()
    return low != TOKEN_PROVIDER and any(word in low for word in _SECRET_WORDS)


def masked(options: Mapping[str, str]) -> dict[str, str]:
    """``options`` as messages and reprs show them: every secret value replaced by ``***``."""
    return {k: ("***" if is_secret(k) else v) for k, v in options.items()}


def _bool(key: str, value: str) -> bool:
    text = value.strip().lower()
    if text not in ("true", "false"):
        raise OptionError(f"Catalog option '{key}' = '{value}' must be 'true' or 'false'.")
    return text == "true"


@dataclass(frozen=True)
class CatalogConfig:
    """A catalog as options: the warehouse (a path, or a REST warehouse name), the metastore and its options
    (strings, as Paimon names them), and the fsspec ``storage_options`` of the warehouse's file system."""

    warehouse: str
    metastore: Metastore = "filesystem"
    options: dict[str, str] = field(default_factory=dict)
    storage_options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls, warehouse: str, options: Mapping[str, Any] | None = None, storage_options: Mapping[str, Any] | None = None
    ) -> "CatalogConfig":
        """Parse and check catalog options: unknown keys (with a suggestion), a missing ``uri``, a metastore
        this package has no client for, and values that do not parse are :class:`OptionError` s now."""
        opts = {str(k).strip().lower(): str(v) for k, v in (options or {}).items()}
        if WAREHOUSE in opts:
            given = opts.pop(WAREHOUSE)
            if given != warehouse:
                raise OptionError(
                    f"The warehouse is given twice ('{warehouse}' and option 'warehouse' = '{given}'); give it once."
                )
        for key in opts:
            if not is_catalog_key(key):
                hint = difflib.get_close_matches(key, sorted(CATALOG_KEYS), n=1)
                raise OptionError(
                    f"Unknown catalog option '{key}'"
                    + (f" (did you mean '{hint[0]}'?)" if hint else "")
                    + f". Catalog options are {sorted(CATALOG_KEYS)} and 'header.*' / 'jdbc.*' (docs/catalogs.md)."
                )
        metastore = opts.get(METASTORE, "filesystem").strip().lower()
        if metastore not in METASTORES:
            raise OptionError(
                f"Catalog option 'metastore' = '{metastore}' is not supported: use 'filesystem' (the default), "
                "'jdbc' or 'rest' (docs/catalogs.md). A Hive metastore has no client here."
            )
        if not warehouse:
            raise OptionError(
                "A catalog needs a warehouse: a directory or fsspec URL for 'filesystem' and 'jdbc', the warehouse "
                "name the server serves for 'rest'."
            )
        config = cls(warehouse, metastore, opts, dict(storage_options or {}))
        config.check()
        return config

    def check(self) -> None:
        """The metastore's required options are there and every value parses."""
        uri = self.options.get(URI, "").strip()
        if self.metastore == "jdbc":
            if not uri.startswith("jdbc:sqlite:"):
                raise OptionError(
                    f"A JDBC catalog needs option 'uri' = 'jdbc:sqlite:<file>' (got {uri or 'none'!r}): SQLite, "
                    "through Python's own sqlite3 driver, is the JDBC database this package is tested with, so it "
                    "is the only one it connects to."
                )
        elif self.metastore == "rest":
            if not uri.startswith(("http://", "https://")):
                raise OptionError(
                    f"A REST catalog needs option 'uri' = 'http(s)://<host>:<port>' (got {uri or 'none'!r})."
                )
            provider = self.options.get(TOKEN_PROVIDER, "").strip().lower()
            if provider not in ("", "bear", "none"):
                raise OptionError(
                    f"Catalog option 'token.provider' = '{provider}' is not supported: 'bear' (a bearer token in "
                    "option 'token') is the authentication this client speaks. DLF signing is not implemented."
                )
            if provider == "bear" and not self.options.get(TOKEN):
                raise OptionError("'token.provider' = 'bear' needs the bearer token in catalog option 'token'.")
        elif uri:
            raise OptionError(
                f"Catalog option 'uri' is given but 'metastore' is '{self.metastore}': set 'metastore' to 'jdbc' or "
                "'rest' to use a metastore at that URI."
            )
        for key in (LOCK_ENABLED, SYNC_ALL_PROPERTIES, DATA_TOKEN_ENABLED):
            if key in self.options:
                _bool(key, self.options[key])
        for key in (LOCK_ACQUIRE_TIMEOUT, LOCK_CHECK_MAX_SLEEP):
            if key in self.options:
                parse_duration_ms(self.options[key], key)

    def get(self, key: str) -> str | None:
        """An option's value, else its default (None when it has none)."""
        return self.options.get(key, _DEFAULTS.get(key))

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.get(key)
        return default if value is None else _bool(key, value)

    def millis(self, key: str) -> int:
        value = self.get(key)
        assert value is not None, key
        return parse_duration_ms(value, key)

    def prefixed(self, prefix: str) -> dict[str, str]:
        """The options under ``prefix`` (e.g. ``header.``), without it."""
        return {k[len(prefix) :]: v for k, v in self.options.items() if k.startswith(prefix)}

    def as_strings(self) -> dict[str, str]:
        """The catalog as Spark options: ``warehouse``, ``metastore`` and the metastore's options (secrets
        included: these are for the Spark source, never for a message)."""
        out = {WAREHOUSE: self.warehouse}
        if self.metastore != "filesystem":
            out[METASTORE] = self.metastore
        out.update({k: v for k, v in self.options.items() if k != METASTORE})
        return out

    def __repr__(self) -> str:
        return (
            f"CatalogConfig(warehouse={self.warehouse!r}, metastore={self.metastore!r}, "
            f"options={masked(self.options)!r})"
        )
