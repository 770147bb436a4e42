import fs from 'node:fs';
import path from 'node:path';

/**
 * Writes, into `dir`, a module that lets a child Node process require the project's TypeScript
 * (compiled on the fly by swc, as jest does here); answers its path, for `node -r <path>`. Tests
 * run workers in processes of their own so that killing one is killing a real process.
 */
export function typescriptRegister(dir: string): string {
  const register = path.join(dir, 'register-ts.js');
  fs.writeFileSync(
    register,
    `const { transformSync } = require(${JSON.stringify(require.resolve('@swc/core'))});
require.extensions['.ts'] = (module, file) => {
  const { code } = transformSync(require('fs').readFileSync(file, 'utf8'), { filename: file, jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } });
  module._compile(code, file);
};`,
  );
  return register;
}
