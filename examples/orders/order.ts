/** An order as the shop's checkout sends it to the queue. */
export interface Order {
  orderId: string;
  customerId: string;
  amountCents: number;
}

/** Parses a message body; a body that is no order throws (the wrapper routes it as malformed). */
export function parseOrder(body: string): Order {
  const value = JSON.parse(body) as Partial<Order>;
  if (typeof value?.orderId !== "string" || value.orderId.length === 0)
    throw new Error("order without orderId");
  if (typeof value.customerId !== "string") throw new Error(`order ${value.orderId} without customerId`);
  if (typeof value.amountCents !== "number") throw new Error(`order ${value.orderId} without amountCents`);
  return value as Order;
}
