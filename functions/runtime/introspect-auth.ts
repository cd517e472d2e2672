import { httpHandler } from '../http/handler.js';
import { introspectionView } from '../http/views.js';
import { introspectAuth } from '../use-cases/api-keys.js';

export const handler = httpHandler('runtimeIntrospectAuth', {}, async ({ caller }) =>
  introspectionView(introspectAuth(caller)),
);
