"""JSON over HTTP/1.1 to the service: one keep-alive connection per thread, the bearer token, error mapping.

``http.client`` rather than ``urllib.request``: urllib opens a new connection for every request
(``Connection: close``), which costs a TCP handshake per job; a consumer and its lease-extension
thread each keep their own connection here (``http.client`` connections are not thread-safe).
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import quote, urlsplit

from .errors import SandglassConnectionError, UnexpectedAnswer, error_from_answer

#: A connection idle longer than this is replaced before use: the service closes idle keep-alive
#: connections after 72 s (fastify's default), and a request sent into that close gets no answer.
IDLE_RECONNECT_SECONDS = 30.0

_REDACTED = "***"


class Secret:
    """A token held so that no ``repr``, ``str`` or ``vars()`` shows it (a debugger, a logged object)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The token itself, for the Authorization header only."""
        return self._value

    def __repr__(self) -> str:
        return _REDACTED

    __str__ = __repr__


def path_segment(value: str) -> str:
    """``value`` as one URL path segment: RFC 3986 percent-encoding of its UTF-8 bytes.

    Everything but the unreserved characters is encoded: ``/`` is ``%2F``, a space ``%20`` and a
    ``+`` ``%2B`` (the service decodes a ``+`` in a path as a plus, never as a space).
    """
    if not isinstance(value, str) or value == "":
        raise ValueError(f"Expected a non-empty string for a path segment, got {value!r}")
    return quote(value, safe="")


class Transport:
    """Sends JSON requests to one service and returns parsed answers or raises :class:`SandglassError`."""

    def __init__(self, base_url: str, token: Optional[str], timeout: float, user_agent: str) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"Expected an http:// or https:// base URL, got {base_url!r}")
        if parts.username or parts.password:
            # A token in the URL would end up in logs and reprs; it goes in `token=` only.
            raise ValueError("Give the token as `token=`, not in the base URL")
        if token is not None and (not isinstance(token, str) or token == "" or any(c.isspace() for c in token)):
            raise ValueError("Expected the token to be a non-empty string without spaces")
        self.base_url = base_url.rstrip("/")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._token = Secret(token) if token is not None else None
        self.timeout = timeout
        self._user_agent = user_agent
        self._local = threading.local()
        self._all_connections: List[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Transport({self.base_url!r}, token={_REDACTED if self._token is not None else None})"

    # --- connections ---------------------------------------------------------------------------

    def _connection(self, timeout: float) -> Tuple[http.client.HTTPConnection, bool]:
        """This thread's connection, and whether it was used before (a reused one may have been closed by the service)."""
        conn: Optional[http.client.HTTPConnection] = getattr(self._local, "conn", None)
        last_used: float = getattr(self._local, "last_used", 0.0)
        if conn is not None and time.monotonic() - last_used > IDLE_RECONNECT_SECONDS:
            self._drop(conn)
            conn = None
        if conn is None:
            cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            conn = cls(self._host, self._port, timeout=timeout)
            self._local.conn = conn
            with self._lock:
                self._all_connections.append(conn)
            return conn, False
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        return conn, True

    def _drop(self, conn: http.client.HTTPConnection) -> None:
        conn.close()
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None
        with self._lock:
            if conn in self._all_connections:
                self._all_connections.remove(conn)

    def close_thread_connection(self) -> None:
        """Closes the calling thread's connection, if it has one (a thread about to end)."""
        conn: Optional[http.client.HTTPConnection] = getattr(self._local, "conn", None)
        if conn is not None:
            self._drop(conn)

    def close(self) -> None:
        """Closes every connection of every thread (the next request opens a new one)."""
        with self._lock:
            connections, self._all_connections = self._all_connections, []
        for conn in connections:
            conn.close()
        self._local = threading.local()

    # --- requests ------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        timeout: Optional[float] = None,
        headers: Optional[Dict[str, str]] = None,
    ) -> Any:
        """Sends ``method path`` with ``body`` as JSON (None: no body) and returns the parsed JSON answer.

        Raises the :class:`SandglassError` subclass of the answer's error code for a 4xx/5xx,
        :class:`SandglassConnectionError` when no answer came within ``timeout`` seconds.
        """
        data = None if body is None else json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
        sent_headers = {"Accept": "application/json", "User-Agent": self._user_agent}
        if data is not None:
            sent_headers["Content-Type"] = "application/json"
        if self._token is not None:
            sent_headers["Authorization"] = f"Bearer {self._token.reveal()}"
        if headers:
            sent_headers.update(headers)
        wait = self.timeout if timeout is None else timeout
        status, answer_headers, raw = self._send(method, self._prefix + path, data, sent_headers, wait)
        return self._parse(status, answer_headers, raw)

    def _send(self, method: str, path: str, data: Optional[bytes], headers: Dict[str, str], timeout: float) -> Tuple[int, http.client.HTTPMessage, bytes]:
        # One retry, only when a reused keep-alive connection turns out closed before any answer
        # came: almost always the service closed it while idle, without reading the request (fresh
        # connections replace idle ones before the service's keep-alive timeout, which makes even
        # that rare). A fresh connection that fails is reported: the request may have been applied.
        for attempt in (1, 2):
            conn, reused = self._connection(timeout)
            try:
                conn.request(method, path, body=data, headers=headers)
                response = conn.getresponse()
                raw = response.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as error:
                self._drop(conn)
                if reused and attempt == 1:
                    continue
                raise self._connection_error(method, path, error) from None
            except (OSError, http.client.HTTPException) as error:
                self._drop(conn)
                raise self._connection_error(method, path, error) from None
            self._local.last_used = time.monotonic()
            if response.will_close:
                self._drop(conn)
            return response.status, response.headers, raw
        raise AssertionError("unreachable")

    def _connection_error(self, method: str, path: str, error: BaseException) -> SandglassConnectionError:
        reason = "no answer within the timeout" if isinstance(error, socket.timeout) else f"{type(error).__name__}: {error}"
        return SandglassConnectionError(self._redact(f"{method} {self.base_url}{path}: {reason}"), code="CONNECTION_FAILED")

    def _parse(self, status: int, headers: http.client.HTTPMessage, raw: bytes) -> Any:
        request_id = headers.get("x-request-id") or headers.get("request-id")
        try:
            answer = json.loads(raw.decode("utf-8")) if raw else None
            parsed = True
        except (UnicodeDecodeError, ValueError):
            answer, parsed = None, False
        if status < 400:
            if not parsed:
                raise UnexpectedAnswer(self._redact(f"The answer ({status}) is not JSON: {raw[:200]!r}"), status=status, code="UNEXPECTED_ANSWER", request_id=request_id)
            return answer
        error = answer.get("error") if isinstance(answer, dict) else None
        if not isinstance(error, dict) or not isinstance(error.get("code"), str):
            text = raw[:200].decode("utf-8", "replace")
            raise UnexpectedAnswer(self._redact(f"HTTP {status} without the API's error body: {text}"), status=status, code="UNEXPECTED_ANSWER", request_id=request_id)
        if request_id is None and isinstance(error.get("requestId"), str):
            request_id = error["requestId"]
        raise error_from_answer(status, error["code"], self._redact(str(error.get("message", ""))), request_id)

    def _redact(self, text: str) -> str:
        # The service never echoes the token, but a proxy's error page might: never let it reach an
        # exception message, which ends up in logs.
        return text.replace(self._token.reveal(), _REDACTED) if self._token is not None else text
