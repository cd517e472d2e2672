import { httpHandler } from '../http/handler.js';
import { tenantIntrospectionView } from '../http/views.js';
import { introspectAuth } from '../use-cases/api-keys.js';

export const handler = httpHandler('runtimeIntrospectAuth', {}, async ({ caller }) =>
  tenantIntrospectionView(introspectAuth(caller)),
);
