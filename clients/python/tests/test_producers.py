"""Producers against the real service: add, add_bulk, get, cancel, reschedule, with ids that URL encoding gets wrong."""

from __future__ import annotations

import time
import unittest

from service import HARD_IDS, client, close_shared, fresh_queue, service

from sandglass_client import (
    Conflict,
    FixedBackoff,
    JobInfo,
    JobRunning,
    JobSpec,
    NotFound,
    Sandglass,
    SandglassError,
    Unauthorized,
    ValidationError,
)


class Producers(unittest.TestCase):
    def test_add_get_reschedule_cancel_with_hard_ids(self) -> None:
        queue = fresh_queue("ids")
        for job_id in HARD_IDS:
            with self.subTest(id=job_id):
                self.assertEqual(queue.add({"id": job_id}, id=job_id, delay="1h"), job_id)
                job = queue.get(job_id)
                self.assertIsInstance(job, JobInfo)
                self.assertEqual((job.id, job.payload, job.state, job.attempts), (job_id, {"id": job_id}, "delayed", 0))
                self.assertEqual(queue.reschedule(job_id, delay=3_600_000 * 2), "rescheduled")
                self.assertGreater(queue.get(job_id).due_at, job.due_at + 3_000_000)
                self.assertEqual(queue.cancel(job_id), "cancelled")
                with self.assertRaises(NotFound):
                    queue.get(job_id)
                with self.assertRaises(NotFound):
                    queue.cancel(job_id)
        # Nothing was written under a wrongly decoded id (a `+` read as a space, `%2F` as a slash).
        for near in ("a b", "order/42 a b%c Zürich"):
            with self.assertRaises(NotFound):
                queue.get(near)

    def test_add_is_idempotent_by_id_unless_replace(self) -> None:
        queue = fresh_queue("idem")
        queue.add({"v": 1}, id="order:1", delay="1h")
        self.assertEqual(queue.add({"v": 2}, id="order:1", delay="1h"), "order:1")
        self.assertEqual(queue.get("order:1").payload, {"v": 1})
        queue.add({"v": 3}, id="order:1", delay="1h", if_exists="replace", max_attempts=7, backoff=FixedBackoff(100), group="shop 1")
        job = queue.get("order:1")
        self.assertEqual((job.payload, job.max_attempts, job.group), ({"v": 3}, 7, "shop 1"))

    def test_at_takes_epoch_ms_and_rfc3339(self) -> None:
        queue = fresh_queue("at")
        queue.add(1, id="ms", at=1_900_000_000_000)
        self.assertEqual(queue.get("ms").due_at, 1_900_000_000_000)
        queue.add(1, id="text", at="2030-01-01T00:00:00Z")
        self.assertEqual(queue.get("text").due_at, 1_893_456_000_000)
        queue.reschedule("text", at=1_900_000_000_000)
        self.assertEqual(queue.get("text").due_at, 1_900_000_000_000)

    def test_add_bulk_returns_ids_in_order_and_writes_nothing_on_a_bad_entry(self) -> None:
        queue = fresh_queue("bulk")
        ids = queue.add_bulk([JobSpec({"n": 0}, id="a/1", delay=60_000), {"payload": {"n": 1}, "id": "b+2", "delay": "1m"}, JobSpec({"n": 2})])
        self.assertEqual(ids[:2], ["a/1", "b+2"])
        self.assertEqual(len(ids), 3)
        self.assertEqual(queue.get("b+2").payload, {"n": 1})
        self.assertEqual(queue.get(ids[2]).state, "ready")
        with self.assertRaises(ValidationError) as caught:
            queue.add_bulk([JobSpec(1, id="good"), JobSpec(2, id="bad", delay=-1)])
        self.assertEqual((caught.exception.status, caught.exception.code), (400, "VALIDATION"))
        with self.assertRaises(NotFound):
            queue.get("good")

    def test_errors_are_typed_by_code(self) -> None:
        queue = fresh_queue("errors")
        with self.assertRaises(ValidationError) as caught:
            queue.add(1, delay="soon")
        self.assertIn("delay", caught.exception.message)
        with self.assertRaises(ValidationError):
            queue.add({"big": 2**53 + 1})
        with self.assertRaises(ValidationError):
            queue.add(1, delay=1, at=2)
        queue.add(1, id="held")
        [claimed] = queue.claim(1, lease_ms=10_000)
        with self.assertRaises(JobRunning) as running:
            queue.cancel("held")
        self.assertEqual((running.exception.status, running.exception.code), (409, "JOB_RUNNING"))
        with self.assertRaises(JobRunning):
            queue.reschedule("held", delay=10)
        with self.assertRaises(Conflict):
            queue.add(2, id="held", if_exists="replace")
        queue.ack(claimed.id, claimed.token)

    def test_a_wrong_token_is_unauthorized_and_never_shown(self) -> None:
        url, token = service()
        wrong = "wrong-" + token[::-1]
        wrong_client = Sandglass(url, token=wrong)
        self.addCleanup(wrong_client.close)
        queue = wrong_client.queue("any")
        with self.assertRaises(Unauthorized) as caught:
            queue.add(1)
        self.assertEqual((caught.exception.status, caught.exception.code), (401, "UNAUTHORIZED"))
        for text in (str(caught.exception), repr(caught.exception), repr(queue), repr(queue.client)):
            self.assertNotIn(wrong, text)
            self.assertNotIn(token, text)
        without = Sandglass(url)
        self.addCleanup(without.close)
        with self.assertRaises(Unauthorized):
            without.queue("any").get("x")

    def test_the_real_client_never_shows_its_token(self) -> None:
        _, token = service()
        sandglass = client()
        queue = sandglass.queue("py-secrecy")
        try:
            queue.get("missing")
        except SandglassError as error:
            self.assertNotIn(token, str(error))
            self.assertNotIn(token, repr(error))
        self.assertNotIn(token, repr(sandglass))
        self.assertNotIn(token, repr(vars(sandglass)))

    def test_info(self) -> None:
        info = client().info()
        self.assertIn("version", info)
        self.assertEqual(info["redis"]["mode"], "single")

    def test_a_delay_is_measured_from_the_add(self) -> None:
        queue = fresh_queue("due")
        before = time.time() * 1000
        queue.add(1, id="soon", delay=5_000)
        after = time.time() * 1000
        # The Redis clock of a local private redis-server is this machine's clock.
        due_at = queue.get("soon").due_at
        self.assertGreaterEqual(due_at, int(before) + 5_000 - 1)
        self.assertLessEqual(due_at, int(after) + 5_000 + 1)


def tearDownModule() -> None:
    close_shared()


if __name__ == "__main__":
    unittest.main()
