/**
 * Lets a process the tests start run the TypeScript sources (`node --import ./test/support/register-ts.mjs
 * src/main.ts web`): synchronous in-thread module hooks map `./x.js` to `./x.ts` and strip the types
 * with swc, as Jest does. tsx does the same off-thread and costs about 2 s of CPU per process start,
 * which the suite pays some seventy times.
 */
import { existsSync, readFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { fileURLToPath, URL } from 'node:url';
import { transformSync } from '@swc/core';

const options = { jsc: { parser: { syntax: 'typescript' }, target: 'es2024' }, module: { type: 'es6' } };

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier.startsWith('.') && specifier.endsWith('.js') && context.parentURL?.endsWith('.ts')) {
      const url = new URL(`${specifier.slice(0, -3)}.ts`, context.parentURL);
      if (existsSync(url)) return { url: url.href, format: 'module', shortCircuit: true };
    }
    return nextResolve(specifier, context);
  },
  load(url, context, nextLoad) {
    if (!url.startsWith('file:') || !url.endsWith('.ts')) return nextLoad(url, context);
    const filename = fileURLToPath(url);
    const { code } = transformSync(readFileSync(filename, 'utf8'), { ...options, filename });
    return { format: 'module', source: code, shortCircuit: true };
  },
});
