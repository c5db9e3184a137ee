"""moacert under mpirun -n 2 (docs/design.md#ranks-mpirun), against one process.

    mpi_check.py CHECK MOACERT WORK COMMAND [ARGS...]    (COMMAND: certify, report)

CHECK is one of
  same ARGS...            `moacert COMMAND ARGS` in one process and under mpirun -n 2:
                          both exit alike and their certificates (every one
                          under --out) are equal field by field
                          (compare_certificates.py says which fields not)
  counterexample ARGS...  ARGS (with --cases N) fail at a case rank 1 owns: under
                          mpirun the counterexample is rank 1's, rank 0 stops
                          before the end of its share, and
                          the certificate, its token included, is the one process's;
                          `moacert reproduce TOKEN` replays the failure in one process
  killed ARGS...          rank 1 killed (SIGKILL) mid-run: the run fails naming
                          rank 1, writes no certificate, leaves no process behind
  bad_input ARGS...       ARGS are bad input: exit 2, the reason printed once
Exit 77 (CTest's skip) when mpirun is absent or moacert was built without MPI."""
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid

check, moacert, work, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
here = os.path.dirname(os.path.abspath(__file__))
mpirun = shutil.which("mpirun")
if not mpirun:
    print("mpi_check: mpirun is not on the PATH (openmpi-bin): skipped")
    sys.exit(77)
if "mpi present" not in subprocess.run([moacert, "list", "rmsnorm"], capture_output=True,
                                       text=True).stdout:
    print("mpi_check: this moacert was built without MPI: skipped")
    sys.exit(77)
# Open MPI as root (CI's containers) needs the first flag; a machine with
# fewer cores than ranks, the second. Not -q: it would hide mpirun's line
# naming a rank that died.
MPIRUN = [mpirun, "-n", "2", "--allow-run-as-root", "--oversubscribe"]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)


def fail(why, *runs):
    text = "".join(f"\n--- {' '.join(r.args)}\n{r.stdout}{r.stderr}" for r in runs)
    sys.exit(f"mpi_check {check}: {why}{text}")


def certify(out, ranks, extra=()):
    command = (MPIRUN if ranks else []) + [moacert, *args, *extra, "--out", out]
    return subprocess.run(command, capture_output=True, text=True)


def compare(a, b, *runs):
    cmp = subprocess.run([sys.executable, os.path.join(here, "compare_certificates.py"), a, b],
                         capture_output=True, text=True)
    if cmp.returncode != 0:
        fail(cmp.stdout + cmp.stderr, *runs)
    return cmp.stdout.strip()


if check == "same":
    one = certify(f"{work}/one", ranks=False)
    two = certify(f"{work}/two", ranks=True)
    if one.returncode != two.returncode:
        fail(f"exit {one.returncode} in one process, {two.returncode} under mpirun", one, two)
    if args[0] == "certify" and not re.search(r"^ranks: 2 \(cases judged: rank 0 \d+, rank 1 \d+\)",
                                              two.stdout, re.M):
        fail("mpirun's run printed no 'ranks:' line", two)
    same = compare(f"{work}/one", f"{work}/two", one, two)
    if os.path.exists(f"{work}/one/report.md"):  # report's table: no time in it
        tables = [open(f"{work}/{w}/report.md").read() for w in ("one", "two")]
        if tables[0] != tables[1]:
            fail("report.md differs", one, two)
        same += "; report.md byte for byte"
    print(same)

elif check == "counterexample":
    one = certify(f"{work}/one", ranks=False)
    two = certify(f"{work}/two", ranks=True)
    if one.returncode != 1 or two.returncode != 1:
        fail(f"exits {one.returncode} and {two.returncode}, expected 1 (a counterexample)", one, two)
    ranks = re.search(r"^ranks: 2 \(cases judged: rank 0 (\d+), rank 1 (\d+)\); "
                      r"the counterexample was judged by rank (\d+)$", two.stdout, re.M)
    if not ranks or ranks.group(3) != "1":
        fail("the counterexample was not rank 1's", two)
    cases = re.search(r"FAILS \((\d+) curated \+ (\d+) random cases", two.stdout)
    position = int(cases.group(1)) + int(cases.group(2)) - 1  # rank 1's: odd
    rank0 = int(ranks.group(1))
    # Rank 0 owns the even positions: without the announcement it would
    # judge all of them. (How many it judges past the counterexample's
    # position depends on the ranks' speeds; that it stops does not, with a
    # counterexample early among many cases.)
    total = int(cases.group(1)) + int(args[args.index("--cases") + 1])
    if rank0 >= (total + 1) // 2:
        fail(f"rank 0 judged all its {rank0} cases: the counterexample at case {position} "
             "did not stop it", two)
    # The token (a plugin's line goes on with --plugin LIB.so#NAME).
    tokens = [re.findall(r"^reproduce: moacert reproduce (\S+)", r.stdout, re.M) for r in (one, two)]
    if not tokens[0] or tokens[0] != tokens[1]:
        fail(f"tokens {tokens[0]} in one process, {tokens[1]} under mpirun", one, two)
    same = compare(f"{work}/one", f"{work}/two", one, two)
    plugin = args[args.index("--plugin") + 1] if "--plugin" in args else None
    replay = subprocess.run([moacert, "reproduce", tokens[1][0]] +
                            (["--plugin", plugin] if plugin else []), capture_output=True, text=True)
    if replay.returncode != 1 or "FAILS" not in replay.stdout:
        fail(f"reproduce exited {replay.returncode} without FAILS", replay)
    print(f"mpi_check: rank 1 judged the counterexample at case {position}, rank 0 stopped after "
          f"{rank0} of its {(total + 1) // 2} cases; one process reports the same token, {tokens[1][0]}, which reproduce "
          f"replays; {same}")

elif check == "killed":
    marker = uuid.uuid4().hex
    env = dict(os.environ, MOACERT_MPI_CHECK=marker)

    def ours(rank=None):
        """Our processes (the marker in their environment), or our rank's moacert."""
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    environ = f.read().split(b"\0")
                with open(f"/proc/{pid}/comm") as f:
                    comm = f.read().strip()
            except OSError:
                continue
            if f"MOACERT_MPI_CHECK={marker}".encode() not in environ:
                continue
            if rank is None or (comm == "moacert" and
                                f"OMPI_COMM_WORLD_RANK={rank}".encode() in environ):
                found.append(int(pid))
        return found

    out = f"{work}/killed"
    run = subprocess.Popen(MPIRUN + [moacert, *args, "--out", out], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 60
    while not ours(rank=1):
        if run.poll() is not None or time.time() > deadline:
            run.kill()
            sys.exit(f"mpi_check killed: rank 1 never started\n{run.communicate()[0]}")
        time.sleep(0.05)
    time.sleep(1)  # rank 1 is judging its cases
    if run.poll() is not None:
        sys.exit(f"mpi_check killed: the run ended before the kill\n{run.communicate()[0]}")
    for pid in ours(rank=1):
        os.kill(pid, signal.SIGKILL)
    try:
        output = run.communicate(timeout=60)[0]
    except subprocess.TimeoutExpired:
        run.kill()
        sys.exit("mpi_check killed: mpirun did not end within 60 s of the kill")
    if run.returncode == 0:
        sys.exit(f"mpi_check killed: exit 0 after rank 1 was killed\n{output}")
    if not re.search(r"process rank 1 .*(signal 9|Killed)", output):
        sys.exit(f"mpi_check killed: the run does not name rank 1\n{output}")
    written = [os.path.join(d, f) for d, _, fs in os.walk(out) for f in fs]
    if written:
        sys.exit(f"mpi_check killed: the killed run wrote {written}\n{output}")
    for _ in range(100):  # mpirun's children may take a moment to go
        if not ours():
            break
        time.sleep(0.05)
    left = ours()
    if left:
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        sys.exit(f"mpi_check killed: processes {left} outlived the run\n{output}")
    line = next(l for l in output.splitlines() if re.search(r"process rank 1 ", l))
    print(f"mpi_check: rank 1 killed: exit {run.returncode}, no file written, no process left; "
          f"mpirun said: {line.strip()}")

elif check == "bad_input":
    run = certify(f"{work}/bad", ranks=True)
    said = [l for l in run.stderr.splitlines() if l.startswith("moacert:")]
    if run.returncode != 2 or len(said) != 1:
        fail(f"exit {run.returncode} with {len(said)} 'moacert:' lines, expected 2 and one", run)
    if os.path.exists(f"{work}/bad"):
        fail("the refused run created its output folder", run)
    print(f"mpi_check: exit 2, said once: {said[0]}")

else:
    sys.exit(__doc__)
