// The password of a team-store connection whose URL and PGPASSWORD give none: read from the pgpass
// file by the `pgpass` module, the code pg 8 runs itself, but through the password function pg
// documents (pg's own lookup prints "DeprecationWarning: pgpass support is deprecated" on stderr at
// every connect). The file's semantics are the module's, as libpq's: PGPASSFILE, else ~/.pgpass; used
// only when it is a plain file without group or world access (else ignored, with the module's WARNING
// on stderr); not read at all while PGPASSWORD is set. pg calls the function only when the server asks
// for a password, so a server that needs none (trust, a certificate) never reads the file.
import { accessSync, constants, statSync } from 'node:fs';

/** What pg hands the password function: the connection it is about to authenticate. */
interface ConnectionParameters {
  readonly host: string;
  readonly port: number;
  readonly database: string;
  readonly user: string;
}

type PgpassModule = (params: ConnectionParameters, done: (password: string | undefined) => void) => void;
interface PgpassHelper {
  getFileName(): string;
}

/** pg's `password` option: the pgpass file's password for this connection, or an error that says where none was found. */
export async function pgpassPassword(params: ConnectionParameters): Promise<string> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const lookup = require('pgpass') as PgpassModule;
  const found = await new Promise<string | undefined>((resolve) => lookup(params, resolve));
  if (found !== undefined) return found;
  const asked = `the server asks for a password for role ${params.user}, and none was found in the URL, PGPASSWORD or the pgpass file`;
  if (Object.prototype.hasOwnProperty.call(process.env, 'PGPASSWORD'))
    throw new Error(`${asked}: PGPASSWORD is set but empty, and while it is set no pgpass file is read (unset it, or set the password in it)`);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const file = (require('pgpass/lib/helper') as PgpassHelper).getFileName();
  throw new Error(
    `${asked} ${file} (${whyNot(file, params)}): add the line ${params.host}:${params.port}:${params.database}:${params.user}:<password> to a pgpass file of mode 0600 (PGPASSFILE names it, else ~/.pgpass)`,
  );
}

/** Why the pgpass file gave no password, in the module's order of checks. */
function whyNot(file: string, params: ConnectionParameters): string {
  let stat;
  try {
    stat = statSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? 'it does not exist' : `it cannot be read: ${code ?? 'unknown error'}`;
  }
  if (process.platform !== 'win32') {
    if (!stat.isFile()) return 'ignored: it is not a plain file';
    if ((stat.mode & 0o077) !== 0) return 'ignored: it has group or world access; chmod 600 it';
  }
  try {
    accessSync(file, constants.R_OK);
  } catch (error) {
    return `it cannot be read: ${(error as NodeJS.ErrnoException).code ?? 'unknown error'}`;
  }
  return `no line in it matches ${params.host}:${params.port}:${params.database}:${params.user}`;
}
