"""Python client of the sandglass delay queue's HTTP API (``sandglass serve``).

- :class:`Sandglass` / :class:`Queue`: add, add_bulk, get, cancel, reschedule; claim, ack, fail, extend.
- :class:`Consumer`: a pull consumer (``for job in consumer.jobs()`` or ``consumer.run(handler)``).
- :func:`verify_signature`: checks the signature of webhook requests.
- Typed exceptions, one per API error code, all :class:`SandglassError`.

Standard library only.
"""

from .client import DEFAULT_TIMEOUT, LONG_POLL_MARGIN_SECONDS, Queue, Sandglass
from .consumer import Consumer, Job, JobAlreadySettled
from .errors import (
    ERROR_CLASSES,
    BadRequest,
    BodyTooLarge,
    Conflict,
    Forbidden,
    ForbiddenScope,
    IncompatibleStorage,
    InternalError,
    JobRunning,
    NotFound,
    NotReady,
    PayloadTooLarge,
    RedisFull,
    RedisUnavailable,
    RequestTimeout,
    RouteNotFound,
    SandglassConnectionError,
    SandglassError,
    ShuttingDown,
    StaleToken,
    TooLarge,
    Unauthorized,
    Unavailable,
    UnexpectedAnswer,
    UnsupportedMediaType,
    ValidationError,
    error_from_answer,
)
from .models import Backoff, Duration, ExponentialBackoff, FailResult, FixedBackoff, Instant, JobInfo, JobSpec, PulledJob, ScheduleTick
from .signature import sign_payload, verify_signature
from .transport import path_segment
from .version import __version__

__all__ = [
    "DEFAULT_TIMEOUT",
    "ERROR_CLASSES",
    "LONG_POLL_MARGIN_SECONDS",
    "Backoff",
    "BadRequest",
    "BodyTooLarge",
    "Conflict",
    "Consumer",
    "Duration",
    "ExponentialBackoff",
    "FailResult",
    "FixedBackoff",
    "Forbidden",
    "ForbiddenScope",
    "IncompatibleStorage",
    "Instant",
    "InternalError",
    "Job",
    "JobAlreadySettled",
    "JobInfo",
    "JobRunning",
    "JobSpec",
    "NotFound",
    "NotReady",
    "PayloadTooLarge",
    "PulledJob",
    "Queue",
    "RedisFull",
    "RedisUnavailable",
    "RequestTimeout",
    "RouteNotFound",
    "Sandglass",
    "SandglassConnectionError",
    "SandglassError",
    "ScheduleTick",
    "ShuttingDown",
    "StaleToken",
    "TooLarge",
    "Unauthorized",
    "Unavailable",
    "UnexpectedAnswer",
    "UnsupportedMediaType",
    "ValidationError",
    "__version__",
    "error_from_answer",
    "path_segment",
    "sign_payload",
    "verify_signature",
]
