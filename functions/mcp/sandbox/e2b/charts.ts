/**
 * Charts on a code interpreter that returns them only as files (Alibaba Cloud's E2B-compatible service, whose
 * results carry no images): after a Python call, the figures matplotlib holds open are saved as PNG files in
 * the sandbox and closed, and the call reports each file's path (and the image, when it is small enough).
 */
import type { CodeOutput } from '../types';
import type { E2BSandboxApi } from './sdk';

/** Where the charts go. */
export const CHART_DIR = '/home/user/charts';
/** Charts larger than this are reported by path only. */
const MAX_INLINE_CHART_BYTES = 1024 * 1024;
/** What the saving code's printed paths may take. */
const MAX_PRINTED_CHARS = 256 * 1024;

/** Saves every open figure, closes them, prints the paths as JSON; leaves no name behind in the kernel. */
const SAVE_FIGURES = `def _mcp_save_figures():
    import json, os, sys, time
    plt = sys.modules.get("matplotlib.pyplot")
    paths = []
    if plt is not None and plt.get_fignums():
        os.makedirs(${JSON.stringify(CHART_DIR)}, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for number in plt.get_fignums():
            path = "${CHART_DIR}/chart-%s-%d.png" % (stamp, number)
            plt.figure(number).savefig(path)
            paths.append(path)
        plt.close("all")
    print(json.dumps(paths))
try:
    _mcp_save_figures()
finally:
    del _mcp_save_figures
`;

/** Saves the open figures and returns what to report for them. */
export async function saveOpenFigures(api: E2BSandboxApi): Promise<CodeOutput[]> {
  // The paths' JSON, kept up to a bound: code before this call may have left threads printing.
  let printed = '';
  const execution = await api.runCode(SAVE_FIGURES, {
    language: 'python',
    timeoutMs: 30_000,
    onStdout: (text) => {
      if (printed.length + text.length <= MAX_PRINTED_CHARS) printed += text;
    },
  });
  if (execution.error !== undefined) return [];
  let paths: unknown;
  try {
    paths = JSON.parse(printed.trim() || '[]');
  } catch {
    return [];
  }
  if (!Array.isArray(paths)) return [];
  const outputs: CodeOutput[] = [];
  for (const path of paths.filter((p): p is string => typeof p === 'string')) {
    outputs.push({
      type: 'text',
      text: `Chart saved as ${path} (this service returns charts as files; read_file shows it).`,
    });
    const bytes = await api.readFile(path, MAX_INLINE_CHART_BYTES).catch(() => undefined);
    if (bytes !== undefined && bytes.length <= MAX_INLINE_CHART_BYTES)
      outputs.push({ type: 'image', mimeType: 'image/png', data: Buffer.from(bytes).toString('base64') });
  }
  return outputs;
}
