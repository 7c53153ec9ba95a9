/** One target of the bench report: what was aimed at, whether it was met, and the figure that says so. */
export interface Target {
  target: string;
  met: boolean;
  measured: string;
}
