// The logging surface the gateway and the sidecar take: pino's, structurally (the CLI passes a pino
// logger; tests pass a recorder). Here because both sides share it and it is runtime-agnostic, like
// ./trace.ts; the gateway logs one line per request, the sidecar its start-up and failures.

export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };
