import { addOrderLineItem, deleteOrder, setOrderStatus } from "../change-orders.ts";
import type { RegisterCommands } from "../cli-context.ts";
import { CliError } from "../cli-error.ts";
import { databaseUrlSetting, withDatabase } from "../database.ts";
import { parseDecimal, parseWholeNumber } from "../option-parsers.ts";
import { ORDER_STATUSES, type OrderStatus } from "../seed/rows.ts";

/** The most of one item on a line. */
const MAX_QUANTITY = 1_000_000;

function parseStatus(text: string): OrderStatus {
  const status = text.toUpperCase();
  if (!(ORDER_STATUSES as readonly string[]).includes(status)) {
    throw new CliError(`STATUS must be one of ${ORDER_STATUSES.join(", ")}, got "${text}"`);
  }
  return status as OrderStatus;
}

function nonEmpty(text: string, option: string): string {
  if (text === "") throw new CliError(`${option} must not be empty`);
  return text;
}

/** `subdata orders …`: stands in for the app in development and tests. */
export const registerOrdersCommands: RegisterCommands = (program, context) => {
  const orders = program.command("orders").description("change orders the way the app would (development and tests)");
  orders
    .command("set-status")
    .description("set an order's status; the database bumps version")
    .argument("<order-id>", "ord_…")
    .argument("<status>", ORDER_STATUSES.join(" | "))
    .action(async (orderId: string, statusText: string) => {
      const status = parseStatus(statusText);
      const databaseUrl = databaseUrlSetting(context);
      const change = await withDatabase(databaseUrl, context.signal, (client) => setOrderStatus(client, { orderId, status }));
      context.output.result(
        change,
        change.changed
          ? `${change.id}: ${change.previousStatus} → ${change.status}, version ${change.version}`
          : `${change.id}: already ${change.status} (nothing changed), version ${change.version}`,
      );
    });

  orders
    .command("add-line-item")
    .description(
      "append a line item and keep the order adding up (subtotal = the line totals, total = subtotal − discount + shipping + tax; " +
        "discount, shipping and tax unchanged), in one transaction: one version, one order.updated",
    )
    .argument("<order-id>", "ord_…")
    .requiredOption("--sku <sku>", "the item's SKU")
    .requiredOption("--title <text>", "the item's title")
    .requiredOption("--quantity <n>", `how many, 1 to ${MAX_QUANTITY.toLocaleString("en-US")}`)
    .requiredOption("--unit-price <decimal>", "in the order's currency, e.g. 12.50 (0 for a free item)")
    .action(async (orderId: string, options: { sku: string; title: string; quantity: string; unitPrice: string }) => {
      const sku = nonEmpty(options.sku, "--sku");
      const title = nonEmpty(options.title, "--title");
      const quantity = parseWholeNumber(options.quantity, "--quantity", { min: 1, max: MAX_QUANTITY });
      const unitPrice = parseDecimal(options.unitPrice, "--unit-price", { allowZero: true });
      const databaseUrl = databaseUrlSetting(context);
      const change = await withDatabase(databaseUrl, context.signal, (client) => addOrderLineItem(client, { orderId, sku, title, quantity, unitPrice }));
      const item = change.lineItem;
      context.output.result(
        change,
        `${change.id}: line ${item.position} ${item.quantity} × ${item.unitPrice} ${change.currency}; ` +
          `subtotal ${change.previousSubtotal} → ${change.subtotal}, total ${change.previousTotal} → ${change.total}, version ${change.version}`,
      );
    });

  orders
    .command("delete")
    .description(
      "DEVELOPMENT ONLY: hard-delete an order with its line items, which the app never does; the database records order.deleted " +
        "(a charge that names the order keeps its order_id)",
    )
    .argument("<order-id>", "ord_…")
    .action(async (orderId: string) => {
      const databaseUrl = databaseUrlSetting(context);
      const deletion = await withDatabase(databaseUrl, context.signal, (client) => deleteOrder(client, orderId));
      const items = deletion.lineItemsDeleted === 1 ? "1 line item" : `${deletion.lineItemsDeleted} line items`;
      context.output.result(deletion, `${deletion.id}: deleted with its ${items} (was ${deletion.previousStatus}, version ${deletion.previousVersion})`);
    });
};
