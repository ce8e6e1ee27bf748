"""Checkers of notebook 00 (start here): predict, then measure."""
from __future__ import annotations

from typing import Any

from ..counting import count_commands
from ..exercises import exercise, shown


@exercise("0.1", hint="the first batch holds 101 documents; each further batch is one getMore (up to 16 MiB)")
def round_trips_for_250_orders(answer: Any, *, orders: Any) -> str | None:
    """Measure the query of the exercise (250 orders by ``_id``) and compare the round trips."""
    if isinstance(answer, bool) or not isinstance(answer, int):
        return f"give a whole number of round trips, not {shown(answer)}"
    with count_commands() as cost:
        list(orders.find({"_id": {"$lt": 250}}).sort("_id", 1))
    if answer != cost.round_trips:
        more = "more" if cost.round_trips > answer else "fewer"
        return f"you predicted {shown(answer)}; the driver sent {more} commands than that for this query"
    return None
