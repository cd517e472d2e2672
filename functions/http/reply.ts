/**
 * A success answered with more than a body: another status than the route's (health: 503 DOWN),
 * or headers of its own. `statusCode` undefined: the route's success status.
 */
export class Reply {
  constructor(
    readonly statusCode: number | undefined,
    readonly body: unknown,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {}
}
