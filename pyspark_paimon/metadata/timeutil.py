"""Time inputs of the maintenance API: instants (epoch ms or ``datetime``) and durations.

Paimon's own procedures take instants as epoch milliseconds or ``'yyyy-MM-dd HH:mm:ss'`` strings in the
session's local zone, and durations as ``'7 d'``-style strings. Python users naturally hold ``datetime`` and
``timedelta`` objects, so we accept those too and convert in one place, with one rule for naive values:
a naive ``datetime`` is *local* wall-clock time (what ``datetime.now()`` returns), as in Java's
``LocalDateTime``-based tag times.
"""

from __future__ import annotations

import datetime as _dt
import numbers
import time
from typing import TypeAlias, Union

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.schema.option_values import parse_duration_ms

Instant: TypeAlias = Union[int, _dt.datetime, _dt.date, str]
"""A point in time, as every ``timestamp=`` and ``older_than=`` argument of the API takes it: epoch milliseconds
(``int``), a ``datetime`` (naive = local wall-clock time, what ``datetime.now()`` returns), a ``date`` (local
midnight) or an ISO-8601 string (``'2025-08-10 12:00:00'``; naive = local time). :func:`to_millis` converts it."""

Duration: TypeAlias = Union[int, _dt.timedelta, str]
"""A length of time, as every ``time_retained=`` argument of the API takes it: milliseconds (``int``), a
``timedelta`` or a Paimon duration string (``'7 d'``, ``'12 h'``, ``'30 min'``, ``'PT24H'``); never negative.
``offset=`` (a ref made that long ago) takes the same forms negated: ``'-1 d'``, ``-timedelta(hours=1)``,
``-3600000``. :func:`duration_millis` and :func:`offset_millis` convert them."""


def now_millis() -> int:
    return int(time.time() * 1000)


def to_millis(value: object, what: str = "time") -> int:
    """Epoch milliseconds of ``value``: an int (already epoch ms), a ``datetime`` (naive = local time), a
    ``date`` (local midnight) or an ISO-8601 string (naive = local time)."""
    if isinstance(value, bool):
        raise OptionError(f"{what} must be epoch milliseconds or a datetime, got {value!r}.")
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, str):
        try:
            value = _dt.datetime.fromisoformat(value.strip())
        except ValueError:
            raise OptionError(
                f"Cannot parse {what} {value!r}; pass epoch milliseconds, a datetime, or an ISO "
                "string such as '2025-08-10 12:00:00'."
            ) from None
    if isinstance(value, _dt.datetime):
        # A naive datetime's .timestamp() interprets it in the local zone, which is exactly our rule.
        return int(round(value.timestamp() * 1000))
    if isinstance(value, _dt.date):
        return int(round(_dt.datetime(value.year, value.month, value.day).timestamp() * 1000))
    raise OptionError(f"{what} must be epoch milliseconds (int) or a datetime, got {type(value).__name__} {value!r}.")


def local_datetime(millis: int) -> _dt.datetime:
    """The naive local wall-clock time of an epoch-ms instant (Java ``LocalDateTime.ofInstant(.., systemDefault)``)."""
    return _dt.datetime.fromtimestamp(millis / 1000.0)


def to_local_datetime(value: object, what: str = "time") -> _dt.datetime:
    """Like :func:`to_millis` but as a naive local ``datetime`` (aware datetimes are converted)."""
    if isinstance(value, _dt.datetime) and value.tzinfo is None:
        return value
    return local_datetime(to_millis(value, what))


def duration_millis(value: object, what: str = "duration") -> int:
    """Milliseconds of a duration: a Paimon string (``'7 d'``, ``'12 h'``, ``'PT24H'``), a ``timedelta`` or
    an int (milliseconds). Negative durations are refused."""
    if isinstance(value, bool):
        raise OptionError(f"{what} must be a duration such as '7 d', got {value!r}.")
    if isinstance(value, _dt.timedelta):
        ms = int(round(value.total_seconds() * 1000))
    elif isinstance(value, numbers.Integral):
        ms = int(value)
    elif isinstance(value, str):
        ms = parse_duration_ms(value, what)
    else:
        raise OptionError(
            f"{what} must be a duration string ('7 d'), a timedelta or milliseconds, got "
            f"{type(value).__name__} {value!r}."
        )
    if ms < 0:
        raise OptionError(f"{what} must not be negative, got {value!r}.")
    return ms


def offset_millis(value: object, what: str = "offset") -> int:
    """A relative offset into the past, in (negative) milliseconds: ``'-1 d'``, ``'-90 min'``, a negative
    ``timedelta`` or negative ms. This is Databend's ``AT (OFFSET => ...)``: the instant that far before now.
    Zero means now; a positive offset would be in the future, where no snapshot exists yet, so it is refused."""
    if isinstance(value, str):
        text = value.strip()
        negative = text.startswith("-")
        body = text[1:].strip() if negative or text.startswith("+") else text
        ms = duration_millis(body, what)
        ms = -ms if negative else ms
    elif isinstance(value, _dt.timedelta) or (isinstance(value, numbers.Integral) and not isinstance(value, bool)):
        ms = int(round(value.total_seconds() * 1000)) if isinstance(value, _dt.timedelta) else int(value)
    else:
        raise OptionError(
            f"{what} must be a negative duration such as '-1 d', a timedelta or milliseconds, got {value!r}."
        )
    if ms > 0:
        raise OptionError(
            f"{what} {value!r} points into the future; an offset goes back from now, e.g. '-{value}' "
            "(Databend's AT (OFFSET => -3600) is an hour ago)."
        )
    return ms
