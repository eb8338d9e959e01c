"""braid-run's environment and `python -m braid_nccl --check`, without a GPU.

    launcher_test.py LIBNCCL [FAKE]     (PYTHONPATH must hold the repository's python/)

The pure functions first (LD_PRELOAD order, defaults the user overrides, refused paths), then the
launcher and the check as child processes preloading LIBNCCL (Braid's), then the check's sanity
AllReduce against FAKE, a host-memory stand-in for libcudart and libnccl.so.2 (fake_cuda_nccl.c).
"""

import os
import shlex
import subprocess
import sys
import tempfile
import unittest

from braid_nccl import _env, _inspect
from braid_nccl._env import LauncherError, apply_env, format_exports, launch_env

LIB = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else None
FAKE = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else None


class LaunchEnvTest(unittest.TestCase):
    def test_empty_environment(self):
        expected = [("LD_PRELOAD", "/x/libnccl.so.2"), ("NCCL_NVLS_ENABLE", "0")]
        self.assertEqual(launch_env({}, "/x/libnccl.so.2"), expected)

    def test_prepends_to_existing_preload(self):
        env = {"LD_PRELOAD": "/a/liba.so /b/libb.so:/c/libc.so"}
        changes = dict(launch_env(env, "/x/libnccl.so.2"))
        self.assertEqual(changes["LD_PRELOAD"], "/x/libnccl.so.2:/a/liba.so:/b/libb.so:/c/libc.so")

    def test_no_duplicate_when_nested(self):
        env = {"LD_PRELOAD": "/a/liba.so:/x/libnccl.so.2"}
        self.assertEqual(dict(launch_env(env, "/x/libnccl.so.2"))["LD_PRELOAD"], "/x/libnccl.so.2:/a/liba.so")

    def test_user_setting_of_nvls_wins(self):
        for value in ("1", "0", ""):
            changes = dict(launch_env({"NCCL_NVLS_ENABLE": value}, "/x/libnccl.so.2"))
            self.assertNotIn("NCCL_NVLS_ENABLE", changes, value)

    def test_refuses_paths_the_loader_would_split(self):
        for bad in ("/with space/libnccl.so.2", "/with:colon/libnccl.so.2", ""):
            with self.assertRaises(LauncherError):
                launch_env({}, bad)

    def test_apply_leaves_input_alone(self):
        env = {"A": "1", "LD_PRELOAD": "/a.so"}
        new = apply_env(env, launch_env(env, "/x/libnccl.so.2"))
        self.assertEqual(env, {"A": "1", "LD_PRELOAD": "/a.so"})
        self.assertEqual(new, {"A": "1", "LD_PRELOAD": "/x/libnccl.so.2:/a.so", "NCCL_NVLS_ENABLE": "0"})

    def test_exports_survive_the_shell(self):
        changes = [("LD_PRELOAD", "/x/lib'nccl.so.2"), ("NCCL_NVLS_ENABLE", "0")]
        script = format_exports(changes) + 'printf "%s|%s" "$LD_PRELOAD" "$NCCL_NVLS_ENABLE"'
        out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True).stdout
        self.assertEqual(out, "/x/lib'nccl.so.2|0")

    def test_version_text(self):
        self.assertEqual(_inspect.version_text(22809), "2.28.9")
        self.assertEqual(_inspect.version_text(23203), "2.32.3")
        self.assertEqual(_inspect.version_text(2708), "2.7.8")


def run(args, env_changes=None, drop=()):
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(env_changes or {})
    return subprocess.run([sys.executable] + args, capture_output=True, text=True, env=env, timeout=90)


@unittest.skipIf(LIB is None, "no library path given")
class LauncherProcessTest(unittest.TestCase):
    child = "import os; print(os.environ['LD_PRELOAD']); print(os.environ.get('NCCL_NVLS_ENABLE'))"

    def test_print_env(self):
        r = run(["-m", "braid_nccl.run", "--lib", LIB, "--print-env"], {"LD_PRELOAD": "/a.so"},
                ["NCCL_NVLS_ENABLE"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "export LD_PRELOAD=%s:/a.so\nexport NCCL_NVLS_ENABLE=0\n" % shlex.quote(LIB))

    def test_child_and_grandchild_inherit(self):
        grandchild = "import subprocess, sys; subprocess.run([sys.executable, '-c', %r], check=True)" % self.child
        r = run(["-m", "braid_nccl.run", "--lib", LIB, sys.executable, "-c", grandchild],
                drop=["LD_PRELOAD", "NCCL_NVLS_ENABLE"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), [LIB, "0"])

    def test_library_override_variable_and_user_nvls(self):
        r = run(["-m", "braid_nccl.run", "--", sys.executable, "-c", self.child],
                {_env.LIBRARY_OVERRIDE_VAR: LIB, "NCCL_NVLS_ENABLE": "1"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split()[0].split(":")[0], LIB)
        self.assertEqual(r.stdout.split()[1], "1")

    def test_options_after_the_command_are_the_commands(self):
        r = run(["-m", "braid_nccl.run", "--lib", LIB, sys.executable, "-c", "import sys; print(sys.argv[1:])",
                 "--nproc-per-node", "4", "--print-env", "--lib", "x"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "['--nproc-per-node', '4', '--print-env', '--lib', 'x']")

    def test_exit_status_passes_through(self):
        r = run(["-m", "braid_nccl.run", "--lib", LIB, sys.executable, "-c", "raise SystemExit(7)"])
        self.assertEqual(r.returncode, 7)

    def test_errors(self):
        self.assertEqual(run(["-m", "braid_nccl.run", "--lib", LIB]).returncode, 2)  # no command
        self.assertEqual(run(["-m", "braid_nccl.run", "--lib", LIB, "no-such-command-braid"]).returncode, 127)
        with tempfile.TemporaryDirectory() as d:
            r = run(["-m", "braid_nccl.run", "--lib", os.path.join(d, "libnccl.so.2"), "true"])
            self.assertEqual(r.returncode, 2)
            self.assertIn("does not exist", r.stderr)

    def test_check_under_braid_run(self):
        check = [sys.executable, "-m", "braid_nccl", "--check", "--require-braid"]
        r = run(["-m", "braid_nccl.run", "--lib", LIB] + check, drop=["LD_PRELOAD"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("path:    %s" % os.path.realpath(LIB), r.stdout)
        self.assertIn("loaded:  LD_PRELOAD", r.stdout)
        self.assertIn("library: Braid", r.stdout)
        self.assertIn("ncclGetVersion = ", r.stdout)
        self.assertRegex(r.stdout, r"GPUs: (none|\d+ .*\n  OK)")

    def test_check_require_braid_fails_without_braid(self):
        # Nothing preloaded and no libnccl on the search path: the check tests the package's library
        # (here: the given one, through the override variable) but Braid serves no NCCL calls.
        with tempfile.TemporaryDirectory() as empty:
            env = {_env.LIBRARY_OVERRIDE_VAR: LIB, "LD_LIBRARY_PATH": empty}
            r = run(["-m", "braid_nccl", "--check", "--require-braid"], env, drop=["LD_PRELOAD"])
        served = "serving NCCL calls in this process" in r.stdout  # a system NCCL may be on the search path
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        if not served:
            self.assertIn("This package's library:", r.stdout)
            self.assertIn("library: Braid", r.stdout)


@unittest.skipIf(FAKE is None, "no stand-in library given")
class SanityAllReduceTest(unittest.TestCase):
    """The GPU half of --check (ctypes calls, polling, the exact compare), run on host memory."""

    def check(self, **env):
        env = dict({"LD_PRELOAD": FAKE, "BRAID_CHECK_CUDART": FAKE}, **env)
        return run(["-m", "braid_nccl", "--check"], env, drop=["FAKE_GPUS", "FAKE_NCCL_CORRUPT", "FAKE_NCCL_INIT_FAIL"])

    def test_two_ranks_pass(self):
        r = self.check()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("path:    %s" % os.path.realpath(FAKE), r.stdout)
        self.assertIn("GPUs: 2 (runtime %s); sanity AllReduce" % FAKE, r.stdout)
        self.assertIn("on 2 ranks, devices 0,1", r.stdout)
        self.assertIn("OK: every element equals the sum", r.stdout)
        self.assertIn("Result: unknown serves NCCL calls in this process, not Braid", r.stdout)

    def test_one_gpu_runs_one_rank(self):
        r = self.check(FAKE_GPUS="1")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("on 1 rank, devices 0", r.stdout)

    def test_no_gpu(self):
        r = self.check(FAKE_GPUS="0")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("GPUs: none", r.stdout)
        self.assertNotIn("sanity AllReduce:", r.stdout)

    def test_wrong_result_fails(self):
        r = self.check(FAKE_NCCL_CORRUPT="1")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("FAILED: rank 1: 1 of 1048576 elements wrong; first at 5", r.stdout)

    def test_init_failure_fails(self):
        r = self.check(FAKE_NCCL_INIT_FAIL="1")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("FAILED: ncclCommInitAll: fake NCCL error (4); last error: fake last error", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
