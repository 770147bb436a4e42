const fs = require('node:fs');
const path = require('node:path');

/**
 * One transform for everything: @swc/jest compiles our TypeScript and every ESM-only dependency
 * (jose, typebox, and a growing number of transitive ones) to CommonJS so that jest's module
 * system can load them. The ESM packages are found by their package.json rather than listed by
 * hand, so a dependency turning ESM-only does not break the suite.
 */
function esmPackages(dir, found = new Set()) {
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    const names = entry.name.startsWith('@')
      ? fs.readdirSync(path.join(dir, entry.name)).map((n) => `${entry.name}/${n}`)
      : [entry.name];
    for (const name of names) {
      const pkgDir = path.join(dir, name);
      try {
        if (JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8')).type === 'module') found.add(name);
      } catch {
        // not a package
      }
      esmPackages(path.join(pkgDir, 'node_modules'), found);
    }
  }
  return found;
}

const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const esm = [...esmPackages(path.join(__dirname, 'node_modules'))].map(escapeRegExp).join('|');
// Skip a file in node_modules unless the package it belongs to (after the last node_modules/) is ESM.
const ignoreNonEsm = esm
  ? `^(?!.*/node_modules/(?:${esm})/(?!.*/node_modules/)).*/node_modules/`
  : '/node_modules/';

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.(t|j|mj|cj)s$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }] },
  transformIgnorePatterns: [ignoreNonEsm],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  // Real PostgreSQL, ClickHouse and Temporal for the run (skipped when only test/unit is selected).
  globalSetup: '<rootDir>/test/setup/global-setup.ts',
  globalTeardown: '<rootDir>/test/setup/global-teardown.ts',
};
