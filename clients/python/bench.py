"""Throughput of the Python client against a running ``sandglass serve``.

    SANDGLASS_URL=http://127.0.0.1:8080 SANDGLASS_TOKEN=... python3 clients/python/bench.py [--jobs 5000] [--bulk 100] [--threads 1] [--batch 100]

Phases, each on a fresh queue and timed alone:
- add_bulk: ``--jobs`` jobs in requests of ``--bulk``;
- add: ``--jobs`` jobs one request each, from ``--threads`` threads (the client is thread-safe: one
  keep-alive connection per thread);
- consume: the jobs of both phases claimed (``--batch`` per claim) and acked one by one with the
  pull consumer (``for job in consumer.jobs(): job.ack()``), one thread.
Prints one line per phase and a JSON line with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))

from sandglass_client import JobSpec, Queue, Sandglass  # noqa: E402


def add_bulk(queue: Queue, jobs: int, bulk: int) -> float:
    """Adds ``jobs`` jobs in requests of ``bulk``; the seconds it took."""
    started = time.perf_counter()
    for first in range(0, jobs, bulk):
        queue.add_bulk([JobSpec({"orderId": n, "note": "close the order if unpaid"}) for n in range(first, min(jobs, first + bulk))])
    return time.perf_counter() - started


def add_single(queue: Queue, jobs: int, threads: int) -> float:
    """Adds ``jobs`` jobs one per request from ``threads`` threads; the seconds it took."""
    share = [jobs // threads + (1 if i < jobs % threads else 0) for i in range(threads)]

    def work(count: int) -> None:
        for n in range(count):
            queue.add({"orderId": n, "note": "close the order if unpaid"})

    workers = [threading.Thread(target=work, args=(count,)) for count in share]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return time.perf_counter() - started


def consume(queue: Queue, jobs: int, batch: int) -> float:
    """Claims and acks ``jobs`` jobs with the pull consumer; the seconds it took."""
    consumer = queue.consumer(lease_ms=60_000, wait_ms=1_000, batch=batch)
    done = 0
    started = time.perf_counter()
    for job in consumer.jobs():
        job.ack()
        done += 1
        if done == jobs:
            consumer.stop()
    return time.perf_counter() - started


def main() -> None:
    """Runs the phases and prints the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--bulk", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch", type=int, default=100)
    args = parser.parse_args()
    client = Sandglass(os.environ.get("SANDGLASS_URL", "http://127.0.0.1:8080"), token=os.environ.get("SANDGLASS_TOKEN"))
    run = uuid.uuid4().hex[:8]
    queue = client.queue(f"py-bench-{run}")
    figures: Dict[str, float] = {}
    lines: List[str] = []

    def report(name: str, jobs: int, seconds: float, requests: int) -> None:
        figures[name] = round(jobs / seconds)
        lines.append(f"  {name:<44} {jobs / seconds:>9.0f} jobs/s {requests / seconds:>8.0f} req/s  ({jobs} jobs in {seconds:.2f} s)")
        print(lines[-1], flush=True)

    print(f"Python client bench: {args.jobs} jobs per add phase, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs", flush=True)
    seconds = add_bulk(queue, args.jobs, args.bulk)
    report(f"add_bulk, {args.bulk} jobs per request", args.jobs, seconds, -(-args.jobs // args.bulk))
    seconds = add_single(queue, args.jobs, args.threads)
    report(f"add, 1 job per request, {args.threads} thread(s)", args.jobs, seconds, args.jobs)
    seconds = consume(queue, 2 * args.jobs, args.batch)
    # One claim per batch plus one ack per job.
    report(f"consume: claim {args.batch} + ack each, 1 thread", 2 * args.jobs, seconds, 2 * args.jobs + -(-2 * args.jobs // args.batch))
    client.close()
    print(json.dumps({"jobs": args.jobs, "bulk": args.bulk, "threads": args.threads, "batch": args.batch, "jobsPerSecond": figures}))


if __name__ == "__main__":
    main()
