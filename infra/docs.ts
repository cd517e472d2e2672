import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, type Stack } from 'aws-cdk-lib';
import { routeEntries } from '../functions/routes.js';
import { pascal } from './api-stack.js';
import { createStacks, type Stacks } from './app.js';
import { repoRoot } from './service-function.js';

/**
 * The parts of docs/deploy.md that are facts of the synthesized templates, generated so they
 * cannot go stale: `npm run docs` rewrites each between its `<!-- generated:NAME -->` and
 * `<!-- /generated:NAME -->` markers, and test/infra/docs.test.ts fails when one differs. (The
 * bundle table is written by `npm run build -- --docs`, which measures import times.)
 */
export const deployDoc = join(repoRoot, 'docs', 'deploy.md');

/** Replaces one generated section of docs/deploy.md. */
export async function replaceSection(name: string, content: string, file = deployDoc) {
  const text = await readFile(file, 'utf8');
  await writeFile(file, withSection(text, name, content));
}

export function withSection(text: string, name: string, content: string): string {
  const begin = `<!-- generated:${name} -->`;
  const end = `<!-- /generated:${name} -->`;
  const from = text.indexOf(begin);
  const to = text.indexOf(end);
  if (from < 0 || to < from) throw new Error(`docs/deploy.md has no ${begin} … ${end} section`);
  return `${text.slice(0, from + begin.length)}\n${content}\n${text.slice(to)}`;
}

/** A generated section's current text in docs/deploy.md. */
export function sectionOf(text: string, name: string): string | undefined {
  const match = new RegExp(
    `<!-- generated:${name} -->\\n([\\s\\S]*?)\\n<!-- /generated:${name} -->`,
  ).exec(text);
  return match?.[1];
}

type Template = {
  Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
  Outputs?: Record<string, { Description?: string; Export?: unknown }>;
  Parameters?: Record<string, unknown>;
};

/** The app as `cdk synth` builds it (cdk.json's flags and `context`), without bundling. */
export async function synthesizeApp(context: Record<string, unknown> = {}) {
  const cdkJson = JSON.parse(await readFile(join(repoRoot, 'cdk.json'), 'utf8')) as {
    context: Record<string, unknown>;
  };
  const app = new App({
    context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [], ...context },
  });
  const stacks = createStacks(app);
  const assembly = app.synth();
  const ordered: Stack[] = [
    stacks.data,
    stacks.jobs,
    ...stacks.routes.values(),
    ...(stacks.monitoring ? [stacks.monitoring] : []),
    ...(stacks.edge ? [stacks.edge.firewall, stacks.edge.distribution] : []),
  ];
  const templates = new Map(
    ordered.map((s) => [s.stackName, assembly.getStackByName(s.stackName).template as Template]),
  );
  return { stacks, ordered, templates };
}

const ROUTE_RESOURCE_LIMIT = 0.6 * 500;

/**
 * The stacks in deployment order: what each depends on, its resources and outputs against
 * CloudFormation's limits, and for a route stack how many more routes fit.
 */
export function stacksTable(
  ordered: readonly Stack[],
  templates: ReadonlyMap<string, Template>,
  stacks: Stacks,
): string {
  const lines = [
    '| Order | Stack | Deploys after | Resources (of 500) | Outputs (of 200) | Routes | More routes that fit (≤ 60 % / ≤ 500) |',
    '| ----: | ----- | ------------- | -----------------: | ---------------: | -----: | ------------------------------------: |',
  ];
  ordered.forEach((stack, i) => {
    const t = templates.get(stack.stackName) as Template;
    const resources = Object.keys(t.Resources).length;
    const outputs = Object.keys(t.Outputs ?? {}).length;
    const after = stack.dependencies.map(
      (d) => `\`${d.stackName.replace(/^BudgetReservations/, '')}\``,
    );
    const routeStack = [...stacks.routes.values()].find((s) => s === stack);
    let routes = '';
    let fit = '';
    if (routeStack) {
      const ids = [...routeStack.functions.keys()];
      // What one more route costs: the most any route without mounts has (function, role,
      // policy, log group, permission, integration, route).
      const perRoute = Math.max(
        ...ids
          .filter((id) => !routeEntries().find(([r]) => r === id)?.[1].mounts)
          .map(
            (id) =>
              Object.keys(t.Resources).filter((logical) =>
                new RegExp(`^${pascal(id)}(Role|Logs|Route|Integration|[0-9A-F]{8})`).test(logical),
              ).length,
          ),
      );
      routes = String(ids.length);
      const room = (limit: number) => Math.floor((limit - resources) / perRoute);
      fit = `${room(ROUTE_RESOURCE_LIMIT)} / ${room(500)} (${perRoute} resources each)`;
    }
    lines.push(
      `| ${i + 1} | \`${stack.stackName}\` | ${after.join(', ') || '—'} | ${resources} | ${outputs} | ${routes} | ${fit} |`,
    );
  });
  return lines.join('\n');
}

/** The outputs a user reads (not the exports stacks pass each other), by stack. */
export function outputsTable(
  ordered: readonly Stack[],
  templates: ReadonlyMap<string, Template>,
): string {
  const lines = ['| Stack | Output | What it is |', '| ----- | ------ | ---------- |'];
  for (const stack of ordered) {
    const outputs = (templates.get(stack.stackName) as Template).Outputs ?? {};
    for (const [name, output] of Object.entries(outputs)) {
      if (output.Export) continue;
      lines.push(`| \`${stack.stackName}\` | \`${name}\` | ${output.Description ?? ''} |`);
    }
  }
  return lines.join('\n');
}

type Statement = { Action: string | string[]; Resource: unknown; Condition?: unknown };

/** The partitions a statement's `dynamodb:LeadingKeys` condition allows, as a reader's suffix. */
function partitionsOf(st: Statement): string {
  const text = JSON.stringify(st.Condition ?? {});
  const keys = /"dynamodb:LeadingKeys":\[([^\]]*)\]/.exec(text)?.[1];
  return keys ? `’s ${keys.replaceAll('"', '`')} partitions` : '';
}

/** A statement's resource, named for a reader (the table, an index, a secret…). */
function resourceName(resource: unknown): string {
  const text = JSON.stringify(resource);
  const index = /\/index\/(\w+)/.exec(text)?.[1];
  if (index) return `index \`${index}\``;
  if (text === '"*"') return '`*` (no resource-level permissions)';
  if (/StreamArn/.test(text)) return 'the table’s stream';
  if (/Table\w*(Arn|Ref)|ExportsOutputFnGetAttTable/.test(text)) return 'the table';
  if (/AdminApiKey/.test(text)) return 'the admin key secret';
  if (/CursorSecret/.test(text)) return 'the cursor secret';
  if (/OriginVerifySecret/.test(text)) return 'the edge’s origin-verify secret';
  if (/WebhookSecretsKey/.test(text)) return 'the webhook key (KMS)';
  if (/WebhookSecret/.test(text)) return 'the webhook secret';
  if (/WebhookDelivery\w*Arn|WebhookDeliveryAF/.test(text)) return 'the delivery function';
  if (/WebhookDeliveries\w*Arn|WebhookDeliveries34/.test(text)) return 'the delivery queue';
  if (/:secret:/.test(text)) return 'the admin key secret (by name)';
  if (/BudgetEvents\w*Arn|BudgetEventsD4/.test(text)) return 'the budget events bus';
  if (/Dlq/.test(text)) return 'the DLQ';
  if (/Logs/.test(text)) return 'its own log group';
  return text;
}

/**
 * IAM per function, from the synthesized templates: functions with the same permissions share
 * a row. Each permission reads `actions on resource`.
 */
export function iamTable(ordered: readonly Stack[], templates: ReadonlyMap<string, Template>) {
  const rows = new Map<string, string[]>();
  for (const stack of ordered) {
    const t = templates.get(stack.stackName) as Template;
    for (const [logical, resource] of Object.entries(t.Resources)) {
      if (resource.Type !== 'AWS::Lambda::Function') continue;
      const role = (resource.Properties.Role as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0];
      const statements = Object.values(t.Resources)
        .filter((r) => r.Type === 'AWS::IAM::Policy')
        .filter((r) => (r.Properties.Roles as { Ref: string }[]).some((x) => x.Ref === role))
        .flatMap((r) => (r.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
      const byResource = new Map<string, Set<string>>();
      const indexes: string[] = [];
      for (const st of statements) {
        for (const res of [st.Resource].flat()) {
          const name = resourceName(res) + partitionsOf(st);
          // Every index grant is Query alone: one entry naming them all.
          if (name.startsWith('index ')) indexes.push(name.slice('index '.length));
          const key = name.startsWith('index ') ? 'indexes' : name;
          const actions = byResource.get(key) ?? new Set<string>();
          for (const a of [st.Action].flat()) actions.add(a);
          byResource.set(key, actions);
        }
      }
      if (indexes.length > 0) {
        const actions = byResource.get('indexes') ?? new Set<string>();
        byResource.delete('indexes');
        byResource.set(
          `${indexes.length === 1 ? 'index' : 'indexes'} ${indexes.sort().join(', ')}`,
          actions,
        );
      }
      const permissions = [...byResource]
        .map(([name, actions]) => `${[...actions].sort().join(', ')} on ${name}`)
        .sort()
        .join('<br>');
      const fn = functionName(logical);
      rows.set(permissions, [...(rows.get(permissions) ?? []), fn]);
    }
  }
  const lines = ['| Functions | Permissions |', '| --------- | ----------- |'];
  const sorted = [...rows].sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0]));
  for (const [permissions, fns] of sorted) {
    lines.push(`| ${fns.sort().join(', ')} (${fns.length}) | ${permissions} |`);
  }
  return lines.join('\n');
}

/** CreateReservationECF1C7BB → createReservation. */
const functionName = (logical: string) => {
  const name = logical.replace(/[0-9A-F]{8}$/, '');
  return name.charAt(0).toLowerCase() + name.slice(1);
};

/** Every section `npm run docs` writes, as it would write it now. */
export async function generatedSections(): Promise<Record<string, string>> {
  const { stacks, ordered, templates } = await synthesizeApp();
  return {
    stacks: stacksTable(ordered, templates, stacks),
    outputs: outputsTable(ordered, templates),
    iam: iamTable(ordered, templates),
  };
}

// `npm run docs`
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const [name, content] of Object.entries(await generatedSections())) {
    await replaceSection(name, content);
  }
  console.log('docs/deploy.md: stacks, outputs and IAM tables written from the templates');
}
