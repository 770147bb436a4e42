// ESLint with typescript-eslint, run by `npm test` (npm run lint) before the suites.
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.data*/', '.tools/', 'coverage/', 'examples/**/node_modules/'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { ecmaVersion: 2022, sourceType: 'module' } },
  },
  {
    files: ['**/*.ts'],
    rules: {
      // A leading underscore marks what is left unused on purpose (a field taken out of a rest).
      '@typescript-eslint/no-unused-vars': ['error', { varsIgnorePattern: '^_', argsIgnorePattern: '^_', ignoreRestSiblings: true }],
      // A variable a closure reads before it is first assigned (a shutdown handler set up early) cannot be const.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // Tests and benchmarks read the JSON bodies of real answers; typing each one adds nothing.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Plain CommonJS: tool configs and the examples users deploy as they are.
    files: ['**/*.js'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: Object.fromEntries(
        ['require', 'module', 'exports', '__dirname', 'process', 'console', 'Buffer', 'URL', 'setTimeout', 'clearTimeout', 'setImmediate', 'setInterval', 'clearInterval'].map((name) => [name, 'readonly']),
      ),
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Product code: small functions a reader takes in at once (route handlers parse, call one
    // service function and shape the answer; workflows keep their decisions in pure modules).
    files: ['{domain,store,runtime,sandbox-agent,control-plane,integrations,activities,workflows,api,workers,cli,scripts,bench}/**/*.ts', 'console/**/*.{ts,tsx}'],
    rules: { 'max-lines-per-function': ['error', { max: 80 }] },
  },
);
