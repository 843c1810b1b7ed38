/**
 * The local E2B service for in-process tests that use the real SDK (through the harness): started before the file's
 * tests, stopped after them, with `E2B_SANDBOX_URL` pointing the SDK's envd calls at it meanwhile (the SDK reads that
 * variable itself: nothing goes to the internet).
 */
import { type LocalE2B, type LocalE2BOptions, startLocalE2B } from './e2b-local';

/** Registers `beforeAll`/`afterAll` for the service; the returned function gives it inside a test. */
export function useLocalE2B(options: LocalE2BOptions = {}): () => LocalE2B {
  let e2b: LocalE2B | undefined;
  const previousSandboxUrl = process.env.E2B_SANDBOX_URL;
  beforeAll(async () => {
    e2b = await startLocalE2B(options);
    process.env.E2B_SANDBOX_URL = e2b.url;
  });
  afterAll(async () => {
    if (previousSandboxUrl === undefined) delete process.env.E2B_SANDBOX_URL;
    else process.env.E2B_SANDBOX_URL = previousSandboxUrl;
    await e2b?.stop();
  });
  return () => {
    if (e2b === undefined) throw new Error('the local E2B service is not started (use it inside a test)');
    return e2b;
  };
}
