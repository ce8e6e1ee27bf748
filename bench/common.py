"""Shared bits of the benchmarks: the offline engines, and a plain-text table."""
from __future__ import annotations

import uuid
from typing import Iterator

from helpers.backends import connect


def engines(names: tuple[str, ...] = ("embedded", "mock")) -> Iterator[tuple[str, object]]:
    """Yield (name, database) for each engine, each in a throwaway database dropped afterwards."""
    for name in names:
        conn = connect(name, db_name=f"wbbench_{uuid.uuid4().hex[:8]}")
        try:
            yield name, conn.db
        finally:
            conn.client.drop_database(conn.db.name)
            conn.close()


def table(rows: list[dict]) -> str:
    if not rows:
        return "(no rows)"
    cols = list(rows[0])
    width = {c: max(len(str(c)), *(len(str(r.get(c, ""))) for r in rows)) for c in cols}
    line = " | ".join(str(c).ljust(width[c]) for c in cols)
    sep = "-+-".join("-" * width[c] for c in cols)
    body = [" | ".join(str(r.get(c, "")).ljust(width[c]) for c in cols) for r in rows]
    return "\n".join([line, sep, *body])
