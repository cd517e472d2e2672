/**
 * A success answered with more than a body: another status than the route's (health: 503 DOWN),
 * or headers of its own. `statusCode` undefined: the route's success status.
 */
export class Reply<B = unknown> {
  constructor(
    readonly statusCode: number | undefined,
    readonly body: B,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {}
}
