import { BlockList, isIP } from 'node:net';
import { invalidRequest } from './errors.js';

/**
 * Where webhooks may point (the reference's WebhookSecurityConfig): the address ranges a
 * target must not resolve to (SSRF: the metadata service, the VPC, loopback), glob patterns it
 * must match when any are set, and whether plain http is allowed. Checked when a subscription
 * is created or its URL changed, and again before every delivery on the addresses the name
 * resolves to then (the connection goes to the address checked: a name re-pointed in between
 * gains nothing).
 */
export interface WebhookSecurity {
  readonly blockedCidrRanges: readonly string[];
  readonly allowedUrlPatterns: readonly string[];
  readonly allowHttp: boolean;
}

/**
 * The reference's default ranges (RFC 1918, loopback, link-local, IPv6 ULA and loopback), and
 * three it leaves out that reach this host or its network just the same: "this network"
 * (0.0.0.0/8), carrier-grade NAT (100.64.0.0/10) and IPv6 link-local (fe80::/10).
 */
export const DEFAULT_BLOCKED_RANGES = [
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '::1/128',
  'fc00::/7',
  '0.0.0.0/8',
  '100.64.0.0/10',
  'fe80::/10',
] as const;

const LOOPBACK = new Set(['127.0.0.0/8', '::1/128']);

/**
 * The configuration in force until an operator PUTs one: strict in AWS; locally loopback and
 * http are allowed, so `npm run webhook-receiver` and the tests' receivers work.
 */
export const defaultWebhookSecurity = (local: boolean): WebhookSecurity => ({
  blockedCidrRanges: DEFAULT_BLOCKED_RANGES.filter((r) => !(local && LOOPBACK.has(r))),
  allowedUrlPatterns: [],
  allowHttp: local,
});

/** A CIDR range as BlockList takes it, or undefined when it is not one. */
export function parseCidr(
  range: string,
): { address: string; prefix: number; v: 4 | 6 } | undefined {
  const [address = '', bits, ...rest] = range.trim().split('/');
  const v = isIP(address);
  if (rest.length > 0 || (v !== 4 && v !== 6)) return undefined;
  const max = v === 4 ? 32 : 128;
  const prefix = bits === undefined ? max : Number(bits);
  if (!/^\d+$/.test(bits ?? String(max)) || prefix < 0 || prefix > max) return undefined;
  return { address, prefix, v };
}

/** A PUT's ranges, each one valid: a typo must not silently open a range. */
export function checkSecurity(c: WebhookSecurity): WebhookSecurity {
  c.blockedCidrRanges.forEach((range, i) => {
    if (!parseCidr(range)) {
      throw invalidRequest(`blocked_cidr_ranges[${i}]: "${range}" is not a CIDR range`, {
        field: `blocked_cidr_ranges.${i}`,
      });
    }
  });
  return c;
}

/** The address an IPv4-mapped IPv6 address stands for, so 127.0.0.1/8 also blocks ::ffff:127.0.0.1. */
const unmapped = (address: string): string =>
  /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] ?? address;

/** The first of `addresses` inside a blocked range, if any. */
export function blockedAddress(
  c: WebhookSecurity,
  addresses: readonly string[],
): string | undefined {
  const list = new BlockList();
  for (const range of c.blockedCidrRanges) {
    const cidr = parseCidr(range);
    if (cidr) list.addSubnet(cidr.address, cidr.prefix, cidr.v === 4 ? 'ipv4' : 'ipv6');
  }
  return addresses.find((a) => {
    const address = unmapped(a);
    return list.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
  });
}

const globMatches = (pattern: string, url: string) =>
  new RegExp(
    `^${pattern
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  ).test(url);

/**
 * What can be checked of a URL without resolving it: http(s) only (http when allowed), a host,
 * no credentials in it, and a match of the allowed patterns when there are any. Answers the
 * host to resolve.
 */
export function checkTargetUrl(c: WebhookSecurity, raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw badUrl(raw, 'is not a URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw badUrl(raw, 'must be https');
  if (url.protocol === 'http:' && !c.allowHttp) {
    throw badUrl(raw, 'must be https (allow_http is off)');
  }
  if (!url.hostname) throw badUrl(raw, 'has no host');
  if (url.username || url.password) throw badUrl(raw, 'must not carry credentials');
  if (c.allowedUrlPatterns.length > 0 && !c.allowedUrlPatterns.some((p) => globMatches(p, raw))) {
    throw badUrl(raw, 'matches none of allowed_url_patterns');
  }
  return url;
}

const badUrl = (url: string, why: string) =>
  invalidRequest(`url ${why}`, { field: 'url', reason: 'WEBHOOK_URL_INVALID', url: originOf(url) });

/** What errors and logs may show of a webhook URL: its path and query often hold a secret. */
export function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '(not a URL)';
  }
}

/** A refusal of a target that resolves into a blocked range. */
export const blockedTarget = (url: string, address: string) =>
  invalidRequest(`url resolves to ${address}, inside a blocked range (blocked_cidr_ranges)`, {
    field: 'url',
    reason: 'WEBHOOK_URL_INVALID',
    url: originOf(url),
  });
