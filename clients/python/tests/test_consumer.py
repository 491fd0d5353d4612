"""The pull consumer against the real service: claims, ack, fail, lease extension, a lost lease, stop, run()."""

from __future__ import annotations

import threading
import time
import unittest
from datetime import timedelta
from typing import List

from service import HARD_IDS, close_shared, fresh_queue

from sandglass_client import Job, JobAlreadySettled, NotFound, StaleToken


class PullConsumer(unittest.TestCase):
    def test_jobs_are_handed_out_never_before_they_are_due_and_acked(self) -> None:
        queue = fresh_queue("due")
        delays = {job_id: 200 + 60 * i for i, job_id in enumerate(HARD_IDS)}
        for job_id, delay in delays.items():
            queue.add({"id": job_id}, id=job_id, delay=delay)
        consumer = queue.consumer(lease_ms=5_000, wait_ms=1_000, batch=4)
        seen: List[str] = []
        for job in consumer.jobs():
            self.assertEqual(job.payload, {"id": job.id})
            self.assertEqual(job.attempt, 1)
            # Both on the Redis server's clock: exact, whatever the load on this machine.
            self.assertGreaterEqual(job.claimed_at, job.due_at, job.id)
            job.ack({"closed": job.id})
            seen.append(job.id)
            if len(seen) == len(delays):
                consumer.stop()
        self.assertEqual(sorted(seen), sorted(delays))
        for job_id in delays:
            with self.assertRaises(NotFound):
                queue.get(job_id)

    def test_fail_retries_after_retry_in_and_dead_letters(self) -> None:
        queue = fresh_queue("fail")
        queue.add({"n": 1}, id="retry me", max_attempts=3)
        [first] = queue.claim(1, lease_ms=5_000)
        self.assertEqual(first.attempt, 1)
        consumer = queue.consumer(lease_ms=5_000, wait_ms=2_000)
        jobs = consumer.jobs()
        # Through the consumer's Job: claim, fail with retry_in, claim again after it.
        queue.fail(first.id, first.token, retry_delay_ms=0)
        job = next(jobs)
        self.assertEqual(job.attempt, 2)
        result = job.fail(RuntimeError("payment provider down"), retry_in=timedelta(milliseconds=300))
        self.assertEqual(result.result, "retried")
        assert result.retry_at is not None
        info = queue.get("retry me")
        self.assertEqual((info.state, info.due_at, info.last_error), ("delayed", result.retry_at, "RuntimeError: payment provider down"))
        again = next(jobs)
        self.assertEqual(again.attempt, 3)
        self.assertGreaterEqual(again.claimed_at, result.retry_at)
        with self.assertRaises(ValueError):
            again.fail(retry_in=1, retry_delay_ms=1)
        self.assertEqual(again.fail("out of luck", dead=True).result, "dead")
        with self.assertRaises(JobAlreadySettled):
            again.ack()
        dead = queue.get("retry me")
        self.assertEqual((dead.state, dead.reason, dead.last_error), ("dead", "failed", "out of luck"))
        consumer.stop()
        jobs.close()

    def test_the_lease_is_extended_while_the_handler_runs(self) -> None:
        queue = fresh_queue("extend")
        queue.add("slow", id="slow/1")
        # Extended every 500 ms: a lease is lost only if an extension comes a second late.
        consumer = queue.consumer(lease_ms=1_500, wait_ms=1_000)
        for job in consumer.jobs():
            # Nearly three leases long: without extensions another claim would get the job.
            time.sleep(4.0)
            self.assertFalse(job.lease_lost)
            self.assertGreater(job.lease_extensions, 0)
            self.assertEqual(queue.claim(1, wait_ms=0), [])
            self.assertEqual(queue.get("slow/1").state, "active")
            job.ack()
            consumer.stop()
        with self.assertRaises(NotFound):
            queue.get("slow/1")

    def test_a_lost_lease_is_surfaced_on_the_job(self) -> None:
        queue = fresh_queue("lost")
        queue.add("contested", id="a+b")
        # Extensions every 1.5 s of a 400 ms lease: it runs out first, and another claim takes the job.
        consumer = queue.consumer(lease_ms=400, wait_ms=1_000, extend_every_ms=1_500)
        jobs = consumer.jobs()
        job = next(jobs)
        other = queue.claim(1, lease_ms=10_000, wait_ms=10_000)
        self.assertEqual([taken.id for taken in other], ["a+b"])
        deadline = time.monotonic() + 10
        while not job.lease_lost and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(job.lease_lost)
        self.assertIsInstance(job.lease_error, StaleToken)
        with self.assertRaises(StaleToken):
            job.ack()
        self.assertEqual(job.settled, "lost")
        queue.ack(other[0].id, other[0].token)
        consumer.stop()
        jobs.close()

    def test_stop_ends_the_iterator_once_the_claim_in_flight_returns(self) -> None:
        queue = fresh_queue("stop")
        consumer = queue.consumer(wait_ms=1_500)
        got: List[Job] = []
        ended = threading.Event()

        def consume() -> None:
            got.extend(consumer.jobs())
            ended.set()

        thread = threading.Thread(target=consume)
        thread.start()
        time.sleep(0.3)
        consumer.stop()
        self.assertTrue(consumer.stopped)
        # The claim in flight runs its wait out (nothing falls due), then the loop ends.
        thread.join(20)
        self.assertTrue(ended.is_set())
        self.assertEqual(got, [])

    def test_leaving_the_loop_hands_back_the_batch_jobs_not_given_out(self) -> None:
        queue = fresh_queue("handback")
        queue.add_bulk([{"payload": n, "id": f"job {n}"} for n in range(3)])
        consumer = queue.consumer(lease_ms=30_000, wait_ms=1_000, batch=3)
        jobs = consumer.jobs()
        for job in jobs:
            job.ack()
            break
        jobs.close()  # what leaving the loop does in CPython at once; explicit here
        # The other two were handed back (a failed attempt, due now), not left to a 30 s lease.
        again = queue.claim(3, wait_ms=5_000)
        if len(again) < 2:
            again += queue.claim(3, wait_ms=5_000)
        self.assertEqual(len(again), 2)
        for job in again:
            self.assertEqual(job.attempt, 2)
            queue.ack(job.id, job.token)

    def test_run_acks_on_return_and_fails_on_exception(self) -> None:
        queue = fresh_queue("run")
        queue.add({"ok": True}, id="good")
        queue.add({"ok": False}, id="bad", max_attempts=1)
        consumer = queue.consumer(wait_ms=500)
        handled: List[str] = []

        def handler(job: Job) -> object:
            handled.append(job.id)
            if len(handled) == 2:
                consumer.stop()
            if not job.payload["ok"]:
                raise ValueError(f"order {job.id} is broken")
            return {"closed": job.id}

        consumer.run(handler)
        self.assertEqual(sorted(handled), ["bad", "good"])
        with self.assertRaises(NotFound):
            queue.get("good")
        bad = queue.get("bad")
        self.assertEqual((bad.state, bad.last_error), ("dead", "ValueError: order bad is broken"))


def tearDownModule() -> None:
    close_shared()


if __name__ == "__main__":
    unittest.main()
