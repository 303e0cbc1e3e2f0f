/**
 * ffmpeg runs that stop (SIGSTOP) while something more urgent holds the group, and go on
 * (SIGCONT) once nothing does: the ladder's encodes while a first rendition is being made, so the
 * video waiting to become playable gets every core, not the nine tenths `nice` leaves it. A
 * stopped process keeps its memory and its place in its work; the kernel delivers SIGKILL to it
 * as to any other, and the runner continues it before asking it to end (SIGTERM).
 */

/** What the group needs of a running child. */
export interface Pausable {
  kill(signal: NodeJS.Signals): boolean;
}

export class PauseGroup {
  private readonly members = new Set<Pausable>();
  private holds = 0;

  /** Whether the group's runs are stopped now. */
  get paused(): boolean {
    return this.holds > 0;
  }

  /** Adds a running child, stopped at once while the group is held; returns its removal. */
  add(child: Pausable): () => void {
    this.members.add(child);
    if (this.holds > 0) child.kill('SIGSTOP');
    return () => {
      this.members.delete(child);
    };
  }

  /** Stops every run of the group until the returned release is called (each hold once). */
  hold(): () => void {
    if (this.holds++ === 0) for (const c of this.members) c.kill('SIGSTOP');
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.holds === 0) for (const c of this.members) c.kill('SIGCONT');
    };
  }
}
