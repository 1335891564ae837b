// Heartbeats of every peer socket with the same interval come from one timer, not a timer per
// socket (a Timeout and its arguments were about 200 bytes of each idle connection). The timer
// ticks SLOTS times per interval and beats one slot of sockets each tick, so every socket beats
// once per interval. A socket joins the slot beaten last: its first beat comes between 15/16 of
// an interval and one interval after it joined (its own timer beat after exactly one), and
// sockets that join at different moments beat at different ticks, as their own timers did.

/** What the wheel beats. */
export interface Beating {
  beat(): void;
}

const SLOTS = 16;

class Wheel {
  private readonly slots: Set<Beating>[] = Array.from({ length: SLOTS }, () => new Set());
  private readonly slotOf = new Map<Beating, number>();
  /** The slot the next tick beats. */
  private cursor = 0;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly intervalMs: number,
    private readonly onEmpty: () => void,
  ) {}

  add(socket: Beating): void {
    if (this.slotOf.has(socket)) return;
    const slot = (this.cursor + SLOTS - 1) % SLOTS;
    this.slots[slot]!.add(socket);
    this.slotOf.set(socket, slot);
    this.timer ??= setInterval(Wheel.tick, Math.max(1, this.intervalMs / SLOTS), this);
  }

  remove(socket: Beating): void {
    const slot = this.slotOf.get(socket);
    if (slot === undefined) return;
    this.slotOf.delete(socket);
    this.slots[slot]!.delete(socket);
    if (this.slotOf.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
      this.onEmpty();
    }
  }

  private static tick(self: Wheel): void {
    const slot = self.slots[self.cursor]!;
    self.cursor = (self.cursor + 1) % SLOTS;
    // A beat may close its socket (and remove it): beat a copy of the slot.
    for (const socket of [...slot]) {
      try {
        socket.beat();
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}

const wheels = new Map<number, Wheel>();

/** Beats `socket` once per `intervalMs` until {@link stopBeating}. */
export function startBeating(socket: Beating, intervalMs: number): void {
  let wheel = wheels.get(intervalMs);
  if (!wheel) {
    wheel = new Wheel(intervalMs, () => wheels.delete(intervalMs));
    wheels.set(intervalMs, wheel);
  }
  wheel.add(socket);
}

/** Stops the beats of a socket started with `intervalMs`. */
export function stopBeating(socket: Beating, intervalMs: number): void {
  wheels.get(intervalMs)?.remove(socket);
}
