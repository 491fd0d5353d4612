// docs/webhook-signature-vectors.json, read once for the tests of every verifier that checks it.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** One vector: a request as the service signs it, and the header it carries. */
export interface SignatureVector {
  name: string;
  secret: string;
  /** Unix seconds, as sent in `Sandglass-Timestamp`. */
  timestamp: number;
  /** The body as text (its UTF-8 bytes are `bodyHex`). */
  body: string;
  /** The exact body bytes, hex. */
  bodyHex: string;
  /** The `Sandglass-Signature` header. */
  signature: string;
}

/** The vectors file's path. */
export const SIGNATURE_VECTORS_FILE = fileURLToPath(new URL('../../docs/webhook-signature-vectors.json', import.meta.url));

/** The vectors a verifier must accept (`valid`, at their own second) and refuse (`invalid`). */
export const signatureVectors = JSON.parse(readFileSync(SIGNATURE_VECTORS_FILE, 'utf8')) as {
  valid: SignatureVector[];
  invalid: SignatureVector[];
};
