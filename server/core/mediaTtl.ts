/**
 * The shortest and longest lifetime of a signed media address, in seconds: what the admin API
 * takes for an application's lifetime and a playback's, and what the console's field offers.
 * On the ground floor so the console reads the same bounds the server checks.
 */
export const MEDIA_TTL_RANGE = { min: 10, max: 86_400 } as const;
