// The table rows of figure 11 (files in and out through the server's file URLs), beside report.mjs, which holds
// the other figures' rows and renders the table.
import { f, notMeasuredRow } from './report-rows.mjs';

/**
 * Figure 11's targets (issue 32): each direction at least this share of cat's throughput to or from a socket, and
 * the server's RSS growing by less than this (MiB) during any one transfer.
 */
export const FILE_TRANSFER_TARGETS = { throughputRatio: 0.5, rssGrowthMiB: 32 };

/** Figure 11's rows: each direction's throughput beside cat's, and the server's RSS growth during them. */
export function fileTransferRows(transfer) {
  const figure = (what) => `11 files through the server (get_file_url, local): ${what}`;
  if (transfer.skipped !== undefined) {
    return [notMeasuredRow(figure('all'), transfer.skipped)];
  }
  const { throughputRatio, rssGrowthMiB } = FILE_TRANSFER_TARGETS;
  const mb = transfer.bytes / 1e6;
  const throughputRow = (what, { ours, cat, ratio }, floor) => ({
    figure: figure(`${mb} MB ${what}, MB/s`),
    ours: f(ours.mbPerS),
    r1: '—',
    r2: '—',
    ratio: `${f(ratio, 2)}× ${floor} (${f(cat.mbPerS)} MB/s)`,
    target: `≥ ${throughputRatio}× cat`,
    verdict: ratio >= throughputRatio ? 'met' : `MISSED: ${f(ratio, 2)}× vs ${throughputRatio}×`,
  });
  const { download, upload } = transfer;
  const worst = Math.max(download.rss.growthMiB, upload.rss.growthMiB);
  const rss = (r) => `${f(r.growthMiB, 1)} (median ${f(r.medianMiB, 1)}, VmHWM ${f(r.hwmGrowthMiB, 1)})`;
  return [
    throughputRow('download (GET)', download, 'cat of the same file into a TCP socket'),
    throughputRow('upload (PUT)', upload, 'the same bytes over a TCP socket into `cat > file`'),
    {
      figure: figure('server RSS growth during one transfer, largest of the runs, MiB'),
      ours: `download ${f(download.rss.growthMiB, 1)}, upload ${f(upload.rss.growthMiB, 1)}`,
      r1: '—',
      r2: '—',
      ratio: `sampled peak − RSS before: download ${rss(download.rss)}; upload ${rss(upload.rss)}`,
      target: `< ${rssGrowthMiB} MiB`,
      verdict: worst < rssGrowthMiB ? 'met' : `MISSED: ${f(worst, 1)} MiB vs ${rssGrowthMiB} MiB`,
    },
  ];
}
