export interface Tenant {
  readonly tenantId: string;
  readonly name: string;
  readonly status: 'ACTIVE';
  readonly createdAt: string;
}
