/*
 * A team's own policy (an nginx.conf or an Envoy bootstrap, `./labw test <suite> --policy=FILE`):
 * the runner reads the file, plans its cases and hands k6 the plan (LAB_PLAN); this script runs
 * whatever plan it is given, as every experiment's does.
 */
import { experimentRun } from './lib/run.js';

export const { options, setup, warm, hit, teardown, handleSummary } = experimentRun('policy');
