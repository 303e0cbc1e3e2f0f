/**
 * The keys of one purpose (media addresses, upload credentials) as a node holds them: the newest
 * signs, every live one checks. Checking reads no database: what is signed names its key by id,
 * and the ring answers from memory.
 *
 * Keys are random and kept with the metadata (SigningKeyStore), never derived from another secret:
 * so every node of a cluster has the same ones, and a key's strength owes nothing to the admin
 * token's. A rotation stores a new key and gives the old ones an end (at once, or once what they
 * signed has expired), then tells every node (`keys.rotated`, relayed in cluster mode); a node
 * also reads the keys again when it is shown an id it does not know (at most once a second, so a
 * made-up id costs one read a second, not one per request) and every minute, in case an event was
 * lost while its relay was down.
 */
import crypto from 'node:crypto';
import type { VopEventBus } from '../core/events.js';
import type { SigningKey, SigningKeyPurpose, SigningKeyStore } from '../storage/types.js';

/** Least time between two reads of the keys for an unknown id. */
const UNKNOWN_ID_READ_INTERVAL_MS = 1000;

/** How often the keys are read again whatever happened (a lost `keys.rotated`, a key's end). */
const REFRESH_INTERVAL_MS = 60_000;

/** A key as the ring uses it. */
export interface RingKey {
  id: string;
  secret: Buffer;
}

/** A key as the admin sees it: never its secret. */
export interface KeyInfo {
  id: string;
  createdAt: number;
  /** Unix ms from which it checks nothing; absent for the key that signs. */
  expiresAt?: number;
  /** Whether it is the one that signs. */
  signing: boolean;
}

export interface KeyRingDeps {
  store: SigningKeyStore;
  purpose: SigningKeyPurpose;
  events: VopEventBus;
  log: (line: string) => void;
  /** The first key when the purpose has none yet (a key kept before rings existed); otherwise a random one. */
  firstKey?: () => { id: string; secret: string } | undefined;
  now?: () => number;
}

export class KeyRing {
  private keys: SigningKey[] = [];
  private byId = new Map<string, { secret: Buffer; expiresAt: number }>();
  private lastUnknownRead = 0;
  private reading: Promise<void> | undefined;
  private readonly timer: NodeJS.Timeout;
  private readonly onRotated: (e: { purpose: string }) => void;
  private readonly now: () => number;
  private readonly changeListeners: Array<() => void> = [];

  private constructor(private readonly deps: KeyRingDeps) {
    this.now = deps.now ?? Date.now;
    this.onRotated = (e) => {
      if (e.purpose === deps.purpose) void this.refresh();
    };
    // `everywhere`: a rotation through any node of a cluster (the relay is started by then).
    deps.events.everywhere.on('keys.rotated', this.onRotated);
    this.timer = setInterval(() => void this.refresh(), REFRESH_INTERVAL_MS).unref();
  }

  /** The purpose's ring, with a first key stored if it had none. */
  static async open(deps: KeyRingDeps): Promise<KeyRing> {
    const ring = new KeyRing(deps);
    try {
      const now = ring.now();
      const known = await deps.store.list(deps.purpose, now);
      ring.take(known.length > 0 ? known : await deps.store.addFirst({ ...(deps.firstKey?.() ?? newKey()), purpose: deps.purpose, createdAt: now }, now));
    } catch (err) {
      ring.close();
      throw err;
    }
    return ring;
  }

  /** The key that signs. */
  signing(): RingKey {
    const key = this.keys[0]!;
    return { id: key.id, secret: this.byId.get(key.id)!.secret };
  }

  /** The secret of key `id` if it is live (checking from memory only). */
  find(id: string): Buffer | undefined {
    const key = this.byId.get(id);
    return key && key.expiresAt > this.now() ? key.secret : undefined;
  }

  /**
   * {@link find}, or for an id this node does not know (a key another node has just made), after
   * reading the keys again: at most one read a second, shared by every request waiting.
   */
  async lookup(id: string): Promise<Buffer | undefined> {
    const found = this.find(id);
    if (found || this.byId.has(id)) return found;
    if (this.now() - this.lastUnknownRead >= UNKNOWN_ID_READ_INTERVAL_MS) {
      this.lastUnknownRead = this.now();
      await this.refresh();
    } else if (this.reading) {
      await this.reading;
    }
    return this.find(id);
  }

  /**
   * Makes a new key the one that signs; the others check until `othersEndAt` (now: at once).
   * Every node hears of it through `keys.rotated`.
   */
  async rotate(othersEndAt: number): Promise<KeyInfo[]> {
    const now = this.now();
    this.take(await this.deps.store.rotate({ ...newKey(), purpose: this.deps.purpose, createdAt: now }, Math.max(now, othersEndAt), now));
    this.deps.events.emit('keys.rotated', { purpose: this.deps.purpose });
    return this.describe();
  }

  describe(): KeyInfo[] {
    const now = this.now();
    return this.keys
      .filter((k) => k.expiresAt === undefined || k.expiresAt > now)
      .map((k, i) => ({ id: k.id, createdAt: k.createdAt, ...(k.expiresAt !== undefined ? { expiresAt: k.expiresAt } : {}), signing: i === 0 }));
  }

  /** Calls `listener` whenever the keys held change (what was checked under an ended key must be checked again). */
  onChange(listener: () => void): void {
    this.changeListeners.push(listener);
  }

  close(): void {
    clearInterval(this.timer);
    this.deps.events.everywhere.off('keys.rotated', this.onRotated);
  }

  /** Reads the keys again (one read at a time; a failure keeps the keys held and is logged). */
  refresh(): Promise<void> {
    this.reading ??= this.deps.store
      .list(this.deps.purpose, this.now())
      .then((keys) => {
        if (keys.length > 0) this.take(keys);
      })
      .catch((err: unknown) => this.deps.log(`Signing keys (${this.deps.purpose}): reading them failed (${(err as Error).message}); the keys held are used meanwhile.`))
      .finally(() => {
        this.reading = undefined;
      });
    return this.reading;
  }

  private take(keys: SigningKey[]): void {
    // Newest first: the store's order, kept if the store gave another.
    const sorted = [...keys].sort((a, b) => b.createdAt - a.createdAt || a.id.localeCompare(b.id));
    this.keys = sorted;
    const before = this.byId;
    this.byId = new Map(sorted.map((k) => [k.id, { secret: Buffer.from(k.secret, 'hex'), expiresAt: k.expiresAt ?? Infinity }]));
    const same = before.size === this.byId.size && [...this.byId].every(([id, k]) => before.get(id)?.expiresAt === k.expiresAt);
    if (!same) for (const listener of this.changeListeners) listener();
  }
}

/** A random key: 32 bytes, and a 6-character id. */
function newKey(): { id: string; secret: string } {
  return { id: crypto.randomBytes(4).readUInt32BE().toString(36).padStart(6, '0').slice(-6), secret: crypto.randomBytes(32).toString('hex') };
}
