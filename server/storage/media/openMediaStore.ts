import type { LocalMediaRoot } from './localMediaRoot.js';
import { LocalObjectMediaStore } from './localObjectMediaStore.js';
import type { MediaStore } from './mediaStore.js';
import { openS3MediaStore } from './s3MediaStore.js';
import { s3OptionsFromEnv, type S3MediaStoreOptions } from './s3Options.js';

/**
 * The media store this node uses: S3-compatible object storage when `VOP_S3_ENDPOINT` is set
 * (waiting, bounded and logged, for the endpoint and creating the bucket when missing), local disk
 * under the data directory otherwise. `close` releases the store's connections.
 */
export async function openMediaStore(
  local: LocalMediaRoot,
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<S3MediaStoreOptions> = {},
): Promise<{ store: MediaStore; close(): void }> {
  const s3 = s3OptionsFromEnv(env);
  if (!s3) return { store: new LocalObjectMediaStore(local), close: () => undefined };
  const store = await openS3MediaStore({ ...s3, ...overrides });
  return { store, close: () => store.close() };
}
