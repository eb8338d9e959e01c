#!/usr/bin/env python3
"""Fetches NVIDIA's NCCL headers of one release from the package index, for the ABI comparison.

    fetch_nvidia_headers.py VERSION OUTDIR

Downloads the nvidia-nccl-cu13 wheel of VERSION with pip into a temporary folder and extracts only
its include/ tree into OUTDIR (never the library: nothing here may put NVIDIA's libnccl where a
loader could find it). Exits 0 with OUTDIR/nccl.h in place, or 1 with the reason on stderr (no
network, no pip, no such release), which the caller turns into a skipped test.
"""
import pathlib
import subprocess
import sys
import tempfile
import zipfile

PREFIX = "nvidia/nccl/include/"


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    version, outdir = sys.argv[1], pathlib.Path(sys.argv[2])
    if (outdir / "nccl.h").is_file():
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--disable-pip-version-check",
               "--timeout", "30", "-d", tmp, f"nvidia-nccl-cu13=={version}"]
        try:
            subprocess.run(cmd, check=True, timeout=150, capture_output=True, text=True)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
            detail = getattr(e, "stderr", "") or str(e)
            print(f"pip download nvidia-nccl-cu13=={version} failed: {detail.strip()[-300:]}", file=sys.stderr)
            return 1
        wheels = list(pathlib.Path(tmp).glob("*.whl"))
        if not wheels:
            print("pip download produced no wheel", file=sys.stderr)
            return 1
        with zipfile.ZipFile(wheels[0]) as wheel:
            for name in wheel.namelist():
                if not name.startswith(PREFIX) or name.endswith("/"):
                    continue
                target = outdir / name[len(PREFIX):]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(wheel.read(name))
    return 0 if (outdir / "nccl.h").is_file() else 1


if __name__ == "__main__":
    sys.exit(main())
