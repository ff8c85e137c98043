// The extension's settings (`contributes.configuration` in package.json), read through typed getters.
// The hook settings (enabled, onConflict, leaseTtlSeconds) are `machine`-scoped: the hooks read one
// file per TURNKEEPER_HOME, so a value per window or per workspace could not be honoured (two windows
// would overwrite each other's file). Their defaults and limits come from src/config/homeConfig.ts.
import * as vscode from 'vscode';
import type { Agent } from '../core/ids';
import { HOME_CONFIG_DEFAULTS, LEASE_TTL_SECONDS, leaseTtlFrom, ON_CONFLICT_VALUES, type OnConflict } from '../config/homeConfig';

const SECTION = 'turnkeeper';

function section(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(SECTION);
}

function text(key: string): string | undefined {
  const value = section().get<unknown>(key);
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** `turnkeeper.enabled`: false turns every hook into a no-op (the file `off`). */
function enabled(): boolean {
  return section().get<unknown>('enabled', true) !== false;
}

/** `turnkeeper.storePath`: the SQLite file, when set. */
export function storePathSetting(): string | undefined {
  return text('storePath');
}

/** `turnkeeper.store`: a team store (`postgres://…`) or `sqlite:<path>`, when set (spec §4 "Selection"). */
export function storeSetting(): string | undefined {
  return text('store');
}

/** `turnkeeper.agents.<agent>.path`: the executable resume launches, when set. */
export function agentPathSetting(agent: Agent): string | undefined {
  return text(`agents.${agent}.path`);
}

/** `turnkeeper.leaseTtlSeconds`, under the same rule as TURNKEEPER_LEASE_TTL (at least the minimum). */
export function leaseTtlSeconds(): number {
  return leaseTtlFrom(section().get<unknown>('leaseTtlSeconds')) ?? LEASE_TTL_SECONDS.default;
}

/** `turnkeeper.onConflict`: an unknown value is the default, as in the hook. */
function onConflict(): OnConflict {
  const value = section().get<unknown>('onConflict');
  return (ON_CONFLICT_VALUES as readonly unknown[]).includes(value) ? (value as OnConflict) : HOME_CONFIG_DEFAULTS.onConflict;
}

/** What the hooks must see, for src/config/homeConfig.ts's writer. */
export function hookSettings(): { enabled: boolean; onConflict: OnConflict; leaseTtlSeconds: number } {
  return { enabled: enabled(), onConflict: onConflict(), leaseTtlSeconds: leaseTtlSeconds() };
}
