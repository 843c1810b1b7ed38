// The table rows of the sleep figures (8: waking a sleeping sandbox, 9: the server's memory per sleeping sandbox),
// beside report.mjs, which holds the other figures' rows and renders the table.
import { median } from './harness/load.mjs';
import { f, notMeasuredRow } from './report-rows.mjs';

/** How far below a running sandbox's a sleeping sandbox's JS data must be to count as nothing (×). */
export const SLEEPING_DATA_TARGET = 0.1;

const WAKE_LABELS = { local: 'local', e2b: 'E2B on the local E2B service' };

/** One row per backend of figure 8. */
export function wakeRows(wake) {
  return Object.entries(WAKE_LABELS).map(([backend, label]) => {
    const figure = (setup) =>
      `8 wake: call to a sleeping sandbox, p50 (p90) ms, ${label}${setup === undefined ? '' : ` (${setup})`}`;
    const measured = wake[backend];
    if (measured.skipped !== undefined) {
      return notMeasuredRow(figure(), measured.skipped);
    }
    const { fresh, warm, wake: woken } = measured;
    const cell = (s) => `${f(s.p50Ms, 1)} (${f(s.p90Ms, 1)})`;
    const over = (s) => `${f(woken.p50Ms / s.p50Ms, 2)}× (p90 ${f(woken.p90Ms / s.p90Ms, 2)}×)`;
    return {
      figure: figure(measured.label),
      ours: cell(woken),
      r1: '—',
      r2: '—',
      ratio: `${over(fresh)} a fresh sandbox's first call, ${cell(fresh)}; ${over(warm)} a warm call, ${cell(warm)}`,
      target: '— (no target)',
      verdict: '—',
    };
  });
}

/** Figure 9's rows: the JS data a sleeping sandbox costs the server (the claim), and its RSS. */
export function sleepingMemoryRows({ counts, sleeping, running }) {
  const ks = `K = ${counts.join(', ')}`;
  const dataRatio = Math.abs(sleeping.dataBytesPerSandbox) / running.dataBytesPerSandbox;
  const kib = (bytes) => f(bytes / 1024, 1);
  const top = Math.max(...counts);
  const peakMiB = (mode) =>
    f(median(mode.runs.map((r) => r.points.find((p) => p.count === top).peakRssBytes)) / 2 ** 20);
  return [
    {
      figure: `9 server memory per sleeping sandbox: JS heap data (bytes), ${ks}`,
      ours: f(sleeping.dataBytesPerSandbox),
      r1: '—',
      r2: '—',
      ratio:
        `a running sandbox (and its session): ${f(running.dataBytesPerSandbox)} B; |sleeping| / running ` +
        `${f(dataRatio, 3)}×`,
      target: `≈ 0: ≤ ${SLEEPING_DATA_TARGET}× a running sandbox's`,
      verdict: dataRatio <= SLEEPING_DATA_TARGET ? 'met' : `MISSED: ${f(dataRatio, 3)}× vs ${SLEEPING_DATA_TARGET}×`,
    },
    {
      figure: `9 server memory per sleeping sandbox: RSS (KiB), ${ks}`,
      ours: kib(sleeping.rssBytesPerSandbox),
      r1: '—',
      r2: '—',
      ratio:
        `a running sandbox: ${kib(running.rssBytesPerSandbox)} KiB; heap used less code + external: ` +
        `${f(sleeping.heapBytesPerSandbox)} B sleeping, ${f(running.heapBytesPerSandbox)} B running; peak RSS at ` +
        `K = ${top}: ${peakMiB(sleeping)} MiB sleeping, ${peakMiB(running)} MiB running`,
      target: '— (no target)',
      verdict: '—',
    },
  ];
}
