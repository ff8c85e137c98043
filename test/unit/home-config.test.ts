// $TURNKEEPER_HOME/config.json and the file `off` have one owner (src/config/homeConfig.ts): the
// hook reads through it, the extension writes through it, and package.json's settings repeat its
// numbers. One lease-TTL rule wherever the value comes from; machine scope for what the hooks read.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { double } from '../support/vscode';
import {
  HOME_CONFIG_DEFAULTS,
  LEASE_TTL_SECONDS,
  leaseTtlFrom,
  ON_CONFLICT_VALUES,
  parseHomeConfig,
  readHomeConfig,
  writeHookSettings,
} from '../../src/config/homeConfig';
import { leaseTtlSeconds, onConflict } from '../../src/config/settings';
import * as config from '../../src/extension/config';
import { RENEWAL_INTERVAL_MS } from '../../src/core/lease';
import { StoreUnavailableError } from '../../src/store/authority';
import { selectStore } from '../../src/ledger/open';

let root: string;
let home: string;
const env = () => ({ TURNKEEPER_HOME: home });
const file = () => join(home, 'config.json');
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'tk-homeconfig-'));
  home = join(root, 'tkhome');
  double.reset();
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('the lease TTL rule', () => {
  it('is whole seconds, at least one renewal interval; less counts as the minimum', () => {
    expect(LEASE_TTL_SECONDS).toStrictEqual({ default: 2700, minimum: RENEWAL_INTERVAL_MS / 1000 });
    expect(leaseTtlFrom(2700)).toBe(2700);
    expect(leaseTtlFrom('600')).toBe(600);
    expect(leaseTtlFrom(1)).toBe(60);
    expect(leaseTtlFrom('1')).toBe(60);
    expect(leaseTtlFrom(59)).toBe(60);
    for (const ignored of [0, -5, 1.5, '', 'soon', null, undefined, Number.MAX_VALUE]) expect(leaseTtlFrom(ignored)).toBeUndefined();
  });

  it('is the same for the environment, the file and the editor setting', () => {
    expect(leaseTtlSeconds({ ...env(), TURNKEEPER_LEASE_TTL: '1' })).toBe(60);
    mkdirSync(home, { recursive: true });
    writeFileSync(file(), JSON.stringify({ leaseTtlSeconds: 30 }));
    expect(leaseTtlSeconds(env())).toBe(60);
    writeFileSync(file(), JSON.stringify({ leaseTtlSeconds: 900 }));
    expect(leaseTtlSeconds(env())).toBe(900);
    expect(leaseTtlSeconds({ ...env(), TURNKEEPER_LEASE_TTL: '120' })).toBe(120); // the environment wins
    expect(leaseTtlSeconds({ ...env(), TURNKEEPER_LEASE_TTL: 'soon' })).toBe(900); // ignored: the next source
    double.configuration = { leaseTtlSeconds: 5 };
    expect(config.leaseTtlSeconds()).toBe(60);
    double.configuration = {};
    expect(config.leaseTtlSeconds()).toBe(2700);
  });
});

describe('config.json', () => {
  it('is read field by field: a bad field does not discard the others', () => {
    expect(parseHomeConfig({ onConflict: 'block', leaseTtlSeconds: 'long', store: ' postgres://db/tk ', extra: 1 })).toStrictEqual({
      onConflict: 'block',
      store: 'postgres://db/tk',
    });
    expect(parseHomeConfig({ onConflict: 'shout', leaseTtlSeconds: 300, store: '' })).toStrictEqual({ leaseTtlSeconds: 300 });
    for (const junk of [null, [], 'x', 3]) expect(parseHomeConfig(junk)).toStrictEqual({});
  });

  it('that exists but is not JSON is the store unavailable, naming the file, never {} (a team selection would fall back to SQLite)', () => {
    mkdirSync(home, { recursive: true });
    // A hand edit with a trailing comma, of a file that selects the team server.
    writeFileSync(file(), '{ "store": "postgres://tk@127.0.0.1:1/tk", }');
    expect(() => readHomeConfig(env())).toThrow(StoreUnavailableError);
    expect(() => readHomeConfig(env())).toThrow(`${file()} is not valid JSON`);
    expect(() => onConflict(env())).toThrow(StoreUnavailableError);
    // Before, the file read as {} and the store selected was the local SQLite file: a second holder.
    expect(() => selectStore(env())).toThrow(StoreUnavailableError);
    // Control: the same selection, parseable, is the team server.
    writeFileSync(file(), '{ "store": "postgres://tk@127.0.0.1:1/tk" }');
    expect(selectStore(env())).toMatchObject({ kind: 'postgres', from: 'config.json' });
    rmSync(file());
  });

  it('holds the checkpoint keys too (witness, checkpointEvery), each validated on its own', () => {
    expect(parseHomeConfig({ witness: ' /w/witness.jsonl ', checkpointEvery: 0 })).toStrictEqual({ witness: '/w/witness.jsonl', checkpointEvery: 0 });
    expect(parseHomeConfig({ witness: '', checkpointEvery: -1 })).toStrictEqual({});
    expect(parseHomeConfig({ witness: 3, checkpointEvery: 2.5, onConflict: 'block' })).toStrictEqual({ onConflict: 'block' });
    expect(parseHomeConfig({ checkpointEvery: '5' })).toStrictEqual({});
  });

  it('is read once while it stays the same file, and again when it changes (by hand or by the editor)', () => {
    mkdirSync(home, { recursive: true });
    const settle = (seconds: number) => utimesSync(file(), new Date(Date.now() - seconds * 1000), new Date(Date.now() - seconds * 1000));
    writeFileSync(file(), JSON.stringify({ onConflict: 'block' }));
    settle(3600);
    expect(onConflict(env())).toBe('block');
    // The same size, another modification time: read again.
    writeFileSync(file(), JSON.stringify({ onConflict: 'xxxxx' }));
    settle(3000);
    expect(onConflict(env())).toBe('context');
    // Changed within the last seconds: never served from memory (it may change again in the same tick).
    writeFileSync(file(), JSON.stringify({ onConflict: 'block' }));
    expect(onConflict(env())).toBe('block');
    writeFileSync(file(), JSON.stringify({ onConflict: 'xxxxx' }));
    expect(onConflict(env())).toBe('context');
    // The editor's own write is seen at once.
    expect(writeHookSettings(env(), { enabled: true, onConflict: 'block', leaseTtlSeconds: 600 })).toBe(true);
    expect(readHomeConfig(env())).toMatchObject({ onConflict: 'block', leaseTtlSeconds: 600 });
  });

  it('is written only when something differs from the defaults, keeping the keys it does not own', () => {
    expect(writeHookSettings(env(), { enabled: true, ...HOME_CONFIG_DEFAULTS })).toBe(false);
    expect(existsSync(home)).toBe(false); // a window that never used Turnkeeper leaves no trace

    expect(writeHookSettings(env(), { enabled: true, onConflict: 'block', leaseTtlSeconds: 10 })).toBe(true);
    expect(JSON.parse(readFileSync(file(), 'utf8'))).toStrictEqual({ onConflict: 'block', leaseTtlSeconds: 60 });
    expect(onConflict(env())).toBe('block');
    expect(leaseTtlSeconds(env())).toBe(60);
    expect(writeHookSettings(env(), { enabled: true, onConflict: 'block', leaseTtlSeconds: 60 })).toBe(false); // unchanged

    // The team store selection (spec §4) and a newer Turnkeeper's keys survive the editor's writes.
    writeFileSync(file(), JSON.stringify({ store: 'postgres://db.example/tk', future: { a: 1 }, onConflict: 'block' }));
    expect(writeHookSettings(env(), { enabled: true, ...HOME_CONFIG_DEFAULTS })).toBe(true);
    expect(JSON.parse(readFileSync(file(), 'utf8'))).toStrictEqual({ store: 'postgres://db.example/tk', future: { a: 1 }, ...HOME_CONFIG_DEFAULTS });
    expect(readHomeConfig(env()).store).toBe('postgres://db.example/tk');
  });

  it('is replaced whole, 0600 (it may name a team store with its credentials), in a 0700 home', () => {
    expect(writeHookSettings(env(), { enabled: true, onConflict: 'block', leaseTtlSeconds: 600 })).toBe(true);
    expect(statSync(file()).mode & 0o777).toBe(0o600);
    expect(statSync(home).mode & 0o777).toBe(0o700);
    // An existing file keeps its owner's bits, never the group's or other's; no temporary file is left.
    chmodSync(file(), 0o644);
    expect(writeHookSettings(env(), { enabled: true, onConflict: 'context', leaseTtlSeconds: 600 })).toBe(true);
    expect(statSync(file()).mode & 0o777).toBe(0o600);
    expect(readdirSync(home)).toStrictEqual(['config.json']);
  });

  it('is not overwritten when it is not JSON (it may hold a store selection by hand)', () => {
    mkdirSync(home, { recursive: true });
    writeFileSync(file(), '{ "store": "postgres://db/tk", }');
    expect(() => writeHookSettings(env(), { enabled: true, onConflict: 'block', leaseTtlSeconds: 2700 })).toThrow(/not valid JSON/);
    expect(readFileSync(file(), 'utf8')).toBe('{ "store": "postgres://db/tk", }');
  });

  it('enabled=false is the file off, and true removes it', () => {
    expect(writeHookSettings(env(), { enabled: false, ...HOME_CONFIG_DEFAULTS })).toBe(true);
    expect(existsSync(join(home, 'off'))).toBe(true);
    expect(writeHookSettings(env(), { enabled: false, ...HOME_CONFIG_DEFAULTS })).toBe(false);
    expect(writeHookSettings(env(), { enabled: true, ...HOME_CONFIG_DEFAULTS })).toBe(true);
    expect(existsSync(join(home, 'off'))).toBe(false);
  });
});

describe('the editor settings', () => {
  const manifest = JSON.parse(readFileSync(resolve(__dirname, '../../package.json'), 'utf8')) as {
    contributes: {
      configuration: { properties: Record<string, { default?: unknown; minimum?: number; enum?: string[]; scope?: string; markdownDescription?: string }> };
    };
  };
  const nls = JSON.parse(readFileSync(resolve(__dirname, '../../package.nls.json'), 'utf8')) as Record<string, string>;
  const properties = manifest.contributes.configuration.properties;

  it('repeat the numbers of homeConfig.ts: defaults, minimum, values', () => {
    expect(properties['turnkeeper.leaseTtlSeconds']).toMatchObject({ default: LEASE_TTL_SECONDS.default, minimum: LEASE_TTL_SECONDS.minimum });
    expect(properties['turnkeeper.onConflict']).toMatchObject({ default: HOME_CONFIG_DEFAULTS.onConflict, enum: [...ON_CONFLICT_VALUES] });
    expect(properties['turnkeeper.enabled']).toMatchObject({ default: true });
  });

  it('that the hooks read are machine-scoped, and say so', () => {
    // The hooks read one file per machine: a per-window or per-workspace value would overwrite another's.
    for (const key of ['turnkeeper.enabled', 'turnkeeper.leaseTtlSeconds', 'turnkeeper.onConflict']) {
      expect(properties[key]!.scope, key).toBe('machine');
      const description = nls[properties[key]!.markdownDescription!.replace(/%/g, '')]!;
      expect(description, key).toMatch(/Machine-wide/);
    }
    // And the ones that name files and executables of the machine the extension host runs on.
    for (const [key, value] of Object.entries(properties))
      if (/^turnkeeper\.(store|storePath|agents\..*\.path)$/.test(key)) expect(value.scope, key).toBe('machine');
  });

  it("are read through typed getters that apply the hook's own rules", () => {
    expect(config.hookSettings()).toStrictEqual({ enabled: true, onConflict: 'context', leaseTtlSeconds: 2700 });
    double.configuration = { enabled: false, onConflict: 'shout', leaseTtlSeconds: '900', storePath: '  ', 'agents.codex.path': ' /opt/codex ' };
    expect(config.hookSettings()).toStrictEqual({ enabled: false, onConflict: 'context', leaseTtlSeconds: 900 });
    expect(config.storePathSetting()).toBeUndefined();
    expect(config.agentPathSetting('codex')).toBe('/opt/codex');
  });
});
