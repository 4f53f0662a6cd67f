import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { describeReasons, openLine, type RelatedHit, toRelatedRows } from '../src/relatedItems';

const hit = (over: Partial<RelatedHit>): RelatedHit => ({
  path: 'projects/memory-leak-hunt.md',
  uri: 'file:///vault/projects/memory-leak-hunt.md',
  title: 'Hunting the watcher memory leak',
  score: 0.9,
  line: 32,
  snippet: 'General profiling tips are in [[profiling]]',
  reasons: ['link', 'backlink'],
  ...over,
});

describe('toRelatedRows', () => {
  test('title, path and reasons, snippet; in the server order', () => {
    const rows = toRelatedRows({
      results: [hit({}), hit({ path: 'b.md', title: 'B', reasons: ['meaning'], snippet: 'close\n  in   meaning' })],
    });
    assert.deepEqual(
      rows.map(({ label, description, detail }) => ({ label, description, detail })),
      [
        {
          label: 'Hunting the watcher memory leak',
          description: 'projects/memory-leak-hunt.md · linked from this note, links here',
          detail: 'General profiling tips are in [[profiling]]',
        },
        { label: 'B', description: 'b.md · similar meaning', detail: 'close in meaning' },
      ],
    );
    assert.equal(rows[0].hit.uri, 'file:///vault/projects/memory-leak-hunt.md');
  });
  test('a note without a title shows its path', () => {
    assert.equal(toRelatedRows({ results: [hit({ title: '' })] })[0].label, 'projects/memory-leak-hunt.md');
  });
  test('no reasons, no snippet', () => {
    const [row] = toRelatedRows({ results: [hit({ reasons: [], snippet: '' })] });
    assert.equal(row.description, 'projects/memory-leak-hunt.md');
    assert.equal(row.detail, '');
  });
  test('an empty or missing answer has no rows', () => {
    assert.deepEqual(toRelatedRows({ results: [] }), []);
    assert.deepEqual(toRelatedRows(null), []);
  });
});

describe('describeReasons', () => {
  test('known reasons in words, unknown ones as sent', () => {
    assert.equal(describeReasons(['meaning', 'topic']), 'similar meaning, topic');
    assert.equal(describeReasons(undefined), '');
  });
});

describe('openLine', () => {
  test('the 0-based line as given', () => assert.equal(openLine(hit({ line: 7 })), 7));
  test('a missing or bad line opens the top', () => {
    assert.equal(openLine(hit({ line: -1 })), 0);
    assert.equal(openLine(hit({ line: 2.5 })), 0);
    assert.equal(openLine({ ...hit({}), line: undefined as unknown as number }), 0);
  });
});
