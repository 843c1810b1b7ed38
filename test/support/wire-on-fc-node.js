// The reliability run's E2B wire suites put the server on the Node FC runs the function on (test/support/e2b-wire.ts).
process.env.WIRE_NODE = 'fc';
