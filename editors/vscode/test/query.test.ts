import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  effectiveMode,
  isEmptyQuery,
  isSearchMode,
  nextMode,
  parseQuery,
  SEARCH_MODES,
  toSearchParams,
  tokenize,
} from '../src/query';

describe('tokenize', () => {
  const cases: Array<[string, string[]]> = [
    ['', []],
    ['   ', []],
    ['one  two\tthree', ['one', 'two', 'three']],
    ['"write-ahead log" wal', ['"write-ahead log"', 'wal']],
    ['a "b c"d e', ['a', '"b c"', 'd', 'e']],
    ['x"y z"', ['x"y', 'z"']],
    ['"unclosed phrase here', ['"unclosed phrase here']],
    ['""', ['""']],
  ];
  for (const [input, expected] of cases) {
    test(JSON.stringify(input), () => assert.deepEqual(tokenize(input), expected));
  }
});

describe('parseQuery', () => {
  const cases: Array<[string, string, ReturnType<typeof parseQuery>]> = [
    ['empty', '', { query: '', tags: [] }],
    ['words', 'write ahead  log', { query: 'write ahead log', tags: [] }],
    ['tag', '#sqlite', { query: '', tags: ['sqlite'] }],
    ['excluded tag', '-#draft', { query: '', tags: ['-draft'] }],
    ['tags keep order and case', '#SQLite -#draft #lsp', { query: '', tags: ['SQLite', '-draft', 'lsp'] }],
    [
      'all filters',
      'wal #sqlite -#draft after:2024-01-01 before:2024-12-31 in:meetings/2024',
      {
        query: 'wal',
        tags: ['sqlite', '-draft'],
        date_from: '2024-01-01',
        date_to: '2024-12-31',
        path: 'meetings/2024',
      },
    ],
    ['phrase keeps its quotes', '"memory leak" #performance', { query: '"memory leak"', tags: ['performance'] }],
    ['filters inside a phrase stay text', '"#sqlite after:2024-01-01"', { query: '"#sqlite after:2024-01-01"', tags: [] }],
    ['words around a phrase', 'index "write-ahead log" sqlite', { query: 'index "write-ahead log" sqlite', tags: [] }],
    ['bare prefixes are words', '# -# after: before: in:', { query: '# -# after: before: in:', tags: [] }],
    ['last date wins', 'after:2023-01-01 after:2024-01-01', { query: '', tags: [], date_from: '2024-01-01' }],
    ['last folder wins', 'in:a in:b/c', { query: '', tags: [], path: 'b/c' }],
    ['values are passed as typed', 'after:2024-13-01', { query: '', tags: [], date_from: '2024-13-01' }],
    ['a dash alone is a word', '-draft x-#y', { query: '-draft x-#y', tags: [] }],
    ['prefixes are case-sensitive', 'AFTER:2024-01-01 In:x', { query: 'AFTER:2024-01-01 In:x', tags: [] }],
    ['unclosed quote runs to the end', 'wal "memory leak #x', { query: 'wal "memory leak #x', tags: [] }],
    ['tag with slash and dash', '#area/sub-topic', { query: '', tags: ['area/sub-topic'] }],
    ['glob path', 'in:meetings/**/*.md', { query: '', tags: [], path: 'meetings/**/*.md' }],
    ['mode', 'mode:regex colou?r', { query: 'colou?r', tags: [], mode: 'regex' }],
    ['mode anywhere', 'wal mode:literal #sqlite', { query: 'wal', tags: ['sqlite'], mode: 'literal' }],
    ['last mode wins', 'mode:semantic x mode:hybrid', { query: 'x', tags: [], mode: 'hybrid' }],
    ['a bare mode: is a word', 'mode: x', { query: 'mode: x', tags: [] }],
    ['an unknown mode is passed as typed', 'mode:fuzzy x', { query: 'x', tags: [], mode: 'fuzzy' }],
    ['mode is lower case', 'Mode:regex x', { query: 'Mode:regex x', tags: [] }],
    ['mode inside a phrase stays text', '"mode:regex x"', { query: '"mode:regex x"', tags: [] }],
  ];
  for (const [name, input, expected] of cases) {
    test(name, () => assert.deepEqual(parseQuery(input), expected));
  }
});

describe('toSearchParams', () => {
  test('only the given fields, plus limit', () => {
    assert.deepEqual(toSearchParams(parseQuery('#sqlite after:2024-01-01'), 20), {
      query: '',
      tags: ['sqlite'],
      date_from: '2024-01-01',
      limit: 20,
    });
  });
  test('text only', () => {
    assert.deepEqual(toSearchParams(parseQuery('fts5')), { query: 'fts5' });
  });
  test('no mode unless given: text is the server default', () => {
    assert.equal('mode' in toSearchParams(parseQuery('fts5'), 20, 'text'), false);
  });
  test('a mode: term is sent', () => {
    assert.deepEqual(toSearchParams(parseQuery('mode:regex colou?r')), { query: 'colou?r', mode: 'regex' });
  });
  test('a default other than text is sent', () => {
    assert.deepEqual(toSearchParams(parseQuery('leak'), undefined, 'semantic'), { query: 'leak', mode: 'semantic' });
  });
  test('a mode: term overrides the default, even mode:text', () => {
    assert.deepEqual(toSearchParams(parseQuery('mode:literal a b'), 5, 'hybrid'), {
      query: 'a b',
      mode: 'literal',
      limit: 5,
    });
    assert.deepEqual(toSearchParams(parseQuery('mode:text leak'), undefined, 'semantic'), {
      query: 'leak',
      mode: 'text',
    });
  });
  test('the tag list is a copy', () => {
    const parsed = parseQuery('#a');
    const params = toSearchParams(parsed);
    params.tags?.push('b');
    assert.deepEqual(parsed.tags, ['a']);
  });
});

describe('isEmptyQuery', () => {
  test('nothing typed', () => assert.equal(isEmptyQuery(parseQuery('  ')), true));
  test('a filter alone is a query', () => assert.equal(isEmptyQuery(parseQuery('in:journal')), false));
  test('a word', () => assert.equal(isEmptyQuery(parseQuery('x')), false));
  test('a mode alone asks for nothing', () => assert.equal(isEmptyQuery(parseQuery('mode:regex')), true));
});

describe('modes', () => {
  test('the five modes of engram/search, text first', () =>
    assert.deepEqual([...SEARCH_MODES], ['text', 'literal', 'regex', 'semantic', 'hybrid']));
  test('nextMode cycles through all of them', () => {
    const seen = ['text'];
    let mode = nextMode('text');
    while (mode !== 'text') {
      seen.push(mode);
      mode = nextMode(mode);
    }
    assert.deepEqual(seen, [...SEARCH_MODES]);
  });
  test('isSearchMode', () => {
    assert.equal(isSearchMode('hybrid'), true);
    assert.equal(isSearchMode('Hybrid'), false);
    assert.equal(isSearchMode(undefined), false);
  });
  test('effectiveMode: the term, else the default', () => {
    assert.equal(effectiveMode(parseQuery('x'), 'regex'), 'regex');
    assert.equal(effectiveMode(parseQuery('x mode:literal'), 'regex'), 'literal');
    assert.equal(effectiveMode(parseQuery('x')), 'text');
  });
});
