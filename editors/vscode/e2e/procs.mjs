// Finding the processes the end-to-end run started, from /proc (Linux).
//
// Not from `ps`: with $COLUMNS set (pytest sets it to 80 for its subprocesses), `ps` cuts each
// line to that width, so a server path longer than about 60 characters (any ordinary clone
// path) was never found.

import * as fs from 'node:fs';

/**
 * The processes in session `sid` one of whose arguments is exactly one of `markers` (a
 * program's path, or `engram_ls.lsp` of `python -m engram_ls.lsp`; a script's path is an
 * argument of its interpreter), with their arguments and environment.
 * @param {number} sid
 * @param {string[]} markers
 * @returns {{pid: number, argv: string[], env: Record<string, string>}[]}
 */
export function sessionProcs(sid, markers) {
  const found = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) {
      continue;
    }
    let stat;
    let argv;
    let environ;
    try {
      stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      argv = fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      // "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[3]) !== sid || !markers.some((m) => m && argv.includes(m))) {
        continue;
      }
      environ = fs.readFileSync(`/proc/${name}/environ`, 'utf8').split('\0');
    } catch (err) {
      if (err.code === 'ENOENT' || err.code === 'ESRCH') {
        continue; // the process ended between the listing and the read
      }
      throw err;
    }
    argv = argv.slice(0, argv[argv.length - 1] === '' ? -1 : undefined);
    const env = {};
    for (const entry of environ) {
      const at = entry.indexOf('=');
      if (at > 0) {
        env[entry.slice(0, at)] = entry.slice(at + 1);
      }
    }
    found.push({ pid: Number(name), argv, env });
  }
  return found;
}

/**
 * The pids of the processes in session `sid` that run `program` (see sessionProcs).
 * @param {number} sid
 * @param {string} program
 * @returns {number[]}
 */
export function sessionPids(sid, program) {
  return sessionProcs(sid, [program]).map((p) => p.pid);
}
