/**
 * The local E2B service as a command (`npm run e2b:local`, via scripts/e2b-local.mjs): starts it, prints the
 * environment an E2B SDK client needs, and serves until Ctrl-C (or SIGTERM), then kills every sandbox.
 *
 *   --port N         port on 127.0.0.1 (default: any free one)
 *   --api-key KEY    the API key clients must send (default: a random one)
 *   --flavor F       e2b (default) or alibaba
 *   --root DIR       where sandbox directories go (default: a temporary directory, removed at exit)
 *   --pause P        memory (default), files (no memory snapshots) or none (no pause, resume or snapshots)
 *   --no-snapshots   the snapshot routes answer 404
 *   --resolver LIST  DNS servers (host:port, comma-separated) for the sandboxes' egress (default: the host's)
 */
import { type LocalE2BOptions, startLocalE2B } from './index';

const USAGE =
  'usage: npm run e2b:local -- [--port N] [--api-key KEY] [--flavor e2b|alibaba] [--root DIR] ' +
  '[--pause memory|files|none] [--no-snapshots] [--resolver host:port,...]';

function parseArgs(argv: string[]): LocalE2BOptions {
  const options: LocalE2BOptions = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [name, inline] = arg.includes('=')
      ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)]
      : [arg, undefined];
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new Error(`${name} needs a value\n${USAGE}`);
      return v;
    };
    switch (name) {
      case '--port': {
        const port = Number(value());
        if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port: not a port\n${USAGE}`);
        options.port = port;
        break;
      }
      case '--api-key':
        options.apiKey = value();
        break;
      case '--flavor': {
        const flavor = value();
        if (flavor !== 'e2b' && flavor !== 'alibaba') throw new Error(`--flavor: e2b or alibaba\n${USAGE}`);
        options.flavor = flavor;
        break;
      }
      case '--root':
        options.root = value();
        break;
      case '--pause': {
        const pause = value();
        if (pause !== 'memory' && pause !== 'files' && pause !== 'none')
          throw new Error(`--pause: memory, files or none\n${USAGE}`);
        options.pause = pause;
        break;
      }
      case '--no-snapshots':
        options.snapshots = false;
        break;
      case '--resolver':
        options.resolver = value()
          .split(',')
          .map((server) => server.trim())
          .filter((server) => server !== '');
        break;
      case '--help':
      case '-h':
        process.stdout.write(`${USAGE}\n`);
        process.exit(0);
        break;
      default:
        throw new Error(`unknown argument ${arg}\n${USAGE}`);
    }
  }
  return options;
}

async function main(): Promise<void> {
  const service = await startLocalE2B(parseArgs(process.argv.slice(2)));
  const lines = Object.entries(service.env()).map(([name, value]) => `export ${name}=${value}`);
  process.stdout.write(
    `Local E2B service on ${service.url}. For an SDK client:\n\n${lines.join('\n')}\n\nCtrl-C stops it and kills ` +
      `every sandbox.\n`,
  );
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    process.stdout.write('\nStopping: killing the sandboxes…\n');
    service.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
