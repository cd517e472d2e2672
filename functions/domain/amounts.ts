export const UNITS = ['USD_MICROCENTS', 'TOKENS', 'CREDITS', 'RISK_POINTS'] as const;
export type Unit = (typeof UNITS)[number];

/**
 * The largest amount accepted anywhere (2^53 - 1): every value stays an exact JS integer end to
 * end, so ledger math never rounds. For USD_MICROCENTS that is about $90M per value.
 */
export const MAX_AMOUNT = Number.MAX_SAFE_INTEGER;

export interface Amount {
  readonly unit: Unit;
  readonly amount: number;
}
