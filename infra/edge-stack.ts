import { Aws, CfnOutput, Fn, SecretValue, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager';
import {
  AllowedMethods,
  CachePolicy,
  Distribution,
  Function as EdgeFunction,
  FunctionCode,
  FunctionEventType,
  HttpVersion,
  OriginProtocolPolicy,
  OriginRequestPolicy,
  PriceClass,
  SecurityPolicyProtocol,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { HttpOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import {
  AwsCustomResource,
  AwsCustomResourcePolicy,
  PhysicalResourceId,
} from 'aws-cdk-lib/custom-resources';
import type { Construct } from 'constructs';
import { ORIGIN_VERIFY_HEADER } from '../functions/http/origin.js';
import type { CustomDomain } from './api-stack.js';

export interface EdgeStackProps extends StackProps {
  readonly runtimeApi: HttpApi;
  readonly adminApi: HttpApi;
  /** The data stack's secret whose value CloudFront adds as X-Origin-Verify. */
  readonly originVerifySecretArn: string;
  /** The SSM parameter in us-east-1 that holds the web ACL's ARN (EdgeFirewallStack). */
  readonly webAclArnParameter: string;
  /** Where the admin API is under the edge. */
  readonly adminBasePath: string;
  /** The custom domain, its ACM certificate in us-east-1. @default - the distribution's own */
  readonly domain?: CustomDomain;
}

/**
 * The edge (docs/decisions.md § Edge): one CloudFront distribution in front of both HTTP APIs,
 * the runtime API at its root and the admin API under `/<adminBasePath>` (a CloudFront
 * Function strips the prefix), with the web ACL of the firewall stack. Nothing is cached:
 * every request goes to its API with every header but Host, and the origin-verify header the
 * functions check, so a caller that bypasses CloudFront is refused.
 */
export class EdgeStack extends Stack {
  readonly distribution: Distribution;

  constructor(scope: Construct, id: string, props: EdgeStackProps) {
    super(scope, id, props);
    const webAclArn = this.readWebAclArn(props.webAclArnParameter);
    const verify = SecretValue.secretsManager(props.originVerifySecretArn).unsafeUnwrap();
    const origin = (api: HttpApi) =>
      new HttpOrigin(Fn.select(2, Fn.split('/', api.apiEndpoint)), {
        protocolPolicy: OriginProtocolPolicy.HTTPS_ONLY,
        customHeaders: { [ORIGIN_VERIFY_HEADER]: verify },
      });
    const behavior = {
      viewerProtocolPolicy: ViewerProtocolPolicy.HTTPS_ONLY,
      allowedMethods: AllowedMethods.ALLOW_ALL,
      cachePolicy: CachePolicy.CACHING_DISABLED,
      // API Gateway answers only its own Host.
      originRequestPolicy: OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
    };
    const base = `/${props.adminBasePath}`;
    const stripBase = new EdgeFunction(this, 'AdminBasePath', {
      comment: `Strips ${base} before the admin API`,
      code: FunctionCode.fromInline(
        `function handler(event){var r=event.request;r.uri=r.uri.slice(${base.length})||'/';return r;}`,
      ),
    });
    const admin = {
      ...behavior,
      origin: origin(props.adminApi),
      functionAssociations: [{ function: stripBase, eventType: FunctionEventType.VIEWER_REQUEST }],
    };
    const domain = props.domain;
    this.distribution = new Distribution(this, 'Distribution', {
      comment: `${this.stackName}: both HTTP APIs behind AWS WAF`,
      defaultBehavior: { ...behavior, origin: origin(props.runtimeApi) },
      additionalBehaviors: { [base]: admin, [`${base}/*`]: admin },
      webAclId: webAclArn,
      priceClass: PriceClass.PRICE_CLASS_100,
      httpVersion: HttpVersion.HTTP2_AND_3,
      ...(domain && {
        domainNames: [domain.domainName],
        certificate: Certificate.fromCertificateArn(this, 'Certificate', domain.certificateArn),
        minimumProtocolVersion: SecurityPolicyProtocol.TLS_V1_2_2021,
      }),
    });
    Validations.of(this.distribution).acknowledge(
      {
        id: 'AwsSolutions-CFR1',
        reason:
          'an API for agents wherever they run: no country is refused by default; add a geo rule to the web ACL where yours must',
      },
      {
        id: 'AwsSolutions-CFR3',
        reason:
          'every request that reaches an API is in its access log (requestId, source IP, status), and every one the web ACL blocks is in its CloudWatch metrics and sampled requests; CloudFront standard logs would add a bucket and a cost per request for nothing more',
      },
      ...(domain
        ? []
        : [
            {
              id: 'AwsSolutions-CFR4',
              reason:
                'without a custom domain the distribution answers on *.cloudfront.net with CloudFront’s default certificate, whose minimum protocol CloudFront sets; with -c domainName the minimum is TLS 1.2 (2021)',
            },
          ]),
    );
    const url = domain ? `https://${domain.domainName}` : `https://${this.distribution.domainName}`;
    new CfnOutput(this, 'RuntimeUrl', {
      value: url,
      description: 'Base URL of the runtime server (through the edge)',
    });
    new CfnOutput(this, 'AdminUrl', {
      value: `${url}${base}`,
      description: 'Base URL of the admin server (through the edge)',
    });
    if (domain) {
      new CfnOutput(this, 'DomainTarget', {
        value: this.distribution.domainName,
        description: `CNAME (or alias) target for ${domain.domainName}`,
      });
    }
  }

  /** The web ACL's ARN, read from us-east-1 at deploy time (EdgeFirewallStack publishes it). */
  private readWebAclArn(parameter: string): string {
    const call = {
      service: 'SSM',
      action: 'getParameter',
      parameters: { Name: parameter },
      region: 'us-east-1',
      physicalResourceId: PhysicalResourceId.of(parameter),
    };
    const reader = new AwsCustomResource(this, 'WebAclArn', {
      onCreate: call,
      onUpdate: call,
      installLatestAwsSdk: false,
      policy: AwsCustomResourcePolicy.fromStatements([
        new PolicyStatement({
          actions: ['ssm:GetParameter'],
          resources: [`arn:${Aws.PARTITION}:ssm:us-east-1:${Aws.ACCOUNT_ID}:parameter${parameter}`],
        }),
      ]),
    });
    const provider = this.node.tryFindChild(
      `AWS${AwsCustomResource.PROVIDER_FUNCTION_UUID.replaceAll('-', '')}`,
    );
    if (!provider) throw new Error('AwsCustomResource: its provider function moved');
    Validations.of(provider).acknowledge(
      {
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
        reason:
          'CDK’s AwsCustomResource provider (reads one SSM parameter at deploy time) logs with AWSLambdaBasicExecutionRole; it runs only during deployments',
      },
      {
        id: 'AwsSolutions-L1',
        reason:
          'CDK’s AwsCustomResource provider picks its own runtime, which moves with aws-cdk-lib; it runs only during deployments',
      },
    );
    return reader.getResponseField('Parameter.Value');
  }
}
