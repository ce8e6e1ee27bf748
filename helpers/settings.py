"""Settings: the one module that reads the environment, and the workbook's defaults.

Introduced in notebook 00. Every other module asks these functions; none reads ``os.environ``.

=====================  ==========================================================================
``WORKBOOK_BACKEND``   ``auto`` (default), ``mongodb``, ``embedded`` or ``mock``: :func:`backend`
``MONGODB_URI``        the server for ``mongodb`` (and ``auto``): :func:`mongodb_uri`
``WORKBOOK_DB``        the database name: :func:`database_name` (default: see there)
``WORKBOOK_SCALE``     ``small``, ``full`` or a number of parent records: :func:`scale`
``WORKBOOK_DATASETS``  another folder of data files: :func:`datasets_folder`
``WORKBOOK_DEMO``      ``1``: large fonts for a projector: :func:`demo`
``WORKBOOK_PROGRESS``  where exercise results are kept: :func:`progress_file`
``WORKBOOK_CACHE``     where typed copies of the large data files are kept, or ``off``: :func:`cache_folder`
``CI``                 set: no progress bars (outputs stay comparable): :func:`progress_bars`
``REDIS_URL``          the Redis server of notebook 07: :func:`redis_url`
=====================  ==========================================================================

The one variable read elsewhere is ``WORKBOOK_VENV`` (where ``workbook.py`` creates the virtual
environment): ``workbook.py`` reads it before the environment, and so this package, exists.
"""
from __future__ import annotations

import getpass
import hashlib
import os
import re
import socket
from pathlib import Path

from . import uri as _uri

__all__ = ["BACKENDS", "DEFAULT_BACKEND", "DEFAULT_DB", "DB_PREFIX", "DEFAULT_SCALE", "VARIABLES",
           "backend", "mongodb_uri", "database_override", "database_name", "student_db_name", "login_db_name", "scale",
           "datasets_folder", "demo", "progress_file", "cache_folder", "progress_bars", "notebook_session", "redis_url"]

BACKENDS = ("auto", "mongodb", "embedded", "mock")
DEFAULT_BACKEND = "auto"
#: the database offline (the engines are private) and the prefix of every workbook database
DEFAULT_DB = DB_PREFIX = "schema_workbook"
#: what ``WORKBOOK_SCALE`` unset means: each lesson's own small scale (``helpers.lesson_scale``)
DEFAULT_SCALE = "small"
DEFAULT_PROGRESS = Path.home() / ".schema_workbook" / "progress.json"
DEFAULT_CACHE = Path.home() / ".schema_workbook" / "cache"
#: the variables a run's defaults depend on (a test run or a committed run clears them)
VARIABLES = ("WORKBOOK_BACKEND", "WORKBOOK_DB", "WORKBOOK_SCALE", "WORKBOOK_DATASETS", "WORKBOOK_DEMO",
             "WORKBOOK_PROGRESS", "WORKBOOK_CACHE", "MONGODB_URI", "REDIS_URL")


def _get(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def backend() -> str:
    """``WORKBOOK_BACKEND``, lower case, else ``auto`` (validated by ``helpers.backends.connect``)."""
    return (_get("WORKBOOK_BACKEND") or DEFAULT_BACKEND).lower()


def mongodb_uri() -> str | None:
    """``MONGODB_URI``, or None when unset or empty."""
    return _get("MONGODB_URI")


def database_override() -> str | None:
    """``WORKBOOK_DB``, or None."""
    return _get("WORKBOOK_DB")


def database_name(on_server: bool, uri: str | None = None) -> str:
    """``WORKBOOK_DB`` if set; else, on a server, the student's own database (:func:`student_db_name`);
    else ``schema_workbook`` (offline engines are private)."""
    override = database_override()
    if override:
        return override
    return student_db_name(uri) if on_server and uri else DEFAULT_DB


def _slug(text: str, n: int = 24) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:n] or "student"


def _tag(text: str) -> str:
    """4 hex digits of the exact text: 'Ana' and 'ana', or 'ana.lopez' and 'ana_lopez', differ."""
    return hashlib.sha256(text.encode()).hexdigest()[:4]


def _os_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name (some containers)
        return "student"


def login_db_name(login: str) -> str:
    """The database of a per-student login made by ``python3 workbook.py class logins``:
    ``schema_workbook_<login>_<4 hex of the exact login>`` (``Ana`` and ``ana`` never share)."""
    return f"{DB_PREFIX}_{_slug(login, 30)}_{_tag(login)}"


def student_db_name(uri: str | None = None, *, user: str | None = None, host: str | None = None) -> str:
    """The database of this learner on a shared server, named without any set-up by the learner.

    * the database the URI's path names, when it is exactly the one ``class logins`` made for the
      URI's user (:func:`login_db_name`): the instructor made this login for that database. Any other
      path is only where the driver authenticates: a shared class URI ending in ``/schema_workbook_x``
      still gives each learner a database of their own;
    * otherwise ``schema_workbook_<URI user>_<os user>_<6 hex>`` when the URI carries a user, and
      ``schema_workbook_<os user>_<6 hex>`` when it carries none, the hex digits made from the URI's
      user, the login and the machine: learners who share one server login (``ana`` on ``pc01``,
      ``ben`` on ``pc02``) never share a database, and ``Ana``/``ana`` or ``ana.lopez``/``ana_lopez``
      never do either. ``user``/``host`` replace the login and machine (tests).
    """
    login = _uri.user_name(uri) or ""
    if login and _uri.database(uri) == login_db_name(login):
        return login_db_name(login)
    user = user if user is not None else _os_user()
    host = host if host is not None else socket.gethostname()
    tag = hashlib.sha256(f"{login}\0{user}@{host}".encode()).hexdigest()[:6]
    if login:
        return f"{DB_PREFIX}_{_slug(login, 16)}_{_slug(user, 12)}_{tag}"
    return f"{DB_PREFIX}_{_slug(user)}_{tag}"


def scale() -> str | None:
    """``WORKBOOK_SCALE`` as written, or None when unset (checked by ``helpers.datasets``)."""
    return _get("WORKBOOK_SCALE")


def datasets_folder() -> Path | None:
    """``WORKBOOK_DATASETS``, or None for the repository's ``datasets/``."""
    value = _get("WORKBOOK_DATASETS")
    return Path(value) if value else None


def demo() -> bool:
    """``WORKBOOK_DEMO`` is 1/true/yes: figures and fonts for a projector."""
    return (_get("WORKBOOK_DEMO") or "").lower() in ("1", "true", "yes")


def _from_root(value: str) -> Path:
    """``value`` as a path: ``~`` expanded, a relative path taken from the repository's folder (the
    same for a notebook's kernel, which runs in ``notebooks/``, and for ``workbook.py``)."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else Path(__file__).resolve().parent.parent / path


def progress_file() -> Path:
    """``WORKBOOK_PROGRESS`` if set, else ``~/.schema_workbook/progress.json``. ``~`` is expanded; a
    relative path is taken from the repository's folder (the same for a notebook's kernel, which runs
    in ``notebooks/``, and for ``workbook.py progress``)."""
    value = _get("WORKBOOK_PROGRESS")
    return _from_root(value) if value else DEFAULT_PROGRESS


def cache_folder() -> Path | None:
    """``WORKBOOK_CACHE`` if set, else ``~/.schema_workbook/cache``; None for ``off``, ``0``, ``no``
    or ``false`` (no cache). ``~`` is expanded; a relative path is taken from the repository's
    folder (the same for a notebook's kernel, which runs in ``notebooks/``, and for ``workbook.py``)."""
    value = _get("WORKBOOK_CACHE")
    if value and value.lower() in ("off", "0", "no", "false"):
        return None
    return _from_root(value) if value else DEFAULT_CACHE


def progress_bars() -> bool:
    """Progress bars, unless ``CI`` is set (compared and committed outputs have none)."""
    return not os.environ.get("CI")


def notebook_session() -> str:
    """The notebook's path as Jupyter gives it to its kernel (``JPY_SESSION_NAME``), or ''."""
    return os.environ.get("JPY_SESSION_NAME", "")


def redis_url() -> str | None:
    """``REDIS_URL`` (notebook 07), or None."""
    return _get("REDIS_URL")
