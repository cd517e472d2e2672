import type { TestProject } from 'vitest/node';
import {
  checkJava,
  freePort,
  type LocalDynamo,
  startDynamoDbLocal,
} from '../../infra/local/dynamodb.js';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoint: string;
  }
}

let dynamo: Promise<LocalDynamo> | undefined;

/**
 * One in-memory DynamoDB Local for the whole integration run; each file makes its own table.
 * It boots while the first test files run: startTestStack waits until it answers.
 */
export async function setup(project: TestProject): Promise<void> {
  const given = process.env.TEST_DYNAMODB_ENDPOINT;
  if (given && !/^http:\/\/(127\.0\.0\.1|localhost)(:\d+)?$/.test(given)) {
    throw new Error(`integration tests run only against a local DynamoDB, not ${given}`);
  }
  if (given) {
    project.provide('dynamoEndpoint', given);
    return;
  }
  checkJava(); // the usual startup failure, reported here rather than by every file
  const port = await freePort();
  dynamo = startDynamoDbLocal({ port });
  dynamo.catch(() => undefined); // a failed start is reported by the files and by teardown
  project.provide('dynamoEndpoint', `http://127.0.0.1:${port}`);
}

export async function teardown(): Promise<void> {
  await (await dynamo)?.stop();
}
