"""Counting instructions with Valgrind's Callgrind: starting a process under it, and switching the
count on and off from inside the process around the calls that are measured.

Instruction counts do not depend on load: two CPU-bound processes beside the measurement change
the wall time by 2-3x on a 2-core VM and the count not at all. What is counted must be the calls
alone, though: a Python interpreter's start-up varies by millions of instructions from one run to
the next (a 100,000-iteration loop counted 294.2 M and 289.4 M instructions in two whole-process
runs). So the process runs under `valgrind --tool=callgrind --instr-atstart=no
--collect-atstart=no` (start-up and imports run uninstrumented, about five times slower than
native rather than fifty) and asks Callgrind, through Valgrind's *client requests*, to instrument,
to count around each block of calls and to write the count after each block.

A client request is a fixed sequence of machine instructions that does nothing on a real CPU and
that Valgrind recognises (`valgrind.h`'s `VALGRIND_DO_CLIENT_REQUEST`). Python cannot emit it, so
`client_request` writes the sequence for this CPU (x86-64 or AArch64) into an executable page and
calls it through ctypes: no compiler and no C extension needed. Outside Valgrind it returns 0.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import platform
import shutil
from pathlib import Path

#: environment variable naming the Callgrind output file of a process started by `command`
OUT_ENV = "JITLAB_CALLGRIND_OUT"
INSTALL_HINT = (
    "install Valgrind (Debian/Ubuntu: `sudo apt-get install valgrind`; Fedora: `sudo dnf install "
    "valgrind`); it runs on Linux"
)

#: backends whose calls cannot be counted under Valgrind, and why (every other backend can; python,
#: numpy, numba and torch are counted in the test suite)
UNCOUNTABLE = {
    "torch-compile": "Inductor compiles its C++ kernels for this CPU's full instruction set (AVX-512 where "
    "there is one), which Valgrind cannot run: the worker dies with SIGILL",
    "numba-parallel": "its threads split the work differently from one call to the next, so its count "
    "does not repeat",
    "jax": "XLA runs the calls on a thread pool of its own: counts of one process varied by 0.45% between "
    "blocks (and a cell took minutes)",
    "tensorflow": "not tried under Valgrind (it runs its calls on thread pools of its own, as JAX does)",
    "triton": "not tried under Valgrind (its CPU interpreter runs a kernel as thousands of NumPy calls)",
}


def cannot_count(backend: str) -> str | None:
    """Why `backend`'s calls cannot be counted under Valgrind (None: they can)."""
    reason = UNCOUNTABLE.get(backend)
    return f"{backend} cannot be measured in instructions: {reason}" if reason else None


# valgrind.h: VG_USERREQ__RUNNING_ON_VALGRIND; callgrind.h: VG_USERREQ_TOOL_BASE('C','T') + n
RUNNING_ON_VALGRIND = 0x1001
_CALLGRIND = (ord("C") << 24) | (ord("T") << 16)
DUMP_STATS, ZERO_STATS, TOGGLE_COLLECT, DUMP_STATS_AT, START_INSTRUMENTATION, STOP_INSTRUMENTATION = range(
    _CALLGRIND, _CALLGRIND + 6
)

# uint64_t request(uint64_t args[6]): the special sequence with the argument block's address in the
# register Valgrind reads it from, 0 as the default result, the result returned
_CODE = {
    # mov rax, rdi; xor edx, edx; rol rdi, 3; rol rdi, 13; rol rdi, 61; rol rdi, 51;
    # xchg rbx, rbx; mov rax, rdx; ret
    "x86_64": "4889f831d248c1c70348c1c70d48c1c73d48c1c7334887db4889d0c3",
    # mov x4, x0; mov x3, #0; ror x12, x12, #3; #13; #51; #61; orr x10, x10, x10; mov x0, x3; ret
    "aarch64": "e40300aa030080d28c0dcc938c35cc938ccdcc938cf5cc934a010aaae00303aac0035fd6",
}


class _Requests:
    """The executable page holding the client-request sequence, made once per process."""

    def __init__(self) -> None:
        machine = platform.machine().lower()
        code = _CODE.get({"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine))
        self.error: str | None = None
        self._fn = None
        if code is None:
            self.error = f"instruction counting supports x86-64 and AArch64 Linux, not {machine}"
            return
        try:
            self._page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        except (OSError, ValueError, AttributeError) as exc:  # a system that forbids writable code
            self.error = f"cannot make the page for Valgrind's client requests: {exc}"
            return
        self._page.write(bytes.fromhex(code))
        address = ctypes.addressof(ctypes.c_char.from_buffer(self._page))
        self._fn = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p)(address)
        self._args = (ctypes.c_uint64 * 6)()

    def __call__(self, request: int, *args: int) -> int:
        if self._fn is None:
            return 0
        self._args[0] = request
        for i in range(5):
            self._args[i + 1] = args[i] if i < len(args) else 0
        return int(self._fn(ctypes.addressof(self._args)))


_requests: _Requests | None = None


def client_request(request: int, *args: int) -> int:
    """Send a Valgrind client request (0 when not running under Valgrind)."""
    global _requests
    if _requests is None:
        _requests = _Requests()
    return _requests(request, *args)


def running_on_valgrind() -> bool:
    return client_request(RUNNING_ON_VALGRIND) > 0


class Callgrind:
    """Callgrind's switches, from inside a process it runs: instrument from here, count a block,
    and read the block's count from the dump Callgrind writes (`OUT_ENV` names its file)."""

    def __init__(self, out_file: str | None = None) -> None:
        self.out_file = out_file or os.environ.get(OUT_ENV)
        if not self.out_file:
            raise RuntimeError(f"{OUT_ENV} is not set: start the process with jitlab.engine.valgrind.command")
        if not running_on_valgrind():
            reason = (
                _requests.error if _requests is not None else None
            ) or "this process does not run under it"
            raise RuntimeError(f"cannot count instructions with Valgrind here: {reason}")
        self.dumps = 0
        self.instrumenting = False

    def start(self) -> None:
        if not self.instrumenting:
            client_request(START_INSTRUMENTATION)
            self.instrumenting = True

    def stop(self) -> None:
        if self.instrumenting:
            client_request(STOP_INSTRUMENTATION)
            self.instrumenting = False

    def toggle(self) -> None:
        client_request(TOGGLE_COLLECT)

    def zero(self) -> None:
        client_request(ZERO_STATS)

    def dump(self) -> int:
        """Write the count since the last zero or dump and return it (Callgrind zeroes on dump)."""
        label = ctypes.create_string_buffer(b"jitlab")
        client_request(DUMP_STATS_AT, ctypes.addressof(label))
        self.dumps += 1
        path = Path(f"{self.out_file}.{self.dumps}")
        try:
            return read_total(path)
        finally:
            path.unlink(missing_ok=True)


_shared: Callgrind | None = None


def callgrind() -> Callgrind:
    """The process's one `Callgrind` (its dumps are numbered per process, not per caller)."""
    global _shared
    if _shared is None:
        _shared = Callgrind()
    return _shared


def read_total(path: Path) -> int:
    """The instructions (Ir) of one Callgrind dump: its `totals:` line (`summary:` in older ones)."""
    found = None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("totals:") or (found is None and line.startswith("summary:")):
                found = int(line.split()[1])
    if found is None:
        raise RuntimeError(f"no totals in Callgrind's dump {path}")
    return found


def valgrind_path() -> str | None:
    return shutil.which("valgrind")


def command(out_file: str, valgrind: str | None = None) -> list[str]:
    """The prefix that runs a program under Callgrind with nothing instrumented or counted until it
    asks (the program then reads `OUT_ENV`, which the caller sets to `out_file`)."""
    return [
        valgrind or valgrind_path() or "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        "--collect-atstart=no",
        "--dump-instr=no",
        "--compress-strings=no",
        "--compress-pos=no",
        f"--callgrind-out-file={out_file}",
        "--quiet",
    ]


def environment() -> dict[str, str]:
    """What a process counted under Valgrind needs: a fixed hash seed (set and dict iteration orders
    change the count otherwise), and compilers that emit no AVX-512, which Valgrind cannot run
    (Numba's LLVM compiles for the host CPU; its `generic` target is the baseline x86-64)."""
    return {
        "PYTHONHASHSEED": "0",
        "NUMBA_CPU_NAME": "generic",
        "ATEN_CPU_CAPABILITY": "avx2" if platform.machine().lower() in ("x86_64", "amd64") else "default",
        "NUMBA_NUM_THREADS": "1",
    }
