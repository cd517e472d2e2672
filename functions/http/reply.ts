/** A success answered with another status than the route's (health: 503 DOWN). */
export class Reply {
  constructor(
    readonly statusCode: number,
    readonly body: unknown,
  ) {}
}
