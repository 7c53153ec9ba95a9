export interface ShResult {
  code: number;
  stdout: string;
  stderr: string;
}
/** Runs a command and never throws: the exit code (-1 when it could not run or timed out) and its output. */
export function sh(
  cmd: string,
  args: string[],
  options?: { cwd?: string; env?: NodeJS.ProcessEnv; timeout?: number },
): Promise<ShResult>;
/** Where to make a packed project: /dev/shm when it is a tmpfs with room that lets programs run, else the temp folder. */
export function scratchRoot(minBytes?: number): Promise<string>;
/** `npm pack` of the repository at `root` into `dir` (serialised across processes), or the one in `cache` (EONCE_PACK_CACHE). */
export function packPackage(
  root: string,
  dir: string,
  cache?: string,
): Promise<{ tarball: string; files: string[] }>;
/** A new project `<dir>/app` with `files`, `packages` (`npm i -D --save-exact`) and the packed package installed. */
export function packedProject(options: {
  root: string;
  dir: string;
  packages?: string[];
  files?: Record<string, string>;
  env?: NodeJS.ProcessEnv;
}): Promise<{ project: string; tarball: string; files: string[] }>;
