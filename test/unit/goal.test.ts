import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  displayNameOf,
  GoalError,
  goalIdOf,
  isGoalId,
  normalizeRemoteUrl,
  parseGitConfig,
  parseGitConfigOrigin,
  parseTurnkeeperJson,
} from '../../src/core/goal';

// Names are drawn without the letters of "secret", so a key can only contain that word if a
// credential leaked into it.
const NAME_CHARS = 'abdfghijklmnopquvwxyz0123456789'.split('');
const label = fc.array(fc.constantFrom(...NAME_CHARS), { minLength: 1, maxLength: 8 }).map((chars) => chars.join(''));
const host = fc
  .tuple(fc.array(label, { minLength: 1, maxLength: 3 }), fc.constantFrom('com', 'org', 'io', 'example'))
  .map(([labels, tld]) => [...labels, tld].join('.'))
  .filter((name) => name.length >= 2);
const mixedCase = (text: string, seed: number) => [...text].map((c, i) => ((seed >> (i % 16)) & 1 ? c.toUpperCase() : c)).join('');
// Owner and repository segments: path case matters, so they mix cases; never `.`/`..` and never ending in `.git`.
const segment = fc
  .array(fc.constantFrom(...NAME_CHARS, 'A', 'B', 'Z', '-', '_', '.'), { minLength: 1, maxLength: 12 })
  .map((chars) => chars.join(''))
  .filter((name) => name !== '.' && name !== '..' && !name.endsWith('.git'));
const repository = fc.record({ host, owner: segment, name: segment, seed: fc.nat() });

/** Every spelling of one repository that contract §1 says is one key. */
function spellings({ host, owner, name, seed }: { host: string; owner: string; name: string; seed: number }): string[] {
  const h = mixedCase(host, seed);
  return [
    `git@${h}:${owner}/${name}.git`,
    `${h}:${owner}/${name}`,
    `git@${h}:/${owner}/${name}/`,
    `ssh://git@${h}/${owner}/${name}.git`,
    `ssh://git@${h}:22/${owner}/${name}`,
    `SSH://${h}/${owner}//${name}/`,
    `git+ssh://git@${h}/${owner}/${name}.git`,
    `https://${h}/${owner}/${name}`,
    `https://${h}:443/${owner}/${name}.git/`,
    `https://x-access-token:ghp_secret@${h}/${owner}/${name}.git`,
    `http://${h}:80/${owner}/${name}`,
    `git://${h}/${owner}/${name}.git`,
    `git://${h}:9418/${owner}/${name}`,
    `https://${h}/${encodeURIComponent(owner)}/${name}/.git`,
  ];
}

describe('goalIdOf', () => {
  it('is goal_ + the first 24 hex of sha256("turnkeeper.goal/v1\\n" + key)', () => {
    const key = 'github.com/acme/app';
    const expected = 'goal_' + createHash('sha256').update(`turnkeeper.goal/v1\n${key}`).digest('hex').slice(0, 24);
    expect(goalIdOf(key)).toBe(expected);
    expect(isGoalId(goalIdOf(key))).toBe(true);
    // Control: another key, another id.
    expect(goalIdOf('github.com/acme/App')).not.toBe(expected);
  });
});

describe('normalizeRemoteUrl', () => {
  it('collapses every spelling of §1 to one key, host/owner/repo', () => {
    fc.assert(
      fc.property(repository, (repo) => {
        const expected = `${repo.host}/${repo.owner}/${repo.name}`;
        for (const url of spellings(repo)) expect([url, normalizeRemoteUrl(url)]).toEqual([url, expected]);
      }),
      { numRuns: 300 },
    );
  });

  it('never gives two different repositories one key', () => {
    fc.assert(
      fc.property(repository, repository, fc.nat(13), fc.nat(13), (a, b, i, j) => {
        const same = a.host === b.host && a.owner === b.owner && a.name === b.name;
        const ka = normalizeRemoteUrl(spellings(a)[i]!);
        const kb = normalizeRemoteUrl(spellings(b)[j]!);
        expect(ka === kb).toBe(same);
      }),
      { numRuns: 500 },
    );
    // Control: the same repository through two spellings does share the key.
    expect(normalizeRemoteUrl('git@github.com:acme/app.git')).toBe(normalizeRemoteUrl('https://github.com/acme/app'));
  });

  it('keeps path case and lower-cases the host', () => {
    expect(normalizeRemoteUrl('https://GitHub.COM/Acme/App.git')).toBe('github.com/Acme/App');
    expect(normalizeRemoteUrl('https://github.com/acme/app')).not.toBe(normalizeRemoteUrl('https://github.com/Acme/App'));
  });

  it('never puts credentials in a key', () => {
    const secret = fc
      .string({ unit: fc.constantFrom(..."abcXYZ019-._~!$&'()*+,;=:/@%".split('')), minLength: 0, maxLength: 12 })
      .map((tail) => `secret${tail}`);
    fc.assert(
      fc.property(repository, fc.constantFrom('', 'user', 'git', 'x-access-token', 'secretuser'), secret, (repo, user, password) => {
        const path = `${repo.owner}/${repo.name}`;
        const urls = [
          `https://${user}:${password}@${repo.host}/${path}.git`,
          `https://${password}@${repo.host}/${path}`,
          `ssh://${user}:${password}@${repo.host}:22/${path}`,
          `http://${user}:${encodeURIComponent(password)}@${repo.host}/${path}`,
          `${user}:${password}@${repo.host}:${path}`,
          `${password}@${repo.host}:${path}`,
        ];
        for (const url of urls) {
          const key = normalizeRemoteUrl(url);
          expect([url, key?.toLowerCase().includes('secret') ?? false]).toEqual([url, false]);
        }
      }),
      { numRuns: 400 },
    );
    // Control: without a leak the key is there, so the test above is not vacuous.
    expect(normalizeRemoteUrl('https://user:secret123@github.com/acme/app.git')).toBe('github.com/acme/app');
    expect(normalizeRemoteUrl('secretuser@github.com:acme/app.git')).toBe('github.com/acme/app');
  });

  it('drops default ports only, per scheme', () => {
    fc.assert(
      fc.property(repository, fc.integer({ min: 1, max: 65535 }), (repo, port) => {
        const path = `${repo.owner}/${repo.name}`;
        const plain = `${repo.host}/${path}`;
        const withPort = `${repo.host}:${port}/${path}`;
        expect(normalizeRemoteUrl(`ssh://git@${repo.host}:${port}/${path}`)).toBe(port === 22 ? plain : withPort);
        expect(normalizeRemoteUrl(`https://${repo.host}:${port}/${path}`)).toBe(port === 443 ? plain : withPort);
        expect(normalizeRemoteUrl(`http://${repo.host}:${port}/${path}`)).toBe(port === 80 ? plain : withPort);
      }),
      { numRuns: 300 },
    );
    expect(normalizeRemoteUrl('ssh://git@gitlab.example.com:2222/a/b.git')).toBe('gitlab.example.com:2222/a/b');
    expect(normalizeRemoteUrl('https://gitlab.example.com:22/a/b.git')).toBe('gitlab.example.com:22/a/b');
    expect(normalizeRemoteUrl('https://host:0/a/b')).toBeUndefined();
    expect(normalizeRemoteUrl('https://host:65536/a/b')).toBeUndefined();
  });

  it('drops a trailing / and one .git, and nothing else of the path', () => {
    expect(normalizeRemoteUrl('https://h.io/a/b.git/')).toBe('h.io/a/b');
    expect(normalizeRemoteUrl('https://h.io/a/b///')).toBe('h.io/a/b');
    expect(normalizeRemoteUrl('https://h.io/a/b/.git')).toBe('h.io/a/b');
    expect(normalizeRemoteUrl('https://h.io/a/b.git.git')).toBe('h.io/a/b.git');
    expect(normalizeRemoteUrl('https://h.io/a/b.git/.git')).toBe('h.io/a/b.git');
    expect(normalizeRemoteUrl('https://h.io/a/b.gitx')).toBe('h.io/a/b.gitx');
    expect(normalizeRemoteUrl('https://h.io/a/b.GIT')).toBe('h.io/a/b.GIT');
    expect(normalizeRemoteUrl('git@h.io:~user/b.git')).toBe('h.io/~user/b');
    expect(normalizeRemoteUrl('ssh://git@h.io/~user/b')).toBe('h.io/~user/b');
    expect(normalizeRemoteUrl('ssh://git@[::1]:2222/a/b.git')).toBe('[::1]:2222/a/b');
    expect(normalizeRemoteUrl('https://h.io/a%20b/c')).toBeUndefined();
    expect(normalizeRemoteUrl('https://h.io/caf%C3%A9/c')).toBe('h.io/café/c');
  });

  it('keys no local path, helper or ambiguous form (the next rule applies)', () => {
    for (const url of [
      '',
      '/srv/git/app.git',
      '../app',
      './app:x',
      'file:///srv/git/app.git',
      'file://host/srv/app',
      'C:/repos/app',
      'c:\\repos\\app',
      'ext::ssh -i key host %S repo',
      'persistent-https::https://h.io/a/b',
      'ftp://h.io/a/b',
      'https://h.io',
      'https://h.io/',
      'https://h.io/.git',
      'https://h.io/a/../b',
      'https://h.io/a/./b',
      'https://h.io/a%2Fb/c',
      'https://h.io/a/b?token=secret',
      'https://h.io/a/b#frag',
      'https://h.io/a b',
      'https://user:12/x@h.io/a/b',
      'h.io:a/b:c',
      'user:pw@h.io:a/b',
      'https://bad%host/a/b',
      'https://h.io/%zz/b',
    ]) {
      expect([url, normalizeRemoteUrl(url)]).toEqual([url, undefined]);
    }
    // Control: the plain forms beside them are keyed.
    expect(normalizeRemoteUrl('h.io:a/b')).toBe('h.io/a/b');
    expect(normalizeRemoteUrl('https://h.io/a/b')).toBe('h.io/a/b');
  });

  it('never gives a key a rule (c) or not-git key could also be', () => {
    fc.assert(
      fc.property(fc.constantFrom('', 'local:', 'local:/', 'ssh://local:', 'https://local:'), fc.string({ maxLength: 40 }), (prefix, text) => {
        const key = normalizeRemoteUrl(prefix + text);
        if (key !== undefined) expect(key.startsWith('local:')).toBe(false);
      }),
      { numRuns: 1000 },
    );
    // Found by this property in a CI run: host `local` with a port gave `local:1/0`. Pinned.
    expect(normalizeRemoteUrl('https://local:1/0')).toBeUndefined();
    expect(normalizeRemoteUrl('ssh://git@local:2222/a/b')).toBeUndefined();
    // git reads `local:/srv/app` as scp-like host `local`; its key has no `local:` prefix.
    expect(normalizeRemoteUrl('local:/srv/app')).toBe('local/srv/app');
  });
});

describe('parseGitConfig and parseGitConfigOrigin', () => {
  const origin = (text: string) => parseGitConfigOrigin(text);

  it('reads the origin URL in the syntax git writes', () => {
    const text = [
      '[core]',
      '\trepositoryformatversion = 0',
      '\tbare = false',
      '[remote "origin"]',
      '\turl = git@github.com:acme/app.git',
      '\tfetch = +refs/heads/*:refs/remotes/origin/*',
      '[branch "main"]',
      '\tremote = origin',
      '',
    ].join('\n');
    expect(origin(text)).toEqual({ url: 'git@github.com:acme/app.git' });
  });

  it('reads comments, quotes, escapes, continuations, CRLF, a BOM and case-insensitive names', () => {
    expect(origin('\uFEFF# top\n; also\n[Remote "origin"] # c\n  URL = "https://h.io/a b" ; c\n')).toEqual({ url: 'https://h.io/a b' });
    expect(origin('[remote "origin"]\r\n\turl = https://h.io/a\\\r\n/b\r\n')).toEqual({ url: 'https://h.io/a/b' });
    expect(origin('[remote "origin"]\n\turl = "x\\"y\\\\z\\tw"\n')).toEqual({ url: 'x"y\\z\tw' });
    expect(origin('[remote "origin"]\n\turl =   spaced value   \n')).toEqual({ url: 'spaced value' });
    expect(origin('[remote "origin"] url = same-line\n')).toEqual({ url: 'same-line' });
    expect(origin('[remote.origin]\nurl = old-syntax\n')).toEqual({ url: 'old-syntax' });
    expect(origin('[remote.ORIGIN]\nurl = old-syntax-is-lower-cased\n')).toEqual({ url: 'old-syntax-is-lower-cased' });
    expect(origin('[remote "or\\igin"]\nurl = escaped-subsection\n')).toEqual({ url: 'escaped-subsection' });
    expect(origin('[remote "origin"]\nurl = no-newline-at-end')).toEqual({ url: 'no-newline-at-end' });
  });

  it('keeps subsection case: [remote "Origin"] is another remote', () => {
    expect(origin('[remote "Origin"]\nurl = https://h.io/a/b\n')).toBeUndefined();
    // Control.
    expect(origin('[remote "origin"]\nurl = https://h.io/a/b\n')).toEqual({ url: 'https://h.io/a/b' });
  });

  it('is undefined without an origin URL', () => {
    expect(origin('')).toBeUndefined();
    expect(origin('[remote "upstream"]\nurl = https://h.io/a/b\n')).toBeUndefined();
    expect(origin('[remote "origin"]\npushurl = https://h.io/a/b\n')).toBeUndefined();
  });

  it('calls exotic what may mean another URL to git, never a URL', () => {
    const base = '[remote "origin"]\n\turl = https://h.io/a/b\n';
    const cases: Record<string, string> = {
      include: `[include]\n\tpath = extra.cfg\n${base}`,
      includeAfter: `${base}[include]\n\tpath = extra.cfg\n`,
      includeIf: `${base}[includeIf "gitdir:~/work/"]\n\tpath = work.cfg\n`,
      insteadOf: `${base}[url "https://mirror.example/"]\n\tinsteadOf = https://h.io/\n`,
      twoUrls: `${base}[remote "origin"]\n\turl = https://h.io/c/d\n`,
      emptyUrl: '[remote "origin"]\n\turl =\n',
      booleanUrl: '[remote "origin"]\n\turl\n',
      vcs: `${base}\tvcs = hg\n`,
      badLine: `${base}!!\n`,
      badEscape: '[remote "origin"]\n\turl = "a\\qb"\n',
      openQuote: '[remote "origin"]\n\turl = "abc\n',
      openSection: '[remote "origin"\n\turl = x\n',
      keyOutsideSection: 'url = https://h.io/a/b\n',
    };
    for (const [name, text] of Object.entries(cases)) {
      const result = origin(text);
      expect([name, result !== undefined && 'exotic' in result]).toEqual([name, true]);
    }
    // Controls: an insteadOf that does not match the URL, and a pushInsteadOf, leave it as it is.
    expect(origin(`${base}[url "https://mirror.example/"]\n\tinsteadOf = https://other.example/\n`)).toEqual({ url: 'https://h.io/a/b' });
    expect(origin(`${base}[url "ssh://git@h.io/"]\n\tpushInsteadOf = https://h.io/\n`)).toEqual({ url: 'https://h.io/a/b' });
    expect(origin(base)).toEqual({ url: 'https://h.io/a/b' });
  });

  it('lists variables with lower-cased section and key, and bare keys as null', () => {
    expect(parseGitConfig('[Extensions]\n\tWorktreeConfig\n[core]\nbare = false\n')).toEqual([
      { name: 'extensions.worktreeconfig', value: null },
      { name: 'core.bare', value: 'false' },
    ]);
  });
});

describe('parseTurnkeeperJson', () => {
  const problem = (text: string) => {
    try {
      parseTurnkeeperJson(text);
      return null;
    } catch (error) {
      expect(error).toBeInstanceOf(GoalError);
      expect((error as GoalError).code).toBe('turnkeeper_json_invalid');
      return (error as GoalError).detail;
    }
  };

  it('reads the goal, with comments, trailing commas, other keys and a BOM', () => {
    expect(parseTurnkeeperJson('{"goal":"acme-app"}')).toEqual({ goal: 'acme-app' });
    expect(parseTurnkeeperJson('\uFEFF{\n  // why: the repo moved twice\n  "goal": "github.com/acme/app",\n  "note": 1,\n}\n')).toEqual({
      goal: 'github.com/acme/app',
    });
  });

  it('refuses a broken goal file with a typed error, never falls back', () => {
    for (const text of [
      '',
      '{',
      'not json',
      '"acme"',
      '[]',
      '{}',
      '{"name":"acme"}',
      '{"goal":1}',
      '{"goal":null}',
      '{"goal":["a"]}',
      '{"goal":""}',
      '{"goal":" acme"}',
      '{"goal":"acme\\n"}',
      '{"goal":"ac\\u0000me"}',
      '{"goal":"ac\\u0085me"}',
      '{"goal":"\\ud800"}',
      `{"goal":"${'a'.repeat(257)}"}`,
      '{"goal":"a","goal":"b"}',
    ]) {
      expect([text.slice(0, 40), problem(text) !== null]).toEqual([text.slice(0, 40), true]);
    }
    // Control: the longest allowed goal, and non-ASCII text, are fine.
    expect(problem(`{"goal":"${'a'.repeat(256)}"}`)).toBeNull();
    expect(problem('{"goal":"équipe/app"}')).toBeNull();
  });
});

describe('displayNameOf', () => {
  it('names the repository folder, the same for every worktree', () => {
    expect(displayNameOf('/src/app/.git', '/src/app')).toBe('app');
    expect(displayNameOf('/src/app/.git', '/src/app-feature')).toBe('app');
    expect(displayNameOf('/srv/app.git', '/src/wt')).toBe('app');
    expect(displayNameOf('/src/proj/.bare', '/src/proj/main')).toBe('proj');
    expect(displayNameOf('/super/.git/modules/lib', '/super/lib')).toBe('lib');
    expect(displayNameOf(null, '/home/u/notes')).toBe('notes');
    expect(displayNameOf(null, '/')).toBe('/');
  });
});
