"""The pull consumer: long-poll claims, a lease kept alive while the handler runs, ack or fail.

Two forms of one loop::

    consumer = client.queue("order-timeout").consumer(lease_ms=30_000)
    for job in consumer.jobs():          # ends after consumer.stop(), once the current claim returns
        close_order(job.payload["orderId"])
        job.ack()

    consumer.run(handler)                # acks when handler returns, fails when it raises
"""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Callable, Iterator, List, Optional, Union

from .errors import SandglassError, StaleToken
from .lease import Lease, LeaseKeeper
from .models import NO_RESULT, FailResult, PulledJob, ScheduleTick

if TYPE_CHECKING:
    from .client import Queue

logger = logging.getLogger("sandglass_client")

#: The API keeps at most this many characters of a fail's ``error``; longer text is cut here rather than refused there.
MAX_ERROR_LENGTH = 4096
#: Waits between claims while the service is unavailable: from the first, doubling up to the last.
UNAVAILABLE_BACKOFF_S = (0.5, 10.0)


class JobAlreadySettled(RuntimeError):
    """A second ack or fail of the same claimed job."""


class Job:
    """A claimed job, handed out by :meth:`Consumer.jobs`: its data, and :meth:`ack` / :meth:`fail`.

    While the handler runs, a background thread extends the lease every third of it. If an extension
    is refused with ``STALE_TOKEN`` the lease is lost (another claim may run the job):
    :attr:`lease_lost` becomes True and :attr:`lease_error` holds the error; a long handler can
    check it to stop early. An ack or fail then raises :class:`StaleToken`.
    """

    def __init__(self, queue: "Queue", pulled: PulledJob, lease_ms: int, lease: Lease) -> None:
        self._queue = queue
        self.pulled = pulled
        self.lease_ms = lease_ms
        #: None until settled: then ``"acked"``, ``"failed"``, or ``"lost"`` (an ack or fail refused as stale).
        self.settled: Optional[str] = None
        self._lock = threading.Lock()
        self._lease = lease

    def __repr__(self) -> str:
        return f"Job(id={self.id!r}, queue={self.pulled.queue!r}, attempt={self.attempt}, settled={self.settled!r})"

    @property
    def id(self) -> str:
        """The job's id."""
        return self.pulled.id

    @property
    def payload(self) -> Any:
        """The job's payload (JSON)."""
        return self.pulled.payload

    @property
    def due_at(self) -> int:
        """When the job fell due, epoch ms on the Redis server's clock."""
        return self.pulled.due_at

    @property
    def claimed_at(self) -> int:
        """When the claim took it, epoch ms on the Redis server's clock (its lease end minus the lease)."""
        return self.pulled.lease_until_at - self.lease_ms

    @property
    def attempt(self) -> int:
        """Which delivery this is, 1-based."""
        return self.pulled.attempt

    @property
    def max_attempts(self) -> int:
        """Deliveries before the job is dead-lettered."""
        return self.pulled.max_attempts

    @property
    def group(self) -> Optional[str]:
        """The job's group, None for the default group."""
        return self.pulled.group

    @property
    def schedule(self) -> Optional[ScheduleTick]:
        """The recurring schedule this job is a tick of, if any."""
        return self.pulled.schedule

    @property
    def traceparent(self) -> Optional[str]:
        """The W3C trace context stored with the job, if any."""
        return self.pulled.traceparent

    @property
    def lease_lost(self) -> bool:
        """True once an extension was refused with ``STALE_TOKEN``: the claim no longer holds the job."""
        return self._lease.lost is not None

    @property
    def lease_error(self) -> Optional[StaleToken]:
        """The ``STALE_TOKEN`` error that ended the lease, if it was lost."""
        return self._lease.lost

    @property
    def lease_extensions(self) -> int:
        """How many times the background thread extended the lease so far."""
        return self._lease.extensions

    def ack(self, result: Any = NO_RESULT) -> None:
        """Completes the job. ``result`` (any JSON) is kept with it while the queue keeps completed jobs.

        Raises :class:`StaleToken` when the lease was lost, :class:`JobAlreadySettled` on a second call.
        """
        with self._settling():
            self._queue.ack(self.id, self.pulled.token, result)
            self.settled = "acked"

    def fail(
        self,
        error: Union[str, BaseException, None] = None,
        *,
        retry_in: Union[float, timedelta, None] = None,
        retry_delay_ms: Optional[int] = None,
        dead: bool = False,
    ) -> FailResult:
        """A failed attempt: retried after ``retry_in`` (seconds or a timedelta) or ``retry_delay_ms``
        (the API's ``retryDelayMs``), else after the job's backoff; dead-lettered when out of attempts
        or with ``dead=True``. ``error`` (text or an exception) is kept as the job's ``last_error``.
        """
        if retry_in is not None and retry_delay_ms is not None:
            raise ValueError("Give at most one of `retry_in` and `retry_delay_ms`")
        delay_ms = retry_delay_ms if retry_in is None else _seconds_to_ms(retry_in)
        with self._settling():
            answer = self._queue.fail(self.id, self.pulled.token, error=_error_text(error), retry_delay_ms=delay_ms, dead=dead)
            self.settled = "failed"
            return answer

    def extend(self, lease_ms: Optional[int] = None) -> int:
        """Extends the lease now, to ``lease_ms`` from now (default: the consumer's lease); the new lease end."""
        return self._queue.extend(self.id, self.pulled.token, self.lease_ms if lease_ms is None else lease_ms)

    @contextmanager
    def _settling(self) -> Iterator[None]:
        # One settlement at a time; `settled` is set only once the service confirmed it, so an ack
        # that got no answer (a connection error) can be sent again: a resent ack or fail answers
        # as the first did.
        with self._lock:
            if self.settled is not None:
                raise JobAlreadySettled(f"Job {self.id!r} was already {self.settled}")
            # Stop extending first: an extension racing the ack would only be refused as stale.
            self._lease.stop()
            try:
                yield
            except StaleToken:
                self.settled = "lost"
                raise

    def _stop_lease(self) -> None:
        self._lease.stop()


class Consumer:
    """Claims due jobs of one queue with a long poll and hands them out one at a time.

    Args:
        lease_ms: how long a claim holds a job (200 ms to 24 h); extended in the background while
            the job is out, every ``extend_every_ms`` (default: a third of the lease).
        wait_ms: the long poll of each claim (0-60,000 ms); :meth:`stop` takes effect when the
            claim in flight returns, so this is also the longest a stop waits.
        batch: jobs claimed per request (1-1,000); they are handed out one after the other, and
            their leases run from the claim, so keep ``batch`` small for long handlers.
    """

    def __init__(self, queue: "Queue", *, lease_ms: int = 30_000, wait_ms: int = 20_000, batch: int = 1, extend_every_ms: Optional[int] = None) -> None:
        self.queue = queue
        self.lease_ms = lease_ms
        self.wait_ms = wait_ms
        self.batch = batch
        self.extend_every_ms = extend_every_ms if extend_every_ms is not None else max(1, lease_ms // 3)
        self._stopped = threading.Event()

    def __repr__(self) -> str:
        return f"Consumer({self.queue.name!r}, lease_ms={self.lease_ms}, wait_ms={self.wait_ms}, batch={self.batch})"

    @property
    def stopped(self) -> bool:
        """True once :meth:`stop` was called."""
        return self._stopped.is_set()

    def stop(self) -> None:
        """Ends :meth:`jobs` (and :meth:`run`) once the claim in flight returns; its jobs are still handed out.

        Safe to call from another thread or a signal handler.
        """
        self._stopped.set()

    def jobs(self) -> Iterator[Job]:
        """Yields claimed jobs until :meth:`stop`. Settle each with :meth:`Job.ack` or :meth:`Job.fail`.

        A job left unsettled when the loop moves on is no longer extended: its lease runs out and
        the job is delivered again. Closing the iterator early (``close()``, or a ``break`` out of a
        ``for`` over it in CPython) hands the batch's jobs not yet given out back at once (a failed
        attempt retried now). Errors of the claim other than a
        retryable one (:attr:`SandglassError.retryable`: the service or Redis unavailable) are raised.
        """
        keeper = LeaseKeeper(f"sandglass-leases-{self.queue.name}", self.queue.client.close_thread_connection)
        pause = UNAVAILABLE_BACKOFF_S[0]
        try:
            while not self._stopped.is_set():
                try:
                    pulled = self.queue.claim(self.batch, lease_ms=self.lease_ms, wait_ms=self.wait_ms)
                except SandglassError as error:
                    if not error.retryable:
                        raise
                    logger.warning("claim on %s failed, retrying in %.1f s: %s", self.queue.name, pause, error)
                    self._stopped.wait(pause)
                    pause = min(pause * 2, UNAVAILABLE_BACKOFF_S[1])
                    continue
                pause = UNAVAILABLE_BACKOFF_S[0]
                yield from self._hand_out(pulled, keeper)
        finally:
            keeper.close()

    def _hand_out(self, pulled: List[PulledJob], keeper: LeaseKeeper) -> Iterator[Job]:
        # Every job of the batch is extended from the claim on, also those still waiting their turn.
        jobs = [Job(self.queue, one, self.lease_ms, keeper.track(self._extender(one), self.extend_every_ms / 1000)) for one in pulled]
        given = 0
        try:
            for job in jobs:
                given += 1
                try:
                    yield job
                finally:
                    job._stop_lease()
        finally:
            for left in jobs[given:]:
                left._stop_lease()
                self._hand_back(left.pulled)

    def _extender(self, job: PulledJob) -> Callable[[], object]:
        return lambda: self.queue.extend(job.id, job.token, self.lease_ms)

    def _hand_back(self, job: PulledJob) -> None:
        try:
            self.queue.fail(job.id, job.token, error="the consumer stopped before handling it", retry_delay_ms=0)
        except SandglassError as error:
            # Its lease runs out and it is delivered again anyway; only later.
            logger.warning("could not hand back job %r: %s", job.id, error)

    def run(self, handler: Callable[[Job], Any]) -> None:
        """Runs ``handler(job)`` for each job until :meth:`stop`: acks with its return value (None: no
        result), fails with the exception it raised. A handler may settle the job itself.

        An ack or fail refused because the lease was lost, or that got no answer, is logged, not
        raised: the job is another claim's now, or will be delivered again after its lease.
        """
        for job in self.jobs():
            try:
                result = handler(job)
            except Exception as error:  # noqa: BLE001 - any handler failure is the job's failure
                self._settle(job, lambda: job.fail(error))
                continue
            self._settle(job, lambda: job.ack() if result is None else job.ack(result))

    @staticmethod
    def _settle(job: Job, settle: Callable[[], object]) -> None:
        if job.settled is not None:
            return
        try:
            settle()
        except StaleToken as error:
            logger.warning("job %r: the lease was lost before it was settled: %s", job.id, error)
        except SandglassError as error:
            # Not settled: its lease runs out and it is delivered again. The loop goes on.
            logger.warning("job %r could not be settled: %s", job.id, error)


def _seconds_to_ms(value: Union[float, timedelta]) -> int:
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if seconds < 0:
        raise ValueError(f"Expected `retry_in` >= 0, got {value!r}")
    return round(seconds * 1000)


def _error_text(error: Union[str, BaseException, None]) -> Optional[str]:
    if error is None:
        return None
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    return text[:MAX_ERROR_LENGTH]
