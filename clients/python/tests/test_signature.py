"""verify_signature against docs/webhook-signature-vectors.json, and its refusals."""

from __future__ import annotations

import json
import unittest
from pathlib import Path

from sandglass_client import sign_payload, verify_signature

VECTORS = json.loads((Path(__file__).resolve().parents[3] / "docs" / "webhook-signature-vectors.json").read_text("utf-8"))
SECRET = "whsec-test-0123456789abcdef"


class SignatureVectors(unittest.TestCase):
    def test_every_valid_vector_is_accepted_at_its_timestamp(self) -> None:
        self.assertGreater(len(VECTORS["valid"]), 0)
        for vector in VECTORS["valid"]:
            with self.subTest(vector["name"]):
                body = bytes.fromhex(vector["bodyHex"])
                self.assertEqual(body, vector["body"].encode("utf-8"))
                self.assertTrue(verify_signature(vector["secret"], vector["timestamp"], body, vector["signature"], now=vector["timestamp"]))
                # The timestamp as the header's text, and the body as text: the same.
                self.assertTrue(verify_signature(vector["secret"], str(vector["timestamp"]), vector["body"], vector["signature"], now=vector["timestamp"]))
                self.assertEqual(sign_payload(vector["secret"], vector["timestamp"], body), vector["signature"])

    def test_every_invalid_vector_is_refused(self) -> None:
        self.assertGreater(len(VECTORS["invalid"]), 0)
        for vector in VECTORS["invalid"]:
            with self.subTest(vector["name"]):
                body = bytes.fromhex(vector["bodyHex"])
                self.assertFalse(verify_signature(vector["secret"], vector["timestamp"], body, vector["signature"], now=vector["timestamp"]))

    def test_the_timestamp_must_be_within_the_tolerance(self) -> None:
        signature = sign_payload(SECRET, 1_000_000, b"{}")
        self.assertTrue(verify_signature(SECRET, 1_000_000, b"{}", signature, now=1_000_300))
        self.assertTrue(verify_signature(SECRET, 1_000_000, b"{}", signature, now=999_700))
        self.assertFalse(verify_signature(SECRET, 1_000_000, b"{}", signature, now=1_000_301))
        self.assertFalse(verify_signature(SECRET, 1_000_000, b"{}", signature, now=999_699))
        self.assertTrue(verify_signature(SECRET, 1_000_000, b"{}", signature, tolerance_seconds=10, now=1_000_010))
        self.assertFalse(verify_signature(SECRET, 1_000_000, b"{}", signature, tolerance_seconds=10, now=1_000_011))

    def test_the_clock_is_the_default_now(self) -> None:
        import time

        now = int(time.time())
        self.assertTrue(verify_signature(SECRET, now, b"x", sign_payload(SECRET, now, b"x")))
        self.assertFalse(verify_signature(SECRET, now - 3600, b"x", sign_payload(SECRET, now - 3600, b"x")))

    def test_malformed_timestamps_and_headers_are_refused(self) -> None:
        signature = sign_payload(SECRET, 1_000_000, b"{}")
        for timestamp in ("1000000\n", " 1000000", "+1000000", "1e6", "1000000.0", "", None, True, "１０００"):
            with self.subTest(timestamp=timestamp):
                self.assertFalse(verify_signature(SECRET, timestamp, b"{}", signature, now=1_000_000))  # type: ignore[arg-type]
        for header in (None, "", "v1=", signature[3:], "v0=" + signature[3:], signature + "00", signature[:-1], "v1=" + "g" * 64):
            with self.subTest(header=header):
                self.assertFalse(verify_signature(SECRET, 1_000_000, b"{}", header, now=1_000_000))
        # Surrounding whitespace and uppercase hex are accepted, as the Node verifier accepts them.
        self.assertTrue(verify_signature(SECRET, 1_000_000, b"{}", f"  {signature}\n", now=1_000_000))
        self.assertTrue(verify_signature(SECRET, 1_000_000, b"{}", "v1=" + signature[3:].upper(), now=1_000_000))

    def test_secrets_shorter_than_16_characters_are_refused_with_a_clear_error(self) -> None:
        for secret in ("", "short", "x" * 15, "🔑" * 7 + "x"):  # the last is 15 UTF-16 units
            with self.subTest(secret=secret):
                with self.assertRaisesRegex(ValueError, "at least 16 characters"):
                    verify_signature(secret, 1, b"", "v1=" + "0" * 64, now=1)
                with self.assertRaisesRegex(ValueError, "at least 16 characters"):
                    sign_payload(secret, 1, b"")
        with self.assertRaises(TypeError):
            verify_signature(None, 1, b"", "v1=" + "0" * 64, now=1)  # type: ignore[arg-type]
        # 16 characters is enough; an astral character counts 2, as the service counts it.
        self.assertTrue(verify_signature("x" * 16, 1, b"", sign_payload("x" * 16, 1, b""), now=1))
        self.assertTrue(verify_signature("🔑" * 8, 1, b"", sign_payload("🔑" * 8, 1, b""), now=1))


if __name__ == "__main__":
    unittest.main()
