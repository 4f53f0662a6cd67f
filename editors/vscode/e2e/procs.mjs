// Finding the processes the end-to-end run started, from /proc (Linux).
//
// Not from `ps`: with $COLUMNS set (pytest sets it to 80 for its subprocesses), `ps` cuts each
// line to that width, so a server path longer than about 60 characters (any ordinary clone
// path) was never found.

import * as fs from 'node:fs';

/**
 * The pids of the processes in session `sid` that run `program`: one of their arguments is
 * exactly `program` (a script's path is an argument of its interpreter).
 * @param {number} sid
 * @param {string} program
 * @returns {number[]}
 */
export function sessionPids(sid, program) {
  const pids = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) {
      continue;
    }
    let stat;
    let argv;
    try {
      stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      argv = fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
    } catch (err) {
      if (err.code === 'ENOENT' || err.code === 'ESRCH') {
        continue; // the process ended between the listing and the read
      }
      throw err;
    }
    // "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[3]) === sid && argv.includes(program)) {
      pids.push(Number(name));
    }
  }
  return pids;
}
