/** Number formatting shared by labels and the table. */

/** 1000000 -> '1M', 20000 -> '20k'. */
export function shortCount(count: number): string {
  if (count >= 1_000_000 && count % 100_000 === 0) return `${count / 1_000_000}M`;
  if (count >= 1_000 && count % 100 === 0) return `${count / 1_000}k`;
  return String(count);
}

/** A figure value: thousands separators for big numbers, two decimals for small ones. */
export function formatValue(value: number | null): string {
  if (value === null || !Number.isFinite(value)) return '-';
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString('en-US');
  return value.toFixed(2);
}

export function formatRatio(ratio: number | null): string {
  if (ratio === null || !Number.isFinite(ratio)) return '-';
  return ratio >= 10 ? `${ratio.toFixed(1)}x` : `${ratio.toFixed(2)}x`;
}
