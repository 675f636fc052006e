/** The host's monotonic clock in ms (process.hrtime: CLOCK_MONOTONIC, the clock of V8's CPU profiles and /proc samples; the same on every thread). */
export const monotonicMs = () => Number(process.hrtime.bigint()) / 1e6;
