/**
 * Options of object storage (issue 11, item 2). Object storage is on when `VOP_S3_ENDPOINT` is
 * set; {@link s3OptionsFromEnv} reads the rest and {@link validateS3Options} names the first bad one.
 */
export interface S3MediaStoreOptions {
  /** The S3 endpoint, `http(s)://host[:port]` (VOP_S3_ENDPOINT). */
  endpoint: string;
  /** The bucket media live in; created when missing (VOP_S3_BUCKET). */
  bucket: string;
  /** The region requests are signed for (VOP_S3_REGION, default us-east-1). */
  region: string;
  /** Access key id (VOP_S3_ACCESS_KEY_ID). */
  accessKeyId: string;
  /** Secret access key (VOP_S3_SECRET_ACCESS_KEY). */
  secretAccessKey: string;
  /** `bucket` in the path, not the host name: Ceph RGW, SeaweedFS, Garage (VOP_S3_FORCE_PATH_STYLE=1). */
  forcePathStyle: boolean;
  /** Creates the bucket when it is missing (start-up). */
  createBucketIfMissing: boolean;
  /** How long start-up waits for the endpoint to answer before it gives up, in ms. */
  waitForEndpointMs: number;
  /** Pause between two tries while waiting for the endpoint, in ms. */
  waitIntervalMs: number;
  /** Objects larger than this are uploaded in parts (multipart upload), in bytes; at least 5 MiB. */
  partSizeBytes: number;
  /** Parts uploaded at once by one put. */
  queueSize: number;
  /** Keys per list request (S3's most is 1000); deletePrefix removes one page at a time. */
  listPageSize: number;
  /** Folder for the scratch copies of withLocalCopy (default: the system's temporary folder). */
  scratchDir?: string;
  /** Where the wait for the endpoint is reported (default console.log). */
  log: (line: string) => void;
}

/** The defaults of every option that has one. */
export const DEFAULT_S3_OPTIONS = {
  region: 'us-east-1',
  forcePathStyle: false,
  createBucketIfMissing: true,
  waitForEndpointMs: 60_000,
  waitIntervalMs: 1_000,
  partSizeBytes: 8 * 1024 * 1024,
  queueSize: 4,
  listPageSize: 1000,
  log: (line: string) => console.log(line),
} satisfies Partial<S3MediaStoreOptions>;

/** S3's own bucket naming rules (3–63 characters, lower case, digits, dots, hyphens). */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** Fills in the defaults and checks every option; throws an error naming the first bad one. */
export function validateS3Options(input: Partial<S3MediaStoreOptions>): S3MediaStoreOptions {
  const o = { ...DEFAULT_S3_OPTIONS, ...input } as S3MediaStoreOptions;
  const bad = (name: string, why: string): never => {
    throw new Error(`Invalid object storage option ${name}: ${why}`);
  };
  let url: URL | undefined;
  try {
    url = new URL(o.endpoint);
  } catch {
    bad('endpoint (VOP_S3_ENDPOINT)', `${JSON.stringify(o.endpoint)} is not a URL`);
  }
  if (url!.protocol !== 'http:' && url!.protocol !== 'https:') bad('endpoint (VOP_S3_ENDPOINT)', 'must be an http:// or https:// URL');
  if (url!.username || url!.password) bad('endpoint (VOP_S3_ENDPOINT)', 'must not hold credentials: use VOP_S3_ACCESS_KEY_ID and VOP_S3_SECRET_ACCESS_KEY');
  if (typeof o.bucket !== 'string' || !BUCKET.test(o.bucket) || o.bucket.includes('..')) {
    bad('bucket (VOP_S3_BUCKET)', `${JSON.stringify(o.bucket)} is not a bucket name (3–63 of a-z 0-9 . -)`);
  }
  if (typeof o.region !== 'string' || !/^[a-z0-9-]{1,64}$/.test(o.region)) bad('region (VOP_S3_REGION)', `${JSON.stringify(o.region)} is not a region name`);
  if (typeof o.accessKeyId !== 'string' || !o.accessKeyId) bad('accessKeyId (VOP_S3_ACCESS_KEY_ID)', 'is required');
  if (typeof o.secretAccessKey !== 'string' || !o.secretAccessKey) bad('secretAccessKey (VOP_S3_SECRET_ACCESS_KEY)', 'is required');
  if (!Number.isSafeInteger(o.waitForEndpointMs) || o.waitForEndpointMs < 0) bad('waitForEndpointMs', 'must be a whole number of ms ≥ 0');
  if (!Number.isSafeInteger(o.waitIntervalMs) || o.waitIntervalMs < 10) bad('waitIntervalMs', 'must be a whole number of ms ≥ 10');
  if (!Number.isSafeInteger(o.partSizeBytes) || o.partSizeBytes < 5 * 1024 * 1024) bad('partSizeBytes', 'must be at least 5 MiB (S3\'s smallest part)');
  if (!Number.isSafeInteger(o.queueSize) || o.queueSize < 1 || o.queueSize > 64) bad('queueSize', 'must be 1 to 64');
  if (!Number.isSafeInteger(o.listPageSize) || o.listPageSize < 1 || o.listPageSize > 1000) bad('listPageSize', 'must be 1 to 1000');
  return { ...o, endpoint: url!.toString().replace(/\/$/, '') };
}

/**
 * The options named by the environment, or undefined when `VOP_S3_ENDPOINT` is not set (media
 * stay on local disk). Throws, naming the variable, when one is missing or wrong.
 */
export function s3OptionsFromEnv(env: NodeJS.ProcessEnv = process.env): S3MediaStoreOptions | undefined {
  const endpoint = env.VOP_S3_ENDPOINT?.trim();
  if (!endpoint) return undefined;
  const pathStyle = (env.VOP_S3_FORCE_PATH_STYLE ?? '').trim();
  if (!['', '0', '1'].includes(pathStyle)) {
    throw new Error(`Invalid object storage option forcePathStyle (VOP_S3_FORCE_PATH_STYLE): ${JSON.stringify(pathStyle)} is neither 1 nor 0`);
  }
  return validateS3Options({
    endpoint,
    bucket: env.VOP_S3_BUCKET?.trim() ?? '',
    region: env.VOP_S3_REGION?.trim() || DEFAULT_S3_OPTIONS.region,
    accessKeyId: env.VOP_S3_ACCESS_KEY_ID ?? '',
    secretAccessKey: env.VOP_S3_SECRET_ACCESS_KEY ?? '',
    forcePathStyle: pathStyle === '1',
  });
}

/**
 * The S3 client settings every client of vop's bucket uses (the media store, tus's S3 store), so
 * the two cannot differ: checksums only where S3 requires them (the SDK's newer default,
 * aws-chunked bodies with a trailing CRC32, is refused by servers that predate it, Ceph RGW 16
 * among them), three tries, bounded connects and requests.
 */
export function s3ClientConfig(o: S3MediaStoreOptions) {
  return {
    endpoint: o.endpoint,
    region: o.region,
    forcePathStyle: o.forcePathStyle,
    credentials: { accessKeyId: o.accessKeyId, secretAccessKey: o.secretAccessKey },
    requestChecksumCalculation: 'WHEN_REQUIRED' as const,
    responseChecksumValidation: 'WHEN_REQUIRED' as const,
    maxAttempts: 3,
    requestHandler: { connectionTimeout: 10_000, requestTimeout: 120_000 },
  };
}
