import type { SecretBox } from "../secret-box.ts";

/**
 * An endpoint's signing secrets, opened once and reused: one AES-GCM open per delivery was measurable
 * at a few thousand deliveries/s. Entries are keyed by endpoint and checked against the sealed bytes,
 * so a rotation (new sealed secret) or the end of a grace period (the claim stops returning the previous
 * secret) opens afresh. Bounded: the map is emptied when it reaches `maxEndpoints`.
 */
export interface OpenedSecrets {
  /** The endpoint's valid secrets, newest first. Throws if a sealed secret does not open. */
  open(endpointId: string, sealed: Buffer, previousSealed: Buffer | null): string[];
}

export function createOpenedSecrets(secretBox: SecretBox, maxEndpoints = 10_000): OpenedSecrets {
  const opened = new Map<string, { sealed: Buffer; previous: Buffer | null; secrets: string[] }>();
  return {
    open(endpointId, sealed, previous) {
      const cached = opened.get(endpointId);
      if (cached?.sealed.equals(sealed) && (cached.previous === null ? previous === null : previous !== null && cached.previous.equals(previous))) {
        return cached.secrets;
      }
      const secrets = [secretBox.open(sealed, endpointId)];
      if (previous) secrets.push(secretBox.open(previous, endpointId));
      if (opened.size >= maxEndpoints) opened.clear();
      opened.set(endpointId, { sealed, previous, secrets });
      return secrets;
    },
  };
}
