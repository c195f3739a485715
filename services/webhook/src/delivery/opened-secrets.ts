import type { KeyObject } from "node:crypto";
import type { SecretBox } from "../secret-box.ts";
import { signingKey } from "./sign-webhook.ts";

/**
 * An endpoint's signing keys, opened once and reused: one AES-GCM open per delivery was measurable
 * at a few thousand deliveries/s, and so is making the HMAC key (sign-webhook.ts signingKey). Entries
 * are keyed by endpoint and checked against the sealed bytes, so a rotation (new sealed secret) or the
 * end of a grace period (the claim stops returning the previous secret) opens afresh. Bounded: the map
 * is emptied when it reaches `maxEndpoints`.
 */
export interface OpenedSecrets {
  /** The keys of the endpoint's valid secrets, newest first. Throws if a sealed secret does not open. */
  open(endpointId: string, sealed: Buffer, previousSealed: Buffer | null): KeyObject[];
}

export function createOpenedSecrets(secretBox: SecretBox, maxEndpoints = 10_000): OpenedSecrets {
  const opened = new Map<string, { sealed: Buffer; previous: Buffer | null; keys: KeyObject[] }>();
  return {
    open(endpointId, sealed, previous) {
      const cached = opened.get(endpointId);
      if (cached?.sealed.equals(sealed) && (cached.previous === null ? previous === null : previous !== null && cached.previous.equals(previous))) {
        return cached.keys;
      }
      const keys = [signingKey(secretBox.open(sealed, endpointId))];
      if (previous) keys.push(signingKey(secretBox.open(previous, endpointId)));
      if (opened.size >= maxEndpoints) opened.clear();
      opened.set(endpointId, { sealed, previous, keys });
      return keys;
    },
  };
}
