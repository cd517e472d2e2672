import { overviewView } from '../http/governance-views.js';
import { httpHandler } from '../http/handler.js';
import { overview } from '../use-cases/overview.js';

export const handler = httpHandler('getOverview', {}, async ({ now }) =>
  overviewView(await overview(now)),
);
