/*
 * A run's id (testid), made and checked, and the names of a phase's files in its folder: no
 * imports, so that anything that reads run folders (the library, the results pages, the judges)
 * can name them without loading the runner.
 */

/**
 * A run id's unique part: the UTC time to the millisecond and this process's pid,
 * YYYYMMDD-HHMMSS-mmm-<pid>. Two runs in the same second (or millisecond, from two processes)
 * get different ids, so different folders, state files and scratch folders; the id goes into
 * every sample's testid tag too. A run id is `${stamp()}-${name}`.
 */
export const stamp = () =>
  `${new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').replace('.', '-').slice(0, 19)}-${process.pid}`;

/**
 * The one form of a run id (testid), checked wherever one enters (lab/results/runs.mjs
 * checkTestid): stamp()'s, or the older YYYYMMDD-HHMMSS-name of runs made before the
 * milliseconds and pid were in it (still in results/, still readable). The name starts with a
 * letter, so the two forms cannot be read as one another.
 */
const STAMP = '[0-9]{8}-[0-9]{6}(?:-[0-9]{3}-[0-9]{1,10})?';
export const TESTID = new RegExp(`^${STAMP}-[a-z][a-z0-9-]*$`);
/** The name of a testid: what follows its stamp (spike-quick5). */
export const testidName = (id) => id.replace(new RegExp(`^${STAMP}-`), '');
export const TESTID_FORM =
  "YYYYMMDD-HHMMSS-mmm-PID-name, or an older run's YYYYMMDD-HHMMSS-name; e.g. 20261123-091050-123-4567-spike-quick5";

/** A phase's files' base name in its run's folder: <suite>.<experiment>[.<phase>] (.plan.json, .sends.json). */
export const runName = (plan) => `${plan.suite}.${plan.experiment}${plan.phase ? `.${plan.phase}` : ''}`;
