"""Order timeout: close every unpaid order when its payment window ends, exactly once, never early.

    SANDGLASS_URL=http://127.0.0.1:8080 SANDGLASS_TOKEN=... python3 examples/order_timeout.py

Adds 20 jobs "close order N in D ms" with ids ``order:N``, cancels the 7 orders that get paid before
their window ends, then closes the other 13 with a pull consumer as each falls due. Prints one JSON
line: the closed and cancelled ids, how many times each order was closed and delivered, the earliest-start
margin (claim time minus due time, both on the Redis server's clock: never negative), and each
closed order's times (epoch ms: ``addedAt`` on this machine's clock just before the add, its
``delayMs``, ``dueAt`` and ``claimedAt`` on the Redis clock, ``startedAt`` when the handler began). Exits 1 when
an order was closed twice, early, or was a paid one, or when the 13 are not all closed in time.

The paid orders are every third from ``order:2`` (7 of 20). Options (environment): ORDERS (20),
BASE_DELAY_MS (2000: the first due time, after the adds and cancels are done), STEP_MS (50 between
due times), DEADLINE_S (60).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Dict, List

# Runnable from a checkout without installing the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sandglass_client import Job, Sandglass  # noqa: E402


def main() -> int:
    """Runs the example; the exit code."""
    orders = int(os.environ.get("ORDERS", "20"))
    base_delay_ms = int(os.environ.get("BASE_DELAY_MS", "2000"))
    step_ms = int(os.environ.get("STEP_MS", "50"))
    deadline_s = float(os.environ.get("DEADLINE_S", "60"))
    client = Sandglass(os.environ.get("SANDGLASS_URL", "http://127.0.0.1:8080"), token=os.environ.get("SANDGLASS_TOKEN"))
    # A queue of its own per run: a second run never sees the first one's orders.
    queue = client.queue(f"order-timeout-{uuid.uuid4().hex[:8]}")

    delays = {f"order:{n}": base_delay_ms + step_ms * (n - 1) for n in range(1, orders + 1)}
    paid = [f"order:{n}" for n in range(1, orders + 1) if n % 3 == 2]  # 2, 5, 8, ...: 7 of 20
    added_at: Dict[str, int] = {}
    for order_id, delay_ms in delays.items():
        # Taken before the add: the due time the service sets is at least this plus the delay.
        added_at[order_id] = int(time.time() * 1000)
        queue.add({"orderId": order_id, "action": "close", "delayMs": delay_ms}, id=order_id, delay=delay_ms)

    # Paid before its window ends: the close must never happen. The consumer starts only after
    # these cancels, so each finds its job waiting; `cancelledAfterDue` lists those whose answer
    # came after the due time (a very slow machine: BASE_DELAY_MS too short for it).
    cancelled: List[str] = []
    cancelled_after_due: List[str] = []
    for order_id in paid:
        queue.cancel(order_id)
        cancelled.append(order_id)
        if time.time() * 1000 >= added_at[order_id] + delays[order_id]:
            cancelled_after_due.append(order_id)

    to_close = len(delays) - len(cancelled)
    closes: Dict[str, int] = {}
    deliveries: Dict[str, int] = {}
    timings: Dict[str, Dict[str, int]] = {}
    margins_ms: List[int] = []
    early: List[str] = []
    consumer = queue.consumer(lease_ms=10_000, wait_ms=1_000)
    # The deadline stops the consumer, so a lost job fails the run instead of hanging it.
    timer = threading.Timer(deadline_s, consumer.stop)
    timer.daemon = True
    timer.start()

    def close_order(job: Job) -> None:
        started_at = int(time.time() * 1000)
        deliveries[job.id] = deliveries.get(job.id, 0) + 1
        timings.setdefault(job.id, {"addedAt": added_at[job.id], "delayMs": delays[job.id], "dueAt": job.due_at, "claimedAt": job.claimed_at, "startedAt": started_at})
        margin = job.claimed_at - job.due_at
        margins_ms.append(margin)
        if margin < 0:
            early.append(job.id)
        # Idempotent by order id: a job delivered again (its lease lost under load) closes nothing twice.
        if job.id not in closes:
            closes[job.id] = 1  # here a real service closes the order in its database
        if len(closes) >= to_close:
            consumer.stop()

    consumer.run(close_order)
    timer.cancel()
    client.close()

    closed = sorted(closes, key=lambda order_id: int(order_id.split(":")[1]))
    summary = {
        "closed": closed,
        "cancelled": cancelled,
        "cancelledAfterDue": cancelled_after_due,
        "closes": closes,
        "deliveries": deliveries,
        "earliestStartMarginMs": min(margins_ms) if margins_ms else None,
        "early": early,
        "timings": timings,
    }
    print(json.dumps(summary))
    ok = len(closed) == to_close and all(count == 1 for count in closes.values()) and not early and not set(closed) & set(cancelled)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
