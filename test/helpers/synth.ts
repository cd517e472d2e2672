import { readFileSync } from 'node:fs';
import { App, type CfnElement, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { Route, RouteId } from '../../functions/routes.js';
import { createStacks, type Stacks } from '../../infra/app.js';

export type Resource = {
  Type: string;
  // biome-ignore lint/suspicious/noExplicitAny: CloudFormation properties of every resource type
  Properties: Record<string, any>;
  DeletionPolicy?: string;
};
export type Resources = Record<string, Resource>;
export type Statement = {
  Action: string | string[];
  Resource: unknown;
  Effect: string;
  Condition?: unknown;
};

const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as {
  context: Record<string, unknown>;
};

/** Every stack's template, by the stack's name. */
export interface Synthesized {
  readonly stacks: Stacks;
  readonly all: readonly Stack[];
  readonly templates: ReadonlyMap<string, Template>;
  /** The template of a stack. */
  template(stack: Stack): Template;
  /** Where a function lives: its stack, that stack's resources, its logical id. */
  fn(
    id:
      | RouteId
      | 'sweeper'
      | 'budgetEvents'
      | 'webhookDelivery'
      | 'estimateAccuracy'
      | 'adminKeyRotation',
  ): {
    stack: Stack;
    resources: Resources;
    logicalId: string;
  };
}

/**
 * Every stack, in-process, with cdk.json's feature flags as `cdk synth` applies them, and
 * cdk-nag's checks (a finding without an acknowledgement throws here). Without esbuild bundling
 * and CloudFormation validation (`npm run synth` does both) it takes seconds.
 */
export function synth(
  context: Record<string, unknown> = {},
  routes?: readonly (readonly [RouteId, Route])[],
): Synthesized {
  const app = new App({
    context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [], ...context },
    builtinCloudFormationValidation: false,
  });
  const stacks = createStacks(app, routes);
  const all: Stack[] = [
    stacks.data,
    stacks.jobs,
    ...stacks.routes.values(),
    ...(stacks.monitoring ? [stacks.monitoring] : []),
    ...(stacks.edge ? [stacks.edge.firewall, stacks.edge.distribution] : []),
  ];
  const templates = new Map(all.map((s) => [s.stackName, Template.fromStack(s)]));
  const template = (s: Stack) => templates.get(s.stackName) as Template;
  const fn: Synthesized['fn'] = (id) => {
    const construct =
      id === 'sweeper'
        ? stacks.jobs.sweeper
        : id === 'budgetEvents'
          ? stacks.jobs.budgetEvents
          : id === 'webhookDelivery'
            ? stacks.jobs.webhookDelivery
            : id === 'estimateAccuracy'
              ? stacks.jobs.estimateAccuracy
              : id === 'adminKeyRotation'
                ? stacks.jobs.adminKeyRotation
                : [...stacks.routes.values()].map((s) => s.functions.get(id)).find((f) => f);
    if (!construct) throw new Error(`no function ${id}`);
    const stack = (construct as { stack: Stack }).stack;
    return {
      stack,
      resources: template(stack).toJSON().Resources as Resources,
      logicalId: logicalId(stack, construct),
    };
  };
  return { stacks, all, templates, template, fn };
}

export const logicalId = (stack: Stack, element: { node: { defaultChild?: unknown } }) =>
  stack.getLogicalId(element.node.defaultChild as CfnElement);

export const actionsOf = (statement: Statement) =>
  Array.isArray(statement.Action) ? statement.Action : [statement.Action];

/** Every statement of the policies attached to the role of function `fnId`. */
export function statementsOf(resources: Resources, fnId: string): Statement[] {
  const role = (resources[fnId]?.Properties.Role as { 'Fn::GetAtt': [string] } | undefined)?.[
    'Fn::GetAtt'
  ][0];
  return Object.values(resources)
    .filter((r) => r.Type === 'AWS::IAM::Policy')
    .filter((r) => ((r.Properties.Roles ?? []) as { Ref: string }[]).some((x) => x.Ref === role))
    .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Statement[] }).Statement ?? []);
}

/** Resource types and their counts in a template. */
export function resourceCounts(template: Template): Record<string, number> {
  const result: Record<string, number> = {};
  for (const r of Object.values(template.toJSON().Resources as Resources)) {
    result[r.Type] = (result[r.Type] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(result).sort(([a], [b]) => a.localeCompare(b)));
}

/** CloudFormation's per-stack quotas that a CDK app can reach. */
export const STACK_LIMITS = { Resources: 500, Outputs: 200, Parameters: 200, Mappings: 200 };

/** How many of each limited section a template has. */
export function sectionsOf(template: Template): Record<keyof typeof STACK_LIMITS, number> {
  const json = template.toJSON();
  const count = (key: string) => Object.keys(json[key] ?? {}).length;
  return {
    Resources: count('Resources'),
    Outputs: count('Outputs'),
    Parameters: count('Parameters'),
    Mappings: count('Mappings'),
  };
}

/**
 * The functions of a template that are the service's own: all but CDK's AwsCustomResource
 * provider (the edge stack reads the web ACL's ARN with it at deploy time).
 */
export const serviceFunctions = (resources: Resources): Resource[] =>
  Object.entries(resources)
    .filter(([id, r]) => r.Type === 'AWS::Lambda::Function' && !id.startsWith('AWS679f53fa'))
    .map(([, r]) => r);
