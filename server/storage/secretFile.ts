import fs from 'node:fs';

/**
 * A secret kept in a file of its own (the admin token, the upload credential key): the file's
 * text (trimmed) if `isValid` accepts it; otherwise, and when the file is missing, `generate()`
 * written there readable by the owner only. chmod follows the write because `mode` applies only
 * when the file is created, and an existing file with a rejected secret may be wider.
 * Errors other than a missing file are thrown: a secret that cannot be read must not be replaced.
 */
export function loadOrCreateSecret(file: string, generate: () => string, isValid: (text: string) => boolean): string {
  try {
    const existing = fs.readFileSync(file, 'utf8').trim();
    if (isValid(existing)) return existing;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const secret = generate();
  fs.writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  fs.chmodSync(file, 0o600);
  return secret;
}
