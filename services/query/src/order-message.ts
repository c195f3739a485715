import { create } from "@bufbuild/protobuf";
import { pgTimestampToProto } from "@subdata/runtime";
import { type Order, OrderSchema } from "@subdata/proto/subdata/order/v1/order_pb";
import { orderStatusFromDb } from "./db-enums.ts";
import { money } from "./money.ts";
import type { OrderRow } from "./order-repository.ts";

/** An order row with its line items as the proto message; every amount is in the order's currency. */
export function orderMessage(row: OrderRow): Order {
  return create(OrderSchema, {
    id: row.id,
    merchantId: row.merchant_id,
    subscriptionId: row.subscription_id,
    chargeId: row.charge_id ?? undefined,
    number: row.number,
    status: orderStatusFromDb(row.status),
    subtotal: money(row.subtotal_minor, row.currency),
    discount: money(row.discount_minor, row.currency),
    shipping: money(row.shipping_minor, row.currency),
    tax: money(row.tax_minor, row.currency),
    total: money(row.total_minor, row.currency),
    lineItems: row.line_items.map((item) => ({
      sku: item.sku,
      title: item.title,
      quantity: item.quantity,
      unitPrice: money(BigInt(item.unit_price_minor), row.currency),
      total: money(BigInt(item.total_minor), row.currency),
    })),
    createdAt: pgTimestampToProto(row.created_at),
    updatedAt: pgTimestampToProto(row.updated_at),
    version: row.version,
  });
}
