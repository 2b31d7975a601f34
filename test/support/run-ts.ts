/**
 * Node's flags for a child process a test starts from the TypeScript sources (the service, a worker,
 * a CLI): `spawn(process.execPath, [...RUN_TS, 'src/main.ts', 'web'])`. See register-ts.mjs.
 */
import { fileURLToPath } from 'node:url';

export const RUN_TS: readonly string[] = ['--import', fileURLToPath(new URL('./register-ts.mjs', import.meta.url))];
