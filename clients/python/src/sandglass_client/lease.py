"""Keeps a claimed job's lease alive from a background thread while its handler runs."""

from __future__ import annotations

import threading
from typing import Callable, Optional

from .errors import SandglassError, StaleToken


class LeaseKeeper:
    """Extends a lease every ``every_s`` seconds until :meth:`stop`, or until the lease is lost.

    ``extend`` is called with no argument and raises :class:`StaleToken` when the token no longer
    holds the lease: then the keeper stops and records it in :attr:`lost` (the handler's work may
    now be done twice: another claim has the job). Other errors (the service unavailable for a
    moment) are kept in :attr:`last_error` and the next extension is tried sooner, as the lease
    runs on meanwhile.
    """

    def __init__(self, extend: Callable[[], object], every_s: float, name: str) -> None:
        self._extend = extend
        self._every_s = every_s
        self._stopped = threading.Event()
        self.lost: Optional[StaleToken] = None
        self.last_error: Optional[SandglassError] = None
        self.extensions = 0
        # A daemon thread: a handler stuck forever must not keep the interpreter from exiting.
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> "LeaseKeeper":
        """Starts the thread; the first extension comes after ``every_s``."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stops extending (an extension in flight is let finish, without waiting for it here)."""
        self._stopped.set()

    def _run(self) -> None:
        wait = self._every_s
        while not self._stopped.wait(wait):
            try:
                self._extend()
                self.extensions += 1
                self.last_error = None
                wait = self._every_s
            except StaleToken as error:
                # After stop() the job was settled: a stale answer then is the settlement's, not a loss.
                if not self._stopped.is_set():
                    self.lost = error
                return
            except SandglassError as error:
                self.last_error = error
                wait = max(0.05, self._every_s / 3)
