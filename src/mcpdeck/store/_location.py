"""Where a store is: a SQLite file (a path, or ``sqlite:///PATH``) or a PostgreSQL database (``postgresql://...``).

``parse_location`` reads what a user wrote (``--store``, ``$MCPDECK_STORE``, ``$MCPDECK_HISTORY``) and
says clearly what is wrong with it; nothing is opened here.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qsl, unquote, urlsplit

from mcpdeck.errors import ConfigError

__all__ = ["REPLICA_ID", "SYNCHRONOUS", "StoreLocation", "check_replica_id", "parse_location"]

SYNCHRONOUS = ("normal", "full")
"""The store URL's durability levels (``?synchronous=``), the same on both stores: ``normal`` (the default), a
commit answered once the database has it (it survives mcpdeck dying; a crash of the OS or of the database's
host may lose the last fraction of a second of commits, never half of one), ``full``, answered once it is on
the disk."""
REPLICA_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")
"""What a replica id may be: it begins the gateway's session ids and names rows and lock files."""
_FORMS = "a SQLite path, sqlite:///PATH (sqlite:////ABSOLUTE/PATH) or postgresql://USER@HOST:PORT/DB"


@dataclass(frozen=True)
class StoreLocation:
    """A store's place.

    Attributes:
        kind: ``sqlite`` or ``postgresql``.
        path: The SQLite file (None for PostgreSQL).
        url: The PostgreSQL connection URL as given, less its ``synchronous`` setting (which is mcpdeck's, not
            libpq's); None for SQLite. It may hold a password.
        synchronous: The durability level (``SYNCHRONOUS``): ``normal`` unless the URL says ``?synchronous=full``.
            On SQLite the ``synchronous`` pragma; on PostgreSQL ``normal`` turns ``synchronous_commit`` off on the
            store's writing connection, ``full`` leaves it as the server, role or database has it.
    """

    kind: Literal["sqlite", "postgresql"]
    path: Path | None = None
    url: str | None = None
    synchronous: str = "normal"

    @property
    def shown(self) -> str:
        """The place as it may be shown: the path, or the URL with its password masked."""
        if self.path is not None:
            return str(self.path)
        assert self.url is not None
        parts = urlsplit(self.url)
        if parts.password:
            netloc = parts.netloc.replace(f":{parts.password}@", ":****@", 1)
            return parts._replace(netloc=netloc).geturl()
        return self.url

    @property
    def has_password(self) -> bool:
        """Whether the URL itself holds a password (unwise on a command line)."""
        return self.url is not None and bool(urlsplit(self.url).password)


def parse_location(value: str | os.PathLike[str]) -> StoreLocation:
    """The store ``value`` names: a path, ``sqlite:///relative``, ``sqlite:////absolute`` (SQLAlchemy's
    form), or ``postgresql://`` / ``postgres://`` URL.

    Either URL may end in ``?synchronous=normal|full`` (``SYNCHRONOUS``); a PostgreSQL URL's other query
    settings are libpq's (``sslmode=``, ...) and are left as written.

    Raises:
        ConfigError: An unknown scheme, a URL without a database, a SQLite URL without a path or with
            another setting, an unknown ``synchronous`` level; the message shows the forms that work.
    """
    text = os.fspath(value).strip()
    if not text:
        raise ConfigError(f"the store is empty; give {_FORMS}")
    scheme, sep, _ = text.partition("://")
    if not sep:
        if ":" in text.split("/", 1)[0] and not re.match(r"^[A-Za-z]:[\\/]", text):  # "mysql:x", not "C:\x"
            raise ConfigError(f"{text!r} is not a store; give {_FORMS}")
        return StoreLocation("sqlite", path=Path(text).expanduser())
    scheme = scheme.lower()
    if scheme == "sqlite":
        return _sqlite(text)
    if scheme in ("postgresql", "postgres"):
        parts = urlsplit(text)
        try:
            parts.port  # noqa: B018 (a port that is not a number raises here)
        except ValueError:
            raise ConfigError(f"the store URL {_mask(text)} has a port that is not a number; give {_FORMS}") from None
        if not parts.path.strip("/"):
            raise ConfigError(f"the store URL {_mask(text)} names no database; add it: postgresql://USER@HOST:PORT/DB")
        # mcpdeck's own setting comes out of the query; libpq's stay as written (not decoded and encoded again)
        synchronous, kept = "normal", list[str]()
        for setting in parts.query.split("&") if parts.query else []:
            key, _, found = setting.partition("=")
            if key == "synchronous":
                synchronous = _level(found, _mask(text))
            else:
                kept.append(setting)
        return StoreLocation("postgresql", url=parts._replace(query="&".join(kept)).geturl(), synchronous=synchronous)
    raise ConfigError(f"the store URL scheme {scheme!r} is not one mcpdeck knows; give {_FORMS}")


def _sqlite(text: str) -> StoreLocation:
    parts = urlsplit(text)
    if parts.netloc:
        raise ConfigError(
            f"{text!r}: a SQLite URL has no host; write sqlite:///relative/path or sqlite:////absolute/path"
        )
    path = parts.path[1:] if parts.path.startswith("/") else parts.path
    if not path:
        raise ConfigError(f"{text!r} names no file; write sqlite:///relative/path or sqlite:////absolute/path")
    synchronous = "normal"
    for key, found in parse_qsl(parts.query, keep_blank_values=True):
        if key != "synchronous":
            raise ConfigError(f"{text!r}: the only setting a SQLite store takes is synchronous={'|'.join(SYNCHRONOUS)}")
        synchronous = _level(found, text)
    return StoreLocation("sqlite", path=Path(path).expanduser(), synchronous=synchronous)


def _level(found: str, shown: str) -> str:
    level = unquote(found).strip().lower()
    if level not in SYNCHRONOUS:
        raise ConfigError(
            f"the store URL {shown} asks for synchronous={found!r}, which is not a durability level; write "
            "?synchronous=normal (the default: a "
            "commit survives mcpdeck dying) or ?synchronous=full (each commit is on the disk before the call is "
            "answered: it survives a power cut too)"
        )
    return level


def _mask(url: str) -> str:
    return StoreLocation("postgresql", url=url).shown


def check_replica_id(name: str) -> str:
    """``name`` if it can be a replica id (1-32 of ``A-Z a-z 0-9 _ -``).

    Raises:
        ConfigError: It cannot, saying what may be used.
    """
    if not REPLICA_ID.fullmatch(name):
        raise ConfigError(
            f"the replica id {name!r} cannot be used: it begins the gateway's session ids, so it must be "
            "1-32 letters, digits, '_' or '-' (e.g. r1, eu-west-2)"
        )
    return name
