// The password of a team-store connection whose URL and PGPASSWORD give none: read from the pgpass
// file by the `pgpass` module, the code pg 8 runs itself, but through the password function pg
// documents (pg's own lookup prints "DeprecationWarning: pgpass support is deprecated" on stderr at
// every connect). The file's semantics are the module's, as libpq's: PGPASSFILE, else ~/.pgpass; used
// only when it is a plain file without group or world access (else ignored, with the module's WARNING
// on stderr); not read at all while PGPASSWORD is set. pg calls the function only when the server asks
// for a password, so a server that needs none (trust, a certificate) never reads the file.

/** What pg hands the password function: the connection it is about to authenticate. */
interface ConnectionParameters {
  readonly host: string;
  readonly port: number;
  readonly database: string;
  readonly user: string;
}

type PgpassModule = (params: ConnectionParameters, done: (password: string | undefined) => void) => void;

/** pg's `password` option: the pgpass file's password for this connection, if it has one. */
export async function pgpassPassword(params: ConnectionParameters): Promise<string | undefined> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const lookup = require('pgpass') as PgpassModule;
  return new Promise<string | undefined>((resolve) => lookup(params, resolve));
}
