// docs/webhook-signature-vectors.json is the one statement of how a webhook is signed that every
// verifier (Node here, the Python and Java clients in theirs) is tested against.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { test } from 'node:test';
import { signPayload, verifySignature } from '../../src/server/signature.js';
import { signatureVectors } from '../helpers/webhook-vectors.js';

const vectors = signatureVectors;

test('every valid vector is what the service signs and what verifySignature accepts, over its exact bytes', () => {
  assert.ok(vectors.valid.length >= 5);
  for (const vector of vectors.valid) {
    assert.equal(Buffer.from(vector.body, 'utf8').toString('hex'), vector.bodyHex, vector.name);
    assert.equal(signPayload(vector.secret, vector.timestamp, vector.body), vector.signature, vector.name);
    // The key is the secret's UTF-8 bytes, computed here without the module under test.
    const independent = createHmac('sha256', Buffer.from(vector.secret, 'utf8'))
      .update(Buffer.concat([Buffer.from(`${vector.timestamp}.`), Buffer.from(vector.bodyHex, 'hex')]))
      .digest('hex');
    assert.equal(`v1=${independent}`, vector.signature, vector.name);
    const nowMs = vector.timestamp * 1000;
    assert.equal(
      verifySignature(vector.secret, String(vector.timestamp), Buffer.from(vector.bodyHex, 'hex'), vector.signature, { nowMs }),
      true,
      vector.name,
    );
  }
});

test('every invalid vector is refused', () => {
  assert.ok(vectors.invalid.length >= 4);
  for (const vector of vectors.invalid) {
    const nowMs = vector.timestamp * 1000;
    assert.equal(
      verifySignature(vector.secret, String(vector.timestamp), Buffer.from(vector.bodyHex, 'hex'), vector.signature, { nowMs }),
      false,
      vector.name,
    );
  }
});
