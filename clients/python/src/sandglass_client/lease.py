"""Keeps claimed jobs' leases alive from one background thread while their handlers run.

One thread per consumer, not one per job: a consumer that runs millions of jobs starts one thread
and keeps one keep-alive connection for its extensions.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, List, Optional

from .errors import SandglassError, StaleToken


class Lease:
    """One job's lease as the :class:`LeaseKeeper` keeps it: extended until :meth:`stop`, or until lost."""

    def __init__(self, extend: Callable[[], object], every_s: float) -> None:
        self._extend = extend
        self.every_s = every_s
        self.next_at = time.monotonic() + every_s
        self.stopped = False
        #: The ``STALE_TOKEN`` error of an extension: the claim no longer holds the job.
        self.lost: Optional[StaleToken] = None
        #: The last other error of an extension (the service unavailable for a moment), None after a success.
        self.last_error: Optional[SandglassError] = None
        self.extensions = 0

    def stop(self) -> None:
        """No more extensions (the job was settled or handed back)."""
        self.stopped = True

    def extend_now(self) -> None:
        """One extension; records its outcome. Called by the keeper's thread."""
        try:
            self._extend()
            self.extensions += 1
            self.last_error = None
            self.next_at = time.monotonic() + self.every_s
        except StaleToken as error:
            # After stop() the job was settled: a stale answer then is the settlement's, not a loss.
            if not self.stopped:
                self.lost = error
            self.stopped = True
        except SandglassError as error:
            # The lease runs on meanwhile: try again sooner than the usual interval.
            self.last_error = error
            self.next_at = time.monotonic() + max(0.05, self.every_s / 3)


class LeaseKeeper:
    """Extends every tracked :class:`Lease` when it is due, from one daemon thread started on first use.

    ``on_thread_exit`` runs in that thread as it ends (the consumer closes the thread's connection).
    """

    def __init__(self, name: str, on_thread_exit: Callable[[], None]) -> None:
        self._name = name
        self._on_thread_exit = on_thread_exit
        self._leases: List[Lease] = []
        self._changed = threading.Condition()
        self._closed = False
        self._thread: Optional[threading.Thread] = None

    def track(self, extend: Callable[[], object], every_s: float) -> Lease:
        """Starts extending a lease every ``every_s`` seconds (the first after ``every_s``); its :class:`Lease`."""
        lease = Lease(extend, every_s)
        with self._changed:
            if self._closed:
                raise RuntimeError("The lease keeper is closed")
            self._leases.append(lease)
            if self._thread is None:
                # A daemon thread: a handler stuck forever must not keep the interpreter from exiting.
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._changed.notify()
        return lease

    def close(self, timeout: float = 5.0) -> None:
        """Stops the thread (an extension in flight is let finish, up to ``timeout``)."""
        with self._changed:
            self._closed = True
            self._changed.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self) -> None:
        try:
            while True:
                with self._changed:
                    self._leases = [lease for lease in self._leases if not lease.stopped]
                    if self._closed:
                        return
                    now = time.monotonic()
                    due = [lease for lease in self._leases if lease.next_at <= now]
                    if not due:
                        soonest = min((lease.next_at for lease in self._leases), default=now + 60.0)
                        self._changed.wait(soonest - now)
                        continue
                # Extensions outside the lock: track() and stop() never wait on the network.
                for lease in due:
                    if not lease.stopped:
                        lease.extend_now()
        finally:
            self._on_thread_exit()
