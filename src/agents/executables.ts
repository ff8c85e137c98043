// The one PATH lookup. Only absolute PATH entries count: a relative entry (`node_modules/.bin`, `.`)
// resolves against the current directory, which is often a repository someone else wrote, and would
// let it choose the program Turnkeeper attests, resumes, or asks for its hooks (doctor).
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import type { Env } from '../core/env';

/** Absolute path of the first executable regular file `name` in an absolute PATH directory, else undefined. */
export function findExecutable(env: Env, name: string): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}
