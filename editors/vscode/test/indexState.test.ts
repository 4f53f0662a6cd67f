import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { combinedState, describeVaults, isBusy, summarize, type VaultStatus } from '../src/indexState';

const vault = (over: Partial<VaultStatus> = {}): VaultStatus => ({
  root: '/notes',
  state: 'ready',
  building: false,
  notes: 31,
  problems: 2,
  topics: 26,
  ...over,
});

describe('summarize', () => {
  test('ready with the note count', () => {
    const view = summarize('running', { vaults: [vault()] });
    assert.equal(view.text, '$(database) Engram: ready · 31 notes');
    assert.equal(view.state, 'ready');
  });
  test('one note', () => {
    assert.equal(summarize('running', { vaults: [vault({ notes: 1 })] }).text, '$(database) Engram: ready · 1 note');
  });
  test('several vaults add up and take the worst state', () => {
    const view = summarize('running', { vaults: [vault(), vault({ root: '/b', state: 'stale', notes: 4 })] });
    assert.equal(view.text, '$(info) Engram: stale · 35 notes');
  });
  test('building flag wins over the stored state', () => {
    const view = summarize('running', { vaults: [vault({ building: true })] });
    assert.equal(view.state, 'building');
  });
  test('live progress shows the percentage', () => {
    const view = summarize('running', undefined, [{ title: 'Engram: indexing notes', message: '10/31 notes', percentage: 32 }]);
    assert.equal(view.text, '$(sync~spin) Engram: indexing 32%');
    assert.match(view.tooltip, /10\/31 notes/);
  });
  test('phases other than running', () => {
    assert.equal(summarize('failed', undefined).text, '$(error) Engram: not running');
    assert.equal(summarize('starting', undefined).state, 'starting');
    assert.equal(summarize('stopped', { vaults: [vault()] }).state, 'stopped');
  });
  test('no vault', () => {
    assert.equal(summarize('running', { vaults: [] }).text, '$(database) Engram: no vault');
  });
});

describe('helpers', () => {
  test('combinedState order', () => {
    assert.equal(combinedState([vault({ state: 'empty' }), vault({ state: 'failed' })]), 'failed');
    assert.equal(combinedState([vault({ state: 'mystery' })]), 'failed');
    assert.equal(combinedState([]), 'ready');
  });
  test('isBusy', () => {
    assert.equal(isBusy(undefined), false);
    assert.equal(isBusy({ vaults: [vault()] }), false);
    assert.equal(isBusy({ vaults: [vault({ building: true })] }), true);
  });
  test('describeVaults', () => {
    assert.equal(
      describeVaults({ vaults: [vault({ updated_at: '2026-01-01T00:00:00Z' })] }),
      '/notes: ready, 31 notes, 2 problems, 26 topics, updated 2026-01-01T00:00:00Z',
    );
    assert.match(describeVaults(undefined), /No vault/);
  });
});
