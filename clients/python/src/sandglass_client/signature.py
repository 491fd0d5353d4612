"""Checks (and makes) the ``Sandglass-Signature`` header of webhook requests, as src/server/signature.ts does.

The signature is ``v1=`` and the hex HMAC-SHA256 of ``<timestamp>.<raw body>``, keyed with the
secret's UTF-8 bytes (never hex-decoded, even when the secret looks like hex). The timestamp (unix
seconds, the ``Sandglass-Timestamp`` header) is inside the HMAC, so a captured request cannot be
replayed later under a fresh timestamp.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from typing import Optional, Union

#: Scheme of today's signatures; a future scheme gets a new prefix.
SIGNATURE_SCHEME = "v1"
#: Shortest secret accepted, in characters (UTF-16 code units, as the service counts them): a short key can be guessed offline.
MIN_SECRET_LENGTH = 16
#: How far a request's timestamp may be from the receiver's clock, either way.
DEFAULT_TOLERANCE_SECONDS = 300

_SIGNATURE = re.compile(r"v1=([0-9a-fA-F]{64})")
_TIMESTAMP = re.compile(r"[0-9]{1,15}")


def verify_signature(
    secret: str,
    timestamp: Union[str, int, None],
    body: Union[bytes, bytearray, memoryview, str],
    signature_header: Optional[str],
    tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS,
    now: Optional[float] = None,
) -> bool:
    """True when ``signature_header`` signs ``<timestamp>.<body>`` under ``secret`` and ``timestamp`` is
    within ``tolerance_seconds`` of ``now`` (unix seconds; default: the clock).

    Pass the raw body bytes as received, before any JSON parsing (a re-serialized body does not
    match); a str body is taken as its UTF-8 bytes. The comparison runs in constant time.

    Raises ValueError when ``secret`` is shorter than 16 characters (an unset secret must not become
    an empty key that anyone can sign with), TypeError when it is not a str.

    >>> ok = verify_signature(os.environ["WEBHOOK_SECRET"], request.headers["Sandglass-Timestamp"],
    ...                       request.body, request.headers["Sandglass-Signature"])
    """
    _check_secret(secret)
    text = _timestamp_text(timestamp)
    if text is None:
        return False
    now_seconds = time.time() if now is None else now
    if abs(now_seconds - int(text)) > tolerance_seconds:
        return False
    given = _SIGNATURE.fullmatch(signature_header.strip()) if isinstance(signature_header, str) else None
    if given is None:
        return False
    expected = _hmac_hex(secret, text, _body_bytes(body))
    # Both are 64 ASCII hex digits here; lowercase the given one, as the service writes lowercase.
    return hmac.compare_digest(given.group(1).lower().encode("ascii"), expected.encode("ascii"))


def sign_payload(secret: str, timestamp: int, body: Union[bytes, bytearray, memoryview, str]) -> str:
    """The ``Sandglass-Signature`` value for ``body`` sent at ``timestamp`` (unix seconds): ``v1=<hex>``."""
    _check_secret(secret)
    if isinstance(timestamp, bool) or not isinstance(timestamp, int) or timestamp < 0:
        raise TypeError(f"Expected `timestamp` to be unix seconds (an int >= 0), got {timestamp!r}")
    return f"{SIGNATURE_SCHEME}={_hmac_hex(secret, str(timestamp), _body_bytes(body))}"


def _hmac_hex(secret: str, timestamp: str, body: bytes) -> str:
    mac = hmac.new(secret.encode("utf-8"), digestmod=hashlib.sha256)
    mac.update(timestamp.encode("ascii") + b".")
    mac.update(body)
    return mac.hexdigest()


def _timestamp_text(timestamp: Union[str, int, None]) -> Optional[str]:
    if isinstance(timestamp, bool):
        return None
    text = str(timestamp) if isinstance(timestamp, int) else timestamp
    # fullmatch, not match with `$`: Python's `$` also matches before a trailing newline.
    return text if isinstance(text, str) and _TIMESTAMP.fullmatch(text) else None


def _body_bytes(body: Union[bytes, bytearray, memoryview, str]) -> bytes:
    return body.encode("utf-8") if isinstance(body, str) else bytes(body)


def _check_secret(secret: object) -> None:
    if not isinstance(secret, str):
        raise TypeError(f"Expected the webhook secret to be a str of at least {MIN_SECRET_LENGTH} characters, got {type(secret).__name__}")
    # The service counts UTF-16 code units (JavaScript's length): an astral character counts 2.
    length = len(secret.encode("utf-16-le")) // 2
    if length < MIN_SECRET_LENGTH:
        raise ValueError(f"Expected the webhook secret to be at least {MIN_SECRET_LENGTH} characters, got {length}")
