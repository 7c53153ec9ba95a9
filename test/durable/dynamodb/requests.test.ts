import { describe, expect, it } from "vitest";
import { countRequests } from "../../../src/observe/request-counter.js";
import { imagesOnDynamoDB } from "./images.js";

/** Requests counted at the client: on real time (see images.ts). */
const images = imagesOnDynamoDB({ skipTime: false });

describe("requests of the images workflow on DynamoDB Local", () => {
  it("costs one atomic write per guarded step: two TransactWriteItems for resize and notify, nothing else", async () => {
    const { payloads } = await images.dispatch("count.jpg", ["0A"]);
    const counter = countRequests(images.client, "durableStepCounter");
    const execution = await images.runner().run({ payload: payloads[0] });
    expect(execution.getResult()).toEqual({ resize: "processed", notify: "processed" });
    expect(counter.counts).toEqual({ TransactWriteItems: 2 });
    counter.reset();
    await images.runner().run({ payload: payloads[0] });
    expect(counter.counts).toEqual({ TransactWriteItems: 2 }); // a second execution: refused by the markers, in the same request
    images.client.middlewareStack.remove("durableStepCounter");
  });

  it("dispatches with one claim, one Invoke and one commit that moves the execution fence", async () => {
    const { payloads: first } = await images.dispatch("fence.jpg", ["0A"], true);
    const counter = countRequests(images.client, "durableDispatchCounter");
    const { lambda, payloads } = await images.dispatch("fence.jpg", ["0B"], true);
    expect(counter.counts, JSON.stringify(counter.counts)).toEqual({ UpdateItem: 1, TransactWriteItems: 1 });
    expect(lambda.invokes).toBe(1);
    images.client.middlewareStack.remove("durableDispatchCounter");
    // The older execution never ran a step: the newer dispatch's commit already holds the fence.
    const old = await images.runner().run({ payload: first[0] });
    expect(old.getResult()).toMatchObject({
      skipped: "superseded",
      current: { position: payloads[0]?.execution.position },
    });
    const newer = await images.runner().run({ payload: payloads[0] });
    expect(newer.getResult()).toEqual({ resize: "processed", notify: "processed" });
  });
});
