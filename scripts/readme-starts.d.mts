import type { RunReport } from "../src/cli/run/report.js";
import type { ShResult } from "./packed-project.mjs";

/** One marked start of the README: its files (path → text) and its commands, in order. */
export interface ReadmeStart {
  name: string;
  files: Record<string, string>;
  commands: string[];
}
export interface CommandResult extends ShResult {
  command: string;
  /** The JSON report of an `eonce run` command. */
  report?: RunReport;
}
export function readmeStarts(markdown: string): ReadmeStart[];
export function readmeDevPackages(markdown: string): string[];
export function runFlags(command: string): Map<string, string[]>;
export function eonceArgs(
  command: string,
  options?: { dynamodbEndpoint?: string; suffix?: string },
): string[];
export function reportProblems(report: RunReport | undefined): string[];
export function prepareStarts(options: {
  dir: string;
  env?: NodeJS.ProcessEnv;
}): Promise<{ project: string; starts: ReadmeStart[] }>;
export function typecheckStarts(project: string, env?: NodeJS.ProcessEnv): Promise<ShResult>;
export function runStart(
  project: string,
  start: ReadmeStart,
  options?: { env?: NodeJS.ProcessEnv; dynamodbEndpoint?: string; suffix?: string },
): Promise<CommandResult[]>;
