/**
 * The figures the bench reports and the bars of DESIGN.md section 6 they are judged against.
 * Every ratio is sandglass / BullMQ, whatever the direction of "better".
 */

export interface Bar {
  /** The bar as DESIGN.md states it. */
  readonly text: string;
  readonly check: (figure: { sandglass: number; bullmq: number | null; ratio: number | null }) => boolean;
}

export interface Figure {
  readonly id: string;
  readonly label: string;
  readonly unit: string;
  readonly sandglass: number | null;
  readonly bullmq: number | null;
  /** sandglass / BullMQ, null when it means nothing (the values are ratios already). */
  readonly ratio: number | null;
  readonly bar: string | null;
  /** null: informational row (no bar), or not measured. */
  readonly met: boolean | null;
  readonly note?: string;
}

export interface PhaseOutput {
  readonly figures: Figure[];
  /** Everything else a reader may want to check: per-repetition values, counts, breakdowns. */
  readonly details: Record<string, unknown>;
  /** Lines printed after the table (breakdowns too wide for it). */
  readonly report?: string[];
}

export const BARS = {
  ratioAtLeast: (factor: number): Bar => ({ text: `>= ${factor}x BullMQ`, check: f => f.ratio !== null && f.ratio >= factor }),
  ratioAtMost: (fraction: number, text: string): Bar => ({ text, check: f => f.ratio !== null && f.ratio <= fraction }),
  atMost: (limit: number, text: string): Bar => ({ text, check: f => f.sandglass <= limit }),
  atLeast: (limit: number, text: string): Bar => ({ text, check: f => f.sandglass >= limit }),
  between: (low: number, high: number, text: string): Bar => ({ text, check: f => f.sandglass >= low && f.sandglass <= high }),
  /** For a yes/no figure: 1 is yes. */
  holds: (text: string): Bar => ({ text, check: f => f.sandglass === 1 }),
};

interface FigureInput {
  readonly id: string;
  readonly label: string;
  readonly unit: string;
  readonly sandglass: number | null;
  readonly bullmq: number | null;
  readonly bar?: Bar;
  /** Leave the ratio column empty (for rows whose values are ratios). */
  readonly noRatio?: boolean;
  readonly note?: string;
}

export function figure(input: FigureInput): Figure {
  const { sandglass, bullmq } = input;
  const ratio = input.noRatio || sandglass === null || bullmq === null || bullmq === 0 ? null : sandglass / bullmq;
  // A bar whose figure could not be measured counts as not met: a failure is never hidden as "n/a".
  const met = input.bar ? sandglass !== null && Number.isFinite(sandglass) && input.bar.check({ sandglass, bullmq, ratio }) : null;
  return {
    id: input.id,
    label: input.label,
    unit: input.unit,
    sandglass,
    bullmq,
    ratio,
    bar: input.bar?.text ?? null,
    met,
    ...(input.note === undefined ? {} : { note: input.note }),
  };
}
