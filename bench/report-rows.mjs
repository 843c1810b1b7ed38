// What every figure's table rows share: numbers as the table shows them, and the row of a figure not measured.

/** `n` with `digits` decimals, or `n/a` when it is not a number. */
export const f = (n, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

/** The row of `figure` when it could not be measured here, saying why. */
export function notMeasuredRow(figure, why) {
  return { figure, ours: 'n/a', r1: '—', r2: '—', ratio: `not measured: ${why}`, target: '—', verdict: 'not measured' };
}
