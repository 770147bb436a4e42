// The stack's own, so tests and the stack's cluster launcher find free ports alike.
export { freePort } from '../../scripts/stack/free-port';
