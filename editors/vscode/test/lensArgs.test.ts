import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { referencesArgs } from '../src/lensArgs';

const at = (line: number, character: number) => ({ line, character });
const location = (uri: string, line: number) => ({ uri, range: { start: at(line, 4), end: at(line, 13) } });

describe('referencesArgs', () => {
  test('the note, the lens position and the links, as the server sends them', () => {
    const sent = ['file:///v/a.md', at(1, 0), [location('file:///v/b.md', 6), location('file:///v/c.md', 2)]];
    assert.deepEqual(referencesArgs(sent), {
      uri: 'file:///v/a.md',
      position: at(1, 0),
      locations: [location('file:///v/b.md', 6), location('file:///v/c.md', 2)],
    });
  });
  test('no links: an empty peek, not an error', () => {
    assert.deepEqual(referencesArgs(['file:///v/a.md', at(0, 0), []]), {
      uri: 'file:///v/a.md',
      position: at(0, 0),
      locations: [],
    });
  });
  test('a malformed location is left out; malformed arguments are a reason', () => {
    const read = referencesArgs(['file:///v/a.md', at(0, 0), [location('file:///v/b.md', 1), { uri: 3 }]]);
    assert.equal(typeof read === 'string' ? -1 : read.locations.length, 1);
    assert.match(String(referencesArgs(['file:///v/a.md'])), /does not read/);
    assert.match(String(referencesArgs([1, at(0, 0), []])), /does not read/);
    assert.match(String(referencesArgs(['file:///v/a.md', at(-1, 0), []])), /does not read/);
  });
});
