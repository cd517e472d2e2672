#!/usr/bin/env node
// The `budget-reservations` command (package.json "bin"; `npx budget-reservations`, `npm run cli --`):
// the TypeScript sources run through tsx, so a fresh clone needs nothing but `npm ci`.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('./main.ts');
await main();
