import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { documentPath, documentText, queryParams, type QueryResult, runnable, viewChoices } from '../src/baseView';

const result = (over: Partial<QueryResult>): QueryResult => ({
  view: 'Open work',
  views: ['Open work', 'By status', 'Rated'],
  markdown: '| file.name | Status |\n| --- | --- |\n| [a.md](<file:///v/a.md>) | doing |\n\nOpen work: 1 of 1 notes; served by index, 2.0 ms\n',
  base: 'bases/work.base',
  total: 1,
  ...over,
});

describe('runnable', () => {
  test('a .base file whatever its language id, a Markdown note, nothing else', () => {
    assert.equal(runnable('/v/bases/work.base', 'plaintext'), 'base');
    assert.equal(runnable('/v/bases/WORK.BASE', 'yaml'), 'base');
    assert.equal(runnable('/v/dashboard.md', 'markdown'), 'note');
    assert.equal(runnable('/v/notes.txt', 'plaintext'), undefined);
    assert.equal(runnable('/v/base.md.bak', 'plaintext'), undefined);
  });
});

describe('queryParams', () => {
  test('a note sends its cursor line, a .base file does not; the view only when chosen', () => {
    assert.deepEqual(queryParams('file:///v/d.md', 'note', 17), { uri: 'file:///v/d.md', format: 'markdown', line: 17 });
    assert.deepEqual(queryParams('file:///v/w.base', 'base', 17, 'Rated'), {
      uri: 'file:///v/w.base',
      format: 'markdown',
      view: 'Rated',
    });
  });
});

describe('viewChoices', () => {
  test('the answered view first with its count, then the others in order', () => {
    assert.deepEqual(viewChoices(result({ view: 'By status', total: 2 })), [
      { label: 'By status', description: '2 notes' },
      { label: 'Open work' },
      { label: 'Rated' },
    ]);
  });
  test('nothing to choose with one view', () => {
    assert.deepEqual(viewChoices(result({ views: ['Open work'] })), []);
  });
});

describe('documentPath and documentText', () => {
  test('the file name and the view, as a Markdown document; no folders from slashes', () => {
    assert.equal(documentPath('bases/work.base', 'Open work'), '/work.base · Open work.md');
    assert.equal(documentPath('dashboard.md', 'a/b'), '/dashboard.md · a∕b.md');
    assert.equal(documentPath('', null), '/base · view.md');
  });
  test('a title, the views when there are several, then the table as the server gave it', () => {
    const text = documentText('bases/work.base', result({}));
    const lines = text.split('\n');
    assert.equal(lines[0], '# bases/work.base · Open work');
    assert.match(lines[2], /^Views: Open work, By status, Rated/);
    assert.ok(text.endsWith(result({}).markdown));
    assert.ok(!documentText('x.base', result({ views: ['Only'] })).includes('Views:'));
  });
});
