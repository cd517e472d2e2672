import { Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { KEY_REGEX } from '../../infra/edge-firewall.js';
import { type Resources, type Synthesized, serviceFunctions, synth } from '../helpers/synth.js';

// The edge (docs/decisions.md § Edge): CloudFront and AWS WAF in front of both HTTP APIs.
describe('edge', () => {
  let s: Synthesized;
  beforeAll(() => {
    s = synth();
  });
  const edge = () => {
    if (!s.stacks.edge) throw new Error('no edge stacks');
    return {
      firewall: s.template(s.stacks.edge.firewall),
      distribution: s.template(s.stacks.edge.distribution),
    };
  };
  const webAcl = () =>
    Object.values(edge().firewall.findResources('AWS::WAFv2::WebACL'))[0]?.Properties as {
      Rules: { Name: string; Priority: number; Statement: Record<string, never> } & Record<
        string,
        // biome-ignore lint/suspicious/noExplicitAny: CloudFormation rule properties
        any
      >[];
    } & Record<string, unknown>;
  // biome-ignore lint/suspicious/noExplicitAny: CloudFormation rule properties
  const rule = (name: string): any => {
    const found = (webAcl().Rules as unknown as { Name: string }[]).find((r) => r.Name === name);
    if (!found) throw new Error(`no rule ${name}`);
    return found;
  };

  describe('web ACL', () => {
    it('is a CLOUDFRONT web ACL in a stack pinned to us-east-1, its ARN published in SSM there', () => {
      expect(s.stacks.edge?.firewall.region).toBe('us-east-1');
      edge().firewall.hasResourceProperties('AWS::WAFv2::WebACL', {
        Scope: 'CLOUDFRONT',
        DefaultAction: { Allow: {} },
      });
      edge().firewall.hasResourceProperties('AWS::SSM::Parameter', {
        Name: '/BudgetReservations/edge/web-acl-arn',
        Value: { 'Fn::GetAtt': [Match.stringLikeRegexp('WebAcl'), 'Arn'] },
      });
    });

    it('evaluates its rules in order: reputation, per source, key format, per key, baseline', () => {
      expect(
        (webAcl().Rules as unknown as { Name: string; Priority: number }[]).map((r) => [
          r.Priority,
          r.Name,
        ]),
      ).toEqual([
        [0, 'AwsIpReputation'],
        [1, 'PerSourceRate'],
        [2, 'KeyFormat'],
        [3, 'PerKeyRate'],
        [4, 'PerServiceKeyRate'],
        [5, 'AwsCommonRules'],
        [6, 'AwsKnownBadInputs'],
      ]);
    });

    it('limits each source address and each API key per minute, answering 429 with Retry-After', () => {
      expect(rule('PerSourceRate').Statement.RateBasedStatement).toEqual({
        AggregateKeyType: 'IP',
        EvaluationWindowSec: 60,
        Limit: 6000,
      });
      for (const [name, header] of [
        ['PerKeyRate', 'x-cycles-api-key'],
        ['PerServiceKeyRate', 'x-service-api-key'],
      ] as const) {
        expect(rule(name).Statement.RateBasedStatement).toEqual({
          AggregateKeyType: 'CUSTOM_KEYS',
          CustomKeys: [
            { Header: { Name: header, TextTransformations: [{ Priority: 0, Type: 'NONE' }] } },
          ],
          EvaluationWindowSec: 60,
          Limit: 3000,
        });
      }
      for (const name of ['PerSourceRate', 'PerKeyRate', 'PerServiceKeyRate']) {
        expect(rule(name).Action.Block.CustomResponse).toEqual({
          ResponseCode: 429,
          CustomResponseBodyKey: 'rateLimited',
          ResponseHeaders: [{ Name: 'retry-after', Value: '60' }],
        });
      }
      const bodies = webAcl().CustomResponseBodies as Record<string, { Content: string }>;
      expect(JSON.parse(bodies.rateLimited?.Content ?? '')).toMatchObject({
        error: 'LIMIT_EXCEEDED',
      });
    });

    it('takes its rate limits from context', () => {
      const tuned = synth({ edgeKeyRatePerMinute: '120', edgeSourceRatePerMinute: '600' });
      const acl = Object.values(
        tuned.template(tuned.stacks.edge?.firewall as never).findResources('AWS::WAFv2::WebACL'),
      )[0]?.Properties as {
        Rules: { Name: string; Statement: { RateBasedStatement?: { Limit: number } } }[];
      };
      const limit = (n: string) =>
        acl.Rules.find((r) => r.Name === n)?.Statement.RateBasedStatement?.Limit;
      expect([limit('PerSourceRate'), limit('PerKeyRate'), limit('PerServiceKeyRate')]).toEqual([
        600, 120, 120,
      ]);
      expect(() => synth({ edgeKeyRatePerMinute: '5' })).toThrow(/edgeKeyRatePerMinute/);
    });

    it('refuses with 401 a runtime call under /v1/ whose key header is absent or not of our format', () => {
      const r = rule('KeyFormat');
      expect(r.Action.Block.CustomResponse).toMatchObject({
        ResponseCode: 401,
        CustomResponseBodyKey: 'unauthorized',
      });
      const [path, notAny] = r.Statement.AndStatement.Statements;
      expect(path.ByteMatchStatement).toMatchObject({
        FieldToMatch: { UriPath: {} },
        PositionalConstraint: 'STARTS_WITH',
        SearchString: '/v1/',
      });
      const allowed = notAny.NotStatement.Statement.OrStatement.Statements;
      expect(
        allowed.slice(0, 2).map((x: { RegexMatchStatement: unknown }) => x.RegexMatchStatement),
      ).toEqual(
        ['x-cycles-api-key', 'x-service-api-key'].map((Name) => ({
          FieldToMatch: { SingleHeader: { Name } },
          RegexString: KEY_REGEX,
          TextTransformations: [{ Priority: 0, Type: 'NONE' }],
        })),
      );
      // An operator's call with the admin key goes on to the function, which checks it.
      expect(allowed[2].SizeConstraintStatement).toMatchObject({
        FieldToMatch: { SingleHeader: { Name: 'x-admin-api-key' } },
        ComparisonOperator: 'GT',
        Size: 0,
      });
      const regex = new RegExp(KEY_REGEX);
      expect(regex.test(`cyc_live_${'A'.repeat(32)}`)).toBe(true);
      expect(regex.test(`cyc_live_${'A'.repeat(31)}`)).toBe(false);
    });

    it('runs AWS’s baseline rule groups, counting only what our JSON bodies trip', () => {
      const group = (name: string) => rule(name).Statement.ManagedRuleGroupStatement;
      expect(group('AwsIpReputation')).toEqual({
        VendorName: 'AWS',
        Name: 'AWSManagedRulesAmazonIpReputationList',
      });
      expect(group('AwsKnownBadInputs')).toEqual({
        VendorName: 'AWS',
        Name: 'AWSManagedRulesKnownBadInputsRuleSet',
      });
      expect(group('AwsCommonRules')).toMatchObject({
        VendorName: 'AWS',
        Name: 'AWSManagedRulesCommonRuleSet',
      });
      expect(
        group('AwsCommonRules').RuleActionOverrides.map(
          (o: { Name: string; ActionToUse: unknown }) => [o.Name, o.ActionToUse],
        ),
      ).toEqual(
        [
          'SizeRestrictions_BODY',
          'NoUserAgent_HEADER',
          'CrossSiteScripting_BODY',
          'GenericRFI_BODY',
        ].map((n) => [n, { Count: {} }]),
      );
    });

    it('admits the admin API only from the allow-list, when one is set', () => {
      const listed = synth({ adminAllowList: '203.0.113.0/24,2001:db8::/32' });
      const firewall = listed.template(listed.stacks.edge?.firewall as never);
      firewall.hasResourceProperties('AWS::WAFv2::IPSet', {
        Scope: 'CLOUDFRONT',
        IPAddressVersion: 'IPV4',
        Addresses: ['203.0.113.0/24'],
      });
      firewall.hasResourceProperties('AWS::WAFv2::IPSet', {
        IPAddressVersion: 'IPV6',
        Addresses: ['2001:db8::/32'],
      });
      const acl = Object.values(firewall.findResources('AWS::WAFv2::WebACL'))[0]?.Properties;
      const first = acl.Rules[0];
      expect(first).toMatchObject({
        Name: 'AdminAllowList',
        Priority: 0,
        Action: { Block: { CustomResponse: { ResponseCode: 403 } } },
      });
      const [path, outside] = first.Statement.AndStatement.Statements;
      expect(path.ByteMatchStatement.SearchString).toBe('/admin/');
      expect(outside.NotStatement.Statement.OrStatement.Statements).toHaveLength(2);
      // None by default.
      edge().firewall.resourceCountIs('AWS::WAFv2::IPSet', 0);
      expect(() => synth({ adminAllowList: '10.0.0.1' })).toThrow(/not a CIDR/);
    });
  });

  describe('distribution', () => {
    it('puts both APIs behind one distribution with the web ACL, caching nothing, HTTPS only', () => {
      const d = edge().distribution;
      const config = Object.values(d.findResources('AWS::CloudFront::Distribution'))[0]?.Properties
        .DistributionConfig;
      // The ACL's ARN comes from the custom resource that reads the SSM parameter in us-east-1.
      expect(JSON.stringify(config.WebACLId)).toContain('Parameter.Value');
      d.hasResourceProperties('Custom::AWS', {
        Create: Match.stringLikeRegexp('"region":"us-east-1"'),
      });
      expect(config.Origins).toHaveLength(2);
      const runtimeOrigin = config.Origins.find(
        (o: { Id: string }) => o.Id === config.DefaultCacheBehavior.TargetOriginId,
      );
      expect(JSON.stringify(runtimeOrigin.DomainName)).toContain('RuntimeApi');
      for (const behavior of [config.DefaultCacheBehavior, ...config.CacheBehaviors]) {
        expect(behavior).toMatchObject({
          ViewerProtocolPolicy: 'https-only',
          // Managed-CachingDisabled and Managed-AllViewerExceptHostHeader.
          CachePolicyId: '4135ea2d-6df8-44a3-9df3-4b5a84be39ad',
          OriginRequestPolicyId: 'b689b0a8-53d0-40ab-baf2-68738e2966ac',
          AllowedMethods: expect.arrayContaining(['POST', 'PATCH', 'DELETE']),
        });
      }
      expect(config.CacheBehaviors.map((b: { PathPattern: string }) => b.PathPattern)).toEqual([
        '/admin',
        '/admin/*',
      ]);
      for (const b of config.CacheBehaviors) {
        expect(
          JSON.stringify(
            config.Origins.find((o: { Id: string }) => o.Id === b.TargetOriginId).DomainName,
          ),
        ).toContain('AdminApi');
        expect(b.FunctionAssociations).toEqual([
          {
            EventType: 'viewer-request',
            FunctionARN: { 'Fn::GetAtt': [expect.any(String), 'FunctionARN'] },
          },
        ]);
      }
      d.hasOutput('RuntimeUrl', {});
      d.hasOutput('AdminUrl', {});
    });

    it('strips the admin base path before the admin API', () => {
      const code = Object.values(edge().distribution.findResources('AWS::CloudFront::Function'))[0]
        ?.Properties.FunctionCode as string;
      const handler = new Function(`${code}; return handler;`)() as (e: unknown) => { uri: string };
      expect(handler({ request: { uri: '/admin/v1/admin/tenants' } }).uri).toBe(
        '/v1/admin/tenants',
      );
      expect(handler({ request: { uri: '/admin' } }).uri).toBe('/');
      expect(handler({ request: { uri: '/admin/console/app.js' } }).uri).toBe('/console/app.js');
    });

    it('adds the origin-verify secret to every request it forwards, from Secrets Manager', () => {
      const config = Object.values(
        edge().distribution.findResources('AWS::CloudFront::Distribution'),
      )[0]?.Properties.DistributionConfig;
      for (const origin of config.Origins) {
        expect(origin.CustomOriginConfig).toMatchObject({ OriginProtocolPolicy: 'https-only' });
        const [header] = origin.OriginCustomHeaders;
        expect(header.HeaderName).toBe('x-origin-verify');
        const value = JSON.stringify(header.HeaderValue);
        expect(value).toContain('{{resolve:secretsmanager:');
        expect(value).toContain('OriginVerifySecret');
      }
      s.template(s.stacks.data).hasResourceProperties('AWS::SecretsManager::Secret', {
        Description: Match.stringLikeRegexp('X-Origin-Verify'),
        GenerateSecretString: Match.objectLike({ PasswordLength: 48 }),
      });
    });

    it('tells every route’s function where the secret is, and lets it read that one', () => {
      for (const stack of s.stacks.routes.values()) {
        for (const fn of serviceFunctions(s.template(stack).toJSON().Resources as Resources)) {
          expect(
            JSON.stringify(fn.Properties.Environment.Variables.ORIGIN_VERIFY_SECRET_ID),
          ).toContain('OriginVerifySecret');
        }
      }
      // The background jobs answer no HTTP request: they never see it.
      for (const fn of serviceFunctions(
        s.template(s.stacks.jobs).toJSON().Resources as Resources,
      )) {
        expect(fn.Properties.Environment.Variables).not.toHaveProperty('ORIGIN_VERIFY_SECRET_ID');
      }
    });

    it('serves a custom domain with its us-east-1 certificate and TLS 1.2, instead of API Gateway', () => {
      const mapped = synth({
        domainName: 'budgets.example.com',
        certificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/abc',
      });
      const d = mapped.template(mapped.stacks.edge?.distribution as never);
      d.hasResourceProperties('AWS::CloudFront::Distribution', {
        DistributionConfig: Match.objectLike({
          Aliases: ['budgets.example.com'],
          ViewerCertificate: {
            AcmCertificateArn: 'arn:aws:acm:us-east-1:123456789012:certificate/abc',
            MinimumProtocolVersion: 'TLSv1.2_2021',
            SslSupportMethod: 'sni-only',
          },
        }),
      });
      d.hasOutput('RuntimeUrl', { Value: 'https://budgets.example.com' });
      d.hasOutput('AdminUrl', { Value: 'https://budgets.example.com/admin' });
      d.hasOutput('DomainTarget', {});
      for (const stack of mapped.stacks.routes.values())
        mapped.template(stack).resourceCountIs('AWS::ApiGatewayV2::DomainName', 0);
      expect(() =>
        synth({
          domainName: 'b.example.com',
          certificateArn: 'arn:aws:acm:eu-west-1:123456789012:certificate/abc',
        }),
      ).toThrow(/us-east-1/);
    });
  });

  it('is gone with -c edge=false: no stacks, no secret, no origin check in any function', () => {
    const off = synth({ edge: 'false' });
    expect(off.stacks.edge).toBeUndefined();
    expect(off.all.map((x) => x.stackName)).not.toContain('BudgetReservationsEdge');
    const text = JSON.stringify(off.all.map((x) => off.template(x).toJSON()));
    expect(text).not.toContain('OriginVerify');
    expect(text).not.toContain('ORIGIN_VERIFY_SECRET_ID');
    expect(text).not.toContain('AWS::CloudFront');
    expect(text).not.toContain('AWS::WAFv2');
  });
});
