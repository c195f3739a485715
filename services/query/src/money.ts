import { create } from "@bufbuild/protobuf";
import { type Money, MoneySchema } from "@subdata/proto/subdata/common/v1/money_pb";

/** Every money field is built here, so none leaves without its currency. */
export function money(amountMinor: bigint, currencyCode: string): Money {
  return create(MoneySchema, { amountMinor, currencyCode });
}
