import { Stack, type StackProps } from 'aws-cdk-lib';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Construct } from 'constructs';
import { ServiceMonitoring, type ServiceMonitoringProps } from './monitoring.js';

export interface MonitoringStackProps extends StackProps, Omit<ServiceMonitoringProps, 'topic'> {
  /** Subscribed to the alarm topic. @default - no subscription */
  readonly alarmEmail?: string;
}

/**
 * The dashboard, every alarm and the topic they notify: nothing else depends on it, so
 * `-c monitoring=false` deploys the service without it (docs/deploy.md § What an idle deployment
 * costs).
 */
export class MonitoringStack extends Stack {
  readonly monitoring: ServiceMonitoring;
  readonly topic: Topic;

  constructor(scope: Construct, id: string, props: MonitoringStackProps) {
    super(scope, id, props);
    this.topic = new Topic(this, 'Alarms', {
      displayName: `${props.serviceName} alarms`,
      enforceSSL: true,
    });
    if (props.alarmEmail) this.topic.addSubscription(new EmailSubscription(props.alarmEmail));
    this.monitoring = new ServiceMonitoring(this, 'Monitoring', { ...props, topic: this.topic });
  }
}
