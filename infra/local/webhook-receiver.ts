/**
 * A webhook receiver to watch events locally (README § Events and webhooks), started with the
 * secret of the subscription that points at it (shown once, when it was created):
 *
 *   WEBHOOK_SECRET=whsec_… npm run webhook-receiver           # listens on 127.0.0.1:8787
 *
 * or with the secret of the environment's bootstrap subscription:
 *
 *   WEBHOOK_SECRET=s3cret npm run webhook-receiver
 *   WEBHOOK_URLS=http://127.0.0.1:8787/events WEBHOOK_SECRET=s3cret npm start
 *
 * Prints one line per delivery: whether its X-Cycles-Signature verifies, the attempt, the event
 * type, id and scope, and whether its event_id was seen before (deliveries are at least once).
 */
import { createServer } from 'node:http';
import { verifySignature } from '../../functions/outbound/webhooks.js';

const secret = process.env.WEBHOOK_SECRET ?? '';
const port = Number(process.env.PORT ?? process.argv[2] ?? 8787);
if (!secret) {
  console.error('set WEBHOOK_SECRET to the secret the service signs with');
  process.exit(1);
}
const seen = new Set<string>();

createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const header = req.headers['x-cycles-signature'];
    const signed = verifySignature(secret, body, Array.isArray(header) ? header[0] : header);
    if (!signed) {
      console.log(`REJECTED (bad signature) ${body.slice(0, 120)}`);
      res.writeHead(401).end();
      return;
    }
    const event = JSON.parse(body) as {
      event_id: string;
      event_type: string;
      scope?: string;
      data?: Record<string, unknown>;
    };
    const again = seen.has(event.event_id);
    seen.add(event.event_id);
    const threshold = event.data?.threshold_percent;
    console.log(
      [
        'signature ok',
        `attempt ${req.headers['x-cycles-delivery-attempt'] ?? '?'}`,
        event.event_type + (threshold === undefined ? '' : ` ${threshold}%`),
        event.scope ?? '',
        event.event_id,
        again ? '(duplicate: already received)' : '',
      ].join('  '),
    );
    res.writeHead(204).end();
  });
}).listen(port, '127.0.0.1', () => {
  console.log(`webhook receiver on http://127.0.0.1:${port}/events (verifying X-Cycles-Signature)`);
});
