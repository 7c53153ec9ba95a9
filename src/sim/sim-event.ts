/** One event of a history: its names, state key, counter and whether a delivery of it was acknowledged. */
export interface SimEvent {
  index: number;
  subject: string;
  identity: string;
  position: string | undefined;
  key: string;
  /** The counter the folded effect increments. */
  counterId: string;
  acknowledged: boolean;
  /** Its names break the key rule (hostile-keys.ts): it must be refused as malformed, never applied. */
  malformed?: true;
}
