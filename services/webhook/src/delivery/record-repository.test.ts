import { describe, expect, it } from "vitest";
import type { AttemptResult } from "./deliver-webhook.ts";
import type { ClaimedDelivery } from "./claim-repository.ts";
import { type DeliveryDecision, failingSinceChanges, type FinishedAttempt } from "./record-repository.ts";

const finished = (endpointId: string, kind: DeliveryDecision["kind"]): FinishedAttempt => ({
  delivery: { endpointId } as ClaimedDelivery,
  attempt: {} as AttemptResult,
  decision: kind === "retry" ? { kind, delayMs: 1 } : ({ kind } as DeliveryDecision),
});

describe("failingSinceChanges", () => {
  it("replays a batch per endpoint: success clears, failures keep an older failing_since, a failure after a success restarts it", () => {
    const changes = failingSinceChanges([
      finished("we_a", "retry"),
      finished("we_a", "succeeded"),
      finished("we_b", "succeeded"),
      finished("we_b", "failed"),
      finished("we_b", "retry"),
      finished("we_c", "retry"),
      finished("we_c", "gone"),
      finished("we_d", "succeeded"),
    ]);
    expect(Object.fromEntries(changes)).toEqual({ we_a: "clear", we_b: "restart", we_c: "mark", we_d: "clear" });
  });
});
