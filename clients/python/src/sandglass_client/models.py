"""The API's answers as dataclasses, and the Python values accepted for its times.

Field names are the API's in snake_case (``dueAt`` -> ``due_at``); every answer keeps its JSON as
``raw`` too, so a field added by a newer service is readable before this client knows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Dict, Mapping, Optional, Union

#: A duration: milliseconds (int), a duration string of the API (``"30m"``, ``"1h30m"``, ``"1500"``), or a timedelta.
Duration = Union[int, str, timedelta]
#: An instant: epoch milliseconds (int), an RFC 3339 date-time with a zone (str), or a timezone-aware datetime.
Instant = Union[int, str, datetime]

_MS = timedelta(milliseconds=1)


class _NoResult:
    """The type of :data:`NO_RESULT`."""

    def __repr__(self) -> str:
        return "NO_RESULT"


#: "No result given" for an ack: None is a result (JSON null), this sends none.
NO_RESULT: Any = _NoResult()


def duration_value(value: Duration, name: str) -> Union[int, str]:
    """A duration as the API takes it: int ms or the duration string unchanged; a timedelta becomes whole ms."""
    if isinstance(value, timedelta):
        if value < timedelta(0):
            raise ValueError(f"Expected `{name}` to be a duration >= 0, got {value!r}")
        return value // _MS
    return value


def instant_value(value: Instant, name: str) -> Union[int, str]:
    """An instant as the API takes it: epoch ms or RFC 3339 text unchanged; an aware datetime becomes epoch ms."""
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            # A naive datetime is local time to some and UTC to others: refuse to guess.
            raise ValueError(f"Expected `{name}` to be a timezone-aware datetime, got the naive {value!r}")
        return round(value.timestamp() * 1000)
    return value


@dataclass(frozen=True)
class FixedBackoff:
    """Retry ``delay_ms`` after every failed attempt (API ``{"type": "fixed", "delayMs"}``)."""

    delay_ms: int

    def to_api(self) -> Dict[str, Any]:
        """The API's JSON form."""
        return {"type": "fixed", "delayMs": self.delay_ms}


@dataclass(frozen=True)
class ExponentialBackoff:
    """Retry after ``delay_ms``, doubling per attempt up to ``max_delay_ms``, with ``jitter`` (0-1) (API ``{"type": "exponential", ...}``)."""

    delay_ms: int
    max_delay_ms: Optional[int] = None
    jitter: Optional[float] = None

    def to_api(self) -> Dict[str, Any]:
        """The API's JSON form."""
        body: Dict[str, Any] = {"type": "exponential", "delayMs": self.delay_ms}
        if self.max_delay_ms is not None:
            body["maxDelayMs"] = self.max_delay_ms
        if self.jitter is not None:
            body["jitter"] = self.jitter
        return body


#: A backoff: one of the dataclasses, or the API's JSON object as a dict.
Backoff = Union[FixedBackoff, ExponentialBackoff, Mapping[str, Any]]


def backoff_value(value: Backoff) -> Any:
    """A backoff in the API's JSON form."""
    return value.to_api() if isinstance(value, (FixedBackoff, ExponentialBackoff)) else dict(value)


@dataclass(frozen=True)
class JobSpec:
    """One job of :meth:`Queue.add_bulk`: the fields of the API's bulk entries, in snake_case."""

    payload: Any
    delay: Optional[Duration] = None
    at: Optional[Instant] = None
    id: Optional[str] = None
    max_attempts: Optional[int] = None
    backoff: Optional[Backoff] = None
    expire_after: Optional[Duration] = None
    on_expire: Optional[str] = None
    group: Optional[str] = None

    def to_api(self) -> Dict[str, Any]:
        """The API's JSON form: only the fields given."""
        return job_body(
            self.payload,
            delay=self.delay,
            at=self.at,
            id=self.id,
            max_attempts=self.max_attempts,
            backoff=self.backoff,
            expire_after=self.expire_after,
            on_expire=self.on_expire,
            group=self.group,
        )


def job_body(
    payload: Any,
    *,
    delay: Optional[Duration] = None,
    at: Optional[Instant] = None,
    id: Optional[str] = None,
    max_attempts: Optional[int] = None,
    backoff: Optional[Backoff] = None,
    expire_after: Optional[Duration] = None,
    on_expire: Optional[str] = None,
    group: Optional[str] = None,
) -> Dict[str, Any]:
    """The JSON body of one job to add; fields left as None are not sent (the service's defaults apply).

    Passing both ``delay`` and ``at`` is left to the service to refuse, with its own message.
    """
    body: Dict[str, Any] = {"payload": payload}
    if delay is not None:
        body["delay"] = duration_value(delay, "delay")
    if at is not None:
        body["at"] = instant_value(at, "at")
    if id is not None:
        body["id"] = id
    if max_attempts is not None:
        body["maxAttempts"] = max_attempts
    if backoff is not None:
        body["backoff"] = backoff_value(backoff)
    if expire_after is not None:
        body["expireAfter"] = duration_value(expire_after, "expire_after")
    if on_expire is not None:
        body["onExpire"] = on_expire
    if group is not None:
        body["group"] = group
    return body


@dataclass(frozen=True)
class ScheduleTick:
    """The schedule a job is a tick of: its ``key`` and the tick's time (``tickAt``, epoch ms)."""

    key: str
    tick_at: int

    @staticmethod
    def from_api(value: Any) -> Optional["ScheduleTick"]:
        """Parsed from the API's ``schedule`` field (None when absent)."""
        return ScheduleTick(value["key"], value["tickAt"]) if isinstance(value, dict) else None


@dataclass(frozen=True)
class JobInfo:
    """A job as ``GET /v1/queues/{queue}/jobs/{id}`` answers it (the API's ``JobInfo``).

    ``state`` is one of ``delayed``, ``ready``, ``active``, ``dead``, ``completed``; instants are epoch
    ms on the Redis server's clock.
    """

    id: str
    payload: Any
    state: str
    due_at: int
    attempts: int
    max_attempts: Optional[int] = None
    lease_until_at: Optional[int] = None
    dead_at: Optional[int] = None
    last_error: Optional[str] = None
    schedule: Optional[ScheduleTick] = None
    reason: Optional[str] = None
    expires_at: Optional[int] = None
    finished_at: Optional[int] = None
    result: Any = None
    traceparent: Optional[str] = None
    group: Optional[str] = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def from_api(value: Mapping[str, Any]) -> "JobInfo":
        """Parsed from the API's JSON; unknown fields are kept in ``raw`` only."""
        return JobInfo(
            id=value["id"],
            payload=value.get("payload"),
            state=value["state"],
            due_at=value["dueAt"],
            attempts=value["attempts"],
            max_attempts=value.get("maxAttempts"),
            lease_until_at=value.get("leaseUntilAt"),
            dead_at=value.get("deadAt"),
            last_error=value.get("lastError"),
            schedule=ScheduleTick.from_api(value.get("schedule")),
            reason=value.get("reason"),
            expires_at=value.get("expiresAt"),
            finished_at=value.get("finishedAt"),
            result=value.get("result"),
            traceparent=value.get("traceparent"),
            group=value.get("group"),
            raw=dict(value),
        )


@dataclass(frozen=True)
class PulledJob:
    """A job handed out by a claim (the API's ``PulledJob``), with the claim's fencing ``token``.

    ``attempt`` is 1-based; ``lease_until_at`` is when the claim's lease runs out (epoch ms, Redis clock).
    """

    id: str
    queue: str
    payload: Any
    due_at: int
    attempt: int
    max_attempts: int
    token: str = field(repr=False)
    lease_until_at: int
    schedule: Optional[ScheduleTick] = None
    held_by_limit: bool = False
    traceparent: Optional[str] = None
    group: Optional[str] = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @staticmethod
    def from_api(value: Mapping[str, Any]) -> "PulledJob":
        """Parsed from the API's JSON; unknown fields are kept in ``raw`` only."""
        return PulledJob(
            id=value["id"],
            queue=value["queue"],
            payload=value.get("payload"),
            due_at=value["dueAt"],
            attempt=value["attempt"],
            max_attempts=value["maxAttempts"],
            token=value["token"],
            lease_until_at=value["leaseUntilAt"],
            schedule=ScheduleTick.from_api(value.get("schedule")),
            held_by_limit=value.get("heldByLimit") is True,
            traceparent=value.get("traceparent"),
            group=value.get("group"),
            raw=dict(value),
        )


@dataclass(frozen=True)
class FailResult:
    """The answer of a fail: ``result`` ``"retried"`` (with ``retry_at``, epoch ms, when known) or ``"dead"``."""

    result: str
    retry_at: Optional[int] = None
