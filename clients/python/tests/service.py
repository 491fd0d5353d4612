"""The service the tests run against: ``SANDGLASS_URL`` and ``SANDGLASS_TOKEN`` from the environment.

test/clients/python.test.ts starts a real ``sandglass serve`` on a private Redis and sets them. Run
by hand without them, the tests that need the service are skipped (the Node test fails on any skip).
"""

from __future__ import annotations

import os
import unittest
import uuid
from typing import List, Tuple

from sandglass_client import Queue, Sandglass

#: Ids with every character that URL encoding gets wrong: `/`, space, `+`, `%`, `:` and non-ASCII.
HARD_IDS = ("order/42 a+b%c Zürich", "a+b", "100%", "x/y/z", " leading space", "日本語 ✓", "order:42", "?#&=;")


def service() -> Tuple[str, str]:
    """The service's URL and token; skips the test when the environment does not name one."""
    url = os.environ.get("SANDGLASS_URL")
    token = os.environ.get("SANDGLASS_TOKEN")
    if not url or not token:
        raise unittest.SkipTest("SANDGLASS_URL and SANDGLASS_TOKEN are not set (test/clients/python.test.ts sets them)")
    return url, token


_shared: List[Sandglass] = []


def client() -> Sandglass:
    """The client of the service under test, shared by the tests (one connection per thread, reused)."""
    if not _shared:
        url, token = service()
        _shared.append(Sandglass(url, token=token))
    return _shared[0]


def close_shared() -> None:
    """Closes the shared client's connections (a module's tearDownModule)."""
    for shared in _shared:
        shared.close()


def fresh_queue(name: str) -> Queue:
    """A queue no other test uses: tests never see each other's jobs."""
    return client().queue(f"py-{name}-{uuid.uuid4().hex[:12]}")
