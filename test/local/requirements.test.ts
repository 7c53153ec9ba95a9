import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  installLine,
  localPackagesFor,
  requireLocalPackages,
} from "../../src/local/emulators/requirements.js";

describe("the local runtime's optional packages", () => {
  let empty: string;
  beforeAll(async () => {
    empty = await mkdtemp(join(tmpdir(), "eonce-nothing-installed-"));
  });
  afterAll(async () => rm(empty, { recursive: true, force: true }));

  it("names every missing package at once, with one install line (fauxqs pinned exactly)", () => {
    const from = pathToFileURL(join(empty, "x.js")).href;
    expect(() => requireLocalPackages(localPackagesFor({ typescript: true, images: true }), from)).toThrow(
      "the local runtime needs more packages (s3rver is not installed; amplify-dynamodb-simulator is not installed; " +
        "fauxqs is not installed; tsx is not installed; sharp is not installed): " +
        "run `npm i -D --save-exact s3rver amplify-dynamodb-simulator fauxqs@1.9.2 tsx sharp`",
    );
  });

  it("asks for DynamoDB Local's package only when no endpoint is given, tsx only for TypeScript handlers", () => {
    expect(localPackagesFor({})).toEqual(["s3rver", "amplify-dynamodb-simulator", "fauxqs"]);
    expect(localPackagesFor({ dynamodbEndpoint: "http://127.0.0.1:1", typescript: true })).toEqual([
      "s3rver",
      "fauxqs",
      "tsx",
    ]);
    expect(installLine(["tsx"])).toBe("npm i -D tsx");
  });

  it("asks for the durable execution testing package for eonce run --durable", () => {
    expect(localPackagesFor({ dynamodbEndpoint: "http://127.0.0.1:1", durable: true })).toEqual([
      "s3rver",
      "fauxqs",
      "@aws/durable-execution-sdk-js-testing",
    ]);
    expect(installLine(["@aws/durable-execution-sdk-js-testing"])).toBe(
      "npm i -D @aws/durable-execution-sdk-js-testing",
    );
    expect(() => requireLocalPackages(localPackagesFor({ durable: true }))).not.toThrow();
  });

  it("passes in this checkout, where the dev dependencies are installed", () => {
    expect(() => requireLocalPackages(localPackagesFor({ typescript: true, images: true }))).not.toThrow();
  });
});
