import type { TestProject } from 'vitest/node';
import { type LocalDynamo, startDynamoDbLocal } from '../../infra/local/dynamodb.js';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoint: string;
  }
}

let dynamo: LocalDynamo | undefined;

/** One in-memory DynamoDB Local for the whole integration run; each file makes its own table. */
export async function setup(project: TestProject): Promise<void> {
  const given = process.env.TEST_DYNAMODB_ENDPOINT;
  if (given && !/^http:\/\/(127\.0\.0\.1|localhost)(:\d+)?$/.test(given)) {
    throw new Error(`integration tests run only against a local DynamoDB, not ${given}`);
  }
  if (!given) dynamo = await startDynamoDbLocal({});
  project.provide('dynamoEndpoint', given ?? dynamo?.endpoint ?? '');
}

export async function teardown(): Promise<void> {
  await dynamo?.stop();
}
