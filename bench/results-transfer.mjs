// Figure 11's part of bench/RESULTS.md (files in and out through the server's file URLs): how it is measured, and
// every run's numbers. results-file.mjs puts them in their sections.
import { FILE_BYTES, FILE_NAMES, RSS_SAMPLE_MS } from './figures/file-transfer.mjs';
import { FILE_TRANSFER_TARGETS } from './report-transfer.mjs';

/** Item 11 of "How each figure is measured". */
export function describeFileTransferFigure(settings) {
  const { throughputRatio: ratio, rssGrowthMiB } = FILE_TRANSFER_TARGETS;
  const mb = FILE_BYTES / 1e6;
  const { download, upload, catUpload } = FILE_NAMES;
  return `11. **Files in and out through the server** (bench/figures/file-transfer.mjs, issue 32): a fresh server of
   ours (as above, \`SANDBOX_BACKEND=local\`), one session and its sandbox (isolation \`bwrap\`), \`run_command head -c
   ${FILE_BYTES} /dev/urandom > ${download}\`, then \`get_file_url\` for it (\`mode: download\`) and for
   \`${upload}\` (\`mode: upload\`): URLs the server serves itself (\`/files/<name>?t=<token>\`,
   functions/mcp/files/file-route.ts), no other credential. Each run, from the bench process over one keep-alive
   connection (undici \`request\`): a \`GET\` of the download URL, the body counted as it arrives; and a \`PUT\` of
   ${mb} MB to the upload URL (\`content-length\` set, one random megabyte sent again and again, streamed), done when
   the answer (201 or 200 and the bytes written) is read. Beside each, the floor on this machine in the same run:
   \`cat\` of the same file (the workspace's, on the host) with its stdout a TCP socket to a \`node:net\` server in
   the bench process that counts the bytes (done when all ${mb} MB arrived), and the same ${mb} MB sent by the bench
   process over a TCP socket that is the stdin of \`cat > ${catUpload}\` in the same directory (done when cat
   exited). The order of ours and cat is swapped every run. During each transfer of ours, the server process's RSS
   (\`VmRSS\` of /proc/<pid>/status) is read every ${RSS_SAMPLE_MS} ms; its growth is the highest reading less the one
   right before, and, as a check on the sampling, the exact peak (\`VmHWM\`, reset through /proc/<pid>/clear_refs
   before the transfer) less the same. One uncounted run first, whose transfers are also checked byte for byte (the
   download's sha256 against \`sha256sum\` in the sandbox, the upload's sha256 in the sandbox against the body's, cat's
   by size); then ${settings.transferRuns}; medians of MB/s (10^6 bytes per second) and their ratio, ours / cat.
   Targets: each direction ≥ ${ratio}× cat's throughput, and the server's RSS growing by < ${rssGrowthMiB} MiB during
   any one transfer (the largest of the runs): the bytes stream through, never held whole.`;
}

/** Figure 11's lines of "Every run". */
export function fileTransferRuns(transfer) {
  if (transfer.skipped !== undefined) return `- File transfer: not measured (${transfer.skipped})`;
  const list = (values, digits = 0) => `[${values.map((v) => v.toFixed(digits)).join(', ')}]`;
  return ['download', 'upload']
    .map((direction) => {
      const { ours, cat, rss } = transfer[direction];
      return (
        `- File transfer, ${direction}: MB/s per run ours ${list(ours.runs.map((t) => t.mbPerS))}, cat ` +
        `${list(cat.runs.map((t) => t.mbPerS))}; server RSS MiB before ${list(
          rss.runs.map((r) => r.beforeMiB),
          1,
        )}, ` +
        `growth ${list(
          rss.runs.map((r) => r.growthMiB),
          1,
        )} (VmHWM ${list(
          rss.runs.map((r) => r.hwmGrowthMiB),
          1,
        )}; ` +
        `${list(rss.runs.map((r) => r.samples))} readings)`
      );
    })
    .join('\n');
}
