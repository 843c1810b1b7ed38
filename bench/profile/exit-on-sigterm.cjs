// Preloaded (`--require`) into a server that has no SIGTERM handler of its own (the references), so that it exits
// through process.exit and Node writes the profile that `--cpu-prof` asked for.
process.on('SIGTERM', () => process.exit(0));
