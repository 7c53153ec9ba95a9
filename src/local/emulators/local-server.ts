/** What every server of the local runtime is: an endpoint on 127.0.0.1, and a way to stop it. */
export interface LocalServer {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  readonly port: number;
  /** The address the socket is bound to: always `127.0.0.1`. */
  readonly address: string;
  /** Stops the server and closes its connections. */
  stop(): Promise<void>;
}

/**
 * The local Kinesis as the runtime shows it: its endpoint and the ARN of a stream by name. (Its client, which names
 * the SDK's Kinesis types, stays in `kinesis-server.ts`: the Kinesis client is an optional peer, so the package's
 * public types must not need it.)
 */
export interface LocalStreamServer extends LocalServer {
  /** The ARN of stream `name` in the local account and region. */
  streamArn(name: string): string;
}
