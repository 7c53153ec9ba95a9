/** A size for `eonce audit table`'s report: KB, or MB from 1 MB. */
export function kilobytes(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MB` : `${Math.ceil(bytes / 1024)} KB`;
}

/** One decimal. */
export function round(n: number): number {
  return Math.round(n * 10) / 10;
}
