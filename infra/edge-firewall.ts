import { Stack, type StackProps } from 'aws-cdk-lib';
import { StringParameter } from 'aws-cdk-lib/aws-ssm';
import { CfnIPSet, CfnWebACL } from 'aws-cdk-lib/aws-wafv2';
import type { Construct } from 'constructs';
import { KEY_SECRET_PREFIX } from '../functions/domain/api-keys.js';

import { KEY_HEADERS } from '../functions/http/unknown-keys.js';
import { EDGE_RESPONSES, EDGE_WINDOW_S, type EdgeResponse } from './edge-responses.js';

/** Every key's shape: our prefix and 32 base64url characters (functions/http/unknown-keys.ts). */
export const KEY_REGEX = `^${KEY_SECRET_PREFIX}[A-Za-z0-9_-]{32}$`;

export interface EdgeLimits {
  /** Requests per minute one API key may send through the edge. */
  readonly perKeyPerMinute: number;
  /** Requests per minute one source address may send, whatever its keys. */
  readonly perSourcePerMinute: number;
  /** Source ranges (CIDR, IPv4 or IPv6) the admin API accepts. @default - any */
  readonly adminAllowList?: readonly string[];
  /** Where the admin API is under the edge's domain. */
  readonly adminBasePath: string;
}

export interface EdgeFirewallStackProps extends StackProps {
  readonly limits: EdgeLimits;
  /** The SSM parameter (in us-east-1) the edge stack reads the web ACL's ARN from. */
  readonly webAclArnParameter: string;
}

const none = [{ priority: 0, type: 'NONE' }];
const visibility = (metricName: string) => ({
  cloudWatchMetricsEnabled: true,
  metricName,
  sampledRequestsEnabled: true,
});
const startsWith = (prefix: string): CfnWebACL.StatementProperty => ({
  byteMatchStatement: {
    fieldToMatch: { uriPath: {} },
    positionalConstraint: 'STARTS_WITH',
    searchString: prefix,
    textTransformations: none,
  },
});
const not = (statement: CfnWebACL.StatementProperty): CfnWebACL.StatementProperty => ({
  notStatement: { statement },
});
/** A block with one of the edge's answers (its status, SPEC's body, its headers). */
const block = (body: EdgeResponse) => {
  const { status, headers } = EDGE_RESPONSES[body];
  return {
    block: {
      customResponse: {
        responseCode: status,
        customResponseBodyKey: body,
        ...(Object.keys(headers).length > 0 && {
          responseHeaders: Object.entries(headers).map(([name, value]) => ({ name, value })),
        }),
      },
    },
  };
};

/**
 * The AWS WAF web ACL of the edge (docs/decisions.md § Edge). A CLOUDFRONT-scoped web ACL
 * must be created in us-east-1, so this stack is pinned there, whatever region the others
 * deploy to; it publishes its ARN in an SSM parameter there, which the edge stack reads at
 * deploy time (synth stays offline: no lookup, no cross-region reference).
 *
 * Rules, in order (first match wins): the admin allow-list; AWS's IP reputation list; the rate
 * per source address; the key-format rule on the runtime API's authenticated paths; the rate
 * per API key (one rule per key header); AWS's common and known-bad-inputs rule groups, with
 * the exceptions our JSON bodies need.
 */
export class EdgeFirewallStack extends Stack {
  readonly webAcl: CfnWebACL;

  constructor(scope: Construct, id: string, props: EdgeFirewallStackProps) {
    super(scope, id, { ...props, env: { region: 'us-east-1' } });
    const { limits } = props;
    const admin = `/${limits.adminBasePath}`;
    const rules: CfnWebACL.RuleProperty[] = [];
    const add = (rule: Omit<CfnWebACL.RuleProperty, 'priority' | 'visibilityConfig'>) =>
      rules.push({ ...rule, priority: rules.length, visibilityConfig: visibility(rule.name) });

    const allowList = limits.adminAllowList ?? [];
    if (allowList.length > 0) {
      const sets = (['IPV4', 'IPV6'] as const)
        .map((version) => ({
          version,
          addresses: allowList.filter((c) => c.includes(':') === (version === 'IPV6')),
        }))
        .filter((s) => s.addresses.length > 0)
        .map(
          (s) =>
            new CfnIPSet(this, `AdminAllowList${s.version}`, {
              scope: 'CLOUDFRONT',
              ipAddressVersion: s.version,
              addresses: s.addresses,
              description: 'Source ranges the admin API accepts',
            }),
        );
      const inSets = sets.map(
        (set): CfnWebACL.StatementProperty => ({
          ipSetReferenceStatement: { arn: set.attrArn },
        }),
      );
      add({
        name: 'AdminAllowList',
        action: block('forbidden'),
        statement: {
          andStatement: {
            statements: [
              startsWith(`${admin}/`),
              not(
                inSets.length === 1
                  ? (inSets[0] as CfnWebACL.StatementProperty)
                  : { orStatement: { statements: inSets } },
              ),
            ],
          },
        },
      });
    }
    add({
      name: 'AwsIpReputation',
      overrideAction: { none: {} },
      statement: managed('AWSManagedRulesAmazonIpReputationList'),
    });
    add({
      name: 'PerSourceRate',
      action: block('rateLimited'),
      statement: {
        rateBasedStatement: {
          aggregateKeyType: 'IP',
          evaluationWindowSec: EDGE_WINDOW_S,
          limit: limits.perSourcePerMinute,
        },
      },
    });
    // The runtime API's authenticated routes are all under /v1/ (its public ones: health and
    // its OpenAPI document). An operator's call with the admin key passes to the function.
    const keyShaped = KEY_HEADERS.map(
      (name): CfnWebACL.StatementProperty => ({
        regexMatchStatement: {
          fieldToMatch: { singleHeader: { Name: name } },
          regexString: KEY_REGEX,
          textTransformations: none,
        },
      }),
    );
    add({
      name: 'KeyFormat',
      action: block('unauthorized'),
      statement: {
        andStatement: {
          statements: [
            startsWith('/v1/'),
            not({
              orStatement: {
                statements: [
                  ...keyShaped,
                  {
                    sizeConstraintStatement: {
                      fieldToMatch: { singleHeader: { Name: 'x-admin-api-key' } },
                      comparisonOperator: 'GT',
                      size: 0,
                      textTransformations: none,
                    },
                  },
                ],
              },
            }),
          ],
        },
      },
    });
    for (const [i, header] of KEY_HEADERS.entries()) {
      add({
        name: i === 0 ? 'PerKeyRate' : 'PerServiceKeyRate',
        action: block('rateLimited'),
        statement: {
          rateBasedStatement: {
            aggregateKeyType: 'CUSTOM_KEYS',
            customKeys: [{ header: { name: header, textTransformations: none } }],
            evaluationWindowSec: EDGE_WINDOW_S,
            limit: limits.perKeyPerMinute,
          },
        },
      });
    }
    add({
      name: 'AwsCommonRules',
      overrideAction: { none: {} },
      statement: managed('AWSManagedRulesCommonRuleSet', [
        // Bodies up to MAX_BODY_BYTES (64 kB) are ours to refuse, with SPEC's 400; the rule's 8 kB is not.
        'SizeRestrictions_BODY',
        // SDKs and agents need not send a User-Agent.
        'NoUserAgent_HEADER',
        // JSON bodies carry free text (metadata, names, agent prompts) that is never rendered
        // as HTML (the console escapes everything), and webhook URLs (checked by the function).
        'CrossSiteScripting_BODY',
        'GenericRFI_BODY',
      ]),
    });
    add({
      name: 'AwsKnownBadInputs',
      overrideAction: { none: {} },
      statement: managed('AWSManagedRulesKnownBadInputsRuleSet'),
    });

    this.webAcl = new CfnWebACL(this, 'WebAcl', {
      name: `${this.stackName}-edge`,
      description: 'Budget reservation service: the edge in front of both HTTP APIs',
      scope: 'CLOUDFRONT',
      defaultAction: { allow: {} },
      visibilityConfig: visibility(`${this.stackName}-edge`),
      customResponseBodies: Object.fromEntries(
        Object.entries(EDGE_RESPONSES).map(([key, { body }]) => [
          key,
          { contentType: 'APPLICATION_JSON', content: body },
        ]),
      ),
      rules,
    });
    new StringParameter(this, 'WebAclArn', {
      parameterName: props.webAclArnParameter,
      stringValue: this.webAcl.attrArn,
      description: 'The edge web ACL, read by the edge stack in the service’s region',
    });
  }
}

function managed(name: string, countOnly: readonly string[] = []): CfnWebACL.StatementProperty {
  return {
    managedRuleGroupStatement: {
      vendorName: 'AWS',
      name,
      ...(countOnly.length > 0 && {
        ruleActionOverrides: countOnly.map((rule) => ({
          name: rule,
          actionToUse: { count: {} },
        })),
      }),
    },
  };
}
