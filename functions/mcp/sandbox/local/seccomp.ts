/**
 * The seccomp filter bubblewrap installs in every sandbox (`--seccomp FD`): a classic BPF program that
 * refuses, with EPERM, the system calls sandboxed code has no business making and that kernel escapes
 * usually start from (mounts, new namespaces, kernel keyrings, eBPF, userfaultfd, perf events, io_uring, module
 * and kexec loading, handle-based opens, clock and host-name changes); it also refuses x32 calls (which would
 * slip past the numbers below) and kills a process calling in as a foreign architecture. Everything else is
 * allowed. Numbers are x86_64's; on another architecture there is no filter (the provider says so at start-up).
 */

/** AUDIT_ARCH_X86_64. */
const AUDIT_ARCH_X86_64 = 0xc000003e;
/** x32 system calls carry this bit on x86_64. */
const X32_SYSCALL_BIT = 0x40000000;

/** Refused system calls and their x86_64 numbers. */
export const REFUSED_SYSCALLS_X86_64: Readonly<Record<string, number>> = Object.freeze({
  acct: 163,
  add_key: 248,
  adjtimex: 159,
  bpf: 321,
  clock_adjtime: 305,
  clock_settime: 227,
  delete_module: 176,
  finit_module: 313,
  fsconfig: 431,
  fsmount: 432,
  fsopen: 430,
  fspick: 433,
  init_module: 175,
  io_uring_enter: 426,
  io_uring_register: 427,
  io_uring_setup: 425,
  ioperm: 173,
  iopl: 172,
  kexec_file_load: 320,
  kexec_load: 246,
  keyctl: 250,
  lookup_dcookie: 212,
  mount: 165,
  mount_setattr: 442,
  move_mount: 429,
  name_to_handle_at: 303,
  open_by_handle_at: 304,
  open_tree: 428,
  perf_event_open: 298,
  pivot_root: 155,
  quotactl: 179,
  reboot: 169,
  request_key: 249,
  setdomainname: 171,
  sethostname: 170,
  setns: 308,
  settimeofday: 164,
  swapoff: 168,
  swapon: 167,
  umount2: 166,
  unshare: 272,
  userfaultfd: 323,
});

// Classic BPF opcodes (linux/filter.h, linux/bpf_common.h) and seccomp return values (linux/seccomp.h).
const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JGE_K = 0x35;
const BPF_RET_K = 0x06;
const SECCOMP_RET_KILL_PROCESS = 0x80000000;
const SECCOMP_RET_ERRNO = 0x00050000;
const SECCOMP_RET_ALLOW = 0x7fff0000;
const EPERM = 1;
/** Offsets in `struct seccomp_data`. */
const NR_OFFSET = 0;
const ARCH_OFFSET = 4;

/** The filter for this machine's architecture, as bytes for `bwrap --seccomp`; `undefined` where there is none. */
export function seccompProgram(arch: string = process.arch): Buffer | undefined {
  if (arch !== 'x64') return undefined;
  const numbers = Object.values(REFUSED_SYSCALLS_X86_64);
  const program: Array<[code: number, jt: number, jf: number, k: number]> = [];
  program.push([BPF_LD_W_ABS, 0, 0, ARCH_OFFSET]);
  program.push([BPF_JEQ_K, 1, 0, AUDIT_ARCH_X86_64]);
  program.push([BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS]);
  program.push([BPF_LD_W_ABS, 0, 0, NR_OFFSET]);
  // An x32 call: its number is not one of ours.
  program.push([BPF_JGE_K, numbers.length + 1, 0, X32_SYSCALL_BIT]);
  // Each refused number jumps to the EPERM return at the end; the rest fall through to ALLOW.
  numbers.forEach((nr, i) => {
    program.push([BPF_JEQ_K, numbers.length - i, 0, nr]);
  });
  program.push([BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW]);
  program.push([BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM]);
  const out = Buffer.alloc(program.length * 8);
  program.forEach(([code, jt, jf, k], i) => {
    out.writeUInt16LE(code, i * 8);
    out.writeUInt8(jt, i * 8 + 2);
    out.writeUInt8(jf, i * 8 + 3);
    out.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return out;
}
