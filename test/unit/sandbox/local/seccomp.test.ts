/** The seccomp program's shape: every jump lands on the EPERM return, the architecture is checked first. */
import { REFUSED_SYSCALLS_X86_64, seccompProgram } from '../../../../functions/mcp/sandbox/local/seccomp';

const decode = (program: Buffer) =>
  Array.from({ length: program.length / 8 }, (_, i) => ({
    code: program.readUInt16LE(i * 8),
    jt: program[i * 8 + 2] as number,
    jf: program[i * 8 + 3] as number,
    k: program.readUInt32LE(i * 8 + 4),
  }));

it('checks the architecture, then sends every refused number (and x32) to EPERM, and allows the rest', () => {
  const program = decode(seccompProgram('x64') as Buffer);
  const n = Object.keys(REFUSED_SYSCALLS_X86_64).length;
  expect(program).toHaveLength(n + 7);
  expect(program.slice(0, 3)).toEqual([
    { code: 0x20, jt: 0, jf: 0, k: 4 },
    { code: 0x15, jt: 1, jf: 0, k: 0xc000003e },
    { code: 0x06, jt: 0, jf: 0, k: 0x80000000 },
  ]);
  const eperm = program.length - 1;
  expect(program[eperm]).toEqual({ code: 0x06, jt: 0, jf: 0, k: 0x00050001 });
  expect(program[eperm - 1]).toEqual({ code: 0x06, jt: 0, jf: 0, k: 0x7fff0000 });
  // Each comparison's true branch lands on the EPERM return.
  for (let i = 4; i < eperm - 1; i += 1) expect(i + 1 + (program[i]?.jt ?? 0)).toBe(eperm);
  expect(
    program
      .slice(5, eperm - 1)
      .map((p) => p.k)
      .sort((a, b) => a - b),
  ).toEqual(Object.values(REFUSED_SYSCALLS_X86_64).sort((a, b) => a - b));
});

it('has no filter for an architecture whose numbers it does not know', () => {
  expect(seccompProgram('arm64')).toBeUndefined();
});
