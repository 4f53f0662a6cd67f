/**
 * The Tasks view's model: the `engram/tasks` request it sends, its answer grouped by due day
 * (relative to the server's `today`, not the local clock) and each task as a tree row, and
 * whether a line of a note still holds a task the view listed. No vscode import: unit-tested
 * under plain node.
 */

export type TaskState = 'todo' | 'in_progress' | 'done' | 'cancelled' | 'other';

/** One task of an `engram/tasks` answer (docs/tasks.md); `line` counts from 1. */
export interface TaskHit {
  path: string;
  uri: string;
  line: number;
  /** The status character as written (` `, `/`, `x`, `-`, …). */
  status: string;
  state: TaskState | string;
  /** The task's text after the checkbox, as written. */
  text: string;
  /** The text without its fields. */
  description: string;
  priority: string;
  due: string | null;
  scheduled?: string | null;
  start?: string | null;
  created?: string | null;
  done?: string | null;
  cancelled?: string | null;
  recurrence?: string | null;
  tags?: string[];
  heading?: string | null;
  parent?: number | null;
  overdue?: boolean;
  note?: { title?: string | null; created_at?: string | null; topics?: string[] };
}

export interface TasksResult {
  tasks: TaskHit[];
  total: number;
  truncated: boolean;
  /** The day the request was answered (`YYYY-MM-DD`). */
  today: string;
  index?: { state?: string; served_by?: string };
  elapsed_ms?: number;
}

/** The `engram/tasks` params of the view: the open tasks, soonest due first. */
export interface TasksParams {
  status: 'open';
  sort: 'due';
  limit: number;
  /** A workspace folder: picks the vault. */
  uri?: string;
}

/** How many tasks the view asks for (the server's most). */
export const TASKS_LIMIT = 1000;

export function tasksParams(uri?: string): TasksParams {
  const params: TasksParams = { status: 'open', sort: 'due', limit: TASKS_LIMIT };
  if (uri !== undefined) {
    params.uri = uri;
  }
  return params;
}

export type GroupKey = 'overdue' | 'today' | 'week' | 'later' | 'none';

/** The groups, in the order the view shows them. */
export const GROUPS: readonly { key: GroupKey; title: string; icon: string }[] = [
  { key: 'overdue', title: 'Overdue', icon: 'warning' },
  { key: 'today', title: 'Today', icon: 'calendar' },
  { key: 'week', title: 'This week', icon: 'calendar' },
  { key: 'later', title: 'Later', icon: 'calendar' },
  { key: 'none', title: 'No due date', icon: 'inbox' },
];

const DAY_RE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** `day` (`YYYY-MM-DD`) plus `n` days, or undefined for a day that is not one. */
export function addDays(day: string, n: number): string | undefined {
  const m = DAY_RE.exec(day);
  if (!m) {
    return undefined;
  }
  const [year, month, date] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const t = new Date(Date.UTC(year, month - 1, date));
  if (t.getUTCFullYear() !== year || t.getUTCMonth() !== month - 1 || t.getUTCDate() !== date) {
    return undefined;
  }
  t.setUTCDate(t.getUTCDate() + n);
  return t.toISOString().slice(0, 10);
}

/** The group of a due day: before `today` overdue; `today`; within the next 7 days this week;
 * later; no (or no valid) due day. */
export function groupOf(due: string | null | undefined, today: string): GroupKey {
  if (!due || !DAY_RE.test(due)) {
    return 'none';
  }
  if (due < today) {
    return 'overdue';
  }
  if (due === today) {
    return 'today';
  }
  const week = addDays(today, 7);
  return week !== undefined && due <= week ? 'week' : 'later';
}

/** A task as a tree row (a TreeItem without vscode's types). */
export interface TaskRow {
  /** Stable across refreshes: the note and the line. */
  id: string;
  label: string;
  description: string;
  tooltip: string;
  /** What a screen reader says: the label, the description, overdue. */
  ariaLabel: string;
  /** A codicon id. */
  icon: string;
  /** A theme color id for the icon (overdue tasks). */
  color?: string;
  task: TaskHit;
}

export interface TaskGroup {
  key: GroupKey;
  /** The title and the count: `Overdue (3)`. */
  label: string;
  icon: string;
  rows: TaskRow[];
}

/** A row that is no task: a message (an error, no tasks, a partial list). */
export interface MessageRow {
  label: string;
  tooltip: string;
  icon: string;
}

export type RootRow = { kind: 'group'; group: TaskGroup } | { kind: 'message'; message: MessageRow };

const STATE_ICONS: Record<string, string> = {
  todo: 'circle-large-outline',
  in_progress: 'play-circle',
  done: 'pass',
  cancelled: 'circle-slash',
  other: 'issue-draft',
};

const STATE_WORDS: Record<string, string> = {
  todo: 'to do',
  in_progress: 'in progress',
  done: 'done',
  cancelled: 'cancelled',
  other: 'other status',
};

/** The theme color of an overdue task's icon. */
export const OVERDUE_COLOR = 'list.errorForeground';

export function taskIcon(state: string): string {
  return STATE_ICONS[state] ?? STATE_ICONS.other;
}

export function taskRow(task: TaskHit, today: string): TaskRow {
  const title = task.note?.title || task.path;
  const parts = [title];
  if (task.due) {
    parts.push(`due ${task.due}`);
  }
  if (task.priority && task.priority !== 'normal') {
    parts.push(`${task.priority} priority`);
  }
  const overdue = groupOf(task.due, today) === 'overdue' && task.state !== 'done' && task.state !== 'cancelled';
  const facts = [STATE_WORDS[task.state] ?? `status [${task.status}]`];
  if (task.due) {
    facts.push(`due ${task.due}${overdue ? ' (overdue)' : ''}`);
  }
  if (task.scheduled) {
    facts.push(`scheduled ${task.scheduled}`);
  }
  if (task.start) {
    facts.push(`starts ${task.start}`);
  }
  if (task.priority && task.priority !== 'normal') {
    facts.push(`${task.priority} priority`);
  }
  if (task.recurrence) {
    facts.push(`repeats ${task.recurrence}`);
  }
  const where = task.heading && task.heading !== title ? `${title} › ${task.heading}` : title;
  const label = task.description || task.text || '(empty task)';
  const description = parts.join(' · ');
  const row: TaskRow = {
    id: `${task.uri}#${task.line}`,
    label,
    description,
    ariaLabel: `${label}, ${STATE_WORDS[task.state] ?? 'open'}, ${description}${overdue ? ', overdue' : ''}`,
    tooltip: [`[${task.status}] ${task.text}`, `${task.path}:${task.line}`, where, facts.join(' · ')].join('\n'),
    icon: taskIcon(task.state),
    task,
  };
  if (overdue) {
    row.color = OVERDUE_COLOR;
  }
  return row;
}

/** The tasks in their groups (only the groups with tasks), each in the order given. */
export function groupTasks(tasks: readonly TaskHit[], today: string): TaskGroup[] {
  const byKey = new Map<GroupKey, TaskRow[]>();
  for (const task of tasks) {
    const key = groupOf(task.due, today);
    const rows = byKey.get(key) ?? [];
    rows.push(taskRow(task, today));
    byKey.set(key, rows);
  }
  return GROUPS.filter((g) => byKey.has(g.key)).map((g) => {
    const rows = byKey.get(g.key) ?? [];
    return { key: g.key, label: `${g.title} (${rows.length})`, icon: g.icon, rows };
  });
}

const PRIORITY_RANK: Record<string, number> = { highest: 0, high: 1, medium: 2, normal: 3, low: 4, lowest: 5 };

/** The server's `due` order (soonest first, undated last, then the most urgent), for tasks of
 * several answers put together; stable, so each answer's own order is kept within a tie. */
export function byDue(tasks: readonly TaskHit[]): TaskHit[] {
  const key = (t: TaskHit) => t.due ?? '\uffff';
  const rank = (t: TaskHit) => PRIORITY_RANK[t.priority] ?? PRIORITY_RANK.normal;
  return [...tasks].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : rank(a) - rank(b)));
}

/** What one workspace folder answered: its tasks, or the error as text. */
export interface TasksAnswer {
  /** The folder's name, said with its error when there are several folders. */
  folder?: string;
  result?: TasksResult;
  error?: string;
}

/** The view's top rows: an error row per failed folder, then the groups, then a row saying
 * the list is partial; one "No open tasks" row when there is nothing else. */
export function rootRows(answers: readonly TasksAnswer[]): RootRow[] {
  const rows: RootRow[] = [];
  const several = answers.length > 1;
  const results: TasksResult[] = [];
  for (const answer of answers) {
    if (answer.result) {
      results.push(answer.result);
    } else {
      const text = several && answer.folder ? `${answer.folder}: ${answer.error ?? 'no answer'}` : (answer.error ?? 'no answer');
      rows.push({ kind: 'message', message: { label: text, tooltip: text, icon: 'error' } });
    }
  }
  if (results.length === 0) {
    return rows;
  }
  const tasks = results.length > 1 ? byDue(results.flatMap((r) => r.tasks ?? [])) : (results[0].tasks ?? []);
  const groups = groupTasks(tasks, results[0].today);
  rows.push(...groups.map((group): RootRow => ({ kind: 'group', group })));
  const total = results.reduce((sum, r) => sum + (r.total ?? 0), 0);
  if (results.some((r) => r.truncated)) {
    const label = `Showing ${tasks.length} of ${total} open tasks`;
    rows.push({
      kind: 'message',
      message: { label, tooltip: `${label}: the view lists at most ${TASKS_LIMIT} per folder.`, icon: 'info' },
    });
  }
  if (rows.length === 0) {
    rows.push({ kind: 'message', message: { label: 'No open tasks', tooltip: 'No open task in the notes.', icon: 'pass' } });
  }
  return rows;
}

/** How many open tasks the answers hold (the view's description). */
export function openCount(answers: readonly TasksAnswer[]): number | undefined {
  const results = answers.flatMap((a) => (a.result ? [a.result] : []));
  return results.length === 0 ? undefined : results.reduce((sum, r) => sum + (r.total ?? 0), 0);
}

// -- toggling --------------------------------------------------------------------------------

/** A task line as the server reads one: indentation, a list marker, the status, the text. */
const TASK_LINE_RE = /^[ \t]*(?:[-*+]|[0-9]{1,9}[.)])[ \t]+\[([^\]\n])\](?:[ \t]+([^\n]*))?$/;

/** The 1-based `line` of a note's text without its line ending (and, on line 1, the BOM);
 * undefined past the end. */
export function lineOf(text: string, line: number): string | undefined {
  const lines = text.split('\n');
  if (!Number.isInteger(line) || line < 1 || line > lines.length) {
    return undefined;
  }
  const found = lines[line - 1].replace(/\r$/, '');
  return line === 1 ? found.replace(/^\ufeff/, '') : found;
}

/** Whether `line` (the note's line as it reads now) is still the task the view listed: the
 * same status and the same text after the checkbox. Then the line is the `expect` of
 * `engram.toggleTask`. */
export function holdsTask(line: string | undefined, task: Pick<TaskHit, 'status' | 'text'>): boolean {
  if (line === undefined) {
    return false;
  }
  const m = TASK_LINE_RE.exec(line);
  return m !== null && m[1] === task.status && (m[2] ?? '') === task.text;
}

/** The argument of the server's `engram.toggleTask` command. */
export interface ToggleArgs {
  uri: string;
  line: number;
  expect?: string;
  done?: boolean;
}

/** What `engram.toggleTask` answers (the fields the view uses). */
export interface ToggleResult {
  applied: 'buffer' | 'disk';
  path: string;
  line: number;
  before: string;
  after: string;
  done: boolean;
  /** `added`, or why no next occurrence was added (null for a task that does not recur). */
  recurrence?: string | null;
}

/** A one-line summary of a toggle, for the log and the status bar. */
export function describeToggle(result: ToggleResult): string {
  const what = result.done ? 'done' : 'not done';
  const where = result.applied === 'buffer' ? 'in the editor' : 'on disk';
  // `added` (the next occurrence is on the line above), or why no occurrence was added.
  const recurrence =
    result.recurrence === 'added' ? ' (its next occurrence added above)' : result.recurrence ? ` (${result.recurrence})` : '';
  return `${result.path}:${result.line} marked ${what} ${where}${recurrence}`;
}
