import { describe, expect, it } from 'vitest';
import {
  and,
  attr,
  conditionCheck,
  or,
  putIfAbsent,
  queryExpressions,
  update,
} from '../../functions/store/expressions.js';
import { readable } from '../helpers/expressions.js';

const key = { pk: 'P', sk: '-' };

describe('the expression builder', () => {
  it('names each attribute once and gives each value its own placeholder, named after it', () => {
    const item = update(
      key,
      { set: { status: 'FROZEN' }, add: { reserved: 5 } },
      { condition: and(attr('status').eq('ACTIVE'), attr('reserved').lte(10)), returnOld: true },
    ).Update;

    expect(item?.UpdateExpression).toBe('SET #status = :status, #reserved = #reserved + :reserved');
    expect(item?.ConditionExpression).toBe('#status = :status_2 AND #reserved <= :reserved_2');
    expect(item?.ExpressionAttributeNames).toEqual({
      '#status': 'status',
      '#reserved': 'reserved',
    });
    expect(item?.ExpressionAttributeValues).toEqual({
      ':status': 'FROZEN',
      ':reserved': 5,
      ':status_2': 'ACTIVE',
      ':reserved_2': 10,
    });
    expect(item?.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD');
  });

  it('leaves out undefined values and missing parts, and never writes an empty clause', () => {
    const item = update(
      key,
      { set: { a: 1, b: undefined }, remove: [] },
      { condition: and(undefined, false, attr('c').exists()) },
    ).Update;

    expect(readable(item)).toEqual({ update: 'SET a = 1', condition: 'attribute_exists(c)' });
    expect(item?.ReturnValuesOnConditionCheckFailure).toBeUndefined();
  });

  it('writes SET, ADD to a set, and REMOVE together, and parenthesizes an OR', () => {
    const item = update(
      key,
      { set: { n: 1 }, addToSet: { tags: new Set(['x']) }, remove: ['old'] },
      { condition: or(attr('s').notExists(), attr('s').ne('CLOSED')) },
    ).Update;

    expect(item?.UpdateExpression).toBe('SET #n = :n ADD #tags :tags REMOVE #old');
    expect(readable(item).condition).toBe('(attribute_not_exists(s) OR s <> "CLOSED")');
  });

  it('builds condition checks, conditional puts and queries the same way', () => {
    expect(readable(conditionCheck(key, attr('pk').exists()).ConditionCheck).condition).toBe(
      'attribute_exists(pk)',
    );
    expect(putIfAbsent({ pk: 'P', sk: '-' }).Put?.ConditionExpression).toBe(
      'attribute_not_exists(#pk)',
    );
    const query = queryExpressions(
      and(attr('pk').eq('P'), attr('sk').between('a', 'b')),
      and(attr('segments').contains('w'), attr('scope').beginsWith('tenant:t')),
    );
    expect(query.KeyConditionExpression).toBe('#pk = :pk AND #sk BETWEEN :sk AND :sk_2');
    expect(query.FilterExpression).toBe(
      'contains(#segments, :segments) AND begins_with(#scope, :scope)',
    );
  });
});
