/**
 * Logs and metrics of the Lambda adapters (Powertools Logger and Metrics, CloudWatch EMF).
 * @module effectively-once/observe
 */
// Logs and metrics of the Lambda adapters (Powertools Logger and Metrics, CloudWatch EMF).
export * from "./metrics.js";
export * from "./observer.js";
export * from "./request-counter.js";
