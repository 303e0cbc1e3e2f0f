import { Transform } from 'node:stream';

export interface ReceiveMeterOptions {
  /** Called with the bytes passed on so far, after each chunk (to shrink the upload's reservation). */
  onBytes: (total: number) => void;
  /** Checked before the first chunk and then after every `everyBytes`: a rejection stops the stream with it. */
  check: () => Promise<void>;
  everyBytes: number;
}

/**
 * A pass-through for the bytes of an upload on their way to the file (issue 12, item 7): counts
 * them, and holds the next chunk back until `check` (the free space) has passed, before the first
 * chunk and then every `everyBytes`. A failed check errors the stream, so the pipeline that
 * writes the file rejects with the check's own error and nothing past that chunk is written.
 */
export function receiveMeter(opts: ReceiveMeterOptions): Transform {
  let total = 0;
  let nextCheck = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      const pass = () => {
        total += chunk.length;
        opts.onBytes(total);
        callback(null, chunk);
      };
      if (total < nextCheck) return pass();
      nextCheck = total + opts.everyBytes;
      opts.check().then(pass, (err: unknown) => callback(err as Error));
    },
  });
}
