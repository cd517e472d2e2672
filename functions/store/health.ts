import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { dynamoClient, tableName } from './client.js';

/** True when the table answers and is usable. */
export async function tableIsUp(): Promise<boolean> {
  try {
    const { Table } = await dynamoClient.send(
      new DescribeTableCommand({ TableName: tableName() }),
      {
        abortSignal: AbortSignal.timeout(2_000),
      },
    );
    return Table?.TableStatus === 'ACTIVE' || Table?.TableStatus === 'UPDATING';
  } catch {
    return false;
  }
}
