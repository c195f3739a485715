import type { DescMessage } from "@bufbuild/protobuf";
import type { ConnectError } from "@connectrpc/connect";
import { MoneySchema } from "@subdata/proto/subdata/common/v1/money_pb";
import { errorDetailOf } from "@subdata/runtime";
import { expect } from "vitest";

export { rpcError } from "@subdata/runtime/test-support";

/** The error's code, message and ErrorDetail reason, for comparing errors as a caller sees them. */
export function errorShape(error: ConnectError) {
  return { code: error.code, message: error.rawMessage, reason: errorDetailOf(error)?.reason };
}

/**
 * Walks a message by its descriptor and asserts that every Money field is set and carries a currency
 * code, at any depth (lists included). Returns how many Money values it checked.
 */
export function expectEveryMoneyHasCurrency(schema: DescMessage, message: object): number {
  let checked = 0;
  const visit = (desc: DescMessage, value: Record<string, unknown>, path: string) => {
    for (const field of desc.fields) {
      const fieldValue = value[field.localName];
      const fieldPath = `${path}.${field.name}`;
      if (field.fieldKind === "message") {
        if (field.message.typeName === MoneySchema.typeName) {
          expect(fieldValue, `${fieldPath} must be set`).toBeDefined();
          expect((fieldValue as { currencyCode: string }).currencyCode, `${fieldPath}.currency_code`).toMatch(/^[A-Z]{3}$/);
          checked++;
        } else if (fieldValue !== undefined) {
          visit(field.message, fieldValue as Record<string, unknown>, fieldPath);
        }
      } else if (field.fieldKind === "list" && field.listKind === "message") {
        (fieldValue as Array<Record<string, unknown>>).forEach((item, index) => {
          if (field.message.typeName === MoneySchema.typeName) {
            expect((item as { currencyCode: string }).currencyCode, `${fieldPath}[${index}]`).toMatch(/^[A-Z]{3}$/);
            checked++;
          } else {
            visit(field.message, item, `${fieldPath}[${index}]`);
          }
        });
      }
    }
  };
  visit(schema, message as Record<string, unknown>, schema.typeName);
  return checked;
}
