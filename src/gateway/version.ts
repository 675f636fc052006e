// The server's version, as GET /version reports it (vLLM's `{"version": ...}`). A constant rather than
// package.json read at run time: the gateway has no file system on Workers. test/gateway/probes.test.ts
// keeps it equal to package.json's version.
export const SERVER_VERSION = '0.1.0';
