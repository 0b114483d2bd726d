// ESLint's flat config (`./labw lint`): the recommended rules over every module of the lab, with
// each part's own globals: Node for the runner and the tests, k6's for the scripts and the model
// they import, the browser's for the results pages' client code.
import js from '@eslint/js';
import globals from 'globals';

export default [
  {
    ignores: [
      'node_modules/',
      'results/',
      '.lab/',
      'docs/runs/',
      'k6/lib/vendor/',
      'lab/results/client/vendor/',
      'dashboards/*.json',
    ],
  },
  js.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2025, sourceType: 'module', globals: { ...globals.node } },
    rules: {
      // An unused argument kept for a signature's sake starts with _; a caught error may go unused.
      // What a rest pattern leaves out is dropped on purpose ({ expected, ...c }).
      'no-unused-vars': ['error', { argsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
      // Prettier wraps code at 120; what it leaves long is a string, a template or a regex (a message, a
      // query, a pattern), which reads better whole. Comments wrap by hand.
      'max-len': [
        'error',
        { code: 120, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true },
      ],
      // A function does one thing: past 60 lines it is split into named stages.
      'max-lines-per-function': ['error', { max: 60 }],
    },
  },
  // A test is one scenario, told start to end.
  {
    files: ['test/**'],
    rules: { 'max-lines-per-function': 'off' },
  },
  // k6 scripts and what they import at init: k6's globals.
  {
    files: ['k6/**/*.js', 'thresholds/**/*.js'],
    languageOptions: { globals: { __ENV: 'readonly', __VU: 'readonly', __ITER: 'readonly', open: 'readonly' } },
  },
  // The pages' client code, and what the browser checks evaluate in the page.
  {
    files: ['lab/results/client/**/*.js', 'lab/results/check.mjs', 'lab/results/check-proxies.mjs'],
    languageOptions: { globals: { ...globals.browser } },
  },
];
