/**
 * Money as the engine sends it: decimal strings in US dollars ("0.000123"). Sums are exact (BigInt in
 * units of 1e-15 USD) so the meter shows the same figure as the kernel's Decimal arithmetic.
 */

const SCALE_DIGITS = 15;
const SCALE = 10n ** BigInt(SCALE_DIGITS);

/** Parse a decimal string into 1e-15 USD units; anything unparseable counts as zero. */
export function parseMoney(value: unknown): bigint {
  if (typeof value !== "string" && typeof value !== "number") return 0n;
  const match = /^(-?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(String(value).trim());
  if (!match) return 0n;
  const [, sign, whole = "", frac = "", exp = "0"] = match;
  if (whole === "" && frac === "") return 0n;
  // digits * 10^(exponent - frac.length) USD, rescaled to SCALE_DIGITS places; finer amounts truncate.
  const shift = Number(exp) - frac.length + SCALE_DIGITS;
  let units = BigInt(whole + frac);
  units = shift >= 0 ? units * 10n ** BigInt(shift) : units / 10n ** BigInt(-shift);
  return sign === "-" ? -units : units;
}

/** The kernel's `format_usd`: "$0", six decimals under a cent, four above, trailing zeros dropped, "-$" below zero
 * (tests/fixtures/usd_formats.json holds both to the same table). */
export function formatUsd(units: bigint): string {
  if (units === 0n) return "$0";
  const negative = units < 0n;
  const abs = negative ? -units : units;
  const cent = SCALE / 100n;
  const places = abs < cent ? 6 : 4;
  const step = 10n ** BigInt(SCALE_DIGITS - places);
  // Round half to even like Python's Decimal formatting.
  let quotient = abs / step;
  const remainder = abs % step;
  const twice = remainder * 2n;
  if (twice > step || (twice === step && quotient % 2n === 1n)) quotient += 1n;
  const text = quotient.toString().padStart(places + 1, "0");
  const whole = text.slice(0, text.length - places);
  const frac = text.slice(text.length - places).replace(/0+$/, "");
  if (quotient === 0n) return "$0"; // what rounds to nothing has no sign
  const body = frac ? `${whole}.${frac}` : whole;
  return `${negative ? "-" : ""}$${body}`;
}

/** A ratio in [0, 1] for bars, computed exactly before the one conversion to a float. */
export function fraction(part: bigint, whole: bigint): number {
  if (whole <= 0n) return 0;
  const clamped = part < 0n ? 0n : part > whole ? whole : part;
  return Number((clamped * 10000n) / whole) / 10000;
}
