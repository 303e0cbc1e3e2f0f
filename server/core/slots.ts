/**
 * A bound on how many of something run at once: the rest wait, first come first served, and a
 * slot passes straight from the one that ends to the next in line. The cover sizes made on
 * request (processing/coverSizeCache.ts) and the probes of arriving uploads (media/ffmpegTools.ts)
 * each hold one.
 */
export class Slots {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly size: () => number) {}

  /** Runs `work` once a slot is free, and frees it when `work` ends. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running < this.size()) this.running++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
