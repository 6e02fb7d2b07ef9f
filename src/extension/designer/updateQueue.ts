// The preview's updates, one at a time: debounced, never overlapping, and the last request always served. A slow
// page makes the preview lag, never the editor, and the last keystroke always gets its update.

/** `full`: analyse the document on the page; `cursor`: only the highlight of the selector under the cursor. */
export type UpdateKind = 'full' | 'cursor';

export class UpdateQueue {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private again: UpdateKind | null = null;
  private pendingKind: UpdateKind = 'full';

  constructor(
    private readonly update: (kind: UpdateKind) => Promise<void>,
    private readonly closed: () => boolean,
  ) {}

  /** An update of `kind` after `delay` ms; one asked for while another runs comes right after it (a full one wins). */
  schedule(kind: UpdateKind, delay: number): void {
    if (this.closed()) return;
    if (this.running) {
      this.again = this.again === 'full' || kind === 'full' ? 'full' : 'cursor';
      return;
    }
    const pendingFull = this.timer !== undefined && this.pendingKind === 'full';
    clearTimeout(this.timer);
    this.pendingKind = pendingFull ? 'full' : kind;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.run(this.pendingKind);
    }, delay);
  }

  private async run(kind: UpdateKind): Promise<void> {
    this.running = true;
    try {
      await this.update(kind);
    } finally {
      this.running = false;
      const again = this.again;
      this.again = null;
      if (again) this.schedule(again, 0);
    }
  }

  dispose(): void {
    clearTimeout(this.timer);
  }
}
