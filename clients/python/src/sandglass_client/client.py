"""The client: :class:`Sandglass` for one service, :class:`Queue` for one of its queues.

Each method is one route of the HTTP API (docs/http-api.md), with the API's names in snake_case.
"""

from __future__ import annotations

import builtins

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Union

from .models import NO_RESULT, Backoff, Duration, FailResult, Instant, JobInfo, JobSpec, PulledJob, duration_value, instant_value, job_body
from .transport import Transport, path_segment
from .version import __version__

if TYPE_CHECKING:
    from .consumer import Consumer

#: Seconds a request may take, by default. A claim's long poll gets its wait on top of this.
DEFAULT_TIMEOUT = 30.0
#: A long-poll claim's HTTP timeout is its ``waitMs`` plus this many seconds: the answer comes after the wait.
LONG_POLL_MARGIN_SECONDS = 10.0


class Sandglass:
    """A client of one ``sandglass serve``.

    >>> client = Sandglass("http://127.0.0.1:8080", token=os.environ["SANDGLASS_TOKEN"])
    >>> orders = client.queue("order-timeout")
    >>> orders.add({"orderId": 42}, id="order:42", delay="30m")
    'order:42'

    Thread-safe: each thread gets its own keep-alive connection. The token is sent as
    ``Authorization: Bearer <token>`` and never shown by ``repr`` or in exception messages.
    """

    def __init__(self, base_url: str, token: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._transport = Transport(base_url, token, timeout, f"sandglass-client-python/{__version__}")

    @property
    def base_url(self) -> str:
        """The service's base URL, without a trailing slash."""
        return self._transport.base_url

    @property
    def timeout(self) -> float:
        """Seconds a request may take (a claim's long poll: its wait plus :data:`LONG_POLL_MARGIN_SECONDS`)."""
        return self._transport.timeout

    def __repr__(self) -> str:
        return repr(self._transport).replace("Transport(", "Sandglass(", 1)

    def queue(self, name: str) -> "Queue":
        """The handle of queue ``name`` (nothing is sent: a queue exists once a job is added to it)."""
        return Queue(self, name)

    def request(self, method: str, path: str, body: Any = None, *, timeout: Optional[float] = None, headers: Optional[Dict[str, str]] = None) -> Any:
        """Any route of the API: ``path`` starts with ``/`` (already encoded); the parsed JSON answer.

        For the routes this client has no method for yet (schedules, limits, admin).
        """
        return self._transport.request(method, path, body, timeout=timeout, headers=headers)

    def close_thread_connection(self) -> None:
        """Closes the calling thread's keep-alive connection (for a thread about to end)."""
        self._transport.close_thread_connection()

    def info(self) -> Dict[str, Any]:
        """``GET /v1/info``: the service's version, key prefix and Redis (mode and addresses)."""
        answer: Dict[str, Any] = self.request("GET", "/v1/info")
        return answer

    def close(self) -> None:
        """Closes the client's connections (it stays usable: a next request opens a new one)."""
        self._transport.close()

    def __enter__(self) -> "Sandglass":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class Queue:
    """One queue of the service: producers' and pull consumers' calls. Made by :meth:`Sandglass.queue`."""

    def __init__(self, client: Sandglass, name: str) -> None:
        self.client = client
        self.name = name
        self._path = f"/v1/queues/{path_segment(name)}"

    def __repr__(self) -> str:
        return f"Queue({self.name!r}, {self.client!r})"

    def _job_path(self, id: str, action: str = "") -> str:
        return f"{self._path}/jobs/{path_segment(id)}{action}"

    # --- producers -----------------------------------------------------------------------------

    def add(
        self,
        payload: Any,
        *,
        delay: Optional[Duration] = None,
        at: Optional[Instant] = None,
        id: Optional[str] = None,
        if_exists: Optional[str] = None,
        max_attempts: Optional[int] = None,
        backoff: Optional[Backoff] = None,
        expire_after: Optional[Duration] = None,
        on_expire: Optional[str] = None,
        group: Optional[str] = None,
        traceparent: Optional[str] = None,
    ) -> str:
        """``POST /v1/queues/{queue}/jobs``: adds a job, due after ``delay`` or at ``at`` (neither: now); its id.

        Idempotent by ``id``: an existing id answers that id and changes nothing, unless
        ``if_exists="replace"``. ``traceparent`` (a W3C trace context) is stored with the job.
        """
        body = job_body(
            payload,
            delay=delay,
            at=at,
            id=id,
            max_attempts=max_attempts,
            backoff=backoff,
            expire_after=expire_after,
            on_expire=on_expire,
            group=group,
        )
        if if_exists is not None:
            body["ifExists"] = if_exists
        answer = self.client.request("POST", f"{self._path}/jobs", body, headers=_trace_headers(traceparent))
        job_id: str = answer["id"]
        return job_id

    def add_bulk(
        self,
        jobs: Sequence[Union[JobSpec, Mapping[str, Any]]],
        *,
        if_exists: Optional[str] = None,
        traceparent: Optional[str] = None,
    ) -> List[str]:
        """``POST /v1/queues/{queue}/jobs:bulk``: adds up to 1,000 jobs at once; their ids, in order.

        Each job is a :class:`JobSpec` or a dict of the API's bulk entry (``{"payload", "delay", ...}``,
        camelCase as sent). The service checks every entry before writing any: one bad entry is a
        :class:`ValidationError` and nothing is written. Not split into several requests here, as
        that would give up this all-or-nothing check.
        """
        entries = [job.to_api() if isinstance(job, JobSpec) else dict(job) for job in jobs]
        body: Dict[str, Any] = {"jobs": entries}
        if if_exists is not None:
            body["ifExists"] = if_exists
        answer = self.client.request("POST", f"{self._path}/jobs:bulk", body, headers=_trace_headers(traceparent))
        ids: List[str] = answer["ids"]
        return ids

    def get(self, id: str) -> JobInfo:
        """``GET /v1/queues/{queue}/jobs/{id}``: the job; :class:`NotFound` when there is none."""
        return JobInfo.from_api(self.client.request("GET", self._job_path(id)))

    def cancel(self, id: str) -> str:
        """``DELETE /v1/queues/{queue}/jobs/{id}``: cancels a waiting or dead job; ``"cancelled"``.

        :class:`NotFound` when there is no such job, :class:`JobRunning` when a consumer holds it.
        """
        result: str = self.client.request("DELETE", self._job_path(id))["result"]
        return result

    def reschedule(self, id: str, *, delay: Optional[Duration] = None, at: Optional[Instant] = None) -> str:
        """``POST .../jobs/{id}/reschedule``: a new due time, exactly one of ``delay`` and ``at``; ``"rescheduled"``.

        A dead job is revived with fresh attempts. :class:`NotFound`, :class:`JobRunning` as for cancel.
        """
        if (delay is None) == (at is None):
            raise ValueError("Give exactly one of `delay` and `at`")
        body = {"delay": duration_value(delay, "delay")} if delay is not None else {"at": instant_value(at, "at")}  # type: ignore[arg-type]
        result: str = self.client.request("POST", self._job_path(id, "/reschedule"), body)["result"]
        return result

    # --- pull consumers ------------------------------------------------------------------------

    def claim(self, max: int = 1, *, lease_ms: Optional[int] = None, wait_ms: int = 0) -> List[PulledJob]:
        """``POST /v1/queues/{queue}/claim``: up to ``max`` due jobs under a lease of ``lease_ms`` (default 30 s).

        With ``wait_ms`` a long poll: the answer comes as soon as a job falls due, or empty after
        the wait. The request's timeout is the wait plus the client's timeout (at least
        :data:`LONG_POLL_MARGIN_SECONDS`), so that a long poll is never cut by the client.
        """
        body: Dict[str, Any] = {"max": max, "waitMs": wait_ms}
        if lease_ms is not None:
            body["leaseMs"] = lease_ms
        # Never below the wait plus the margin, whatever the client's own timeout.
        timeout = wait_ms / 1000 + builtins.max(self.client.timeout, LONG_POLL_MARGIN_SECONDS) if wait_ms else None
        answer = self.client.request("POST", f"{self._path}/claim", body, timeout=timeout)
        return [PulledJob.from_api(job) for job in answer["jobs"]]

    def ack(self, id: str, token: str, result: Any = NO_RESULT) -> str:
        """``POST .../jobs/{id}/ack``: completes the claimed job; ``"acked"``. ``result`` (any JSON) is kept by the retention.

        :class:`StaleToken` when the token no longer holds the lease; :class:`NotFound` when no such job.
        """
        body: Dict[str, Any] = {"token": token}
        if result is not NO_RESULT:
            body["result"] = result
        answer: str = self.client.request("POST", self._job_path(id, "/ack"), body)["result"]
        return answer

    def fail(self, id: str, token: str, *, error: Optional[str] = None, retry_delay_ms: Optional[int] = None, dead: bool = False) -> FailResult:
        """``POST .../jobs/{id}/fail``: a failed attempt, retried after ``retry_delay_ms`` (default: the backoff)
        or dead-lettered when out of attempts or with ``dead=True``. ``error`` is kept as the job's
        ``last_error`` (at most 4,096 characters). :class:`StaleToken` when the lease is lost.
        """
        body: Dict[str, Any] = {"token": token}
        if error is not None:
            body["error"] = error
        if retry_delay_ms is not None:
            body["retryDelayMs"] = retry_delay_ms
        if dead:
            body["dead"] = True
        answer = self.client.request("POST", self._job_path(id, "/fail"), body)
        return FailResult(answer["result"], answer.get("retryAt"))

    def extend(self, id: str, token: str, lease_ms: Optional[int] = None) -> int:
        """``POST .../jobs/{id}/extend``: the lease now runs ``lease_ms`` from now (default 30 s); the new ``leaseUntilAt``.

        :class:`StaleToken` when the token no longer holds the lease (it was lost).
        """
        body: Dict[str, Any] = {"token": token}
        if lease_ms is not None:
            body["leaseMs"] = lease_ms
        lease_until_at: int = self.client.request("POST", self._job_path(id, "/extend"), body)["leaseUntilAt"]
        return lease_until_at

    def consumer(self, *, lease_ms: int = 30_000, wait_ms: int = 20_000, batch: int = 1, extend_every_ms: Optional[int] = None) -> "Consumer":
        """A pull consumer of this queue (see :class:`Consumer`)."""
        from .consumer import Consumer

        return Consumer(self, lease_ms=lease_ms, wait_ms=wait_ms, batch=batch, extend_every_ms=extend_every_ms)


def _trace_headers(traceparent: Optional[str]) -> Optional[Dict[str, str]]:
    return {"traceparent": traceparent} if traceparent else None
