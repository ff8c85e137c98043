// bundle.test.ts's "one store, two machines" on a PostgreSQL team store: each machine signs its
// checkpoints with its own key, and verify --bundle accepts any trusted key and says which signed
// which. Its own file, in the serial project: it starts a whole PostgreSQL server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { makeWorld } from '../support/world';
import { usePostgres } from '../support/postgres';
import { signOnTwoMachines } from '../support/twoMachines';

const server = usePostgres({ beforeAll, afterAll });

describe('one store, two machines: each signs with its own key', () => {
  it('on a PostgreSQL team store: verify --bundle accepts checkpoints by any trusted key and says which key signed which', async () => {
    const w = makeWorld('pg-machines');
    try {
      await server().createDatabase('team');
      const store = server().url('team');
      expect(w.cli(['store', 'init'], { env: { TURNKEEPER_STORE: store } }).code).toBe(0);
      signOnTwoMachines(
        w,
        { TURNKEEPER_STORE: store, TURNKEEPER_HOME: join(w.root, 'home-a') },
        { TURNKEEPER_STORE: store, TURNKEEPER_HOME: join(w.root, 'home-b') },
      );
    } finally {
      w.cleanup();
    }
  });
});
