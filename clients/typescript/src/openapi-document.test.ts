import { readFileSync } from "node:fs";
import { createTestGateway } from "@subdata/gateway/test-support";
import { describe, expect, it } from "vitest";

describe("the committed OpenAPI document", () => {
  it("is the document the gateway serves at /api/v1/openapi.json, as npm run generate:client writes it", async () => {
    const { gateway } = createTestGateway();
    try {
      const response = await gateway.inject({ method: "GET", url: "/api/v1/openapi.json" });
      expect(response.statusCode).toBe(200);
      const committed = readFileSync(new URL("../openapi.json", import.meta.url), "utf8");
      expect(JSON.parse(committed)).toEqual(response.json());
      expect(committed).toBe(`${JSON.stringify(response.json(), null, 2)}\n`);
    } finally {
      await gateway.close();
    }
  });
});
