/**
 * The roster: every role the service can route a turn to, first one the default. Adding a
 * role is adding a module under `roles/` and listing it here.
 */
import type { RoleDefinition } from '../src/contracts/index.js';
import { bookkeeperRole } from './bookkeeper.js';
import { salesRole } from './sales.js';
import { supportRole } from './support.js';

export const roster: readonly RoleDefinition[] = [supportRole, salesRole, bookkeeperRole];
