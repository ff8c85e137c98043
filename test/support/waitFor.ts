// Polling for a condition another process or an event makes true: the one helper for it.

/** True as soon as `predicate` holds, polled every `intervalMs`; after `timeoutMs`, its last answer. */
export async function waitFor(predicate: () => boolean, timeoutMs = 5000, intervalMs = 10): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (predicate()) return true;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  return predicate();
}
