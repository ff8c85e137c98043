// Todo ids made from titles (`turnkeeper todo add "<title>"` without --id, the editor's Add Todo).
import { describe, expect, it } from 'vitest';
import { isTodoId, todoIdFromTitle } from '../../src/core/ids';

describe('todoIdFromTitle', () => {
  it('gives ASCII titles their plain slug (control: no digest suffix)', () => {
    expect(todoIdFromTitle('Fix the login form')).toBe('fix-the-login-form');
    expect(todoIdFromTitle('Café crème')).toBe('cafe-creme');
    expect(todoIdFromTitle('ab')).toBe('todo-ab');
  });

  it('gives titles whose letters have no ASCII form distinct, stable, valid ids', () => {
    const titles = ['Исправить форму входа', 'Исправить кнопку', '修复登录', '修复注册', 'ログインを直す', '١٢٣'];
    const ids = titles.map(todoIdFromTitle);
    for (const id of ids) {
      expect(isTodoId(id), id).toBe(true);
      expect(id).toMatch(/^todo-[0-9a-f]{8}$/);
    }
    expect(new Set(ids).size).toBe(titles.length);
    expect(titles.map(todoIdFromTitle)).toEqual(ids);
  });

  it('keeps the ASCII words of a mixed title and still tells titles apart', () => {
    const a = todoIdFromTitle('Fix 登录 form');
    const b = todoIdFromTitle('Fix 注册 form');
    expect(a).toMatch(/^fix-form-[0-9a-f]{8}$/);
    expect(b).toMatch(/^fix-form-[0-9a-f]{8}$/);
    expect(a).not.toBe(b);
    expect(isTodoId(todoIdFromTitle(`${'word '.repeat(30)}登录`))).toBe(true);
  });
});
