"""Typed exceptions, one per error ``code`` of the HTTP API.

Every error answer of the service is ``{"error": {"code": "<CODE>", "message": "..."}}``. The
``code`` is stable, the message is for humans and may change: so the class of an exception is chosen
from the code alone (:func:`error_from_answer`), never from the message text. A code this client
does not know yet (a newer service) becomes the base class, :class:`SandglassError`, with its code.
"""

from __future__ import annotations

from typing import Dict, Optional, Type


class SandglassError(Exception):
    """Base of every error this client raises.

    Attributes:
        status: the HTTP status of the answer, or ``None`` when no answer came (connection errors).
        code: the API's error code (``"NOT_FOUND"``, ``"STALE_TOKEN"``...), or one of this client's
            own: ``"CONNECTION_FAILED"``, ``"UNEXPECTED_ANSWER"``.
        message: the service's message, for humans (branch on ``code``, not on this).
        request_id: the request id the service sent with the answer, if it sent one.
    """

    #: True for errors worth retrying later, with backoff (the service or its Redis is unavailable).
    retryable = False

    def __init__(self, message: str, *, status: Optional[int] = None, code: Optional[str] = None, request_id: Optional[str] = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id

    def __str__(self) -> str:
        where = f"{self.code} ({self.status})" if self.status is not None else str(self.code)
        text = f"{where}: {self.message}"
        return f"{text} [request id {self.request_id}]" if self.request_id else text

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, message={self.message!r}, request_id={self.request_id!r})"


class BadRequest(SandglassError):
    """400: the request is malformed (``BAD_REQUEST``, ``INVALID_JSON``, ``JSON_TOO_DEEP``, ``FORBIDDEN_KEY``)."""


class ValidationError(BadRequest):
    """400 ``VALIDATION``: a field is missing, of the wrong type or out of range; the message names it."""


class UnsupportedMediaType(BadRequest):
    """415 ``UNSUPPORTED_MEDIA_TYPE``: the body was not sent as JSON."""


class Unauthorized(SandglassError):
    """401 ``UNAUTHORIZED``: the service wants a token and got none, or another one."""


class Forbidden(SandglassError):
    """403: refused whatever the token (``FORBIDDEN_HOST``: a non-loopback Host without a token; ``CROSS_ORIGIN``)."""


class ForbiddenScope(Forbidden):
    """403 ``FORBIDDEN_SCOPE``: the token is valid but its scopes do not allow this request."""


class NotFound(SandglassError):
    """404 ``NOT_FOUND``: no such job (never added, completed or cancelled), schedule or queue."""


class RouteNotFound(SandglassError):
    """404 ``ROUTE_NOT_FOUND`` / ``DASHBOARD_NOT_FOUND``: no such route (a wrong base URL or an older service)."""


class RequestTimeout(SandglassError):
    """408 ``REQUEST_TIMEOUT``: the service did not receive the whole request in time."""


class JobRunning(SandglassError):
    """409 ``JOB_RUNNING``: cancel or reschedule of a job a consumer holds; nothing changed."""


class Conflict(SandglassError):
    """409 ``CONFLICT``: ``if_exists='replace'`` of a running job, or a partition count mismatch."""


class StaleToken(SandglassError):
    """409 ``STALE_TOKEN``: the claim's token no longer holds the lease (it ran out, another claim has the job); nothing changed."""


class TooLarge(SandglassError):
    """413 / 431: the request is too large (``BODY_TOO_LARGE``, ``PAYLOAD_TOO_LARGE``, ``HEADERS_TOO_LARGE``)."""


class PayloadTooLarge(TooLarge):
    """413 ``PAYLOAD_TOO_LARGE``: a job's payload is over 256 KiB of JSON."""


class BodyTooLarge(TooLarge):
    """413 ``BODY_TOO_LARGE``: the request body is over the service's body limit."""


class InternalError(SandglassError):
    """500 ``INTERNAL``: a bug in the service; its log has the details."""


class Unavailable(SandglassError):
    """503: the service cannot answer now; retry later with backoff."""

    retryable = True


class RedisUnavailable(Unavailable):
    """503 ``REDIS_UNAVAILABLE``: Redis cannot be reached, is loading or busy."""


class ShuttingDown(Unavailable):
    """503 ``SHUTTING_DOWN``: the service is closing; retry on another instance."""


class NotReady(Unavailable):
    """503 ``NOT_READY``: ``/readyz`` only, Redis did not answer in time."""


class IncompatibleStorage(SandglassError):
    """503 ``INCOMPATIBLE_STORAGE``: the queue is stored in a newer format than the service knows; upgrade the service."""


class RedisFull(SandglassError):
    """507 ``REDIS_FULL``: Redis reached ``maxmemory``; nothing was written."""


class SandglassConnectionError(SandglassError):
    """No answer: the service could not be reached, or did not answer within the timeout.

    The request may or may not have been applied: an add with an ``id`` can be sent again safely
    (adds are idempotent by id).
    """

    retryable = True


class UnexpectedAnswer(SandglassError):
    """An answer that is not the API's JSON (a proxy's error page, a truncated body)."""


#: The class of each API error code. Codes missing here map to :class:`SandglassError`.
ERROR_CLASSES: Dict[str, Type[SandglassError]] = {
    "VALIDATION": ValidationError,
    "INVALID_JSON": BadRequest,
    "JSON_TOO_DEEP": BadRequest,
    "FORBIDDEN_KEY": BadRequest,
    "BAD_REQUEST": BadRequest,
    "UNSUPPORTED_MEDIA_TYPE": UnsupportedMediaType,
    "UNAUTHORIZED": Unauthorized,
    "FORBIDDEN_HOST": Forbidden,
    "CROSS_ORIGIN": Forbidden,
    "FORBIDDEN_SCOPE": ForbiddenScope,
    "NOT_FOUND": NotFound,
    "ROUTE_NOT_FOUND": RouteNotFound,
    "DASHBOARD_NOT_FOUND": RouteNotFound,
    "REQUEST_TIMEOUT": RequestTimeout,
    "JOB_RUNNING": JobRunning,
    "CONFLICT": Conflict,
    "STALE_TOKEN": StaleToken,
    "BODY_TOO_LARGE": BodyTooLarge,
    "PAYLOAD_TOO_LARGE": PayloadTooLarge,
    "HEADERS_TOO_LARGE": TooLarge,
    "INTERNAL": InternalError,
    "REDIS_UNAVAILABLE": RedisUnavailable,
    "SHUTTING_DOWN": ShuttingDown,
    "NOT_READY": NotReady,
    "INCOMPATIBLE_STORAGE": IncompatibleStorage,
    "REDIS_FULL": RedisFull,
}


def error_from_answer(status: int, code: Optional[str], message: str, request_id: Optional[str] = None) -> SandglassError:
    """The exception for an error answer: its class from ``code`` only, the base class for an unknown code."""
    cls = ERROR_CLASSES.get(code, SandglassError) if code is not None else SandglassError
    return cls(message, status=status, code=code, request_id=request_id)
