// Where the per-user database lives (spec §4).
import { homedir } from 'node:os';
import { join } from 'node:path';

export type Env = Readonly<Record<string, string | undefined>>;

export const turnkeeperHome = (env: Env): string => env.TURNKEEPER_HOME || join(env.HOME || homedir(), '.turnkeeper');
export const storePath = (env: Env): string => env.TURNKEEPER_DB || join(turnkeeperHome(env), 'turnkeeper.db');
