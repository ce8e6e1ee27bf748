"""One load at a time per collection: the load's lease, taken and renewed through the registry's
own functions (``helpers.safety``), which a reset takes too before it drops a collection."""
from __future__ import annotations

import time
import uuid
from typing import Any, Sequence

from .. import safety
from .common import DatasetError

__all__ = ["LOCK_LEASE_S", "LOCK_WAIT_S", "LoadLease"]

#: how long a load's lease lasts without a sign of life (a crashed kernel's lease expires then)
LOCK_LEASE_S = 60.0
#: how long a load waits for another load (or a reset) of the same collection before refusing
LOCK_WAIT_S = 120.0


class LoadLease:
    """One writer at a time per target collection (``safety.take_lease``).

    The holder renews the lease while it writes (:meth:`renew`); a lease that expired (its kernel
    crashed) is taken over. A load that finds a lease taken waits for it (the other load finishes,
    then this one runs: both end with a complete collection) and refuses with a clear
    :class:`DatasetError` after :data:`LOCK_WAIT_S`. Leases are taken in sorted order, so two
    loads never deadlock.
    """

    def __init__(self, db: Any, targets: Sequence[str]) -> None:
        self.db = db
        self.db_name = getattr(db, "name", "?")
        self.targets = sorted(set(targets))
        self.owner = uuid.uuid4().hex
        self.held: list[str] = []
        self.renewed = 0.0

    def acquire(self) -> None:
        for target in self.targets:
            deadline = time.monotonic() + LOCK_WAIT_S
            pause = 0.02
            while not safety.take_lease(self.db, target, self.owner, LOCK_LEASE_S):
                if time.monotonic() > deadline:
                    holder = safety.lease_of(self.db, target) or {}
                    self.release()
                    expires = holder.get("expires")
                    raise DatasetError(
                        f"another load is writing {target!r} in database {self.db_name!r} and has not "
                        f"finished within {LOCK_WAIT_S:.0f} s; nothing was changed. Wait for it (another "
                        f"notebook or kernel loading the same data) and run this cell again. If no other "
                        f"load is running (a kernel that crashed mid-load), its lock expires"
                        + (f" at {expires:%H:%M:%S} UTC." if expires else " within a minute."))
                time.sleep(pause)
                pause = min(pause * 2, 0.5)
            self.held.append(target)
        self.renewed = time.monotonic()

    def renew(self) -> None:
        """Extend the lease (at most every few seconds: one round trip)."""
        if self.held and time.monotonic() - self.renewed > LOCK_LEASE_S / 6:
            safety.renew_leases(self.db, self.held, self.owner, LOCK_LEASE_S)
            self.renewed = time.monotonic()

    def still_held(self) -> bool:
        """True if this load still holds every lease it took (none expired and was taken over)."""
        return all(safety.holds_lease(self.db, target, self.owner) for target in self.held)

    def release(self) -> None:
        if self.held:
            safety.release_leases(self.db, self.held, self.owner)
            self.held = []
