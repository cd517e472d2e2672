import {
  AUDIT_OPERATIONS,
  AUDIT_RESOURCE_TYPES,
  type AuditOperation,
  type AuditResourceType,
  unwrap,
} from '../../client/index.js';
import { CLI_NAME } from '../config.js';
import { morePages, table } from '../output.js';
import { defineCommand, listing, PAGE_OPTIONS, type PageOptions } from '../spec.js';

export const audit = defineCommand<
  PageOptions & {
    tenant?: string;
    keyId?: string;
    operation?: AuditOperation;
    resourceType?: AuditResourceType;
    resourceId?: string;
    from?: string;
    to?: string;
  }
>({
  name: 'audit',
  summary: 'Who changed what, newest first: the audit trail, filtered',
  options: [
    { flags: '--tenant <tenant>', description: 'only this tenant’s entries' },
    { flags: '--key-id <id>', description: 'only changes made with this key' },
    {
      flags: '--operation <operation>',
      description: 'only this operation',
      choices: AUDIT_OPERATIONS,
    },
    {
      flags: '--resource-type <type>',
      description: 'only this kind of resource',
      choices: AUDIT_RESOURCE_TYPES,
    },
    {
      flags: '--resource-id <id>',
      description: 'only this resource (a tenant, budget, key or reservation id)',
    },
    { flags: '--from <time>', description: 'from this time (ISO 8601)' },
    { flags: '--to <time>', description: 'up to this time (ISO 8601)' },
    ...PAGE_OPTIONS,
  ],
  examples: [
    `${CLI_NAME} audit --tenant acme --limit 5`,
    `${CLI_NAME} audit --operation fundBudget --from 2026-12-01T00:00:00Z --all --json`,
  ],
  operations: ['admin:listAuditLogs'],
  async run(ctx, _args, o) {
    const api = ctx.admin('either');
    const page = await listing(o, 'logs', (q) =>
      unwrap(
        api.GET('/v1/admin/audit/logs', {
          params: {
            query: {
              ...q,
              tenant_id: o.tenant,
              key_id: o.keyId,
              operation: o.operation,
              resource_type: o.resourceType,
              resource_id: o.resourceId,
              from: o.from,
              to: o.to,
            },
          },
        }),
      ),
    );
    return {
      json: page,
      human: [
        ...table(page.logs, [
          ['TIME', (e) => e.timestamp],
          ['TENANT', (e) => e.tenant_id],
          ['OPERATION', (e) => e.operation],
          ['RESOURCE', (e) => `${e.resource_type} ${e.resource_id}`],
          ['ACTOR', (e) => e.metadata.actor],
          ['STATUS', (e) => e.status],
          ['REQUEST', (e) => e.request_id],
        ]),
        ...morePages(page),
      ],
    };
  },
});
