// Vitest's asymmetric matchers (`expect.stringMatching`, `expect.any`, …), typed `unknown`.
import { expect } from 'vitest';

/**
 * The asymmetric matchers the tests put inside expected objects, as values of type `unknown`.
 *
 * Vitest types each of them as returning `any`, so that one fits any field of an expected shape;
 * typescript-eslint's no-unsafe-assignment then flags every object literal that holds one. These are
 * the same functions on the same `expect` (`like.stringMatching === expect.stringMatching`): only the
 * static type differs, and toMatchObject, toEqual and toHaveBeenCalledWith accept `unknown` fields.
 * A matcher passed straight to a matcher (`toEqual(expect.any(String))`) needs none of this.
 */
export interface Like {
  any(constructor: unknown): unknown;
  stringContaining(expected: string): unknown;
  stringMatching(expected: string | RegExp): unknown;
  objectContaining(expected: object): unknown;
  arrayContaining(expected: readonly unknown[]): unknown;
  readonly not: {
    stringContaining(expected: string): unknown;
  };
}

export const like: Like = expect;
