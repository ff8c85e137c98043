// "Did you mean" (spec §2 "Output"): the distance, the threshold, the order and the cap, each with a
// control just past its edge.
import { describe, expect, it } from 'vitest';
import { didYouMean, editDistance, nearestTodoIds } from '../../src/core/suggest';

describe('editDistance (optimal string alignment, bounded)', () => {
  it('counts insertions, deletions, substitutions and adjacent swaps as one edit each', () => {
    expect(editDistance('fix-ad', 'fix-add', 5)).toBe(1); // insertion
    expect(editDistance('fix-addd', 'fix-add', 5)).toBe(1); // deletion
    expect(editDistance('fix-adb', 'fix-add', 5)).toBe(1); // substitution
    expect(editDistance('fxi-add', 'fix-add', 5)).toBe(1); // swap
    expect(editDistance('fix-add', 'fix-add', 5)).toBe(0);
    expect(editDistance('kitten', 'sitting', 5)).toBe(3);
  });

  it('stops at limit + 1 once the distance must exceed the limit', () => {
    expect(editDistance('kitten', 'sitting', 2)).toBe(3);
    expect(editDistance('abc', 'abcdefgh', 2)).toBe(3); // the lengths alone rule it out
    expect(editDistance('write-docs', 'fix-login', 2)).toBe(3);
    // Control: with room, the true distance.
    expect(editDistance('abc', 'abcdefgh', 9)).toBe(5);
  });
});

describe('nearestTodoIds', () => {
  it('suggests an id one typo away (fix-ad → fix-add); control: a far-off id gets none', () => {
    expect(nearestTodoIds('fix-ad', ['fix-add', 'write-docs'])).toStrictEqual(['fix-add']);
    expect(nearestTodoIds('refactor-parser', ['fix-add', 'write-docs'])).toStrictEqual([]);
  });

  it('allows 1 edit for ids of up to 5 characters and 2 for longer ones (controls: one edit more)', () => {
    expect(nearestTodoIds('abd', ['abc'])).toStrictEqual(['abc']);
    expect(nearestTodoIds('axd', ['abc'])).toStrictEqual([]); // 2 edits, 3 characters
    expect(nearestTodoIds('abcdx', ['abcde'])).toStrictEqual(['abcde']);
    expect(nearestTodoIds('abcxy', ['abcde'])).toStrictEqual([]); // 2 edits, 5 characters
    expect(nearestTodoIds('fix-lgon', ['fix-login'])).toStrictEqual(['fix-login']); // 1 edit
    expect(nearestTodoIds('fx-logn', ['fix-login'])).toStrictEqual(['fix-login']); // 2 edits, 9 characters
    expect(nearestTodoIds('fx-lgon', ['fix-login'])).toStrictEqual([]); // 3 edits (a swap, two insertions)
  });

  it('orders by distance, then by id, and gives at most three', () => {
    const ids = ['fix-adds', 'fix-add', 'fix-and', 'fix-ab', 'fix-at', 'fix-ad-x'];
    expect(nearestTodoIds('fix-ad', ids)).toStrictEqual(['fix-ab', 'fix-add', 'fix-and']);
    expect(nearestTodoIds('fix-ad', ['fix-add', 'fix-add'])).toStrictEqual(['fix-add']);
  });
});

describe('didYouMean (commands, subcommands, flags)', () => {
  it('names the near words in a parenthesis, nearest first, with the same threshold; "" when none is near', () => {
    expect(didYouMean('stauts', ['status', 'start', 'show', 'store'])).toBe(' (did you mean status or start?)');
    expect(didYouMean('--limt', ['--limit', '--json', '--all'])).toBe(' (did you mean --limit?)');
    expect(didYouMean('ad', ['add', 'list', 'done'])).toBe(' (did you mean add?)');
    expect(didYouMean('x', ['ax', 'xy', 'zz'])).toBe(' (did you mean ax or xy?)');
    expect(didYouMean('ab', ['ab4', 'ab3', 'ab2', 'ab1'])).toBe(' (did you mean ab1, ab2 or ab3?)');
    // Control: past the threshold, nothing.
    expect(didYouMean('frobnicate', ['status', 'start'])).toBe('');
    expect(didYouMean('stauts', [])).toBe('');
  });
});
