-- Up Migration

-- Tenant consistency in the schema itself: a subscription can only point at its own merchant's customer
-- and plan, a charge or order only at its own merchant's subscription, a line item only at its own
-- merchant's order. Reads already repeat merchant_id in every join; this makes a cross-merchant link
-- impossible for every writer, so nothing that joins by id alone (the outbox snapshot, ad-hoc SQL) can
-- ever carry another merchant's data.

ALTER TABLE customers ADD CONSTRAINT customers_merchant_id_id UNIQUE (merchant_id, id);
ALTER TABLE plans ADD CONSTRAINT plans_merchant_id_id UNIQUE (merchant_id, id);
ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_merchant_id_id UNIQUE (merchant_id, id);
ALTER TABLE orders ADD CONSTRAINT orders_merchant_id_id UNIQUE (merchant_id, id);

ALTER TABLE subscriptions
  ADD CONSTRAINT subscriptions_customer_same_merchant
    FOREIGN KEY (merchant_id, customer_id) REFERENCES customers (merchant_id, id),
  ADD CONSTRAINT subscriptions_plan_same_merchant
    FOREIGN KEY (merchant_id, plan_id) REFERENCES plans (merchant_id, id);
ALTER TABLE charges
  ADD CONSTRAINT charges_subscription_same_merchant
    FOREIGN KEY (merchant_id, subscription_id) REFERENCES subscriptions (merchant_id, id) ON DELETE CASCADE;
ALTER TABLE orders
  ADD CONSTRAINT orders_subscription_same_merchant
    FOREIGN KEY (merchant_id, subscription_id) REFERENCES subscriptions (merchant_id, id) ON DELETE CASCADE;
ALTER TABLE order_line_items
  ADD CONSTRAINT order_line_items_order_same_merchant
    FOREIGN KEY (merchant_id, order_id) REFERENCES orders (merchant_id, id) ON DELETE CASCADE;

-- Down Migration

ALTER TABLE order_line_items DROP CONSTRAINT order_line_items_order_same_merchant;
ALTER TABLE orders DROP CONSTRAINT orders_subscription_same_merchant;
ALTER TABLE charges DROP CONSTRAINT charges_subscription_same_merchant;
ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_plan_same_merchant, DROP CONSTRAINT subscriptions_customer_same_merchant;
ALTER TABLE orders DROP CONSTRAINT orders_merchant_id_id;
ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_merchant_id_id;
ALTER TABLE plans DROP CONSTRAINT plans_merchant_id_id;
ALTER TABLE customers DROP CONSTRAINT customers_merchant_id_id;
