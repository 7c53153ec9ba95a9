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
