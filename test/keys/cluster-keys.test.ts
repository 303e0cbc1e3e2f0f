/**
 * The signing keys across the nodes of a cluster: random, kept in PostgreSQL (`signing_keys`), the
 * same on every node, never derived from the admin token; a rotation through one node reaches
 * every other within a second, a revoked key's addresses refused there too. Two real servers on
 * one real PostgreSQL, over real HTTP.
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyRing } from '../../server/keys/keyRing.js';
import { MediaTokens } from '../../server/keys/mediaTokens.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { notYet, waitUntil } from '../helpers/wait.js';

let postgres: TestPostgres;
let a: TestServer;
let b: TestServer;
beforeAll(async () => {
  postgres = await startPostgres();
  const databaseUrl = await postgres.createDatabase();
  a = await startServer({ databaseUrl, sharedMedia: true });
  b = await startServer({ databaseUrl, sharedMedia: true });
}, 60_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
  postgres?.stop();
});

/** A media token signed now with the key the database says signs (as a node would sign it). */
async function signNow(videoId: string): Promise<string> {
  const ring = await KeyRing.open({ store: a.vop.stores.signingKeys, purpose: 'media', events: a.vop.events, log: () => {} });
  try {
    return new MediaTokens(ring).sign(videoId, 600, 'cover');
  } finally {
    ring.close();
  }
}

/** What `node` answers a signed cover address of `videoId` (a video nobody has): 404 once the token passes, 403 (420) if refused. */
async function coverStatus(node: TestServer, token: string, videoId: string): Promise<number> {
  const r = await fetch(`${node.baseUrl}/media/s/${token}/cover/${videoId}.jpg`);
  await r.arrayBuffer();
  return r.status;
}

describe('signing keys across nodes', () => {
  it('every node holds the same keys, and another cluster with the same admin token holds others', async () => {
    const onA = await a.admin.request('GET', '/keys');
    const onB = await b.admin.request('GET', '/keys');
    expect(onA.status).toBe(200);
    expect(onB.body).toEqual(onA.body);
    expect(onA.body.uploads).toHaveLength(1);
    // A second cluster (its own database), the same admin token: other keys. They are random,
    // not made from the token, so a page's credential is no test of guesses at it.
    const other = await startServer({ databaseUrl: await postgres.createDatabase(), sharedMedia: true });
    try {
      const mine = await a.vop.stores.signingKeys.list('uploads', Date.now());
      const theirs = await other.vop.stores.signingKeys.list('uploads', Date.now());
      expect(theirs[0]!.secret).not.toBe(mine[0]!.secret);
      expect(mine[0]!.secret).toMatch(/^[0-9a-f]{64}$/);
    } finally {
      await other.close();
    }
  });

  it('a rotation through one node reaches the other within a second; a revoked key is refused there too', async () => {
    const videoId = crypto.randomUUID();
    const before = await signNow(videoId);
    expect(await coverStatus(a, before, videoId)).toBe(404);
    expect(await coverStatus(b, before, videoId)).toBe(404);

    const rotated = await a.admin.request('POST', '/keys/media/rotate', { revokeOld: true });
    expect(rotated.status).toBe(200);
    const rotatedAt = Date.now();
    const after = await signNow(videoId);
    expect(after.split('.')[0]).toBe(rotated.body.keys[0].id);
    // The new key checks on the other node at once (an id it does not know makes it read the keys).
    expect(await coverStatus(b, after, videoId)).toBe(404);
    // The revoked one stops there within a second (the rotation's event, relayed).
    await waitUntil('the revoked key refused on B', async () => {
      const status = await coverStatus(b, before, videoId);
      return status === 403 ? true : notYet(status);
    }, { timeoutMs: 3000 - (Date.now() - rotatedAt), pollMs: 25 });
    expect(Date.now() - rotatedAt).toBeLessThan(1000);
    // And the other node signs with the new key.
    expect((await b.admin.request('GET', '/keys')).body.media.map((k: { id: string }) => k.id)).toEqual([rotated.body.keys[0].id]);
  });
});
