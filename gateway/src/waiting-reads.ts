/**
 * The bound on long-polling feed reads (GET /v1/events with wait > 0) in this gateway: each holds a
 * request and an upstream stream open for up to 30 s, so idle followers must not be able to take every
 * one. At most `maxTotal` wait at once, at most `maxPerKey` of one key; beyond either the request is
 * refused at once (the route answers 429 or 503). drain() ends every wait, for shutdown.
 */
export interface WaitingReads {
  /** A slot for this key, or why there is none. */
  admit(apiKeyId: string): WaitingSlot | "key_full" | "gateway_full";
  /** Ends every admitted wait (their signals abort) and refuses new ones. */
  drain(): void;
  readonly waiting: number;
}

export interface WaitingSlot {
  /** Aborts when the gateway drains. */
  readonly signal: AbortSignal;
  release(): void;
}

export function createWaitingReads(options: { maxTotal: number; maxPerKey: number }): WaitingReads {
  const perKey = new Map<string, number>();
  const draining = new AbortController();
  let total = 0;

  return {
    admit(apiKeyId) {
      if (draining.signal.aborted || total >= options.maxTotal) return "gateway_full";
      const held = perKey.get(apiKeyId) ?? 0;
      if (held >= options.maxPerKey) return "key_full";
      total++;
      perKey.set(apiKeyId, held + 1);
      let released = false;
      return {
        signal: draining.signal,
        release() {
          if (released) return;
          released = true;
          total--;
          const left = (perKey.get(apiKeyId) ?? 1) - 1;
          if (left === 0) perKey.delete(apiKeyId);
          else perKey.set(apiKeyId, left);
        },
      };
    },
    drain() {
      draining.abort();
    },
    get waiting() {
      return total;
    },
  };
}
