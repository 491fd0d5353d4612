"""What the client sends and how it reads answers, against a scripted local HTTP server (no service needed).

The real service is the subject of the other tests; here the answers are ones the service rarely
or never gives (unknown codes, a proxy's HTML page, a request id), and the raw request line is read
to see the exact percent-encoding sent.
"""

from __future__ import annotations

import json
import re
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import sandglass_client
from sandglass_client import (
    ERROR_CLASSES,
    ForbiddenScope,
    NotFound,
    Sandglass,
    SandglassConnectionError,
    SandglassError,
    StaleToken,
    Unauthorized,
    UnexpectedAnswer,
    path_segment,
)

ROOT = Path(__file__).resolve().parents[3]
TOKEN = "wire-test-token-5f2d8c0a9b7e4136"

#: (status, headers, body bytes, delay seconds) answered to one request.
Answer = Tuple[int, Dict[str, str], bytes, float]


class ScriptedServer:
    """A local HTTP/1.1 server: records each request's method, raw path, headers and body; answers with ``script``."""

    def __init__(self, script: Callable[[str, str, Dict[str, Any]], Answer]) -> None:
        self.requests: List[Dict[str, Any]] = []
        self.connections = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                outer.connections += 1

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                record = {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
                outer.requests.append(record)
                status, headers, raw, delay = script(self.command, self.path, record)
                time.sleep(delay)
                try:
                    self.send_response(status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (the timeout test)

            do_GET = do_POST = do_DELETE = do_PUT = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def json_answer(status: int, value: Any, headers: Optional[Dict[str, str]] = None, delay: float = 0.0) -> Answer:
    return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(value).encode(), delay


def error_answer(status: int, code: str, message: str = "for humans", headers: Optional[Dict[str, str]] = None) -> Answer:
    return json_answer(status, {"error": {"code": code, "message": message}}, headers)


class Encoding(unittest.TestCase):
    def test_path_segments_are_rfc3986_percent_encoded(self) -> None:
        self.assertEqual(path_segment("order/42 a+b%c Zürich"), "order%2F42%20a%2Bb%25c%20Z%C3%BCrich")
        self.assertEqual(path_segment("order:42/a"), "order%3A42%2Fa")
        self.assertEqual(path_segment("a-b_c.d~e"), "a-b_c.d~e")
        self.assertEqual(path_segment("?#&=;"), "%3F%23%26%3D%3B")
        with self.assertRaises(ValueError):
            path_segment("")

    def test_the_request_line_carries_the_encoded_id(self) -> None:
        server = ScriptedServer(lambda method, path, request: json_answer(200, {"result": "cancelled"}))
        self.addCleanup(server.close)
        client = Sandglass(server.url, token=TOKEN)
        self.addCleanup(client.close)
        client.queue("orders").cancel("order/42 a+b%c Zürich")
        self.assertEqual(server.requests[0]["method"], "DELETE")
        self.assertEqual(server.requests[0]["path"], "/v1/queues/orders/jobs/order%2F42%20a%2Bb%25c%20Z%C3%BCrich")
        self.assertEqual(server.requests[0]["headers"]["Authorization"], f"Bearer {TOKEN}")

    def test_a_base_url_path_is_kept_as_a_prefix(self) -> None:
        server = ScriptedServer(lambda method, path, request: json_answer(201, {"id": "a+b"}))
        self.addCleanup(server.close)
        client = Sandglass(server.url + "/sandglass/", token=TOKEN)
        self.addCleanup(client.close)
        client.queue("q").add({"n": 1}, id="a+b", delay="30m")
        self.assertEqual(server.requests[0]["path"], "/sandglass/v1/queues/q/jobs")
        self.assertEqual(server.requests[0]["body"], {"payload": {"n": 1}, "delay": "30m", "id": "a+b"})


class Bodies(unittest.TestCase):
    def setUp(self) -> None:
        self.server = ScriptedServer(self.answer)
        self.addCleanup(self.server.close)
        self.client = Sandglass(self.server.url, token=TOKEN)
        self.addCleanup(self.client.close)
        self.queue = self.client.queue("q")

    def answer(self, method: str, path: str, request: Dict[str, Any]) -> Answer:
        if path.endswith("/claim"):
            return json_answer(200, {"jobs": []}, delay=float(request["body"].get("waitMs", 0)) / 1000)
        if path.endswith("/fail"):
            return json_answer(200, {"result": "retried", "retryAt": 123})
        if path.endswith("/ack"):
            return json_answer(200, {"result": "acked"})
        if path.endswith("/extend"):
            return json_answer(200, {"result": "extended", "leaseUntilAt": 456})
        if path.endswith(":bulk"):
            return json_answer(201, {"ids": ["a", "b"]})
        return json_answer(201, {"id": "x"})

    def test_add_sends_the_api_field_names_and_only_those_given(self) -> None:
        from datetime import datetime, timedelta, timezone

        from sandglass_client import ExponentialBackoff, JobSpec

        self.queue.add(
            {"orderId": 42},
            at=datetime(2030, 1, 1, tzinfo=timezone.utc),
            id="order:42",
            if_exists="replace",
            max_attempts=5,
            backoff=ExponentialBackoff(1000, max_delay_ms=60_000),
            expire_after=timedelta(hours=1),
            on_expire="drop",
            group="shop 1",
            traceparent="00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        )
        sent = self.server.requests[-1]
        self.assertEqual(
            sent["body"],
            {
                "payload": {"orderId": 42},
                "at": 1893456000000,
                "id": "order:42",
                "ifExists": "replace",
                "maxAttempts": 5,
                "backoff": {"type": "exponential", "delayMs": 1000, "maxDelayMs": 60000},
                "expireAfter": 3600000,
                "onExpire": "drop",
                "group": "shop 1",
            },
        )
        self.assertEqual(sent["headers"]["traceparent"], "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
        self.assertEqual(sent["headers"]["Content-Type"], "application/json")
        self.queue.add(None)
        self.assertEqual(self.server.requests[-1]["body"], {"payload": None})
        self.assertEqual(self.queue.add_bulk([JobSpec({"n": 1}, delay=5), {"payload": {"n": 2}, "at": "2030-01-01T00:00:00Z"}], if_exists="keep"), ["a", "b"])
        self.assertEqual(self.server.requests[-1]["body"], {"jobs": [{"payload": {"n": 1}, "delay": 5}, {"payload": {"n": 2}, "at": "2030-01-01T00:00:00Z"}], "ifExists": "keep"})

    def test_a_naive_datetime_is_refused_rather_than_guessed(self) -> None:
        from datetime import datetime

        with self.assertRaisesRegex(ValueError, "timezone-aware"):
            self.queue.add(1, at=datetime(2030, 1, 1))
        self.assertEqual(self.server.requests, [])

    def test_reschedule_takes_exactly_one_of_delay_and_at(self) -> None:
        with self.assertRaises(ValueError):
            self.queue.reschedule("a")
        with self.assertRaises(ValueError):
            self.queue.reschedule("a", delay=1, at=2)

    def test_consumer_calls_send_the_api_bodies(self) -> None:
        self.assertEqual(self.queue.fail("a b", "7", error="boom", retry_delay_ms=1500).retry_at, 123)
        self.assertEqual(self.server.requests[-1]["body"], {"token": "7", "error": "boom", "retryDelayMs": 1500})
        self.queue.fail("a b", "7", dead=True)
        self.assertEqual(self.server.requests[-1]["body"], {"token": "7", "dead": True})
        self.assertEqual(self.queue.ack("a b", "7"), "acked")
        self.assertEqual(self.server.requests[-1]["body"], {"token": "7"})
        self.queue.ack("a b", "7", None)
        self.assertEqual(self.server.requests[-1]["body"], {"token": "7", "result": None})
        self.assertEqual(self.queue.extend("a b", "7", 5000), 456)
        self.assertEqual(self.server.requests[-1]["body"], {"token": "7", "leaseMs": 5000})
        self.assertEqual(self.server.requests[-1]["path"], "/v1/queues/q/jobs/a%20b/extend")

    def test_a_long_poll_claim_waits_longer_than_the_client_timeout(self) -> None:
        # The client's timeout (0.3 s) is below the wait (1.2 s): the claim's own timeout is the wait
        # plus a margin, so the long poll is not cut.
        client = Sandglass(self.server.url, token=TOKEN, timeout=0.3)
        self.addCleanup(client.close)
        self.assertEqual(client.queue("q").claim(3, lease_ms=1000, wait_ms=1200), [])
        self.assertEqual(self.server.requests[-1]["body"], {"max": 3, "waitMs": 1200, "leaseMs": 1000})

    def test_one_keep_alive_connection_serves_many_requests(self) -> None:
        for _ in range(5):
            self.queue.add(1)
        self.assertEqual(self.server.connections, 1)


class Errors(unittest.TestCase):
    def test_every_code_of_the_service_has_its_class(self) -> None:
        source = (ROOT / "src" / "server" / "errors.ts").read_text("utf-8")
        block = source[source.index("export const ERROR_CODES") : source.index("} as const")]
        codes = set(re.findall(r"^  ([A-Z_]+): \{", block, re.MULTILINE))
        self.assertIn("STALE_TOKEN", codes)
        openapi = json.loads((ROOT / "docs" / "openapi.json").read_text("utf-8"))
        codes |= set(openapi["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"])
        self.assertEqual(sorted(codes - set(ERROR_CLASSES)), [])
        for code in codes:
            self.assertIsNot(ERROR_CLASSES[code], SandglassError, code)
        self.assertIs(ERROR_CLASSES["FORBIDDEN_SCOPE"], ForbiddenScope)

    def test_answers_become_typed_errors_with_status_code_message_and_request_id(self) -> None:
        answers = {
            "/v1/queues/q/jobs/nf": error_answer(404, "NOT_FOUND", "No job nf", {"x-request-id": "req-7"}),
            "/v1/queues/q/jobs/scope": error_answer(403, "FORBIDDEN_SCOPE", "this token may not read"),
            "/v1/queues/q/jobs/new": error_answer(418, "SOMETHING_NEW", "a code from a newer service"),
            "/v1/queues/q/jobs/html": (502, {"Content-Type": "text/html"}, b"<html>Bad Gateway</html>", 0.0),
            "/v1/queues/q/jobs/stale": error_answer(409, "STALE_TOKEN", "lost"),
            "/v1/queues/q/jobs/echo": error_answer(401, "UNAUTHORIZED", f"a proxy echoing {TOKEN}"),
        }
        server = ScriptedServer(lambda method, path, request: answers[path])
        self.addCleanup(server.close)
        client = Sandglass(server.url, token=TOKEN)
        self.addCleanup(client.close)
        queue = client.queue("q")
        with self.assertRaises(NotFound) as caught:
            queue.get("nf")
        error = caught.exception
        self.assertEqual((error.status, error.code, error.message, error.request_id), (404, "NOT_FOUND", "No job nf", "req-7"))
        self.assertIn("req-7", str(error))
        with self.assertRaises(ForbiddenScope) as scope:
            queue.get("scope")
        self.assertEqual(scope.exception.status, 403)
        self.assertIsInstance(scope.exception, sandglass_client.Forbidden)
        with self.assertRaises(SandglassError) as new:
            queue.get("new")
        self.assertIs(type(new.exception), SandglassError)
        self.assertEqual((new.exception.status, new.exception.code), (418, "SOMETHING_NEW"))
        with self.assertRaises(UnexpectedAnswer) as html:
            queue.get("html")
        self.assertEqual(html.exception.status, 502)
        with self.assertRaises(StaleToken):
            queue.get("stale")
        with self.assertRaises(Unauthorized) as echo:
            queue.get("echo")
        self.assertNotIn(TOKEN, str(echo.exception))
        self.assertNotIn(TOKEN, repr(echo.exception))

    def test_no_answer_is_a_retryable_connection_error_without_the_token(self) -> None:
        server = ScriptedServer(lambda method, path, request: json_answer(200, {}))
        url = server.url
        server.close()
        client = Sandglass(url, token=TOKEN, timeout=2)
        with self.assertRaises(SandglassConnectionError) as caught:
            client.queue("q").get("a")
        self.assertTrue(caught.exception.retryable)
        self.assertEqual(caught.exception.code, "CONNECTION_FAILED")
        self.assertNotIn(TOKEN, str(caught.exception))

    def test_a_slow_answer_times_out(self) -> None:
        server = ScriptedServer(lambda method, path, request: json_answer(200, {}, delay=1.0))
        self.addCleanup(server.close)
        client = Sandglass(server.url, token=TOKEN, timeout=0.2)
        self.addCleanup(client.close)
        with self.assertRaisesRegex(SandglassConnectionError, "no answer within the timeout"):
            client.queue("q").get("a")


class ConsumerRetries(unittest.TestCase):
    def test_a_claim_meeting_a_retryable_error_is_retried_and_others_are_raised(self) -> None:
        claims: List[int] = []
        pulled = {"id": "a/b", "queue": "q", "payload": 1, "dueAt": 1, "attempt": 1, "maxAttempts": 3, "token": "9", "leaseUntilAt": 30_001}

        def answer(method: str, path: str, request: Dict[str, Any]) -> Answer:
            if path.endswith("/claim"):
                claims.append(1)
                if len(claims) == 1:
                    return error_answer(503, "REDIS_UNAVAILABLE", "Redis is unavailable")
                if len(claims) == 2:
                    return json_answer(200, {"jobs": [pulled]})
                return error_answer(401, "UNAUTHORIZED", "The token is not valid")
            return json_answer(200, {"result": "acked"})

        server = ScriptedServer(answer)
        self.addCleanup(server.close)
        client = Sandglass(server.url, token=TOKEN)
        self.addCleanup(client.close)
        consumer = client.queue("q").consumer(wait_ms=100)
        jobs = consumer.jobs()
        job = next(jobs)
        self.assertEqual((job.id, job.claimed_at), ("a/b", 1))
        job.ack()
        self.assertEqual(server.requests[-1]["path"], "/v1/queues/q/jobs/a%2Fb/ack")
        with self.assertRaises(Unauthorized):
            next(jobs)
        self.assertEqual(len(claims), 3)


class Secrecy(unittest.TestCase):
    def test_repr_never_shows_the_token(self) -> None:
        client = Sandglass("http://127.0.0.1:9", token=TOKEN)
        queue = client.queue("q")
        # Also the attributes, as a debugger or a logged `vars()` shows them.
        for text in (repr(client), str(client), repr(queue), repr(queue.consumer()), repr(vars(client)), repr(vars(client._transport))):
            self.assertNotIn(TOKEN, text)
        self.assertIn("token=***", repr(client))

    def test_a_token_in_the_url_is_refused(self) -> None:
        with self.assertRaises(ValueError) as caught:
            Sandglass(f"http://user:{TOKEN}@127.0.0.1:9")
        self.assertNotIn(TOKEN, str(caught.exception))


if __name__ == "__main__":
    unittest.main()
