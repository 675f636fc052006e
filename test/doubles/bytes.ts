// Byte helpers for tests that assemble frames by hand: the protocol's own.
export { concatBytes } from '../../src/protocol/messages.js';
