"""Value types of options, as Paimon spells the values: booleans, integers, durations, memory sizes, lists.

They are kept apart from the option registry (:mod:`pyspark_paimon.metadata.schema.options`) because they also parse
values that are not table options: read options (``source.split.target-size``) and maintenance arguments
(``older_than='7 d'``).

An :class:`OptionType` pairs a parser with the words an error shows for the expected form. Its parser raises
:class:`ValueError`; whoever knows the option's name turns that into an :class:`OptionError` naming the
option, the bad value and that form (``CoreOptions.get``, :func:`parse_duration_ms`), so every option error
reads the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Generic, TypeVar

from pyspark_paimon.errors import OptionError

T = TypeVar("T")

__all__ = [
    "OptionType",
    "BOOLEAN",
    "INTEGER",
    "NON_NEGATIVE_INTEGER",
    "STRING",
    "LOWERCASE",
    "STRING_LIST",
    "DURATION",
    "POSITIVE_DURATION",
    "MEMORY_SIZE",
    "RELATIVE_DIRECTORY",
    "one_of",
    "parse_duration_ms",
    "parse_memory_size",
    "DURATION_FORMS",
    "SIZE_FORMS",
]

_DURATION_UNITS = {
    "ms": 1,
    "milli": 1,
    "millis": 1,
    "millisecond": 1,
    "milliseconds": 1,
    "s": 1000,
    "sec": 1000,
    "secs": 1000,
    "second": 1000,
    "seconds": 1000,
    "min": 60_000,
    "mins": 60_000,
    "m": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
}
_SIZE_UNITS = {
    "b": 1,
    "bytes": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "gib": 1024**3,
    "t": 1024**4,
    "tb": 1024**4,
}
_ISO_DURATION = re.compile(r"p(?:(\d+)d)?(?:t(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?)?")
_NUMBER_UNIT = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]*)")

#: The forms error messages suggest for durations and memory sizes.
DURATION_FORMS = "'10 ms', '30 s', '5 min', '1 h', '7 d'"
SIZE_FORMS = "'128 mb', '1 gb', '4096'"


# ------------------------------------------------------------------------------------------------ parsers
def _to_bool(text: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise ValueError(text)
    return value == "true"


def _to_int(text: str) -> int:
    return int(text.strip())


def _to_non_negative_int(text: str) -> int:
    value = int(text.strip())
    if value < 0:
        raise ValueError(text)
    return value


def _to_text(text: str) -> str:
    return text


def _to_lowercase(text: str) -> str:
    return text.strip().lower()


def _to_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _to_duration_ms(text: str) -> int:
    """Paimon durations: '10 ms', '30 s', '1 h', '7 d', '1 min', ISO 'PT24H', or bare milliseconds."""
    t = text.strip().lower()
    iso = _ISO_DURATION.fullmatch(t)
    if iso and any(iso.groups()):
        d, h, m, s = iso.groups()
        return int((int(d or 0) * 86400 + int(h or 0) * 3600 + int(m or 0) * 60 + float(s or 0)) * 1000)
    match = _NUMBER_UNIT.fullmatch(t)
    if match:
        number, unit = match.groups()
        factor = _DURATION_UNITS.get(unit or "ms")
        if factor is not None:
            return int(float(number) * factor)
    raise ValueError(text)


def _to_positive_duration_ms(text: str) -> int:
    value = _to_duration_ms(text)
    if value <= 0:
        raise ValueError(text)
    return value


def _to_memory_size(text: str) -> int:
    """Paimon memory sizes: '128 mb', '8mb', '1 gb', '4096' (bytes)."""
    match = _NUMBER_UNIT.fullmatch(text.strip().lower())
    if match:
        number, unit = match.groups()
        factor = _SIZE_UNITS.get(unit or "b")
        if factor is not None:
            return int(float(number) * factor)
    raise ValueError(text)


def _to_relative_directory(text: str) -> str:
    """A directory below another one, ``'data'`` or ``'a/b'`` (surrounding and doubled slashes dropped).

    Absolute paths, URIs and ``.``/``..`` segments are refused: Java joins the text to the table directory,
    and a directory outside the table would escape everything that manages the table's files.
    """
    t = text.strip()
    parts = [p for p in t.split("/") if p]
    if not parts or t.startswith("/") or "\\" in t or ":" in parts[0] or any(p in (".", "..") for p in parts):
        raise ValueError(text)
    return "/".join(parts)


# ------------------------------------------------------------------------------------------------ types
@dataclass(frozen=True)
class OptionType(Generic[T]):
    """How an option's text becomes a value: ``parse`` raises ValueError, ``expected`` completes "must be ...".

    ``blank_is_unset``: an empty or whitespace-only value counts as not set (the default applies). Paimon's
    call sites have always treated ``''`` as "use the default"; the exception is text where blank is itself a
    value (e.g. an empty ``list-agg-delimiter``).
    """

    parse: Callable[[str], T]
    expected: str
    blank_is_unset: bool = True


@dataclass(frozen=True)
class _OneOf:
    """Parser of an enumerated option: case-insensitive, surrounding blanks ignored (a class, not a closure,
    so option types stay picklable)."""

    choices: tuple[str, ...]

    def __call__(self, text: str) -> str:
        value = text.strip().lower()
        if value not in self.choices:
            raise ValueError(text)
        return value


def one_of(choices: tuple[str, ...]) -> OptionType[str]:
    """An enumerated option whose value is one of ``choices`` (lower case), normalised to lower case."""
    quoted = [f"'{c}'" for c in choices]
    expected = " or ".join(quoted) if len(quoted) == 2 else "one of " + ", ".join(choices)
    return OptionType(_OneOf(tuple(choices)), expected)


BOOLEAN: OptionType[bool] = OptionType(_to_bool, "'true' or 'false'")
INTEGER: OptionType[int] = OptionType(_to_int, "an integer")
NON_NEGATIVE_INTEGER: OptionType[int] = OptionType(_to_non_negative_int, "a non-negative integer")
#: Text used as given (names, prefixes, patterns).
STRING: OptionType[str] = OptionType(_to_text, "text")
#: A name compared case-insensitively but not limited to known values here (e.g. ``file.format``, whose
#: unsupported values are refused with a tailored message by ``validate_table_options``).
LOWERCASE: OptionType[str] = OptionType(_to_lowercase, "a name")
#: Comma-separated names (``sequence.field``, ``bucket-key``); blanks around items are dropped.
STRING_LIST: OptionType[list[str]] = OptionType(_to_list, "a comma-separated list of names")
#: Durations in milliseconds.
DURATION: OptionType[int] = OptionType(_to_duration_ms, f"a duration such as {DURATION_FORMS}")
POSITIVE_DURATION: OptionType[int] = OptionType(
    _to_positive_duration_ms, f"a positive duration such as {DURATION_FORMS}"
)
#: Memory sizes in bytes.
MEMORY_SIZE: OptionType[int] = OptionType(_to_memory_size, f"a memory size such as {SIZE_FORMS}")
#: A directory relative to another one (``data-file.path-directory``), normalised to ``'a/b'``.
RELATIVE_DIRECTORY: OptionType[str] = OptionType(
    _to_relative_directory, "a relative directory such as 'data' (no leading '/', '..' or scheme)"
)


# ------------------------------------------------------------------------------- for values of any origin
def parse_duration_ms(text: str, key: str = "duration") -> int:
    """Milliseconds of a Paimon duration ('10 ms', '30 s', '5 min', '1 h', '7 d', 'PT24H' or bare ms);
    ``key`` names the option or argument in the error."""
    try:
        return _to_duration_ms(str(text))
    except ValueError:
        raise OptionError(f"Cannot parse {key} '{text}'; use forms like {DURATION_FORMS}.") from None


def parse_memory_size(text: str, key: str = "size") -> int:
    """Bytes of a Paimon memory size ('128 mb', '8mb', '1 gb', '4096'); ``key`` names it in the error."""
    try:
        return _to_memory_size(str(text))
    except ValueError:
        raise OptionError(f"Cannot parse {key} '{text}'; use forms like {SIZE_FORMS}.") from None
