"""The records every ``pyspark-paimon`` subcommand is made of: :class:`Arg` (one argument, named as Paimon's procedure
names it) and :class:`Procedure` (a subcommand: its arguments and what it does to the table), and the parsers of
Paimon's procedure values. ``cli.py`` lists the procedures and runs them; ``cli_schema.py`` holds the column
commands. A module of their own so that every module holding procedures imports them without importing ``cli.py``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # pragma: no cover
    from pyspark_paimon.table import Table

from pyspark_paimon.cli_output import Row

__all__ = ["Arg", "Procedure", "Row", "names", "parse_bool", "parse_int"]


def names(text: str) -> list[str]:
    """A comma-separated list of names (blanks dropped)."""
    return [n.strip() for n in text.split(",") if n.strip()]


def parse_bool(text: str) -> bool:
    """Paimon's procedure booleans: 'true' / 'false' (any case)."""
    low = text.strip().lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got '{text}'")


def parse_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got '{text}'") from None


@dataclass(frozen=True)
class Arg:
    """One argument of a procedure, named as Paimon names it."""

    name: str
    help: str
    type: Callable[[str], Any] = str
    required: bool = False
    flag: bool = False  # a switch without a value (``--dry_run``); Paimon's ``--dry_run true`` works too
    default: Any = None
    aliases: tuple[str, ...] = ()
    choices: tuple[str, ...] | None = None

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        names = [self.name, *self.aliases]
        spellings = list(dict.fromkeys(f"--{n}" for s in names for n in (s, s.replace("_", "-"))))
        if self.flag:
            parser.add_argument(
                *spellings,
                dest=self.name,
                nargs="?",
                const=True,
                default=bool(self.default),
                type=parse_bool,
                metavar="true|false",
                help=self.help,
            )
        else:
            parser.add_argument(
                *spellings,
                dest=self.name,
                type=self.type,
                required=self.required,
                default=self.default,
                choices=self.choices,
                help=self.help,
            )


@dataclass(frozen=True)
class Procedure:
    """A subcommand: Paimon's procedure name, its arguments, and what it does to the table."""

    name: str
    help: str
    args: tuple[Arg, ...]
    run: Callable[["Table", argparse.Namespace], list[Row]]
