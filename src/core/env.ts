// The environment a process reads its settings from (process.env, or the one a test, the extension or
// the launcher hands over): the one type every layer passes around.
export type Env = Readonly<Record<string, string | undefined>>;
