/**
 * The keys that sign media addresses, upload credentials and console sessions: random, kept with
 * the metadata (the same on every node), each node told of a rotation (keys/keyRing.ts).
 */
import type { ServerOptions } from '../config.js';
import { MEDIA_TTL_RANGE } from '../core/mediaTtl.js';
import { UploadCredentials } from '../ingest/uploadCredential.js';
import { KeyRing, type KeyRingDeps } from '../keys/keyRing.js';
import { MediaTokens } from '../keys/mediaTokens.js';
import { MediaAccess } from '../services/mediaAccess.js';
import { SigningKeysService } from '../services/signingKeys.js';
import type { Foundation } from './foundation.js';
import type { Parts } from './parts.js';

export interface SigningKeys {
  uploadKeys: KeyRing;
  consoleKeys: KeyRing;
  /** The rings as the console's Keys page lists and rotates them. */
  service: SigningKeysService;
  /** A video's media addresses as its application serves them (public, or signed). */
  mediaAccess: MediaAccess;
}

export async function openSigningKeys(options: ServerOptions, { stores, events }: Foundation, parts: Parts): Promise<SigningKeys> {
  const { log } = options;
  const open = async (purpose: KeyRingDeps['purpose'], firstKey?: KeyRingDeps['firstKey']): Promise<KeyRing> => {
    const ring = await KeyRing.open({ store: stores.signingKeys, purpose, events, log, firstKey });
    // Its refresh timer reads the keys' table: stopped before the database closes.
    parts.add({ name: `the ${purpose} keys`, stop: () => ring.close() });
    return ring;
  };
  const mediaKeys = await open('media');
  // The embedded mode takes the upload key it kept in a file before as its first, so upload pages
  // already open keep working.
  const uploadKeys = await open('uploads', options.databaseUrl ? undefined : () => UploadCredentials.legacyKey(options.dataDir));
  // The console sessions' secrets are made with this one (console/consoleSessions.ts).
  const consoleKeys = await open('console');
  const service = new SigningKeysService(
    { media: mediaKeys, uploads: uploadKeys, console: consoleKeys },
    // An old key checks until the longest-lived of what it signed is over: a media address's
    // lifetime (plus the step its expiry is rounded up by), an upload page's credential. The
    // console's sessions are made with the key that signs alone: a rotation ends them.
    { media: (MEDIA_TTL_RANGE.max + 60) * 1000, uploads: options.ingest.credentialTtlMs, console: 0 },
  );
  const mediaAccess = new MediaAccess({ apps: stores.apps, tokens: new MediaTokens(mediaKeys) });
  return { uploadKeys, consoleKeys, service, mediaAccess };
}
