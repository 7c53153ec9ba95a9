import type { DemoStates } from "../../engines/engine.js";
import { ENGINES, type EngineName, engine } from "../../engines/registry.js";

export type { DemoStates };

/**
 * The engines `eonce demo --state-store` keeps the guard's state in: those with `openDemoStates`
 * (src/engines/engine.ts; an inline mode needs the user's rows), the default first.
 */
export const DEMO_STATE_STORES: readonly EngineName[] = [
  ...ENGINES.filter((e) => e.openDemoStates && e.name === "dynamodb"),
  ...ENGINES.filter((e) => e.openDemoStates && e.name !== "dynamodb"),
].map((e) => e.name);
export type DemoStateStoreKind = EngineName;

/**
 * Where the demo's guarded runs keep their state (the engine's `openDemoStates`): undefined for the demo's default,
 * the runtime's DynamoDB Local.
 */
export async function openDemoStates(kind: DemoStateStoreKind): Promise<DemoStates | undefined> {
  return engine(kind).openDemoStates?.();
}
