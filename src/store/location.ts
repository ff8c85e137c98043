// Where the per-user database lives (spec §4).
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

export type Env = Readonly<Record<string, string | undefined>>;

export const turnkeeperHome = (env: Env): string => env.TURNKEEPER_HOME || join(env.HOME || homedir(), '.turnkeeper');
/** `TURNKEEPER_DB` (a relative path is under TURNKEEPER_HOME, never the working directory: spec §10), else the default. */
export const storePath = (env: Env): string => resolve(turnkeeperHome(env), env.TURNKEEPER_DB || 'turnkeeper.db');
