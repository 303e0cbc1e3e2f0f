/**
 * Options of the console's housekeeping (issue 13, item 4): registrations never uploaded expire,
 * stalled uploads are marked, storage is counted. Defaults here, checked by
 * {@link resolveHousekeepingOptions} with an error that names the bad option.
 */
export interface HousekeepingOptions {
  /**
   * Days after its registration a video still waiting for its file (status 8) is deleted, as an
   * admin's delete does (status 0, its files removed, the record kept). 0: never. Fractions are
   * taken (tests use them); the console sets whole days.
   */
  expireUnuploadedDays: number;
  /** How often the sweep of expired registrations runs, ms. */
  expirySweepMs: number;
  /** Most expired registrations one sweep deletes (the next sweep goes on): a sweep stays short. */
  expiryBatch: number;
  /** An upload with no byte for this many minutes is marked stalled in the console, where an admin may cancel it. */
  stalledUploadMinutes: number;
  /** How long the storage figures (a listing of every media object) are reused, ms. */
  storageCacheMs: number;
}

export const DEFAULT_HOUSEKEEPING_OPTIONS: HousekeepingOptions = {
  expireUnuploadedDays: 7,
  expirySweepMs: 10 * 60_000,
  expiryBatch: 500,
  stalledUploadMinutes: 10,
  storageCacheMs: 60_000,
};

/** The defaults under `input`, checked. */
export function resolveHousekeepingOptions(input: Partial<HousekeepingOptions> = {}): HousekeepingOptions {
  const o = { ...DEFAULT_HOUSEKEEPING_OPTIONS, ...input };
  const check = (key: keyof HousekeepingOptions, ok: boolean, rule: string) => {
    if (!ok) throw new Error(`Option housekeeping.${key} must be ${rule}.`);
  };
  check('expireUnuploadedDays', Number.isFinite(o.expireUnuploadedDays) && o.expireUnuploadedDays >= 0 && o.expireUnuploadedDays <= 36_500, 'a number of days from 0 (never) to 36500');
  check('expirySweepMs', Number.isSafeInteger(o.expirySweepMs) && o.expirySweepMs >= 10, 'a whole number of at least 10');
  check('expiryBatch', Number.isSafeInteger(o.expiryBatch) && o.expiryBatch >= 1, 'a whole number of at least 1');
  check('stalledUploadMinutes', Number.isFinite(o.stalledUploadMinutes) && o.stalledUploadMinutes > 0, 'a number of minutes greater than 0');
  check('storageCacheMs', Number.isSafeInteger(o.storageCacheMs) && o.storageCacheMs >= 0, 'a whole number, 0 or more');
  return o;
}
