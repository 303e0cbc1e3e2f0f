import type { ServerResponse } from 'node:http';

/**
 * The send timeout of one answer (nginx's `send_timeout`, which counts between two successive
 * writes): the answer is given up once its socket has taken no byte for `ms`. Not the time a whole
 * chunk takes: a phone reading 10 KB/s takes 100 s to take 1 MiB, and it never stopped reading.
 *
 * One timer per answer, never one per chunk. When it fires it asks the socket whether bytes moved
 * since it last looked, and runs again if they did. What moves, on Node 20 (measured with a client
 * reading 64 MiB slowly): `socket.bytesWritten` counts bytes handed to libuv, so it moves only
 * when a new write begins; `writableLength` only when a write completes; the handle's
 * `writeQueueSize` (libuv's count of bytes still queued) falls each time the kernel takes part of
 * a pending write. Together they change whenever the client takes anything: bytesWritten never
 * falls, and while it stands still the queue can only shrink. So a client that stops is cut off
 * between `ms` and twice `ms` after its last byte was taken.
 */
export class SendTimeout {
  private readonly timer: NodeJS.Timeout;
  private written = -1;
  private queued = -1;
  private touched = false;

  /**
   * `running` false: armed only once {@link run} says bytes wait for the socket. `waiting`, for an
   * answer written by a producer that does not call {@link run} (a backup's tar stream): whether
   * bytes wait for the socket now; the timer is given up only while they do.
   */
  constructor(
    private readonly res: ServerResponse,
    private readonly ms: number,
    private running = true,
    private readonly waiting?: () => boolean,
  ) {
    this.timer = setTimeout(this.check, ms);
    this.mark();
  }

  /** Whether bytes wait for the socket (true) or the answer waits for something else, such as its store (false). */
  run(waiting: boolean): void {
    if (waiting && !this.running) {
      this.mark();
      this.timer.refresh();
    }
    this.running = waiting;
  }

  /** The answer moved on its own side (a chunk read from disk): counts as progress. */
  touch(): void {
    this.touched = true;
  }

  clear(): void {
    clearTimeout(this.timer);
  }

  private readonly check = (): void => {
    const socket = this.res.socket;
    const touched = this.touched;
    this.touched = false;
    // mark() first: it notes where the socket stands for the next check, whatever the answer.
    if ((socket && !this.res.destroyed && this.mark()) || touched || !this.running || (this.waiting && !this.waiting())) {
      this.timer.refresh();
      return;
    }
    this.res.destroy(new Error(`the client took nothing for ${this.ms} ms`));
  };

  /** Notes where the socket stands; true if that moved since the last note. */
  private mark(): boolean {
    const socket = this.res.socket;
    const written = socket?.bytesWritten ?? -1;
    // Node's LibuvStreamWrap: a live view of uv_stream_t's write_queue_size. Not in Node's types.
    const queued = (socket as { _handle?: { writeQueueSize?: number } } | null)?._handle?.writeQueueSize ?? -1;
    const moved = written !== this.written || queued !== this.queued;
    this.written = written;
    this.queued = queued;
    return moved;
  }
}
