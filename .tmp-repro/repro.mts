import { MemoryStore } from "../src/engines/memory/store.js";
import { dynamodbStreamHandler } from "../src/lambda/handlers.js";
import { dynamodbRecord, streamEvent, lambdaContext } from "../test/kit/index.js";
const h = dynamodbStreamHandler(async (change, ctx) => { return { ok: change.eventId }; }, { store: new MemoryStore() });
const ev = streamEvent(dynamodbRecord({ eventName: "INSERT", keys: { pk: { S: "a" } } }));
console.log(JSON.stringify(ev).slice(0,600));
const r = await (h as any)(ev, lambdaContext());
console.log(JSON.stringify(r));
