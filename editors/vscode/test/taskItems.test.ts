import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  addDays,
  byDue,
  describeToggle,
  groupOf,
  groupTasks,
  holdsTask,
  lineOf,
  OVERDUE_COLOR,
  openCount,
  rootRows,
  type TaskHit,
  type TasksResult,
  taskIcon,
  taskRow,
  tasksParams,
  TASKS_LIMIT,
} from '../src/taskItems';

const task = (over: Partial<TaskHit>): TaskHit => ({
  path: 'meetings/2025/2025-01-20 roadmap.md',
  uri: 'file:///vault/meetings/2025/2025-01-20%20roadmap.md',
  line: 17,
  status: '/',
  state: 'in_progress',
  text: 'Ship the VS Code extension [due:: 2025-06-30] [priority:: high] #editor',
  description: 'Ship the VS Code extension #editor',
  priority: 'high',
  due: '2025-06-30',
  heading: 'Actions',
  overdue: true,
  note: { title: 'Roadmap 2025', created_at: '2025-01-20', topics: ['roadmap'] },
  ...over,
});

const result = (tasks: TaskHit[], over: Partial<TasksResult> = {}): TasksResult => ({
  tasks,
  total: tasks.length,
  truncated: false,
  today: '2025-06-30',
  ...over,
});

describe('tasksParams', () => {
  test('the open tasks, soonest due first, as many as the server gives; the folder when given', () => {
    assert.deepEqual(tasksParams(), { status: 'open', sort: 'due', limit: TASKS_LIMIT });
    assert.deepEqual(tasksParams('file:///vault'), { status: 'open', sort: 'due', limit: 1000, uri: 'file:///vault' });
  });
});

describe('addDays', () => {
  test('across months, years and a leap day', () => {
    assert.equal(addDays('2025-06-30', 1), '2025-07-01');
    assert.equal(addDays('2025-12-28', 7), '2026-01-04');
    assert.equal(addDays('2024-02-28', 1), '2024-02-29');
    assert.equal(addDays('2025-02-28', 1), '2025-03-01');
    assert.equal(addDays('2025-03-01', -1), '2025-02-28');
  });
  test('a day that is not one', () => {
    assert.equal(addDays('2025-02-30', 1), undefined);
    assert.equal(addDays('today', 1), undefined);
  });
});

describe('groupOf', () => {
  const today = '2025-12-28';
  test('relative to the given today, not the local clock', () => {
    assert.equal(groupOf('2025-12-27', today), 'overdue');
    assert.equal(groupOf('1999-01-01', today), 'overdue');
    assert.equal(groupOf('2025-12-28', today), 'today');
    assert.equal(groupOf('2025-12-29', today), 'week');
    assert.equal(groupOf('2026-01-04', today), 'week'); // today + 7
    assert.equal(groupOf('2026-01-05', today), 'later'); // today + 8
    assert.equal(groupOf('2030-01-01', today), 'later');
  });
  test('no due day, or one that is not a day', () => {
    assert.equal(groupOf(null, today), 'none');
    assert.equal(groupOf(undefined, today), 'none');
    assert.equal(groupOf('soon', today), 'none');
  });
});

describe('taskRow', () => {
  test('the description as label; the note, due day and priority; the full text and place', () => {
    const row = taskRow(task({}), '2025-07-01');
    assert.equal(row.id, 'file:///vault/meetings/2025/2025-01-20%20roadmap.md#17');
    assert.equal(row.label, 'Ship the VS Code extension #editor');
    assert.equal(row.description, 'Roadmap 2025 · due 2025-06-30 · high priority');
    assert.equal(
      row.tooltip,
      [
        '[/] Ship the VS Code extension [due:: 2025-06-30] [priority:: high] #editor',
        'meetings/2025/2025-01-20 roadmap.md:17',
        'Roadmap 2025 › Actions',
        'in progress · due 2025-06-30 (overdue) · high priority',
      ].join('\n'),
    );
    assert.equal(row.ariaLabel, 'Ship the VS Code extension #editor, in progress, Roadmap 2025 · due 2025-06-30 · high priority, overdue');
    assert.equal(row.icon, 'play-circle');
    assert.equal(row.color, OVERDUE_COLOR);
  });
  test('a normal priority and no due day say nothing; no title: the path; not overdue: no color', () => {
    const row = taskRow(
      task({ status: ' ', state: 'todo', priority: 'normal', due: null, note: { title: '' }, heading: null }),
      '2025-07-01',
    );
    assert.equal(row.description, 'meetings/2025/2025-01-20 roadmap.md');
    assert.equal(row.icon, 'circle-large-outline');
    assert.equal(row.color, undefined);
    assert.equal(row.tooltip.split('\n')[3], 'to do');
    assert.equal(row.ariaLabel, 'Ship the VS Code extension #editor, to do, meetings/2025/2025-01-20 roadmap.md');
    // A heading that is the note's title is said once.
    assert.equal(taskRow(task({ heading: 'Roadmap 2025' }), '2025-07-01').tooltip.split('\n')[2], 'Roadmap 2025');
    assert.equal(taskRow(task({ due: '2025-07-01' }), '2025-07-01').color, undefined);
  });
  test('a task with no description shows its text', () => {
    assert.equal(taskRow(task({ description: '', text: '📅 2025-01-01' }), '2025-07-01').label, '📅 2025-01-01');
  });
  test('an icon for each state; an unknown one as "other"', () => {
    assert.deepEqual(
      ['todo', 'in_progress', 'done', 'cancelled', 'other', 'weird'].map(taskIcon),
      ['circle-large-outline', 'play-circle', 'pass', 'circle-slash', 'issue-draft', 'issue-draft'],
    );
  });
});

describe('groupTasks', () => {
  const today = '2025-06-30';
  const tasks = [
    task({ line: 1, due: '2025-06-01' }),
    task({ line: 2, due: '2025-06-29' }),
    task({ line: 3, due: '2025-06-30' }),
    task({ line: 4, due: '2025-07-07' }),
    task({ line: 5, due: '2025-07-08' }),
    task({ line: 6, due: null }),
    task({ line: 7, due: null }),
  ];
  test('in the fixed order, each with its count, tasks in the order given', () => {
    const groups = groupTasks(tasks, today);
    assert.deepEqual(
      groups.map((g) => [g.key, g.label, g.rows.map((r) => r.task.line)]),
      [
        ['overdue', 'Overdue (2)', [1, 2]],
        ['today', 'Today (1)', [3]],
        ['week', 'This week (1)', [4]],
        ['later', 'Later (1)', [5]],
        ['none', 'No due date (2)', [6, 7]],
      ],
    );
    assert.equal(groups[0].icon, 'warning');
  });
  test('groups without tasks are left out', () => {
    assert.deepEqual(
      groupTasks([task({ due: null }), task({ due: '2025-06-01', line: 2 })], today).map((g) => g.label),
      ['Overdue (1)', 'No due date (1)'],
    );
    assert.deepEqual(groupTasks([], today), []);
  });
});

describe('byDue', () => {
  test('soonest first, undated last, then the most urgent; stable otherwise', () => {
    const sorted = byDue([
      task({ line: 1, due: null, priority: 'highest' }),
      task({ line: 2, due: '2025-01-02', priority: 'low' }),
      task({ line: 3, due: '2025-01-01', priority: 'normal' }),
      task({ line: 4, due: '2025-01-02', priority: 'high' }),
      task({ line: 5, due: '2025-01-02', priority: 'high' }),
    ]);
    assert.deepEqual(
      sorted.map((t) => t.line),
      [3, 4, 5, 2, 1],
    );
  });
});

describe('rootRows', () => {
  test('the groups of one answer, in the server order', () => {
    const rows = rootRows([
      { folder: 'vault', result: result([task({ line: 2 }), task({ line: 3 }), task({ line: 1, due: null })], { today: '2025-07-01' }) },
    ]);
    assert.deepEqual(
      rows.map((r) => (r.kind === 'group' ? [r.group.label, r.group.rows.map((row) => row.task.line)] : r.message.label)),
      [
        ['Overdue (2)', [2, 3]],
        ['No due date (1)', [1]],
      ],
    );
  });
  test('a server error is one row with the message', () => {
    const rows = rootRows([{ folder: 'vault', error: 'invalid tasks request [ENGRAM_INVALID_REQUEST]' }]);
    assert.deepEqual(rows, [
      {
        kind: 'message',
        message: {
          label: 'invalid tasks request [ENGRAM_INVALID_REQUEST]',
          tooltip: 'invalid tasks request [ENGRAM_INVALID_REQUEST]',
          icon: 'error',
        },
      },
    ]);
  });
  test('no open task', () => {
    const rows = rootRows([{ folder: 'vault', result: result([]) }]);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].kind === 'message' && rows[0].message.label, 'No open tasks');
  });
  test('a partial list says so', () => {
    const rows = rootRows([{ result: result([task({})], { total: 1200, truncated: true }) }]);
    const last = rows[rows.length - 1];
    assert.equal(last.kind === 'message' && last.message.label, 'Showing 1 of 1200 open tasks');
  });
  test('several folders: the failed one named, the tasks of the others merged by due day', () => {
    const rows = rootRows([
      { folder: 'a', result: result([task({ line: 1, due: '2025-07-03' }), task({ line: 2, due: null })]) },
      { folder: 'b', error: 'boom' },
      { folder: 'c', result: result([task({ line: 3, due: '2025-07-02', uri: 'file:///c/x.md' })]) },
    ]);
    assert.equal(rows[0].kind === 'message' && rows[0].message.label, 'b: boom');
    const groups = rows.flatMap((r) => (r.kind === 'group' ? [r.group] : []));
    assert.deepEqual(
      groups.map((g) => [g.label, g.rows.map((r) => r.task.line)]),
      [
        ['This week (2)', [3, 1]],
        ['No due date (1)', [2]],
      ],
    );
    assert.equal(openCount([{ result: result([task({})]) }, { error: 'x' }, { result: result([], { total: 4 }) }]), 5);
    assert.equal(openCount([{ error: 'x' }]), undefined);
  });
});

describe('lineOf and holdsTask', () => {
  const text = '\ufeff# Title\r\n\r\n- [ ] Measure the rename 📅 2024-11-15 ⏫ #benchmark\r\n  * [/]\r\n1) [x]\tdone  \n';
  test('a line without its ending; the BOM of line 1 left out; past the end: nothing', () => {
    assert.equal(lineOf(text, 1), '# Title');
    assert.equal(lineOf(text, 3), '- [ ] Measure the rename 📅 2024-11-15 ⏫ #benchmark');
    assert.equal(lineOf(text, 6), '');
    assert.equal(lineOf(text, 7), undefined);
    assert.equal(lineOf(text, 0), undefined);
  });
  test('the same status and text after the checkbox, whatever the marker and indentation', () => {
    const measure = { status: ' ', text: 'Measure the rename 📅 2024-11-15 ⏫ #benchmark' };
    assert.ok(holdsTask(lineOf(text, 3), measure));
    assert.ok(holdsTask(lineOf(text, 4), { status: '/', text: '' }));
    assert.ok(holdsTask(lineOf(text, 5), { status: 'x', text: 'done  ' }));
  });
  test('a line that changed, moved or is no task does not', () => {
    const measure = { status: ' ', text: 'Measure the rename 📅 2024-11-15 ⏫ #benchmark' };
    assert.ok(!holdsTask('- [x] Measure the rename 📅 2024-11-15 ⏫ #benchmark', measure));
    assert.ok(!holdsTask('- [ ] Measure the rename', measure));
    assert.ok(!holdsTask('# - [ ] Measure the rename 📅 2024-11-15 ⏫ #benchmark', measure));
    assert.ok(!holdsTask('-[ ] Measure the rename 📅 2024-11-15 ⏫ #benchmark', measure));
    assert.ok(!holdsTask(undefined, measure));
  });
});

describe('describeToggle', () => {
  test('what changed and where', () => {
    const base = { path: 'a.md', line: 3, before: '- [ ] x', after: '- [x] x ✅ 2025-01-01' };
    assert.equal(describeToggle({ ...base, applied: 'disk', done: true }), 'a.md:3 marked done on disk');
    assert.equal(describeToggle({ ...base, applied: 'buffer', done: false }), 'a.md:3 marked not done in the editor');
    assert.equal(
      describeToggle({ ...base, applied: 'disk', done: true, recurrence: 'added' }),
      'a.md:3 marked done on disk (its next occurrence added above)',
    );
  });
});
